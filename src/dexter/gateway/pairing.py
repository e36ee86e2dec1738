"""Pairing: a stranger gets a six-digit code once; the operator approves it from the CLI.

Stored in `$DEXTER_HOME/gateway/pairing.json`, shared by the running gateway and
`dexter gateway pair …` in another process, so every change is a locked read-modify-write and
readers reload when the file changes.

A flood of strangers must not push out the request the operator is about to approve: when an
account has `MAX_PENDING_PER_ACCOUNT` requests waiting, a new one is refused (no code is sent),
never made room for. Requests expire after `PENDING_TTL`, so a flood clears itself.
"""

from __future__ import annotations

import fcntl
import json
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from dexter.atomicfile import PRIVATE, open_private, private_dir, write_json
from dexter.config import ConfigError
from dexter.gateway.access import normalize_id
from dexter.userfiles import not_utf8

# Waiting requests at most, per account and in the whole file.
MAX_PENDING_PER_ACCOUNT = 20
MAX_PENDING = 500
PENDING_TTL = timedelta(hours=24)


class PairingQueueFull(Exception):
    """The account has as many requests waiting as it may: this sender gets no code for now."""


@dataclass(frozen=True, slots=True)
class PairingRequest:
    channel: str
    account_id: str
    sender_id: str
    code: str
    created_at: str
    sender_name: str = ""
    # Where the code was sent, so approval can tell the person they are in.
    chat_id: str = ""


@dataclass(frozen=True, slots=True)
class Approved:
    channel: str
    account_id: str
    sender_id: str
    approved_at: str
    sender_name: str = ""


def pairing_text(channel: str, sender_id: str, code: str) -> str:
    return (
        "Hi, I'm Dexter. I don't know you yet, so I can't answer here.\n"
        f"Your id on {channel}: {sender_id}\n"
        f"Pairing code: {code}\n"
        f"Ask the person who runs me to approve it with: dexter gateway pair approve {code}"
    )


