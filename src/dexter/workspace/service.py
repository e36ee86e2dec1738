"""One workspace: its index, refreshed on demand, and a snapshot of it for questions.

The snapshot (files, tags and their graph) is rebuilt only when a refresh changed something, so
a session that asks several questions of an unchanged folder pays for the graph once.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from dexter.workspace.index import Progress, Refresh, WorkspaceIndex
from dexter.workspace.view import Snapshot, SymbolHits


class Workspace:
    def __init__(self, root: Path, home: Path) -> None:
        self.root = root.resolve()
        self.index = WorkspaceIndex(self.root, home)
        self._snapshot: Snapshot | None = None
        self._lock = threading.Lock()
        self.last_refresh: Refresh | None = None

    def close(self) -> None:
        self.index.close()

    def refresh(self, progress: Progress | None = None) -> Snapshot:
        """Bring the index up to date (only changed files are read) and return the snapshot."""
        with self._lock:
            done = self.index.refresh(progress)
            self.last_refresh = done
            if self._snapshot is None or done.tagged or done.removed:
                self._snapshot = Snapshot(str(self.root), self.index.files(), self.index.tags())
            return self._snapshot

    def find_symbol(self, name: str, snapshot: Snapshot | None = None) -> SymbolHits:
        """Definitions and references of `name`, in `snapshot` (default: a fresh one)."""
        current = snapshot if snapshot is not None else self.refresh()
        with self._lock:
            tags = self.index.tags_named([name.strip()])
        return current.find_symbol(name, tags)


def too_wide(root: Path, home: Path | None = None) -> str | None:
    """Why `root` is not a folder to map unasked (the disk, the home folder or above it: every
    document, key and program setting), or None."""
    folder = Path(os.path.realpath(root))
    user = Path(os.path.realpath(home or Path.home()))
    if folder == Path(folder.anchor):
        return "the whole disk"
    if folder == user:
        return "your whole home folder"
    if user.is_relative_to(folder):
        return "a folder above your home folder"
    return None


def check_root(root: Path) -> Path:
    """`root` as a real folder, or a ValueError that says what is wrong."""
    path = root.expanduser()
    if not path.exists():
        raise ValueError(f"{root} does not exist; give a folder with --root")
    if not path.is_dir():
        raise ValueError(f"{root} is a file, not a folder; give its folder with --root")
    return path.resolve()


__all__ = ["Workspace", "check_root", "too_wide"]
