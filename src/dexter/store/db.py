"""Open the store: `DEXTER_HOME/dexter.db` (WAL, foreign keys, schema migrated, errors that say
what to do), or a Postgres server in team mode (`dexter.store.postgres`)."""

from __future__ import annotations

import errno
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dexter.atomicfile import create_private, private_dir
from dexter.errors import EXIT_USAGE
from dexter.store.backend import Store
from dexter.store.migrations import StoreError, apply_migrations

DB_FILE_NAME = "dexter.db"

__all__ = [
    "DB_FILE_NAME",
    "HomeNotWritable",
    "SqliteStore",
    "Store",
    "StoreError",
    "now_iso",
    "open_sqlite",
    "open_store",
    "prepare_database_file",
    "storage_failure",
]

_UNWRITABLE_ERRNOS = {errno.EACCES, errno.EPERM, errno.EROFS}
_FULL_ERRNOS = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}
# SQLite's names (with their extended forms, e.g. SQLITE_READONLY_DIRECTORY) for a file or
# folder it may not write.
_UNWRITABLE_SQLITE = ("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH")


class HomeNotWritable(StoreError):
    """The folder Dexter keeps its state in refuses writes (read-only, not ours, a read-only
    file system): a configuration problem, so exit 2, like any unwritable DEXTER_HOME."""

    exit_code = EXIT_USAGE


def storage_failure(error: OSError | sqlite3.Error, path: Path) -> StoreError | None:
    """The error to show when `path` (a database file) could not be created or written because
    its folder is read-only or the disk is full; None for any other failure."""
    folder = path.parent
    if isinstance(error, OSError):
        unwritable = error.errno in _UNWRITABLE_ERRNOS
        full = error.errno in _FULL_ERRNOS
        detail = error.strerror or str(error)
    else:
        name = getattr(error, "sqlite_errorname", "") or ""
        unwritable = name.startswith(_UNWRITABLE_SQLITE)
        full = name.startswith("SQLITE_FULL")
        detail = str(error)
    if unwritable:
        return HomeNotWritable(
            f"Cannot write to {folder} ({detail}), where Dexter keeps {path.name}. Make the folder "
            f"writable (for example `chmod u+w {folder}`) or set DEXTER_HOME to a writable folder."
        )
    if full:
        return StoreError(f"Cannot write {path}: the disk is full ({detail}). Free some space.")
    return None


def prepare_database_file(path: Path) -> None:
    """Make the folder (0700) and an empty database file (0600) before SQLite opens it: SQLite
    gives the `-wal` and `-shm` files the database's mode, so all three stay private whatever
    the umask. An existing file is left as it is."""
    try:
        private_dir(path.parent)
        create_private(path)
    except OSError as exc:
        raise storage_failure(exc, path) or StoreError(
            f"Cannot create {path}: {exc.strerror or exc}."
        ) from exc


def now_iso(at: datetime | None = None) -> str:
    """UTC, ISO 8601 with microseconds: sorts as text, and its first 10 characters are the day."""
    moment = (at or datetime.now(UTC)).astimezone(UTC)
    return moment.isoformat(timespec="microseconds")


class SqliteStore(Store):
    """One connection shared by the process. A lock serialises use because tools may record from
    worker threads; SQLite's own locking (WAL + busy timeout) handles other processes."""

    backend = "sqlite"
    errors = (sqlite3.Error,)

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path
        self.applied_now: list[int] = []
        self._lock = threading.RLock()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self.conn.execute(sql, params).fetchall()

    def close(self) -> None:
        with self._lock:
            self.conn.close()

    def describe(self) -> str:
        return f"SQLite {self.path}"


def open_store(home: Path, *, create: bool = True, url: str | None = None) -> Store:
    """Open (creating and migrating as needed) the database in `home`, or the Postgres database
    at `url` (team mode; see `dexter.store.database_url.database_target`).

    With `create=False` a missing SQLite file raises FileNotFoundError instead of being created,
    so read-only commands on a fresh home leave nothing behind.
    """
    if url is not None:
        from dexter.store.postgres import open_postgres

        return open_postgres(url)
    return open_sqlite(home / DB_FILE_NAME, create=create)


def open_sqlite(path: Path, *, create: bool = True) -> SqliteStore:
    """Open (creating and migrating as needed) the SQLite database file `path`."""
    if not create and not path.is_file():
        raise FileNotFoundError(path)
    if create:
        prepare_database_file(path)
    try:
        conn = sqlite3.connect(path, isolation_level=None, timeout=10.0, check_same_thread=False)
    except sqlite3.Error as exc:
        raise storage_failure(exc, path) or StoreError(
            f"Cannot open the Dexter database {path}: {exc}."
        ) from exc
    conn.row_factory = sqlite3.Row
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA foreign_keys=ON")
        applied = apply_migrations(conn, path)
    except StoreError:
        conn.close()
        raise
    except sqlite3.OperationalError as exc:
        # Locked, read-only or out of disk: the file itself is probably fine, so don't call it
        # corrupt and invite the user to move good data aside.
        conn.close()
        raise storage_failure(exc, path) or StoreError(
            f"Cannot use the Dexter database {path}: {exc}."
        ) from exc
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StoreError(
            f"{path} is not a readable Dexter database ({exc}). Move it aside (for example, "
            f"rename it to {path.name}.broken) and Dexter will start a new one; it never deletes "
            "the file itself."
        ) from exc
    store = SqliteStore(conn, path)
    store.applied_now = applied
    return store
