"""Who may log in to `dexter web` with a password, and as which principal.

Accounts live under `"web": {"users": {...}}` in settings.json. An account marked `"operator":
true` is the operator's own login (every power, as at the terminal); any other is the principal
`web:<name>`, which sees only its own sessions, memory and jobs and uses the public research
tools unless `grants` give it more.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from dexter.config import ConfigError, Settings
from dexter.principal import OPERATOR, Grants, Principal, PrincipalError, check_id
from dexter.web.openbb import OPENBB_PRINCIPAL
from dexter.web.passwords import PasswordHashError, check_hash, verify_password

# Principals of other web front doors: an account may not share their sessions and memory.
RESERVED = frozenset({OPENBB_PRINCIPAL.id})
# Spent on an unknown name too, so a login's duration does not say which names exist.
_DUMMY_HASH = "scrypt$32768$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"


@dataclass(frozen=True)
class Account:
    name: str
    password_hash: str
    principal: Principal


@dataclass(frozen=True)
class Accounts:
    by_name: dict[str, Account]

    @property
    def any_password(self) -> bool:
        return bool(self.by_name)

    async def login(self, name: str, password: str) -> Principal | None:
        """The principal of `name` when `password` is theirs; None otherwise (off the loop:
        a check is tens of milliseconds of scrypt)."""
        account = self.by_name.get(name.strip().lower())
        stored = account.password_hash if account is not None else _DUMMY_HASH
        matches = await asyncio.to_thread(verify_password, password, stored)
        return account.principal if matches and account is not None else None


def web_principal(name: str, display_name: str = "", grants: Grants | None = None) -> Principal:
    return Principal(f"web:{name}", "web", display_name or name, grants or Grants())


def load_accounts(settings: Settings) -> Accounts:
    """The accounts in settings.json; ConfigError naming the account when one is unusable."""
    from dexter.settings_model import WebSettings

    section = settings.section(WebSettings)
    found: dict[str, Account] = {}
    for raw_name, user in section.users.items():
        name = raw_name.strip().lower()
        where = f'web.users."{raw_name}" in {settings.settings_path}'
        try:
            check_id(f"web:{name}")
            if not name or ":" in name:
                raise PrincipalError("")
            if f"web:{name}" in RESERVED:
                raise PrincipalError(f"the name {name!r} is taken by Dexter's OpenBB endpoint")
            check_hash(user.password_hash)
            principal = (
                OPERATOR
                if user.operator
                else web_principal(
                    name,
                    user.name,
                    Grants.from_dict(user.grants, base=settings.home),
                )
            )
        except PasswordHashError as error:
            raise ConfigError(f"{where}: passwordHash {error}.") from None
        except PrincipalError as error:
            detail = str(error) or "a name is letters, digits, '.', '_' or '-'"
            raise ConfigError(f"{where}: {detail}.") from None
        if name in found:
            raise ConfigError(f"{where}: the name {name!r} is given twice (names ignore case).")
        found[name] = Account(name, user.password_hash, principal)
    return Accounts(found)


__all__ = ["Account", "Accounts", "load_accounts", "web_principal"]
