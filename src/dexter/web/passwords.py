"""Password hashes for `dexter web` accounts: scrypt from the standard library, no new dependency.

A hash reads `scrypt$N$r$p$SALT$KEY` (salt and key in URL-safe base64), so its cost travels with
it and can be raised later without breaking the hashes already in settings.json.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

# 2**15 x 8 x 128 bytes = 32 MiB per check, ~50 ms: cheap for one login, slow for guessing.
N, R, P = 2**15, 8, 1
_KEY_BYTES = 32
_PREFIX = "scrypt"


class PasswordHashError(ValueError):
    """A stored hash that is not one `hash_password` writes; the message says what to do."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _derive(password: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(
        password.encode("utf-8"), salt=salt, n=n, r=r, p=p, maxmem=2 * 128 * n * r * p + 2**20,
        dklen=_KEY_BYTES,
    )  # fmt: skip


def hash_password(password: str, *, n: int = N) -> str:
    if not password:
        raise ValueError("the password is empty")
    salt = secrets.token_bytes(16)
    key = _derive(password, salt, n, R, P)
    return f"{_PREFIX}${n}${R}${P}${_b64(salt)}${_b64(key)}"


def check_hash(stored: str) -> tuple[int, int, int, bytes, bytes]:
    """The parts of a stored hash; PasswordHashError when it is not one."""
    parts = stored.strip().split("$")
    try:
        if len(parts) != 6 or parts[0] != _PREFIX:
            raise ValueError
        n, r, p = int(parts[1]), int(parts[2]), int(parts[3])
        salt, key = _unb64(parts[4]), _unb64(parts[5])
        if n < 2 or n & (n - 1) or not (0 < r <= 64 and 0 < p <= 16) or n > 2**20:
            raise ValueError
    except ValueError:
        raise PasswordHashError(
            "is not a password hash from `dexter web --hash-password` (scrypt$N$r$p$salt$key)"
        ) from None
    return n, r, p, salt, key


def verify_password(password: str, stored: str) -> bool:
    """Whether `password` matches `stored`, in time that does not depend on where they differ."""
    n, r, p, salt, key = check_hash(stored)
    return hmac.compare_digest(_derive(password, salt, n, r, p), key)


__all__ = ["PasswordHashError", "check_hash", "hash_password", "verify_password"]
