"""One Postgres connection for team-mode memory, shared by every principal's memory in a process.

psycopg is imported on first use (through `dexter.store.pg`), so single-user Dexter never loads
it. Statements from several threads (searches and syncs run in `asyncio.to_thread`) are
serialised by a lock, so one thread's transaction never takes in another's statements; a broken
connection (server restart, network cut) is replaced on the next use.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from dexter.store.database_url import display_url

if TYPE_CHECKING:
    import psycopg

__all__ = ["PgLink"]


class PgLink:
    def __init__(self, url: str) -> None:
        self.url = url
        self._conn: psycopg.Connection[Any] | None = None
        self._lock = threading.RLock()
        self._migrated = False
        self._vector_dims: set[int] = set()
        self._settings: dict[str, str] = {}  # SET on the current connection

    def describe(self) -> str:
        return display_url(self.url)

    @contextmanager
    def use(self) -> Iterator[psycopg.Connection[Any]]:
        """The connection, migrated, for this thread alone until the block ends."""
        with self._lock:
            conn = self._conn
            if conn is None or conn.closed or conn.broken:
                from dexter.store.pg import connect

                conn = self._conn = connect(self.url)
                self._settings.clear()
            if not self._migrated:
                from dexter.memory.pg_migrations import apply_memory_migrations

                apply_memory_migrations(conn)
                self._migrated = True
            yield conn

    def setting(self, conn: psycopg.Connection[Any], name: str, value: str) -> None:
        """`SET name = value` for the session, once per connection (a transaction and a
        `SET LOCAL` around each query would cost two more round trips)."""
        if self._settings.get(name) != value:
            conn.execute(f"SET {name} = {value}")
            self._settings[name] = value

    def ensure_vector_index(self, dims: int) -> None:
        if dims in self._vector_dims:
            return
        from dexter.memory.pg_migrations import ensure_vector_index

        with self.use() as conn:
            ensure_vector_index(conn, dims)
        self._vector_dims.add(dims)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
