"""One load per key at a time: callers asking for the same thing while it loads share its result.

A provider's parsed documents (a ticker table, a companyfacts file, a filing index) are asked for
by several tool calls of one round at once; loading each once saves the requests and the parsing.
A load that failed is tried again by the next caller.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


class SingleFlight:
    def __init__(self) -> None:
        self._pending: dict[str, asyncio.Task[Any]] = {}

    async def once(self, key: str, load: Callable[[], Awaitable[T]]) -> T:
        task = self._pending.get(key)
        if task is None or (task.done() and task.exception() is not None):
            task = asyncio.ensure_future(load())
            self._pending[key] = task
        # Shielded: one caller cancelled must not cancel the load the others wait on.
        result: T = await asyncio.shield(task)
        return result

    def cancel(self) -> None:
        for task in self._pending.values():
            task.cancel()