class PairingStore:
    def __init__(self, path: Path, *, clock: Callable[[], datetime] | None = None) -> None:
        self.path = path
        self._clock = clock or (lambda: datetime.now(UTC))
        self._cache: tuple[float, dict[str, Any]] | None = None

    # ------------------------------------------------------------------ storage

    def _read(self) -> dict[str, Any]:
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return {"pending": [], "approved": []}
        if self._cache is not None and self._cache[0] == stat.st_mtime_ns:
            return self._cache[1]
        try:
            data = json.loads(self.path.read_text(encoding="utf-8") or "{}")
        except UnicodeDecodeError as exc:
            raise not_utf8(self.path, exc, "The pairing list") from None
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"Cannot read {self.path}: {exc}. Fix it or move it aside.") from exc
        if not isinstance(data, dict):
            raise ConfigError(f"{self.path} must hold a JSON object. Fix it or move it aside.")
        data.setdefault("pending", [])
        data.setdefault("approved", [])
        self._cache = (stat.st_mtime_ns, data)
        return data

    @contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        private_dir(self.path.parent)
        lock_path = self.path.with_suffix(".lock")
        with open_private(lock_path) as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                self._cache = None
                data = self._read()
                data["pending"] = self._waiting(data["pending"])
                yield data
                write_json(self.path, data, mode=PRIVATE)
                self._cache = None
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    # ------------------------------------------------------------------ queries

    def _waiting(self, pending: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The requests not yet expired."""
        oldest = self._clock() - PENDING_TTL
        return [raw for raw in pending if not _before(raw.get("created_at"), oldest)]

    def pending(self) -> list[PairingRequest]:
        return [PairingRequest(**item) for item in self._waiting(self._read()["pending"])]

    def approved(self) -> list[Approved]:
        return [Approved(**item) for item in self._read()["approved"]]

    def approved_ids(self, channel: str, account_id: str) -> frozenset[str]:
        return frozenset(
            a.sender_id
            for a in self.approved()
            if a.channel == channel and a.account_id == account_id
        )

    # ------------------------------------------------------------------ changes

    def request(
        self,
        channel: str,
        account_id: str,
        sender_id: str,
        *,
        sender_name: str = "",
        chat_id: str = "",
    ) -> tuple[PairingRequest, bool]:
        """The sender's request and whether it is new (only a new one is answered with a code).

        Raises `PairingQueueFull` when the account already has `MAX_PENDING_PER_ACCOUNT`
        requests waiting: the requests that wait are never dropped to make room."""
        key = (channel, account_id, normalize_id(channel, sender_id))
        # Without the lock first: a sender already waiting, or a full queue, changes nothing,
        # so a flood of messages costs a cached read each, not a write.
        waiting = self._waiting(self._read()["pending"])
        known = _find(waiting, key)
        if known is not None:
            return known, False
        _check_room(waiting, channel, account_id)
        with self._locked() as data:
            known = _find(data["pending"], key)
            if known is not None:
                return known, False
            _check_room(data["pending"], channel, account_id)
            request = PairingRequest(
                channel=channel,
                account_id=account_id,
                sender_id=key[2],
                code=_new_code({raw["code"] for raw in data["pending"]}),
                created_at=self._clock().isoformat(timespec="seconds"),
                sender_name=sender_name,
                chat_id=chat_id,
            )
            data["pending"].append(asdict(request))
        return request, True

    def approve(self, code: str) -> PairingRequest:
        with self._locked() as data:
            request = _take(data, code)
            if not any(
                (a["channel"], a["account_id"], a["sender_id"])
                == (request.channel, request.account_id, request.sender_id)
                for a in data["approved"]
            ):
                approved = Approved(
                    channel=request.channel,
                    account_id=request.account_id,
                    sender_id=request.sender_id,
                    approved_at=self._clock().isoformat(timespec="seconds"),
                    sender_name=request.sender_name,
                )
                data["approved"].append(asdict(approved))
        return request

    def deny(self, code: str) -> PairingRequest:
        with self._locked() as data:
            return _take(data, code)

    def revoke(self, channel: str, sender_id: str) -> int:
        sender = normalize_id(channel, sender_id)
        with self._locked() as data:
            before = len(data["approved"])
            data["approved"] = [
                a
                for a in data["approved"]
                if not (a["channel"] == channel and a["sender_id"] == sender)
            ]
            return before - len(data["approved"])


def _find(pending: list[dict[str, Any]], key: tuple[str, str, str]) -> PairingRequest | None:
    for raw in pending:
        if (raw["channel"], raw["account_id"], raw["sender_id"]) == key:
            return PairingRequest(**raw)
    return None


def _check_room(pending: list[dict[str, Any]], channel: str, account_id: str) -> None:
    mine = sum(1 for raw in pending if (raw["channel"], raw["account_id"]) == (channel, account_id))
    if mine >= MAX_PENDING_PER_ACCOUNT or len(pending) >= MAX_PENDING:
        raise PairingQueueFull(
            f"{channel}/{account_id}: {mine} pairing requests are waiting ({len(pending)} in all), "
            "so new strangers get no code until you approve or deny some (`dexter gateway pair "
            "list`) or they expire"
        )


def _before(created_at: object, oldest: datetime) -> bool:
    """Was the request made before `oldest`? A time that cannot be read never expires."""
    try:
        made = datetime.fromisoformat(str(created_at))
        return made.replace(tzinfo=made.tzinfo or UTC) < oldest
    except ValueError:
        return False


def _take(data: dict[str, Any], code: str) -> PairingRequest:
    wanted = code.strip()
    for index, raw in enumerate(data["pending"]):
        if raw["code"] == wanted:
            del data["pending"][index]
            return PairingRequest(**raw)
    raise ConfigError(
        f"No pending pairing request has code {wanted} (codes expire after "
        f"{PENDING_TTL.total_seconds() / 3600:.0f} hours). See `dexter gateway pair list`."
    )


def _new_code(taken: set[str]) -> str:
    while True:
        code = str(100000 + secrets.randbelow(900000))
        if code not in taken:
            return code
