"""The second level of a data source's cache in team mode: bodies in the team database.

`HttpClient` asks its disk cache first (the fastest), then this one, then the source; what it
fetches goes to both. A cache is an optimisation, never a reason to fail: a database error is
logged, the connection dropped (the next call reconnects), and the fetch goes ahead.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import TYPE_CHECKING, Any

from dexter.data.cache import CachedBody

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger("dexter.data")

# Bodies above this stay on each machine's disk only: one row should not be a whole annual
# report's exhibits, and reading it back would cost more than the SEC request it saves.
MAX_SHARED_BODY = 32 * 1024 * 1024


class SharedBodyCache:
    def __init__(self, database_url: str, namespace: str) -> None:
        self.namespace = namespace
        self._url = database_url
        self._conn: psycopg.Connection[Any] | None = None
        # Worker threads take turns on the one connection.
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    async def get(self, key: str, ttl: float) -> CachedBody | None:
        found = await asyncio.to_thread(self._get, key, ttl)
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    async def put(self, key: str, url: str, body: bytes) -> None:
        if len(body) <= MAX_SHARED_BODY:
            await asyncio.to_thread(self._put, key, url, body)

    async def aclose(self) -> None:
        await asyncio.to_thread(self._close)

    def _get(self, key: str, ttl: float) -> CachedBody | None:
        from dexter.store import pg_http_cache

        with self._lock:
            try:
                row = pg_http_cache.get(self._connection(), self.namespace, key, ttl)
            except Exception:
                self._failed("read")
                return None
        if row is None:
            return None
        return CachedBody(body=row.body, fetched_at=row.fetched_at, url=row.url)

    def _put(self, key: str, url: str, body: bytes) -> None:
        from dexter.store import pg_http_cache

        with self._lock:
            try:
                pg_http_cache.put(self._connection(), self.namespace, key, url, body)
            except Exception:
                self._failed("write")

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed:
            from dexter.store import pg_http_cache
            from dexter.store.pg import connect

            conn = connect(self._url)
            try:
                pg_http_cache.install(conn)
            except Exception:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def _failed(self, what: str) -> None:
        log.warning(
            "the shared %s cache could not %s an entry; fetching instead",
            self.namespace,
            what,
            exc_info=True,
        )
        self._close_unlocked()

    def _close(self) -> None:
        with self._lock:
            self._close_unlocked()

    def _close_unlocked(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # already broken; closing is best effort
                pass
            self._conn = None
