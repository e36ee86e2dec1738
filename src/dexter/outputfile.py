"""Files a person asks Dexter to write (`report -o`, `ask --output`, `/export`, eval reports):
exactly that file, and nothing it might point at.

A symlink at the chosen name is refused with a clear error instead of being written through: a
link planted where a report is saved (or a name reused by mistake) must not turn an export into
an overwrite of the file it points to. The write itself goes through `atomicfile`, which renames
a finished temporary file over the name, so even a link that appears between the check and the
write is replaced, never followed. Folders above the file may be links (a symlinked Documents
folder is ordinary); only the last component is checked. The folder must already exist: nothing
is created above the file (a Markdown report's `NAME_charts` folder beside it is the one folder a
writer makes, and only there).

Standard library only (plus `dexter.errors`), importable from every layer.
"""

from __future__ import annotations

import os
from pathlib import Path

from dexter.atomicfile import write_bytes
from dexter.errors import ConfigError


def refuse_link(path: Path) -> None:
    """ConfigError when `path` itself is a symbolic link (broken or not)."""
    if os.path.islink(path):
        try:
            target = f" (to {os.readlink(path)})"
        except OSError:
            target = ""
        raise ConfigError(
            f"will not write {path}: it is a symbolic link{target}, and writing through it would "
            "overwrite the file it points to. Remove the link or choose another name."
        )


def check_destination(path: Path) -> None:
    """ConfigError unless `path` may be written as asked: not a symbolic link, and in a folder
    that exists. A missing folder is never created: a typo in `/export md ~/Documnets/x.md`
    must say so, not leave new folders wherever it pointed."""
    refuse_link(path)
    folder = path.parent
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise ConfigError(
            f"will not write {path}: the folder {folder} {what}. Create it first, or choose "
            "another path."
        )


def write_output(path: Path, data: bytes) -> None:
    """Replace `path` with `data`, refusing a symlink at `path` and a missing folder; OSError as
    `atomicfile` raises it (callers turn it into one line)."""
    check_destination(path)
    write_bytes(path, data)


__all__ = ["check_destination", "refuse_link", "write_output"]
