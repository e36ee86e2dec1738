"""API keys saved with `dexter keys set`: `$DEXTER_HOME/keys.json`, readable by the user only.

A key source after the environment (and `.env`): an exported variable always wins, so a shell or
CI can override a stored key without editing it. Values are never logged or printed: loading
settings registers every stored value for redaction (`config.load_settings`), and the file is a
secret path that no tool reads. At the ground, beside `config`, because settings loading reads it.
"""

from __future__ import annotations

import json
from pathlib import Path

from dexter.atomicfile import PRIVATE, private_dir, write_json
from dexter.errors import ConfigError

KEYS_FILE_NAME = "keys.json"
# Said with every problem: the file holds keys, so it is never replaced by a fresh one.
_WHAT_TO_DO = (
    "Fix it or move it aside (Dexter will not overwrite it), then store your keys again with "
    "`dexter keys set PROVIDER`."
)


class KeyStoreError(ConfigError):
    """The keys file exists but cannot be read as a JSON object of strings."""


def keys_path(home: Path) -> Path:
    return home / KEYS_FILE_NAME


def load_keys(home: Path) -> dict[str, str]:
    """Stored keys by variable name (`OPENAI_API_KEY`); {} when none were ever stored."""
    path = keys_path(home)
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except UnicodeDecodeError as error:
        raise KeyStoreError(
            f"{path} is not valid UTF-8 (offset {error.start}). {_WHAT_TO_DO}"
        ) from None
    except OSError as error:
        raise KeyStoreError(f"cannot read {path}: {error.strerror}. {_WHAT_TO_DO}") from None
    try:
        data = json.loads(raw or "{}")
    except json.JSONDecodeError as error:
        raise KeyStoreError(
            f"{path} is not valid JSON (line {error.lineno}). {_WHAT_TO_DO}"
        ) from None
    if not isinstance(data, dict):
        raise KeyStoreError(f"{path} must hold a JSON object of names to keys. {_WHAT_TO_DO}")
    return {str(k): v for k, v in data.items() if isinstance(v, str) and v.strip()}


def stored_key(home: Path, name: str) -> str | None:
    try:
        return load_keys(home).get(name)
    except KeyStoreError:
        # A damaged keys file must not hide keys from the environment; `dexter keys list` and
        # `dexter doctor` report it.
        return None


def _write(home: Path, keys: dict[str, str]) -> None:
    path = keys_path(home)
    private_dir(path.parent)
    # 0600 from the moment the file exists: never readable by others, not even briefly.
    write_json(path, keys, sort_keys=True, mode=PRIVATE)


def save_key(home: Path, name: str, value: str) -> Path:
    keys = load_keys(home)
    keys[name] = value.strip()
    _write(home, keys)
    return keys_path(home)


def remove_key(home: Path, name: str) -> bool:
    keys = load_keys(home)
    if name not in keys:
        return False
    del keys[name]
    _write(home, keys)
    return True
