"""Who may log in to `dexter web` with a password, and as which principal.

Accounts live under `"web": {"users": {...}}` in settings.json. An account marked `"operator":
true` is the operator's own login (every power, as at the terminal); any other is the principal
`web:<name>`, which sees only its own sessions, memory and jobs and uses the public research
tools unless `grants` give it more. A container is configured by environment instead:
`DEXTER_WEB_USERS` (or `DEXTER_WEB_USERS_FILE`, a compose secret) holds the same object as
`"users"`; its accounts are added to the file's, and win for a name in both.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from dexter.config import ConfigError, Settings
from dexter.principal import OPERATOR, Grants, Principal, PrincipalError, check_id
from dexter.web.openbb import OPENBB_PRINCIPAL
from dexter.web.passwords import PasswordHashError, check_hash, verify_password

USERS_ENV = "DEXTER_WEB_USERS"
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
    in_file = [
        (raw_name, user, f'web.users."{raw_name}" in {settings.settings_path}')
        for raw_name, user in section.users.items()
    ]
    found: dict[str, Account] = {}
    for source in (in_file, _users_from_env(settings)):
        # A name twice in one place is a mistake; the environment's account replaces the file's.
        seen: set[str] = set()
        for raw_name, user, where in source:
            name = raw_name.strip().lower()
            if name in seen:
                raise ConfigError(f"{where}: the name {name!r} is given twice (names ignore case).")
            seen.add(name)
            found[name] = _account(settings, name, user, where)
    return Accounts(found)


def _account(settings: Settings, name: str, user: Any, where: str) -> Account:
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
            else web_principal(name, user.name, Grants.from_dict(user.grants, base=settings.home))
        )
    except PasswordHashError as error:
        raise ConfigError(f"{where}: passwordHash {error}.") from None
    except PrincipalError as error:
        detail = str(error) or "a name is letters, digits, '.', '_' or '-'"
        raise ConfigError(f"{where}: {detail}.") from None
    return Account(name, user.password_hash, principal)


def _users_from_env(settings: Settings) -> list[tuple[str, Any, str]]:
    import json

    from pydantic import ValidationError

    from dexter.settings_model import WebUserSettings

    raw = settings.env.get(USERS_ENV, "").strip()
    if not raw:
        return []
    problem = (
        f'{USERS_ENV} must be a JSON object of accounts, as "web": {{"users": …}} in '
        'settings.json: {"NAME": {"passwordHash": "…", "operator": true}}'
    )
    try:
        data = json.loads(raw)
    except ValueError:
        raise ConfigError(f"{problem}; it is not JSON.") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{problem}.")
    users: list[tuple[str, Any, str]] = []
    for raw_name, user in data.items():
        where = f'{USERS_ENV} account "{raw_name}"'
        try:
            users.append((str(raw_name), WebUserSettings.model_validate(user), where))
        except ValidationError as error:
            first = error.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "the account"
            raise ConfigError(f"{where}: {field}: {first['msg']}.") from None
    return users


__all__ = ["Account", "Accounts", "load_accounts", "web_principal"]
