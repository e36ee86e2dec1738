"""Settings: CLI overrides > environment > `.env` > `$DEXTER_HOME/settings.json` > defaults.

This module is imported on every CLI start, so it uses only the standard library at import time;
python-dotenv is imported when settings are actually loaded.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from dexter.errors import ConfigError as ConfigError  # its home before; many modules import it here

if TYPE_CHECKING:
    from dexter.settings_model import ParsedSettings, Section

    SectionT = TypeVar("SectionT", bound=Section)

DEXTER_DIR_NAME = ".dexter"
SETTINGS_FILE_NAME = "settings.json"
DEFAULT_MAX_ITERATIONS = 10

# Where the selected model came from, for `dexter doctor` and error messages.
ModelSource = Literal["flag", "env", "dotenv", "settings", "default"]

# The original rewrote these retired ids in settings.json on load; we upgrade them in memory only,
# so reading settings never writes the file behind the user's back.
_RETIRED_MODEL_IDS = {"gpt-5.5": "gpt-5.6-sol", "gpt-5.4": "gpt-5.6-sol", "gpt-5.2": "gpt-5.6-sol"}


@dataclass(frozen=True)
class Settings:
    """Effective configuration for one process. Build it with `load_settings`.

    `env` is the merged view of `.env` and the process environment (environment wins); code that
    needs keys or base URLs reads it instead of `os.environ`, so `.env` works without mutating the
    process and tests can inject everything.
    """

    home: Path
    home_source: HomeSource = "env"
    cwd: Path = field(default_factory=Path.cwd)
    model: str | None = None
    model_source: ModelSource = "default"
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    # Secrets live in these, so keep them out of reprs that might end up in logs or tracebacks.
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    file_data: dict[str, Any] = field(default_factory=dict, repr=False)
    providers: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    dotenv_path: Path | None = None
    # Only set when loaded with tolerate_corrupt=True (for `dexter doctor`).
    settings_error: str | None = None

    # Filled on the first `section()` call; a dict so the frozen dataclass can cache into it.
    _parsed: dict[str, ParsedSettings] = field(
        default_factory=dict, repr=False, compare=False, init=False
    )

    @property
    def settings_path(self) -> Path:
        return self.home / SETTINGS_FILE_NAME

    def parsed(self) -> ParsedSettings:
        """Every typed section of the settings file, validated once (ConfigError on a bad one)."""
        cached = self._parsed.get("file")
        if cached is None:
            from dexter.settings_model import display_path, parse_file_settings

            where = display_path(self.settings_path, self.cwd)
            cached = self._parsed["file"] = parse_file_settings(self.file_data, where)
        return cached

    def section(self, cls: type[SectionT]) -> SectionT:
        """One typed section, e.g. `settings.section(MemorySettings).enabled`."""
        return self.parsed().get(cls)


HomeSource = Literal["env", "project", "user"]
HOME_SOURCE_LABELS: dict[HomeSource, str] = {
    "env": "DEXTER_HOME",
    "project": "project .dexter found from the working directory",
    "user": "user-level default ~/.dexter",
}


def find_home(cwd: Path, env: Mapping[str, str]) -> tuple[Path, HomeSource]:
    """Where state lives, and why: `DEXTER_HOME` (relative to `cwd` when relative); else the
    nearest `.dexter/` directory in `cwd` or above it (like `.git`), so `ask --continue` finds the
    same session from any subfolder of a project; else `~/.dexter`, the same folder name the
    original uses (chosen over the platform data dir so users find SOUL.md and RULES.md)."""
    raw = env.get("DEXTER_HOME", "").strip()
    if raw:
        path = Path(raw).expanduser()
        return (path if path.is_absolute() else cwd / path), "env"
    for folder in (cwd, *cwd.parents):
        candidate = folder / DEXTER_DIR_NAME
        if candidate.is_dir():
            return candidate, "project"
    return Path.home() / DEXTER_DIR_NAME, "user"


def default_home(cwd: Path, env: Mapping[str, str]) -> Path:
    return find_home(cwd, env)[0]


def read_settings_file(path: Path, *, what: str = "") -> dict[str, Any]:
    """Parse a settings file. Missing or blank means `{}`; anything unreadable is a ConfigError.

    Never returning `{}` for a broken file is the point: the original did, and its next save then
    replaced the user's permissions and other keys with a near-empty file. `what` names a file
    that is not Dexter's own (another program's config, in the same JSON shape): its messages
    say whose it is and do not point at `dexter doctor`, which checks Dexter's settings only.
    """
    label = f"{what} {path}" if what else f"Settings file {path}"
    # What to do: Dexter's own file is checked by `dexter doctor`; another program's is not.
    fix = (
        "Fix it by hand, then run this again; Dexter did not change it."
        if what
        else "Fix it or move it aside; Dexter will not overwrite it."
    )
    check = "" if what else " Run `dexter doctor` to check."
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{label} is not valid UTF-8 (byte {exc.start}). {fix}") from exc
    except OSError as exc:
        raise ConfigError(f"Cannot read {label}: {exc.strerror or exc}.") from exc
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{label} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}. "
            f"{fix}{check}"
        ) from exc
    if not isinstance(data, dict):
        raise ConfigError(
            f"{label} must hold a JSON object ({{...}}), not {json_type(data)}. {fix}"
        )
    return data


def json_type(value: object) -> str:
    """What a parsed JSON value is, for messages: "an array", "a string", "an object" …"""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "null" if value is None else type(value).__name__


def _read_dotenv(path: Path) -> dict[str, str]:
    if not path.is_file():
        return {}
    from dotenv import dotenv_values

    try:
        values = dotenv_values(path)
    except UnicodeDecodeError as exc:
        from dexter.userfiles import not_utf8

        raise not_utf8(path, exc, "The environment file") from None
    except OSError as exc:
        raise ConfigError(f"Cannot read {path}: {exc}.") from exc
    # A bare `KEY` line with no `=` parses as None: it sets nothing.
    return {key: value for key, value in values.items() if value is not None}


def _model_from_file(data: Mapping[str, Any], path: Path) -> str | None:
    model = data.get("model")
    if model is not None:
        if not isinstance(model, str):
            raise ConfigError(f'"model" in {path} must be a string like "anthropic:claude-...".')
        return model.strip() or None
    # Settings written by the original TypeScript Dexter: {"provider": ..., "modelId": ...}.
    provider = data.get("provider")
    model_id = data.get("modelId")
    provider = provider.strip() if isinstance(provider, str) else ""
    model_id = model_id.strip() if isinstance(model_id, str) else ""
    model_id = _RETIRED_MODEL_IDS.get(model_id, model_id)
    if model_id:
        # Its Ollama and OpenRouter ids already carry their "provider:" prefix.
        if ":" in model_id or not provider:
            return model_id
        return f"{provider}:{model_id}"
    return provider or None


def _parse_iterations(raw: object, where: str) -> int:
    if isinstance(raw, bool):
        value = None
    elif isinstance(raw, int):
        value = raw
    elif isinstance(raw, str):
        try:
            value = int(raw.strip())
        except ValueError:
            value = None
    else:
        value = None
    if value is None or value < 1:
        raise ConfigError(f"{where} must be a whole number of at least 1, got {raw!r}.")
    return value


def _providers_from_file(data: Mapping[str, Any], path: Path) -> dict[str, dict[str, Any]]:
    raw = data.get("providers")
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(
            f'"providers" in {path} must be an object keyed by provider id, e.g. '
            '{"ollama": {"baseUrl": "http://localhost:11434"}}.'
        )
    result: dict[str, dict[str, Any]] = {}
    for key, value in raw.items():
        if not isinstance(value, dict):
            raise ConfigError(f'"providers.{key}" in {path} must be an object.')
        # Provider ids are matched case-insensitively everywhere ("OpenAI:gpt-x" works too).
        result[str(key).strip().lower()] = dict(value)
    return result


def load_settings(
    *,
    cwd: Path | None = None,
    environ: Mapping[str, str] | None = None,
    model: str | None = None,
    max_iterations: int | None = None,
    tolerate_corrupt: bool = False,
) -> Settings:
    """Load settings for `cwd` (default: the current directory).

    `environ` defaults to `os.environ` and is never modified; `.env` in `cwd` fills in what it
    lacks. `model` and `max_iterations` are CLI overrides. With `tolerate_corrupt`, a broken
    settings file is reported in `settings_error` instead of raising (for `dexter doctor`).
    """
    base = (cwd if cwd is not None else Path.cwd()).absolute()
    from dexter.secret_files import read_secret_files

    # `NAME_FILE` (a compose secret) fills `NAME` within its own layer, so a key read from a file
    # the environment names still wins over `.env`, as the variable itself would. The values are
    # redacted below like any other: by the secret-looking names they now sit under.
    process_env, _ = read_secret_files(os.environ if environ is None else environ)
    dotenv_file = base / ".env"
    dotenv, _ = read_secret_files(_read_dotenv(dotenv_file), where=str(dotenv_file))
    merged = {**dotenv, **process_env}

    home, home_source = find_home(base, merged)
    from dexter import log

    log.use_home(home)
    path = home / SETTINGS_FILE_NAME
    settings_error: str | None = None
    try:
        file_data = read_settings_file(path)
    except ConfigError as exc:
        if not tolerate_corrupt:
            raise
        settings_error = str(exc)
        file_data = {}

    selected: str | None
    source: ModelSource
    if model is not None and model.strip():
        selected, source = model.strip(), "flag"
    elif process_env.get("DEXTER_MODEL", "").strip():
        selected, source = process_env["DEXTER_MODEL"].strip(), "env"
    elif dotenv.get("DEXTER_MODEL", "").strip():
        selected, source = dotenv["DEXTER_MODEL"].strip(), "dotenv"
    else:
        selected = _model_from_file(file_data, path)
        source = "settings" if selected else "default"

    if max_iterations is not None:
        iterations = _parse_iterations(max_iterations, "--max-iterations")
    elif merged.get("DEXTER_MAX_ITERATIONS", "").strip():
        iterations = _parse_iterations(merged["DEXTER_MAX_ITERATIONS"], "DEXTER_MAX_ITERATIONS")
    elif "maxIterations" in file_data:
        iterations = _parse_iterations(file_data["maxIterations"], f'"maxIterations" in {path}')
    else:
        iterations = DEFAULT_MAX_ITERATIONS

    # Every key Dexter knows of is redacted from tool output, scratchpads and logs from now on.
    from dexter.permissions.secrets import (
        register_secrets,
        secret_values_from_env,
        secret_values_from_settings,
    )

    stored = _stored_key_values(home)
    register_secrets(
        value
        for value in secret_values_from_env(merged) | secret_values_from_settings(file_data)
        if not is_placeholder(value)
    )
    register_secrets(stored)
    _register_secrets(file_data, merged, stored)
    return Settings(
        home=home,
        home_source=home_source,
        cwd=base,
        model=selected,
        model_source=source,
        max_iterations=iterations,
        env=MappingProxyType(merged),
        file_data=file_data,
        providers=_providers_from_file(file_data, path),
        dotenv_path=dotenv_file if dotenv_file.is_file() else None,
        settings_error=settings_error,
    )


def _stored_key_values(home: Path) -> set[str]:
    """Every key saved with `dexter keys set`, whichever provider it is for (a damaged keys file
    yields none here; `dexter keys list` and `dexter doctor` report it)."""
    from dexter.keystore import KeyStoreError, load_keys

    try:
        keys = load_keys(home)
    except KeyStoreError:
        return set()
    return {value.strip() for value in keys.values() if not is_placeholder(value)}


def _register_secrets(
    file_data: Mapping[str, Any], env: Mapping[str, str], stored: set[str]
) -> None:
    """Tell the logger every key value it must never write: secret-looking environment names,
    the keys (or key variables) named in the settings' `providers` blocks, and stored keys."""
    from dexter import log

    log.add_secrets_from_env(env)
    log.add_secrets(stored)
    providers = file_data.get("providers")
    for entry in providers.values() if isinstance(providers, dict) else ():
        if not isinstance(entry, dict):
            continue
        key, key_env = entry.get("apiKey"), entry.get("apiKeyEnv")
        log.add_secrets([key if isinstance(key, str) else None])
        if isinstance(key_env, str):
            log.add_secrets([env.get(key_env)])


