"""The team-wide limit on runs at once, across every worker on every machine.

Each worker limits itself (`--concurrency`); `DEXTER_QUEUE_MAX_RUNNING` caps the whole team
(a provider's concurrent-request quota, a database that should not see more). A run holds one
of that many Postgres advisory locks while it runs, on a connection of its own: a worker that
dies drops its connection and so its slots, with no lease to expire.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
from collections.abc import AsyncIterator
from typing import Any

from dexter.errors import ConfigError

MAX_RUNNING_ENV = "DEXTER_QUEUE_MAX_RUNNING"
# Advisory lock keys of the slots: this base plus the slot number.
_SLOT_BASE = 0x0DE7_0000
RETRY_EVERY = 0.1


def max_running(environ: dict[str, str] | None = None) -> int | None:
    """The team-wide limit, or None when only each worker's own limit applies."""
    raw = (os.environ if environ is None else environ).get(MAX_RUNNING_ENV, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"{MAX_RUNNING_ENV} must be a whole number of at least 1, got {raw!r}.")
    return int(raw)


class TeamSlots:
    def __init__(self, url: str, slots: int, *, retry_every: float = RETRY_EVERY) -> None:
        self.url = url
        self.slots = slots
        self.retry_every = retry_every

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[int]:
        """Wait for a free slot and hold it for the block; yields its number."""
        import psycopg

        conn: Any = await psycopg.AsyncConnection.connect(self.url, autocommit=True)
        try:
            held = await self._take(conn)
            try:
                yield held
            finally:
                with contextlib.suppress(psycopg.Error):
                    await conn.execute("SELECT pg_advisory_unlock(%s)", (_SLOT_BASE + held,))
        finally:
            await conn.close()

    async def _take(self, conn: Any) -> int:
        # Starting at a different slot each time spreads the tries over the free ones.
        first = random.randrange(self.slots)
        while True:
            for step in range(self.slots):
                n = (first + step) % self.slots
                cursor = await conn.execute(
                    "SELECT pg_try_advisory_lock(%s) AS got", (_SLOT_BASE + n,)
                )
                row = await cursor.fetchone()
                if row is not None and row[0]:
                    return n
            await asyncio.sleep(self.retry_every)
