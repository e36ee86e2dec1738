"""Reading the files a person edits by hand: settings-like JSON, HEARTBEAT.md, MEMORY.md and the
daily notes, SOUL.md, RULES.md, keys.json, gateway.json.

Any of them may be saved in another encoding by an editor, or be a folder or unreadable. Each
such case is a `ConfigError` (one line, exit 2) that names the file, says what is wrong with it
and what to do, and promises that Dexter has not changed it; never a decode error reaching the
user as "unexpected error". Standard library only, importable from every layer.
"""

from __future__ import annotations

from pathlib import Path

from dexter.errors import ConfigError

_LEAVE_IT = "Dexter has not changed it"


class UnreadableFile(ConfigError):
    """A hand-edited file exists but cannot be read as UTF-8 text."""


def not_utf8(path: Path, error: UnicodeDecodeError, what: str = "") -> UnreadableFile:
    """The error for `path` holding bytes that are not UTF-8 (`what` names the file's role)."""
    byte = error.object[error.start : error.start + 1].hex() if error.object else "?"
    label = f"{what} {path}" if what else str(path)
    return UnreadableFile(
        f"{label} is not valid UTF-8 (byte 0x{byte} at offset {error.start}). Save it as UTF-8 "
        f"(in most editors: Save with encoding UTF-8) or move it aside; {_LEAVE_IT}."
    )


def unreadable(path: Path, error: OSError, what: str = "") -> UnreadableFile:
    label = f"{what} {path}" if what else str(path)
    reason = "it is a folder" if isinstance(error, IsADirectoryError) else error.strerror or error
    return UnreadableFile(f"Cannot read {label}: {reason}. Fix it or move it aside.")


def read_user_text(path: Path, what: str = "", *, encoding: str = "utf-8") -> str | None:
    """The file's text, or None when it does not exist; an `UnreadableFile` otherwise."""
    try:
        return path.read_text(encoding=encoding)
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as error:
        raise not_utf8(path, error, what) from None
    except OSError as error:
        raise unreadable(path, error, what) from None
