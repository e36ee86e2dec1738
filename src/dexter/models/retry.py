"""Retry a model stream on transient failures by streaming again, with backoff.

Only `ModelError`s the wire module marked retryable are retried. `Retry-After` is honoured (up to a
cap), otherwise backoff doubles from `base_delay` with a little jitter. Cancellation is never
retried: `asyncio.CancelledError` is not a `ModelError`, so it passes straight through.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from dexter.models.base import Model
from dexter.models.errors import ErrorKind, ModelError
from dexter.models.types import ModelRequest, ModelResponse, StreamChunk

DEFAULT_ATTEMPTS = 3
BASE_DELAY = 0.5
# A server asking us to wait longer than this is better reported than waited on.
MAX_RETRY_AFTER = 60.0

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class RetryNotice:
    attempt: int
    max_attempts: int
    delay: float
    error: ModelError


def backoff_delay(error: ModelError, attempt: int, base_delay: float = BASE_DELAY) -> float | None:
    """Seconds to wait before retry number `attempt` (1-based), or None to give up."""
    if error.retry_after is not None:
        if error.retry_after > MAX_RETRY_AFTER:
            return None
        return max(0.0, float(error.retry_after))
    delay: float = base_delay * 2.0 ** (attempt - 1)
    return delay * random.uniform(0.8, 1.2)


async def stream_with_retry(
    model: Model,
    request: ModelRequest,
    *,
    attempts: int = DEFAULT_ATTEMPTS,
    base_delay: float = BASE_DELAY,
    sleep: Sleep = asyncio.sleep,
) -> AsyncIterator[StreamChunk | RetryNotice]:
    """Yield the model's chunks; on a transient failure yield a RetryNotice and stream again.

    Consumers must treat a RetryNotice as "discard what this attempt streamed so far".
    """
    attempt = 1
    while True:
        try:
            async for chunk in model.stream(request):
                yield chunk
            return
        except ModelError as error:
            delay = backoff_delay(error, attempt, base_delay) if error.retryable else None
            if delay is None or attempt >= attempts:
                raise
            yield RetryNotice(attempt=attempt, max_attempts=attempts, delay=delay, error=error)
            await sleep(delay)
            attempt += 1


async def complete_with_retry(
    model: Model,
    request: ModelRequest,
    *,
    attempts: int = DEFAULT_ATTEMPTS,
    base_delay: float = BASE_DELAY,
    sleep: Sleep = asyncio.sleep,
) -> ModelResponse:
    """The final response of a streamed call, with the same retry policy as the agent loop."""
    final: ModelResponse | None = None
    async for chunk in stream_with_retry(
        model, request, attempts=attempts, base_delay=base_delay, sleep=sleep
    ):
        if isinstance(chunk, ModelResponse):
            final = chunk
    if final is None:
        raise ModelError(
            ErrorKind.STREAM, "stream ended without a response", provider=model.provider
        )
    return final
