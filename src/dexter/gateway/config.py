"""`$DEXTER_HOME/gateway.json`: typed, parsed once, reloaded when the file changes.

Channel-level access settings are defaults that each account inherits field by field; an
account only overrides what it sets (the original let an account without `allowFrom` shadow the
channel's list with an empty one). Secrets live in this file, so it is written with mode 0600.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from dexter.atomicfile import PRIVATE, private_dir, write_json
from dexter.config import ConfigError
from dexter.gateway.access import AccessPolicy, DmPolicy, GroupPolicy, normalize_id, normalize_list
from dexter.gateway.backoff import ReconnectPolicy
from dexter.principal import Grants, PrincipalError, check_id
from dexter.userfiles import read_user_text

log = logging.getLogger("dexter.gateway")

CONFIG_FILE_NAME = "gateway.json"
ChannelName = Literal["telegram", "whatsapp_cloud", "whatsapp_web", "slack"]
CHANNEL_NAMES: tuple[ChannelName, ...] = ("telegram", "whatsapp_cloud", "whatsapp_web", "slack")
_ACCESS_KEYS = ("dm_policy", "group_policy", "allow_from", "group_allow_from", "proactive")
_PERSON_PREFIXES = ("telegram:", "slack:", "whatsapp:")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AccountConfig(_Strict):
    enabled: bool = True
    dm_policy: DmPolicy | None = None
    group_policy: GroupPolicy | None = None
    allow_from: list[str] | None = None
    group_allow_from: list[str] | None = None
    proactive: bool | None = None
    mark_read: bool = True
    # Telegram
    token: str | None = Field(default=None, repr=False)
    api_base: str | None = None
    # WhatsApp Cloud API
    access_token: str | None = Field(default=None, repr=False)
    phone_number_id: str | None = None
    app_secret: str | None = Field(default=None, repr=False)
    verify_token: str | None = Field(default=None, repr=False)
    listen: str = "127.0.0.1:8787"
    # Slack
    bot_token: str | None = Field(default=None, repr=False)
    app_token: str | None = Field(default=None, repr=False)
    # WhatsApp Web (neonize): the linked-device session database
    session_path: str | None = None


class ChannelConfig(_Strict):
    enabled: bool = True
    dm_policy: DmPolicy = "pairing"
    group_policy: GroupPolicy = "disabled"
    allow_from: list[str] = Field(default_factory=list)
    group_allow_from: list[str] = Field(default_factory=list)
    proactive: bool | None = None
    accounts: dict[str, AccountConfig] = Field(default_factory=dict)


class ReconnectConfig(_Strict):
    initial: float = 2.0
    maximum: float = 30.0
    factor: float = 1.8
    jitter: float = 0.25


class PrincipalConfig(_Strict):
    """What the operator grants one chat principal or group beyond the default (see
    `dexter.principal.Grants`): `{"files": {"read": ["~/research/shared"]}, "tools": [...]}`."""

    files: dict[str, list[str] | str] | None = None
    tools: list[str] | None = None
    _grants: Grants = PrivateAttr(default_factory=Grants)

    @model_validator(mode="after")
    def _parse(self) -> PrincipalConfig:
        try:
            self._grants = Grants.from_dict(self.model_dump(exclude_none=True))
        except PrincipalError as exc:
            raise ValueError(str(exc)) from None
        return self

    @property
    def grants(self) -> Grants:
        return self._grants


class GatewayConfig(_Strict):
    model: str | None = None
    max_iterations: int | None = Field(default=None, ge=1, le=100)
    reconnect: ReconnectConfig = Field(default_factory=ReconnectConfig)
    channels: dict[ChannelName, ChannelConfig] = Field(default_factory=dict)
    # The operator's own chat ids ("telegram:111", "slack:T01/U02", "whatsapp:+4412…"): a DM
    # from one of them runs with the operator's powers; everyone else is a principal of its own.
    operators: list[str] = Field(default_factory=list)
    # Grants per chat principal or group, by principal id.
    principals: dict[str, PrincipalConfig] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check_ids(self) -> GatewayConfig:
        self.principals = {
            _principal_key(key, where="principals"): entry for key, entry in self.principals.items()
        }
        self.operators = [_principal_key(entry, where="operators") for entry in self.operators]
        for entry in self.operators:
            if ":group:" in entry or not entry.startswith(_PERSON_PREFIXES):
                raise ValueError(
                    f'operators: "{entry}" is not a person\'s chat id (like "telegram:111", '
                    '"slack:T01/U02" or "whatsapp:+4412345678")'
                )
        return self

    def is_operator(self, principal_id: str) -> bool:
        return principal_id in self.operators

    def grants_for(self, principal_id: str) -> Grants:
        """What gateway.json grants this principal (nothing, unless listed)."""
        entry = self.principals.get(principal_id)
        return entry.grants if entry is not None else Grants()

    def accounts(self) -> list[tuple[ChannelName, str, AccountConfig]]:
        """Every enabled account of every enabled channel."""
        found = []
        for name in CHANNEL_NAMES:
            channel = self.channels.get(name)
            if channel is None or not channel.enabled:
                continue
            for account_id, account in channel.accounts.items():
                if account.enabled:
                    found.append((name, account_id, account))
        return found

    def access(self, channel: str, account_id: str) -> AccessPolicy:
        """The account's effective access policy; unknown accounts get the strictest."""
        config = self.channels.get(channel)  # type: ignore[call-overload]
        if config is None:
            return AccessPolicy(dm_policy="disabled", group_policy="disabled", proactive=False)
        account = config.accounts.get(account_id) or AccountConfig()
        merged: dict[str, Any] = {key: getattr(config, key) for key in _ACCESS_KEYS}
        merged.update(
            {k: getattr(account, k) for k in _ACCESS_KEYS if getattr(account, k) is not None}
        )
        proactive = merged["proactive"]
        if proactive is None:
            # A personal WhatsApp number writing first looks like spam to WhatsApp: reply-only.
            proactive = channel != "whatsapp_web"
        return AccessPolicy(
            dm_policy=merged["dm_policy"],
            group_policy=merged["group_policy"],
            allow_from=normalize_list(channel, merged["allow_from"]),
            group_allow_from=normalize_list(channel, merged["group_allow_from"]),
            proactive=proactive,
        )

    def marks_read(self, channel: str, account_id: str) -> bool:
        """Whether admitted messages get a read receipt (`mark_read`, on by default)."""
        config = self.channels.get(channel)  # type: ignore[call-overload]
        account = config.accounts.get(account_id) if config is not None else None
        return account.mark_read if account is not None else True

    def reconnect_policy(self) -> ReconnectPolicy:
        r = self.reconnect
        return ReconnectPolicy(r.initial, r.maximum, r.factor, r.jitter).clamped()


