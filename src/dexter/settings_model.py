"""Typed sections of `settings.json`, parsed once per `Settings`, on first use.

Read a section with `settings.section(MemorySettings)`: the first call validates the whole file
(every registered section) and caches the result, so a bad value anywhere is one `ConfigError`
naming the key and the file, e.g. `"memory" in .dexter/settings.json must be an object (got true)`.
This module imports pydantic, so only `Settings.section` imports it (`dexter --help` never does).

Adding a section is one class here::

    class CronSettings(Section):
        key = "cron"                      # the top-level key in settings.json
        max_concurrent: int = Field(2, ge=1)   # read as "maxConcurrent" (camelCase aliases)

Subclassing `Section` with a `key` registers it; `settings.section(CronSettings)` returns the
parsed value (defaults when the key is absent), `dexter doctor` stops calling "cron" unknown, and
unknown keys inside it are reported with a "did you mean" suggestion. A new top-level scalar
(`"asOf": "2025-06-30"`) is one field on `TopLevel`. Sections ignore keys they do not know
(settings written by the TypeScript original carry some) and doctor lists them; a section that
must refuse them (where a typo would send requests elsewhere) sets `extra="forbid"`, as
`ProviderOverride` does.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeVar, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from dexter.errors import ConfigError

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

SECTIONS: dict[str, type[Section]] = {}


class Section(BaseModel):
    """A JSON object in settings.json. Subclasses with `key` are top-level sections."""

    model_config = ConfigDict(
        extra="allow", alias_generator=to_camel, populate_by_name=True, frozen=True
    )
    key: ClassVar[str | None] = None

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if cls.__dict__.get("key") is not None:
            SECTIONS[str(cls.key)] = cls


class TopLevel(Section):
    """Top-level scalar keys. `model`/`maxIterations` keep their own readers in `config.py`
    (they are needed before anything else is loaded); they are declared here so doctor knows them.
    `key = ""` means: validated against the file's top level."""

    key = ""
    model: str | None = None
    provider: str | None = None
    model_id: str | None = None
    max_iterations: int | str | None = None
    router_model: str | None = Field(None, min_length=1)
    finance_tools: Literal["routed", "direct"] | None = None
    # Check every answer's figures against the run's data: off, flag (mark what is unsupported),
    # repair (ask the model once to fix it, then mark what is left). Read by the runtime
    # (`dexter.runtime.verify_mode`), with DEXTER_VERIFY over it.
    verify: Literal["off", "flag", "repair"] | None = None
    web_search_preferred_provider: str | None = None
    web_search_keyless: bool = True
    # Validated by their owners (store/prices.py, permissions/rules.py) with their own messages.
    prices: dict[str, Any] | None = None
    permissions: dict[str, Any] | None = None
    mcp_servers: dict[str, Any] | None = None

    @field_validator("finance_tools", "verify", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value


class MemorySettings(Section):
    key = "memory"
    enabled: bool = True
    embedding_provider: str | None = None
    embedding_model: str | None = None


class DatabaseSettings(Section):
    """`database`: where sessions, ledger, memory, jobs and gateway state live. Absent: the
    SQLite file in DEXTER_HOME (one user, no services). A `postgresql://` URL: team mode.
    DEXTER_DATABASE_URL overrides it (`dexter.store.database_url`)."""

    key = "database"
    url: str | None = Field(None, min_length=1)


class WebUserSettings(Section):
    """One account of `dexter web`: `passwordHash` from `dexter web --hash-password`; `operator`
    makes it the operator's own login (every power), else it is the principal `web:<name>`."""

    password_hash: str = Field(min_length=1)
    name: str = ""
    operator: bool = False
    # Beyond the default (public tools, own memory and jobs), as for a chat user.
    grants: dict[str, Any] | None = None


class WebSettings(Section):
    """`web`: who may log in to `dexter web` with a password (`dexter.web.accounts`)."""

    key = "web"
    users: dict[str, WebUserSettings] = Field(default_factory=dict)


class WebFetchSettings(Section):
    key = "webFetch"
    allowed_hosts: tuple[str, ...] = ()


class OpenBBSettings(Section):
    """`openbb`: Dexter as a custom agent in OpenBB Workspace (served by `dexter web`). Read by
    `dexter.web.openbb_config.openbb_access`; DEXTER_OPENBB_API_KEY overrides `apiKey`."""

    key = "openbb"
    # What Workspace must send (`Authorization: Bearer …` or `X-API-Key: …`); no key, no endpoint.
    api_key: str | None = None
    # Browser origins whose pages may call the endpoint (Workspace's own, unless told otherwise).
    allow_origins: tuple[str, ...] = ("https://pro.openbb.co",)
    # The model its runs use (None: the settings' model).
    model: str | None = Field(None, min_length=1)


class RetrySettings(Section):
    """How every model call (main loop, router, compaction, constraints, memory flush) retries."""

    key = "retry"
    attempts: int = Field(4, ge=1, le=20)
    base_delay: float = Field(1.0, gt=0)
    max_delay: float = Field(30.0, gt=0)
    # A stream silent this long is abandoned and retried (env DEXTER_STREAM_IDLE_TIMEOUT).
    stream_idle_timeout: float = Field(60.0, gt=0)
    # A Retry-After longer than this fails at once with a message instead of waiting.
    max_retry_after: float = Field(60.0, ge=0)


class CronSection(Section):
    """`cron`: read by `dexter.cron.service.cron_settings` (which adds its own env override);
    declared here so its values are type-checked once and doctor knows its keys."""

    key = "cron"
    tick_seconds: float | None = Field(None, ge=0.05)
    missed_grace_minutes: float | None = Field(None, ge=0)
    max_concurrent_runs: int | None = Field(None, ge=1)
    run_timeout_minutes: float | None = Field(None, ge=1)


_SERVER_KINDS = Literal[
    "openai", "anthropic", "llamacpp", "vllm", "ollama", "lmstudio", "litellm", "generic"
]


class OverflowSignalsOverride(Section):
    """`overflowSignals` of a provider's `profile`: how its server says a prompt is too long."""

    model_config = ConfigDict(extra="forbid")
    empty_stream: bool | None = None
    statuses: tuple[int, ...] | None = None
    # Added to the kind's own phrases (matched case-insensitively).
    phrases: tuple[str, ...] | None = None
    phrases_anywhere: bool | None = None

    @field_validator("statuses")
    @classmethod
    def _statuses(cls, value: tuple[int, ...] | None) -> tuple[int, ...] | None:
        for status in value or ():
            if not 400 <= status <= 599:
                raise ValueError(f"{status} is not an HTTP error status (400-599)")
        return value


class ProfileOverride(Section):
    """`profile` of a provider: what its server accepts, over what a probe found (see
    `dexter.models.profile.ServerProfile`). Fields left out keep the detected value."""

    model_config = ConfigDict(extra="forbid")
    server_kind: _SERVER_KINDS | None = None
    # "" or null; an explicit null is meaningful, so presence is read from model_fields_set.
    assistant_tool_call_content: Literal[""] | None = None
    system_as_string: bool | None = None
    output_limit_param: Literal["max_tokens", "max_completion_tokens"] | None = None
    # null: send no allowance unless a request sets one.
    default_output_tokens: int | None = Field(None, ge=1)
    reports_usage_in_stream: bool | None = None
    overflow_signals: OverflowSignalsOverride | None = None
    # false: never ask the server (the kind and window then come from here and the settings).
    probe: bool = True

    @field_validator("server_kind", mode="before")
    @classmethod
    def _kind(cls, value: object) -> object:
        return (
            value.lower().replace(".", "").replace("-", "").replace("_", "").replace(" ", "")
            if isinstance(value, str)
            else value
        )


class ProviderOverride(Section):
    """One entry of `providers`: changes to a built-in provider, or a provider of the user's own."""

    model_config = ConfigDict(extra="forbid")
    protocol: Literal["openai", "anthropic"] | None = None
    display_name: str | None = Field(None, min_length=1)
    base_url: str | None = Field(None, min_length=1)
    base_url_env: str | None = Field(None, pattern=_ENV_NAME.pattern)
    api_key_env: str | None = Field(None, pattern=_ENV_NAME.pattern)
    api_key: str | None = Field(None, min_length=1)
    key_required: bool | None = None
    context_window: int | None = Field(None, ge=1)
    context_windows: dict[str, int] | None = None
    default_model: str | None = Field(None, min_length=1)
    fast_model: str | None = Field(None, min_length=1)
    timeout: float | None = Field(None, gt=0)
    max_output_tokens: int | None = Field(None, ge=1)
    thinking_budget: int | None = Field(None, ge=1)
    reasoning_field: str | None = None
    extra_body: dict[str, Any] | None = None
    headers: dict[str, str] | None = None
    models: tuple[str, ...] | None = None
    profile: ProfileOverride | None = None

    @field_validator("protocol", mode="before")
    @classmethod
    def _protocol(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("context_windows")
    @classmethod
    def _windows(cls, value: dict[str, int] | None) -> dict[str, int] | None:
        for model, window in (value or {}).items():
            if window < 1:
                raise ValueError(f"window for {model!r} must be a positive whole number")
        return value

    @field_validator(
        "display_name", "base_url", "base_url_env", "api_key_env", "api_key", mode="before"
    )
    @classmethod
    def _strip(cls, value: object) -> object:
        return value.strip() if isinstance(value, str) else value


class ProvidersSettings(Section):
    """`providers`: an object keyed by provider id (matched case-insensitively)."""

    key = "providers"
    entries: dict[str, ProviderOverride] = {}

    @model_validator(mode="before")
    @classmethod
    def _wrap(cls, value: object) -> object:
        if isinstance(value, dict):
            return {"entries": {str(k).strip().lower(): v for k, v in value.items()}}
        return value


S = TypeVar("S", bound=Section)


class ParsedSettings:
    """Every registered section of one settings file, validated."""

    def __init__(self, sections: dict[type[Section], Section]) -> None:
        self._sections = sections

    def get(self, cls: type[S]) -> S:
        value = self._sections[cls]
        assert isinstance(value, cls)
        return value

    def unknown_keys(self) -> list[str]:
        """One line per key no section knows, with the closest known key when there is one."""
        lines: list[str] = []
        for cls, value in self._sections.items():
            prefix = "" if cls.key == "" else f"{cls.key}."
            known = _known_keys(cls)
            for extra in value.model_extra or {}:
                if cls.key == "" and extra in SECTIONS:
                    continue
                close = difflib.get_close_matches(extra, known, n=1)
                hint = f' (did you mean "{prefix}{close[0]}"?)' if close else ""
                lines.append(f'unknown key "{prefix}{extra}"{hint}')
        return lines


def _known_keys(cls: type[BaseModel]) -> list[str]:
    names = [field.alias or name for name, field in cls.model_fields.items()]
    if cls is TopLevel:
        names += [key for key in SECTIONS if key]
    return names


def parse_file_settings(data: dict[str, Any], where: str) -> ParsedSettings:
    """Validate every registered section of `data` (the parsed file); `where` names the file in
    messages. Raises ConfigError with one line for the first bad value."""
    parsed: dict[type[Section], Section] = {}
    for key, cls in SECTIONS.items():
        raw: object = {k: v for k, v in data.items() if k not in SECTIONS} if key == "" else None
        if key:
            raw = data.get(key)
            if raw is None:
                parsed[cls] = cls()
                continue
            if not isinstance(raw, dict):
                raise ConfigError(f'"{key}" in {where} must be an object (got {_show(raw)}).')
        try:
            parsed[cls] = cls.model_validate(raw)
        except ValidationError as exc:
            raise ConfigError(describe_error(exc, cls, where)) from None
    return ParsedSettings(parsed)


def describe_error(exc: ValidationError, cls: type[Section], where: str) -> str:
    """The first problem in `exc` as one line: `"memory.enabled" in FILE must be true or false
    (got "yes").`"""
    error = exc.errors(include_url=False)[0]
    loc = [
        f"[{part}]" if isinstance(part, int) else str(part)
        for part in error["loc"]
        if part != "entries" or cls is not ProvidersSettings
    ]
    prefix = [cls.key] if cls.key else []
    name = ".".join([*prefix, *loc]).replace(".[", "[") or str(cls.key)
    kind = error["type"]
    ctx = error.get("ctx") or {}
    if kind == "extra_forbidden":
        parent = _model_at(cls, [p for p in error["loc"][:-1]])
        known = _known_keys(parent) if parent is not None else []
        close = difflib.get_close_matches(loc[-1], known, n=1)
        hint = f' (did you mean "{close[0]}"?)' if close else ""
        allowed = f"; allowed: {', '.join(sorted(known))}" if known else ""
        return f'unknown key "{name}" in {where}{hint}{allowed}.'
    problem = _PROBLEMS.get(kind)
    if problem is None:
        if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
            word = {"greater_than_equal": "at least", "greater_than": "above"}.get(
                kind, "at most" if kind == "less_than_equal" else "below"
            )
            bound = next(iter(ctx.values()), "")
            problem = f"must be {word} {bound}"
        elif kind == "literal_error":
            problem = f"must be one of {ctx.get('expected', '')}"
        elif kind == "string_pattern_mismatch":
            problem = "must be an environment variable name"
        elif kind == "value_error":
            problem = str(ctx.get("error", error["msg"]))
        else:
            problem = "is not valid: " + error["msg"][:1].lower() + error["msg"][1:]
    return f'"{name}" in {where} {problem} (got {_show(error.get("input"))}).'


_PROBLEMS = {
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "dict_type": "must be an object",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "string_type": "must be a string",
    "string_too_short": "must not be empty",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "list_type": "must be a list",
    "tuple_type": "must be a list",
    "set_type": "must be a list",
    "frozen_set_type": "must be a list",
}


def _model_at(cls: type[BaseModel], loc: list[int | str]) -> type[BaseModel] | None:
    current: Any = cls
    for part in loc:
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(str(part))
            if field is None:
                field = next(
                    (f for f in current.model_fields.values() if f.alias == str(part)), None
                )
            if field is None:
                return None
            current = field.annotation
        elif get_origin(current) is dict:
            current = get_args(current)[1]
        else:
            return None
        # Optional[X]: look through to X.
        args = [a for a in get_args(current) if a is not type(None)]
        if get_origin(current) is not dict and len(args) == 1:
            current = args[0]
    if isinstance(current, type) and issubclass(current, BaseModel):
        return current
    return None


def _show(value: object) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def display_path(path: Path, cwd: Path) -> str:
    """The settings file as the user would type it: relative to the working directory if inside."""
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return str(path)
