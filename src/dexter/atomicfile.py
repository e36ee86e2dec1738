"""Replace a file whole: a reader sees the old content or the new, never a part of either.

Every file Dexter rewrites (settings, keys, memory, gateway state, cached bodies, tool results,
the files the agent edits) goes through here. The new content is written to a temporary file
next to the target (same directory, so the rename cannot cross file systems), which is then
renamed over it with `os.replace`; on any failure, Ctrl-C included, the temporary file is
removed and the target is untouched.

Modes:
- `mode=None`: a new file gets the usual default (0o666 less the umask), like `open()`.
- `mode=0o600` (`PRIVATE`): the file has exactly this mode, from the moment the temporary file
  exists, so a secret is never readable by others, not even briefly.
- `keep_mode=True`: an existing target keeps its permission bits (the temporary file is created
  with them, never wider); a new one falls back to `mode`.

Dexter's own state (everything under its home) is private whatever the umask: folders are made
with `private_dir` (0700), files it appends to are opened with `open_private`, and a file another
library fills (a SQLite database) is first made empty with `create_private` (0600). These never
change the mode of anything that already exists.

`durable=True` also flushes the file and then its directory to disk before returning, so the
new content survives a power cut, not just a crash of this process.

A failure is raised as the `OSError` it was (callers catch `OSError`; the CLI turns it into one
line), with `filename` set to the target, so the message names the file the user knows rather
than a temporary name. On Windows `os.replace` refuses while another process holds the target
open without delete sharing; that too is raised as it is, after the temporary file is removed.

Standard library only, and importable from every layer.
"""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path
from typing import Any, Literal

PRIVATE = 0o600
PRIVATE_DIR = 0o700

# O_EXCL: never reuse or follow anything already at the temporary name. O_BINARY: on Windows a
# descriptor from os.open is in text mode unless asked otherwise, which would turn \n into \r\n.
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
_CREATE |= getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOINHERIT", 0)
_ATTEMPTS = 100


def write_bytes(
    path: Path,
    data: bytes,
    *,
    mode: int | None = None,
    keep_mode: bool = False,
    durable: bool = False,
) -> None:
    """Replace `path` with `data`."""
    _replace(path, data, {"mode": "wb"}, mode=mode, keep_mode=keep_mode, durable=durable)


def write_text(
    path: Path,
    text: str,
    *,
    encoding: str = "utf-8",
    errors: str = "strict",
    newline: str | None = None,
    mode: int | None = None,
    keep_mode: bool = False,
    durable: bool = False,
) -> None:
    """Replace `path` with `text`; `encoding`, `errors` and `newline` mean what they do for
    `open()` (`newline=""` writes the text exactly, with no line-ending translation)."""
    opened = {"mode": "w", "encoding": encoding, "errors": errors, "newline": newline}
    _replace(path, text, opened, mode=mode, keep_mode=keep_mode, durable=durable)


def write_json(
    path: Path,
    data: Any,
    *,
    sort_keys: bool = False,
    ensure_ascii: bool = True,
    mode: int | None = None,
    keep_mode: bool = False,
    durable: bool = False,
) -> None:
    """Replace `path` with `data` as JSON laid out for a person to read and edit: indented by
    two spaces, ending in a newline."""
    import json

    text = json.dumps(data, indent=2, sort_keys=sort_keys, ensure_ascii=ensure_ascii) + "\n"
    write_text(path, text, mode=mode, keep_mode=keep_mode, durable=durable)


def _replace(
    path: Path,
    content: bytes | str,
    opened: dict[str, Any],
    *,
    mode: int | None,
    keep_mode: bool,
    durable: bool,
) -> None:
    final = mode
    if keep_mode:
        try:
            final = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            pass
    try:
        temp, fd = _create_temp(path, 0o666 if final is None else final)
    except OSError as error:
        _name_target(error, path)
        raise
    try:
        with os.fdopen(fd, **opened) as handle:
            handle.write(content)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        if final is not None:
            # The umask may have taken bits away at creation; the mode asked for is exact.
            os.chmod(temp, final)
        os.replace(temp, path)
    except BaseException as error:
        try:
            os.unlink(temp)
        except OSError:
            pass
        if isinstance(error, OSError):
            _name_target(error, path)
        raise
    if durable:
        _sync_directory(path.parent)


def _create_temp(path: Path, mode: int) -> tuple[str, int]:
    # Hidden, and ending in .tmp, so listings and globs of the real files pass it over; the
    # target's name is cut short so a long one still leaves room for the suffix.
    for _ in range(_ATTEMPTS):
        temp = os.path.join(path.parent, f".{path.name[:64]}.{os.urandom(6).hex()}.tmp")
        try:
            return temp, os.open(temp, _CREATE, mode)
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name next to {path}")


def _name_target(error: OSError, path: Path) -> None:
    # "Permission denied: '.settings.json.3f9a0c.tmp'" would name a file the user never saw.
    error.filename = str(path)
    if error.filename2 is not None:
        del error.filename2  # deleting (not setting None) keeps "-> None" out of the message


def _sync_directory(directory: Path) -> None:
    # Makes the rename itself durable. Windows cannot open a directory for this, and some file
    # systems refuse it: the data is already on disk, so neither is an error.
    if os.name == "nt":
        return
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def private_dir(path: Path) -> Path:
    """Make `path` and any missing parents as folders only their owner can enter (0700, exactly:
    the umask may only take bits away, and a narrower one would lock the owner out). Folders
    that exist are left as they are. Returns `path`."""
    if path.is_dir():
        return path
    if path.parent != path:
        private_dir(path.parent)
    try:
        os.mkdir(path, PRIVATE_DIR)
    except FileExistsError:
        if not path.is_dir():
            raise
        return path  # made meanwhile by another thread or process: theirs to set
    os.chmod(path, PRIVATE_DIR)  # the umask may have taken bits away
    return path


def create_private(path: Path) -> bool:
    """Create `path` empty with mode 0600 if nothing is there; True if it was created.

    For files another library writes: SQLite gives a database's `-wal` and `-shm` files the
    mode of the database, so a database made here first keeps all three private."""
    try:
        fd = os.open(path, _CREATE, PRIVATE)
    except FileExistsError:
        return False
    try:
        _set_exact(fd, path, PRIVATE)
    finally:
        os.close(fd)
    return True


def open_private(
    path: Path, mode: Literal["a", "w"] = "a", *, encoding: str | None = "utf-8"
) -> io.TextIOWrapper:
    """`open(path, mode)` for text, except that a file it creates has mode 0600 (exactly) from
    the start; an existing file keeps its mode. For logs and journals that are appended to."""

    def opener(name: str, flags: int) -> int:
        if not flags & os.O_CREAT:
            return os.open(name, flags)
        try:
            fd = os.open(name, flags | os.O_EXCL, PRIVATE)
        except FileExistsError:
            return os.open(name, flags & ~os.O_CREAT)
        _set_exact(fd, Path(name), PRIVATE)
        return fd

    return open(path, mode, encoding=encoding, opener=opener)


def _set_exact(fd: int, path: Path, mode: int) -> None:
    # The umask may have taken bits away at creation; the mode asked for is exact.
    if hasattr(os, "fchmod"):
        os.fchmod(fd, mode)
    else:  # Windows before 3.13
        os.chmod(path, mode)


__all__ = [
    "PRIVATE",
    "PRIVATE_DIR",
    "create_private",
    "open_private",
    "private_dir",
    "write_bytes",
    "write_json",
    "write_text",
]
