"""The runner's sense of time, injectable so tests and benchmarks can move it by hand."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """Aware, UTC."""
        ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        # asyncio's timers run on the monotonic clock, which stands still while a laptop sleeps;
        # the runner caps every sleep at its tick interval so it re-reads the wall clock soon
        # after a wake-up.
        await asyncio.sleep(max(0.0, seconds))
