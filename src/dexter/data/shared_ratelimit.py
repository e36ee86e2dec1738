"""One rate limit for every process and machine of a team: the SEC's 10 requests per second hold
for the user agent as a whole, not per worker.

Each request takes a place in the team database (`dexter.store.pg_rate_limit`, which explains
why places are held until the answer comes) on a connection of this limiter's own, in a worker
thread so the event loop never waits on the network. Within a process an asyncio lock lines
waiters up first (in order, as the per-process limiter does), so a busy process holds one
database connection, not one per task.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from dexter.data.ratelimit import window_for

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger("dexter.data")

# Places are held until answered, so delays need no margin; this one only absorbs the rounding
# of two clocks (the database's and the server's) that tick at slightly different rates.
SHARED_WINDOW_MARGIN = 0.02
Sleep = Callable[[float], Awaitable[None]]
T = TypeVar("T")


class SharedRateLimiter:
    def __init__(
        self,
        database_url: str,
        name: str,
        rate: float,
        *,
        margin: float = SHARED_WINDOW_MARGIN,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.name = name
        self.rate = rate
        self._url = database_url
        self._capacity, self._window = window_for(rate, margin)
        self._lock = asyncio.Lock()
        # The connection is used from worker threads: one call at a time, takes and answers alike
        # (the asyncio lock is held while a waiter sleeps, so answers cannot wait on it).
        self._db = threading.Lock()
        self._sleep = sleep
        self._conn: psycopg.Connection[Any] | None = None

    async def acquire(self) -> object:
        """Wait for a place; the ticket goes back through `answered` when the reply came."""
        async with self._lock:
            while True:
                ticket, wait = await self._take_uncancelled()
                if ticket is not None:
                    return ticket
                await self._sleep(wait)

    async def _take_uncancelled(self) -> tuple[int | None, float]:
        """A take that a cancelled caller cannot leave holding a place nobody will answer for
        (it would stay taken for IN_FLIGHT_LIMIT seconds): the place is given back instead."""
        taking = asyncio.ensure_future(asyncio.to_thread(self._take))
        try:
            return await asyncio.shield(taking)
        except asyncio.CancelledError:
            loop = asyncio.get_running_loop()

            def give_back(done: asyncio.Future[tuple[int | None, float]]) -> None:
                if not done.cancelled() and done.exception() is None:
                    ticket = done.result()[0]
                    if ticket is not None:
                        loop.run_in_executor(None, self._answered, ticket)

            taking.add_done_callback(give_back)
            raise

    async def answered(self, ticket: object) -> None:
        if isinstance(ticket, int):
            await asyncio.to_thread(self._answered, ticket)

    def _take(self) -> tuple[int | None, float]:
        from dexter.store.pg_rate_limit import take

        with self._db:
            return self._guarded(lambda conn: take(conn, self.name, self._capacity, self._window))

    def _answered(self, ticket: int) -> None:
        from dexter.store.pg_rate_limit import answered

        with self._db:
            try:
                self._guarded(lambda conn: answered(conn, ticket))
            except Exception:
                # The place then frees by itself after IN_FLIGHT_LIMIT seconds; the request it
                # stood for has already been answered, so it is not failed for this.
                log.warning("could not mark a request answered in the shared %s limit", self.name)

    def _guarded(self, call: Callable[[psycopg.Connection[Any]], T]) -> T:
        from dexter.store.pg import psycopg_module

        try:
            return call(self._connection())
        except psycopg_module().Error as error:
            # A dropped connection (a database restart, a failover) is opened again on the next
            # request; the error itself says what happened, in one line, never as a traceback.
            self._discard()
            from dexter.store.pg import PostgresUnavailable

            text = str(error).strip()
            detail = text.splitlines()[0] if text else type(error).__name__
            if isinstance(error, psycopg_module().OperationalError):
                what = "Check that the database is up."
            else:
                what = (
                    "The database role needs to read and write the tables dexter_rate_limit and "
                    "dexter_rate_limit_request (or the right to create them)."
                )
            raise PostgresUnavailable(
                f"The shared {self.name} rate limit in the team database could not be taken "
                f"({detail}); no request was sent. {what}"
            ) from None

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed:
            from dexter.store.pg import connect
            from dexter.store.pg_rate_limit import install

            conn = connect(self._url, autocommit=False)
            try:
                install(conn, self.name)
            except Exception:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def _discard(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # already broken; closing is best effort
                log.debug("closing a broken rate-limit connection failed", exc_info=True)
            self._conn = None

    async def aclose(self) -> None:
        async with self._lock:
            await asyncio.to_thread(self._close)

    def _close(self) -> None:
        with self._db:
            self._discard()