_PLACEHOLDERS = frozenset({"changeme", "change-me", "change_me", "none", "null", "todo", "xxx"})


def is_placeholder(value: str | None) -> bool:
    """True for values copied from templates rather than real secrets (`your-key-here`, `<KEY>`).

    Ellipses count too: real keys never contain them, while doc examples (`sk-...`) and masked
    output copied back from `dexter doctor` (`sk-…abcd`) do.
    """
    if value is None:
        return True
    text = value.strip().strip("'\"").strip()
    lowered = text.lower()
    return (
        not text
        or lowered.startswith("your")
        or lowered in _PLACEHOLDERS
        or (text.startswith("<") and text.endswith(">"))
        or "..." in text
        or "…" in text
    )


def get_secret(settings: Settings, name: str) -> str | None:
    """The value of env var `name` (environment or `.env`), or None if unset or a placeholder."""
    value = settings.env.get(name)
    if value is None or is_placeholder(value):
        return None
    return value.strip()


def save_setting(settings_path: Path, key: str, value: Any) -> None:
    """Set one top-level key in the settings file (None removes it), atomically.

    Refuses (ConfigError) when the existing file doesn't parse, so a typo never costs the user the
    rest of their settings. The file keeps its mode; a new one is private (it may hold API keys).
    """
    from dexter.atomicfile import PRIVATE, private_dir, write_json

    # Write through a symlinked settings file rather than replacing the link with a plain file.
    target = Path(os.path.realpath(settings_path))
    data = read_settings_file(target)
    if value is None:
        data.pop(key, None)
    else:
        data[key] = value
    private_dir(target.parent)
    write_json(target, data, ensure_ascii=False, mode=PRIVATE, keep_mode=True, durable=True)