def canonical_principal_id(raw: str) -> str:
    """`raw` as gateway.json and the gateway spell it (WhatsApp numbers as +digits)."""
    return _principal_key(raw, where="principal id")


def _principal_key(raw: str, *, where: str) -> str:
    """A principal id from gateway.json in its canonical form (WhatsApp numbers as +digits)."""
    text = raw.strip()
    if text.startswith("whatsapp:") and not text.startswith("whatsapp:group:"):
        text = "whatsapp:" + normalize_id("whatsapp", text.removeprefix("whatsapp:"))
    try:
        return check_id(text)
    except PrincipalError as exc:
        raise ValueError(f"{where}: {exc}") from None


def config_path(home: Path) -> Path:
    return home / CONFIG_FILE_NAME


def load_config(path: Path) -> GatewayConfig:
    """Missing file: an empty config. Broken file: ConfigError naming the problem."""
    text = read_user_text(path, "The gateway config")
    if text is None:
        return GatewayConfig()
    if not text.strip():
        return GatewayConfig()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}."
        ) from exc
    _register_secrets(data)
    try:
        return GatewayConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        if first["type"] == "extra_forbidden":
            import difflib

            known = {name for model in _known_models() for name in model.model_fields}
            close = difflib.get_close_matches(str(first["loc"][-1]), sorted(known), n=1)
            hint = f' (did you mean "{close[0]}"?)' if close else ""
            raise ConfigError(
                f'unknown key "{where}" in {path}{hint}; the README\'s gateway section lists '
                "the keys."
            ) from exc
        message = str(first["msg"]).removeprefix("Value error, ")
        raise ConfigError(f"{path}: {where + ': ' if where else ''}{message}.") from exc


def _register_secrets(data: Any) -> None:
    """Bot tokens and app secrets are redacted from tool output, logs and errors from now on
    (an HTTP error quoting a Telegram URL carries the token)."""
    from dexter import log
    from dexter.permissions.secrets import register_secrets, secret_values_from_settings

    values = secret_values_from_settings(data)
    register_secrets(values)
    log.add_secrets(values)


def _known_models() -> list[type[BaseModel]]:
    found: list[type[BaseModel]] = []
    pending: list[type[BaseModel]] = [_Strict]
    while pending:
        model = pending.pop()
        for sub in model.__subclasses__():
            found.append(sub)
            pending.append(sub)
    return found


def save_config(path: Path, config: GatewayConfig) -> None:
    private_dir(path.parent)
    # Private from creation: it holds bot tokens.
    data = config.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
    write_json(path, data, mode=PRIVATE)


class ConfigSource:
    """The current config, re-read only when the file's mtime or size changed (checked at most
    every `interval` seconds). A broken edit keeps the last good config running."""

    def __init__(
        self,
        path: Path,
        *,
        interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        initial: GatewayConfig | None = None,
    ) -> None:
        self.path = path
        self.interval = interval
        self._clock = clock
        self._checked = clock()
        self._stamp = self._stat()
        self._config = initial if initial is not None else load_config(path)
        self.error: str | None = None
        self.reloads = 0

    def _stat(self) -> tuple[int, int] | None:
        try:
            stat = self.path.stat()
        except OSError:
            return None
        return stat.st_mtime_ns, stat.st_size

    def get(self) -> GatewayConfig:
        now = self._clock()
        if now - self._checked < self.interval:
            return self._config
        self._checked = now
        stamp = self._stat()
        if stamp != self._stamp:
            self._stamp = stamp
            try:
                self._config = load_config(self.path)
                self.error = None
                self.reloads += 1
                log.info("gateway config reloaded from %s", self.path)
            except ConfigError as exc:
                self.error = str(exc)
                log.warning("gateway config not reloaded: %s", exc)
        return self._config
