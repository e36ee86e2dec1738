"""An async rate limiter: never more than `rate` request starts in any one-second window."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Protocol

Clock = Callable[[], float]
# Requests leave after the limiter releases them, and the event loop and network can delay one
# start and not the next: 50 ms of slack keeps a server counting arrivals under its limit (5 ms
# let 11 requests into one second of a 500-company watch poll).
WINDOW_MARGIN = 0.05
Sleep = Callable[[float], Awaitable[None]]


class Limiter(Protocol):
    """What `HttpClient` waits on before each request: this module's per-process limiter, or
    the one shared through the team database (`dexter.data.shared_ratelimit`). `acquire`
    returns a ticket that goes back to `answered` once the request's reply (or failure) came."""

    async def acquire(self) -> object: ...

    async def answered(self, ticket: object) -> None: ...


def window_for(rate: float, margin: float = WINDOW_MARGIN) -> tuple[int, float]:
    """(starts allowed, seconds they may share) for `rate` requests per second.

    Never under one second: for a fractional rate (9.5/s) `capacity / rate` would be, and two
    full bursts would land in one second. A little over the second (`margin`), so that a server
    counting its own arrivals never sees one start too many.
    """
    if rate <= 0:
        raise ValueError("rate must be positive")
    capacity = max(1, int(rate))
    return capacity, max(1.0, capacity / rate) + margin


class RateLimiter:
    """Sliding-window limiter shared by every task that talks to one service.

    A sliding window (rather than a token bucket with a burst) is what the SEC's "10 requests per
    second" rule means: no second may ever see more than `rate` requests, even at start-up.
    """

    def __init__(
        self, rate: float, *, clock: Clock = time.monotonic, sleep: Sleep = asyncio.sleep
    ) -> None:
        self.rate = rate
        self._capacity, self._window = window_for(rate)
        self._starts: deque[float] = deque()
        self._lock = asyncio.Lock()
        self._clock = clock
        self._sleep = sleep

    async def answered(self, ticket: object) -> None:
        """Counted by start alone: nothing to do once answered."""

    async def acquire(self) -> None:
        # One waiter at a time decides its start; the lock keeps starts strictly ordered (FIFO).
        async with self._lock:
            while True:
                now = self._clock()
                while self._starts and now - self._starts[0] >= self._window:
                    self._starts.popleft()
                if len(self._starts) < self._capacity:
                    self._starts.append(now)
                    return
                await self._sleep(self._window - (now - self._starts[0]))
