"""The incremental index: one SQLite file per workspace under `DEXTER_HOME/workspace/`, keyed by
the workspace's real path, holding every file's stat, content hash, outline and tags.

A refresh stats every file the walk yields and reads only those whose size or modification time
changed; of those, only files whose content hash changed are tagged again. It is a file of its
own (not the session store's database), so it never meets the store's migrations; a damaged or
older-format index is simply rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from dexter.atomicfile import create_private, private_dir
from dexter.workspace.model import FileTags, Tag
from dexter.workspace.tag import tag_file
from dexter.workspace.walk import Seen, walk

# Bumped whenever a tagger changes what it records: an older index is then rebuilt.
FORMAT = 4
# A folder bigger than this (a home directory, a data lake) is indexed up to here, and says so.
MAX_FILES = 100_000
# Shown as progress once a refresh has this many files to read (a first index of a big folder).
PROGRESS_FROM = 200

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    hash TEXT NOT NULL,
    outline TEXT NOT NULL,
    error TEXT
);
CREATE TABLE IF NOT EXISTS tags (
    path TEXT NOT NULL,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    role TEXT NOT NULL,
    line INTEGER NOT NULL,
    detail TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS tags_path ON tags (path);
CREATE INDEX IF NOT EXISTS tags_name ON tags (name COLLATE NOCASE);
"""

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Refresh:
    """What one refresh did: files tagged anew, removed, and left as they were."""

    tagged: list[str]
    removed: list[str]
    unchanged: int
    seconds: float
    # The walk stopped at MAX_FILES.
    truncated: bool = False

    @property
    def total(self) -> int:
        return len(self.tagged) + self.unchanged


@dataclass(frozen=True)
class FileRow:
    path: str
    kind: str
    size: int
    outline: list[str]
    error: str | None


def index_path(home: Path, root: Path) -> Path:
    """Where the index of the workspace at `root` lives under `home`."""
    real = str(root.resolve())
    digest = hashlib.sha256(real.encode("utf-8")).hexdigest()[:12]
    name = re.sub(r"[^\w.-]", "_", root.resolve().name)[:40] or "root"
    return home / "workspace" / f"{name}-{digest}.sqlite"


class WorkspaceIndex:
    """The index of one workspace. Not thread-safe: use from one thread at a time."""

    def __init__(self, root: Path, home: Path) -> None:
        self.root = root.resolve()
        self.home = home
        self.path = index_path(home, self.root)
        # The index holds the folder's names and outlines: private, as everything in the home
        # (SQLite gives its -wal and -shm files the database's mode).
        private_dir(self.path.parent)
        create_private(self.path)
        self._db = self._open()

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(_SCHEMA)
            row = db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
            if row is not None and row[0] != str(FORMAT):
                db.executescript("DELETE FROM files; DELETE FROM tags;")
            db.execute(
                "INSERT OR REPLACE INTO meta VALUES ('format', ?), ('root', ?)",
                (str(FORMAT), str(self.root)),
            )
            db.commit()
        except sqlite3.DatabaseError:
            # A damaged index is only a cache of the folder: start it again.
            db.close()
            self.path.unlink(missing_ok=True)
            create_private(self.path)
            db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
            db.executescript(_SCHEMA)
            db.execute("INSERT INTO meta VALUES ('format', ?)", (str(FORMAT),))
            db.commit()
        return db

    def close(self) -> None:
        self._db.close()

    def refresh(self, progress: Progress | None = None) -> Refresh:
        """Bring the index up to date with the folder."""
        started = time.perf_counter()
        stored = {
            path: (size, mtime_ns, digest)
            for path, size, mtime_ns, digest in self._db.execute(
                "SELECT path, size, mtime_ns, hash FROM files"
            )
        }
        found = walk(self.root, private=(self.home,))
        seen: list[Seen] = list(islice(found, MAX_FILES + 1))
        truncated = len(seen) > MAX_FILES
        seen = seen[:MAX_FILES]
        moved = [s for s in seen if stored.get(s.rel, (None, None))[:2] != (s.size, s.mtime_ns)]
        tagged: list[str] = []
        touched: list[tuple[int, int, str]] = []
        show = progress if progress is not None and len(moved) >= PROGRESS_FROM else None
        with self._db:
            for done, item in enumerate(moved, 1):
                absolute = self.root / item.rel
                try:
                    raw = absolute.read_bytes()
                except OSError:
                    continue
                digest = hashlib.blake2b(raw, digest_size=16).hexdigest()
                old = stored.get(item.rel)
                if old is not None and old[2] == digest:
                    touched.append((item.size, item.mtime_ns, item.rel))
                else:
                    self._store(item, digest, tag_file(item.rel, raw, str(absolute)))
                    tagged.append(item.rel)
                if show is not None and (done % 100 == 0 or done == len(moved)):
                    show(done, len(moved))
            self._db.executemany("UPDATE files SET size = ?, mtime_ns = ? WHERE path = ?", touched)
            present = {s.rel for s in seen}
            removed = [p for p in stored if p not in present]
            for path in removed:
                self._db.execute("DELETE FROM files WHERE path = ?", (path,))
                self._db.execute("DELETE FROM tags WHERE path = ?", (path,))
        return Refresh(
            tagged, removed, len(seen) - len(tagged), time.perf_counter() - started, truncated
        )

    def _store(self, item: Seen, digest: str, found: FileTags) -> None:
        self._db.execute("DELETE FROM tags WHERE path = ?", (item.rel,))
        self._db.execute(
            "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                item.rel,
                found.kind,
                item.size,
                item.mtime_ns,
                digest,
                json.dumps(found.outline),
                found.error,
            ),
        )
        self._db.executemany(
            "INSERT INTO tags VALUES (?, ?, ?, ?, ?, ?)",
            [(item.rel, t.name, t.kind, t.role, t.line, t.detail) for t in found.tags],
        )

    # ------------------------------------------------------------------ reading

    def files(self) -> list[FileRow]:
        return [
            FileRow(path, kind, size, json.loads(outline), error)
            for path, kind, size, outline, error in self._db.execute(
                "SELECT path, kind, size, outline, error FROM files ORDER BY path"
            )
        ]

    def tags(self) -> list[tuple[str, Tag]]:
        """Every tag as (path, tag)."""
        return [
            (path, Tag(name, kind, role, line, detail))
            for path, name, kind, role, line, detail in self._db.execute(
                "SELECT path, name, kind, role, line, detail FROM tags ORDER BY path, rowid"
            )
        ]

    def tags_named(self, names: Iterable[str]) -> list[tuple[str, Tag]]:
        """Tags whose name is one of `names`, ignoring case (the caller filters further)."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return []
        marks = ",".join("?" * len(wanted))
        return [
            (path, Tag(name, kind, role, line, detail))
            for path, name, kind, role, line, detail in self._db.execute(
                "SELECT path, name, kind, role, line, detail FROM tags "
                f"WHERE name COLLATE NOCASE IN ({marks}) ORDER BY path, line",
                wanted,
            )
        ]


__all__ = ["FileRow", "Refresh", "WorkspaceIndex", "index_path"]
