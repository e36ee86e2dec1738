"""Open `DEXTER_HOME/dexter.db`: WAL, foreign keys, schema migrated, errors that say what to do."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from dexter.store.migrations import StoreError, apply_migrations

DB_FILE_NAME = "dexter.db"

__all__ = ["DB_FILE_NAME", "Store", "StoreError", "now_iso", "open_store"]


def now_iso(at: datetime | None = None) -> str:
    """UTC, ISO 8601 with microseconds: sorts as text, and its first 10 characters are the day."""
    moment = (at or datetime.now(UTC)).astimezone(UTC)
    return moment.isoformat(timespec="microseconds")


class Store:
    """One connection shared by the process. A lock serialises use because tools may record from
    worker threads; SQLite's own locking (WAL + busy timeout) handles other processes."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path
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

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def open_store(home: Path, *, create: bool = True) -> Store:
    """Open (creating and migrating as needed) the database in `home`.

    With `create=False` a missing database raises FileNotFoundError instead of being created, so
    read-only commands on a fresh home leave nothing behind.
    """
    path = home / DB_FILE_NAME
    if not create and not path.is_file():
        raise FileNotFoundError(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"Cannot create {path.parent}: {exc.strerror or exc}.") from exc
    try:
        conn = sqlite3.connect(path, isolation_level=None, timeout=10.0, check_same_thread=False)
    except sqlite3.Error as exc:
        raise StoreError(f"Cannot open the Dexter database {path}: {exc}.") from exc
    conn.row_factory = sqlite3.Row
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA foreign_keys=ON")
        apply_migrations(conn, path)
    except StoreError:
        conn.close()
        raise
    except sqlite3.OperationalError as exc:
        # Locked, read-only or out of disk: the file itself is probably fine, so don't call it
        # corrupt and invite the user to move good data aside.
        conn.close()
        raise StoreError(f"Cannot use the Dexter database {path}: {exc}.") from exc
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StoreError(
            f"{path} is not a readable Dexter database ({exc}). Move it aside (for example, "
            f"rename it to {path.name}.broken) and Dexter will start a new one; it never deletes "
            "the file itself."
        ) from exc
    return Store(conn, path)
