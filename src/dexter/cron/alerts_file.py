"""The alerts folder: where `file[:PATH]` delivery writes, and nowhere else.

`file:PATH` names a file inside DEXTER_HOME/alerts (plain `file` is alerts/alerts.md). A path
with `~`, an absolute path or `..` is refused when the job is made; a symbolic link anywhere on
the way (the folder itself, a subfolder, the file) is refused then too, and again when an alert
is appended, since a link can appear after the job was made. The append walks the folders with
O_NOFOLLOW descriptors, so a link swapped in between the check and the write is refused as well.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from pathlib import Path, PureWindowsPath

from dexter.atomicfile import private_dir
from dexter.cron.schedule import ScheduleError

ALERTS_DIR = "alerts"
DEFAULT_ALERTS_FILE = "alerts.md"
_WHERE = f"the alerts folder (DEXTER_HOME/{ALERTS_DIR})"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO planted under the file's name fails at once instead of hanging the runner.
_FILE_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class AlertsPathError(ScheduleError):
    """A `file:` target that points outside the alerts folder, or through a link."""


def alerts_folder(home: Path) -> Path:
    return home / ALERTS_DIR


def alerts_parts(address: str) -> tuple[str, ...]:
    """The names leading from the alerts folder to the file `file:ADDRESS` writes."""
    raw = address.strip()
    if not raw:
        return (DEFAULT_ALERTS_FILE,)
    outside = AlertsPathError(
        f"A file target names a file inside {_WHERE}, like file:nvda.md or file:watch/nvda.md; "
        f"{address!r} points outside it."
    )
    if "\x00" in raw or raw.startswith(("~", "/", "\\")) or PureWindowsPath(raw).drive:
        raise outside
    parts = tuple(part for part in re.split(r"[/\\]", raw) if part not in ("", "."))
    if ".." in parts:
        raise outside
    if not parts:
        raise AlertsPathError(f"A file target names a file inside {_WHERE}, not the folder.")
    return parts


def alerts_path(home: Path, address: str) -> Path:
    """Where `file:ADDRESS` writes (for messages; writing goes through `append_alert`)."""
    return alerts_folder(home).joinpath(*alerts_parts(address))


def check_alerts_path(home: Path, address: str) -> None:
    """Refuse `file:ADDRESS` now if the path out of the alerts folder passes through a link or
    ends at something other than a file; what does not exist yet is made at the first alert."""
    path = home
    info: os.stat_result | None = None
    for name in (ALERTS_DIR, *alerts_parts(address)):
        path = path / name
        try:
            info = path.lstat()
        except FileNotFoundError:
            return
        except OSError as exc:
            raise AlertsPathError(f"Alerts cannot be written to {path}: {exc.strerror}.") from None
        if stat.S_ISLNK(info.st_mode):
            raise AlertsPathError(_link_message(path))
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise AlertsPathError(f"{path} is not a regular file, so alerts cannot be appended to it.")


def _link_message(path: Path | str) -> str:
    return (
        f"{path} is a symbolic link; alerts are written only to real files inside {_WHERE}, "
        "never through a link out of it."
    )


def append_alert(home: Path, address: str, text: str) -> Path:
    """Append `text` to the alerts file `file:ADDRESS` names; AlertsPathError when the path
    leads out of the alerts folder, OSError for anything else the disk says."""
    parts = alerts_parts(address)
    path = alerts_path(home, address)
    private_dir(home)
    # The home itself may be a link (a home on another disk): it is the operator's choice.
    folder = os.open(home, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        here = home
        for name in (ALERTS_DIR, *parts[:-1]):
            here = here / name
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o700, dir_fd=folder)
            inner = _open_below(name, folder, here, _DIR_FLAGS)
            os.close(folder)
            folder = inner
        handle = _open_below(parts[-1], folder, path, _FILE_FLAGS, 0o600)
        try:
            info = os.fstat(handle)
            if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
                # A hard link is a link out as much as a symbolic one.
                raise AlertsPathError(f"{path} is not a plain file of its own; not appended.")
            data = memoryview(text.encode("utf-8"))
            while data:
                data = data[os.write(handle, data) :]
        finally:
            os.close(handle)
    finally:
        os.close(folder)
    return path


def _open_below(name: str, folder: int, shown: Path, flags: int, mode: int = 0o777) -> int:
    try:
        return os.open(name, flags, mode, dir_fd=folder)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.ENXIO, errno.EISDIR):
            raise
        # Linux says ELOOP for a link to a file and ENOTDIR for a link where a folder was
        # asked for: tell the two cases apart by looking at the entry itself.
        try:
            link = stat.S_ISLNK(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
        except OSError:
            link = exc.errno == errno.ELOOP
        if link:
            raise AlertsPathError(_link_message(shown)) from None
        raise AlertsPathError(f"{shown} is not a plain file or folder; not appended.") from None


__all__ = [
    "ALERTS_DIR",
    "DEFAULT_ALERTS_FILE",
    "AlertsPathError",
    "alerts_folder",
    "alerts_parts",
    "alerts_path",
    "append_alert",
    "check_alerts_path",
]
