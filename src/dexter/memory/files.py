"""The memory markdown files: the source of truth that the index mirrors.

Layout under `DEXTER_HOME`::

    memory/MEMORY.md        evergreen facts (never decays in search)
    memory/YYYY-MM-DD.md    daily notes, named by the LOCAL date
    memory/index.db         the search index (see `dexter.memory.index`); not a memory file

Only those two name patterns are memory files: `list()` ignores anything else in the directory,
and every method refuses any other name (so `../x.md`, `sub/x.md` or `notes.md` raise
`MemoryNameError` instead of touching the disk).
"""

from __future__ import annotations

import builtins
import os
import re
from datetime import date
from pathlib import Path

from dexter.atomicfile import PRIVATE, private_dir, write_text
from dexter.userfiles import read_user_text

MEMORY_DIR_NAME = "memory"
EVERGREEN_NAME = "MEMORY.md"
_DAILY_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})\.md$")
_BLANK_RUNS = re.compile(r"\n{3,}")
_BLOCK_START = re.compile(r"^\s*([-*+]\s|\d+[.)]\s|#|>|\|)")

__all__ = [
    "EVERGREEN_NAME",
    "MEMORY_DIR_NAME",
    "MemoryFiles",
    "MemoryNameError",
    "appended",
    "file_date",
    "validate_name",
    "without",
]


class MemoryNameError(ValueError):
    """A name that is not `MEMORY.md` or `YYYY-MM-DD.md` (includes any path traversal)."""


def file_date(name: str) -> date | None:
    """The date of a daily note (`2025-03-08.md` → 2025-03-08); None for MEMORY.md or others."""
    match = _DAILY_RE.match(name)
    if match is None:
        return None
    try:
        return date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError:
        return None


def validate_name(name: str) -> str:
    """Return `name` if it is a memory file name, else raise MemoryNameError."""
    if name == EVERGREEN_NAME or file_date(name) is not None:
        return name
    raise MemoryNameError(
        f"{name!r} is not a memory file: use {EVERGREEN_NAME} or a daily note named "
        "YYYY-MM-DD.md (a bare name inside the memory directory, no paths)."
    )


class MemoryFiles:
    """Read and write the markdown memory files of one Dexter home."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.dir = home / MEMORY_DIR_NAME

    # names ---------------------------------------------------------------------------------

    @staticmethod
    def daily_name(day: date | None = None) -> str:
        """`YYYY-MM-DD.md` for `day`, default today's LOCAL date."""
        return f"{(day or date.today()).isoformat()}.md"

    @staticmethod
    def file_date(name: str) -> date | None:
        return file_date(name)

    def path(self, name: str) -> Path:
        return self.dir / validate_name(name)

    def list(self) -> builtins.list[str]:
        """MEMORY.md and the daily notes present on disk, sorted (daily notes sort first)."""
        if not self.dir.is_dir():
            return []
        names: builtins.list[str] = []
        for entry in os.scandir(self.dir):
            if entry.is_file() and (entry.name == EVERGREEN_NAME or file_date(entry.name)):
                names.append(entry.name)
        return sorted(names)

    # content -------------------------------------------------------------------------------

    def read(self, name: str) -> str:
        """The file's text; "" when it does not exist. A file that is not UTF-8 (saved by an
        editor in another encoding) is an `UnreadableFile` naming it, never rewritten."""
        return read_user_text(self.path(name), "The memory file") or ""

    def write(self, name: str, text: str) -> None:
        """Replace the whole file atomically (a crash never leaves half a file)."""
        target = self.path(name)
        private_dir(target.parent)
        write_text(target, text, newline="", mode=PRIVATE)

    def append(self, name: str, text: str) -> None:
        """Append one entry (see `appended`); creates the directory and the file as needed."""
        self.write(name, appended(self.read(name), text))

    def replace_text(self, name: str, old: str, new: str) -> bool:
        """Replace the first occurrence of `old`; False (file untouched) when it is absent."""
        current = self.read(name)
        if not old or old not in current:
            return False
        self.write(name, current.replace(old, new, 1))
        return True

    def delete_text(self, name: str, old: str) -> bool:
        """Remove the first occurrence of `old` and collapse the blank lines it leaves behind."""
        current = self.read(name)
        if not old or old not in current:
            return False
        self.write(name, without(current, old))
        return True

    def location(self, name: str | None = None) -> str:
        """The file's path, or (no name) the memory folder relative to the home's parent."""
        if name is not None:
            return str(self.path(name))
        try:
            return str(self.dir.relative_to(self.dir.parent.parent))
        except ValueError:  # pragma: no cover - home at the filesystem root
            return str(self.dir)


def appended(existing: str, text: str) -> str:
    """`existing` with one entry added, separated from what is there by a blank line.

    A single line of plain text becomes a markdown bullet (`- text`); text that already starts
    a markdown block (bullet, heading, quote, table) or spans several lines is kept as a
    paragraph.
    """
    entry = text.strip()
    if not entry:
        raise ValueError("Nothing to remember: the entry is empty.")
    if "\n" not in entry and not _BLOCK_START.match(entry):
        entry = f"- {entry}"
    if existing.strip():
        return existing.rstrip("\n") + "\n\n" + entry + "\n"
    return entry + "\n"


def without(current: str, old: str) -> str:
    """`current` with the first `old` removed and the blank lines it leaves collapsed."""
    return _BLANK_RUNS.sub("\n\n", current.replace(old, "", 1))
