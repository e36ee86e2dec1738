"""Retry a model stream on transient failures by streaming again, with backoff.

`with_retry(model, policy)` wraps any `Model` in a `RetryingModel`; the runtime wraps every phase
model (main loop, router, compaction, constraints, memory flush) once, so all honour one policy.
Only `ModelError`s the wire module marked retryable are retried, plus a stream that sends nothing
for `policy.idle_timeout` seconds. `Retry-After` is honoured up to `policy.max_retry_after`; a
longer wait fails at once with a message saying so. Otherwise the delay comes from the shared
`dexter.backoff.backoff`. Cancellation is never retried: `asyncio.CancelledError` is not a
`ModelError`, so it passes straight through. Tests pass `RetryPolicy(sleep=...)`, the one seam for
time.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from dexter.backoff import backoff
from dexter.models.base import Model
from dexter.models.errors import ErrorKind, ModelError
from dexter.models.types import ModelRequest, ModelResponse, RetryNotice, StreamChunk

if TYPE_CHECKING:
    from dexter.config import Settings

DEFAULT_ATTEMPTS = 3
BASE_DELAY = 0.5
MAX_DELAY = 30.0
# A server asking us to wait longer than this is better reported than waited on.
MAX_RETRY_AFTER = 60.0
IDLE_TIMEOUT = 60.0

Sleep = Callable[[float], Awaitable[None]]
# Told of each attempt given up on before it is retried (the ledger records it as a failed call).
OnRetry = Callable[[RetryNotice], None]

__all__ = [
    "RetryNotice",
    "RetryPolicy",
    "RetryingModel",
    "backoff_delay",
    "policy_from_settings",
    "stream_with_retry",
    "with_retry",
]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    attempts: int = DEFAULT_ATTEMPTS
    base_delay: float = BASE_DELAY
    max_delay: float = MAX_DELAY
    max_retry_after: float = MAX_RETRY_AFTER
    # None: wait for the next chunk as long as the wire client allows.
    idle_timeout: float | None = IDLE_TIMEOUT
    sleep: Sleep = asyncio.sleep


def policy_from_settings(settings: Settings, sleep: Sleep = asyncio.sleep) -> RetryPolicy:
    """The `retry` section of settings.json; `DEXTER_STREAM_IDLE_TIMEOUT` overrides the idle
    timeout (seconds, 0 turns it off)."""
    from dexter.config import ConfigError
    from dexter.settings_model import RetrySettings

    section = settings.section(RetrySettings)
    idle: float | None = section.stream_idle_timeout
    raw = (settings.env.get("DEXTER_STREAM_IDLE_TIMEOUT") or "").strip()
    if raw:
        try:
            value = float(raw)
        except ValueError:
            value = -1.0
        if value < 0:
            raise ConfigError(
                f"DEXTER_STREAM_IDLE_TIMEOUT must be a number of seconds (0 = off), not {raw!r}."
            )
        idle = value or None
    return RetryPolicy(
        attempts=section.attempts,
        base_delay=section.base_delay,
        max_delay=section.max_delay,
        max_retry_after=section.max_retry_after,
        idle_timeout=idle,
        sleep=sleep,
    )


def backoff_delay(
    error: ModelError,
    attempt: int,
    base_delay: float = BASE_DELAY,
    policy: RetryPolicy | None = None,
) -> float | None:
    """Seconds to wait before retry number `attempt` (1-based), or None to give up."""
    policy = policy or RetryPolicy(base_delay=base_delay)
    if error.retry_after is not None:
        if error.retry_after > policy.max_retry_after:
            return None
        return max(0.0, float(error.retry_after))
    return backoff(attempt, policy.base_delay, policy.max_delay)


def _too_long(error: ModelError, policy: RetryPolicy) -> ModelError:
    wait = error.retry_after or 0.0
    return ModelError(
        error.kind,
        f"{error.message.rstrip('.')}; the server asked to wait {wait:.0f} s, longer than the "
        f"{policy.max_retry_after:.0f} s Dexter waits (retry.maxRetryAfter in settings.json)",
        provider=error.provider,
        status_code=error.status_code,
        retry_after=error.retry_after,
        request_id=error.request_id,
    )


async def _idle_bounded(
    model: Model, request: ModelRequest, idle: float | None
) -> AsyncIterator[StreamChunk]:
    stream = model.stream(request)
    if idle is None:
        async for chunk in stream:
            yield chunk
        return
    iterator = aiter(stream)
    try:
        while True:
            try:
                # asyncio.timeout, not wait_for: wait_for drives each step from a task of its
                # own and, on Python 3.11, can swallow a Ctrl+C that lands as a chunk arrives.
                async with asyncio.timeout(idle):
                    chunk = await anext(iterator)
            except StopAsyncIteration:
                return
            except TimeoutError:
                raise ModelError(
                    ErrorKind.STREAM,
                    f"no data for {idle:g} s (stream idle timeout)",
                    provider=model.provider,
                ) from None
            yield chunk
    finally:
        close = getattr(iterator, "aclose", None)
        if close is not None:
            await close()


async def stream_with_retry(
    model: Model,
    request: ModelRequest,
    policy: RetryPolicy,
    *,
    on_retry: OnRetry | None = None,
) -> AsyncIterator[StreamChunk]:
    """Yield the model's chunks; on a transient failure yield a RetryNotice and stream again.

    Consumers must treat a RetryNotice as "discard what this attempt streamed so far".
    """
    if isinstance(model, RetryingModel):
        # Already wrapped: one policy, not two nested ones multiplying the attempts.
        model = model.inner
    attempt = 1
    while True:
        try:
            async for chunk in _idle_bounded(model, request, policy.idle_timeout):
                yield chunk
            return
        except ModelError as error:
            notice = _retry_or_raise(error, attempt, policy)
            if on_retry is not None:
                on_retry(notice)
            yield notice
            await policy.sleep(notice.delay)
            attempt += 1


def _retry_or_raise(error: ModelError, attempt: int, policy: RetryPolicy) -> RetryNotice:
    """The notice for retrying after `error`, or `error` raised when it is not retried."""
    if not error.retryable:
        raise error
    delay = backoff_delay(error, attempt, policy=policy)
    if delay is None:
        raise _too_long(error, policy) from error
    if attempt >= policy.attempts:
        raise error
    return RetryNotice(attempt=attempt, max_attempts=policy.attempts, delay=delay, error=error)


class RetryingModel:
    """Any `Model`, retried under one `RetryPolicy`. `stream` yields `RetryNotice` between
    attempts; `complete` retries the inner `complete` (same wire request, no stream) and
    returns the successful attempt's response. `on_retry` hears of every retried failure."""

    def __init__(
        self, inner: Model, policy: RetryPolicy, *, on_retry: OnRetry | None = None
    ) -> None:
        self.inner = inner
        self.policy = policy
        self.on_retry = on_retry

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def provider(self) -> str:
        return self.inner.provider

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        return stream_with_retry(self.inner, request, self.policy, on_retry=self.on_retry)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        attempt = 1
        while True:
            try:
                return await self.inner.complete(request)
            except ModelError as error:
                notice = _retry_or_raise(error, attempt, self.policy)
            if self.on_retry is not None:
                self.on_retry(notice)
            await self.policy.sleep(notice.delay)
            attempt += 1

    def __getattr__(self, name: str) -> object:
        # Wrappers underneath (recording, ledger labels) stay reachable: `rt` code sets them.
        return getattr(self.inner, name)


def with_retry(
    model: Model, policy: RetryPolicy, *, on_retry: OnRetry | None = None
) -> RetryingModel:
    """`model` under `policy`; wrapping an already-retrying model replaces its policy."""
    if isinstance(model, RetryingModel):
        return RetryingModel(model.inner, policy, on_retry=on_retry or model.on_retry)
    return RetryingModel(model, policy, on_retry=on_retry)


def no_wait(policy: RetryPolicy) -> RetryPolicy:
    """The same policy without real waiting (for tests and benchmarks)."""

    async def instant(_delay: float) -> None:
        await asyncio.sleep(0)

    return replace(policy, sleep=instant)
