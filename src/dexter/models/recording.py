"""Record every model call (who, which phase, how many tokens, success or not) for the ledger.

A `RecordingModel` wraps any Model, so the loop, the routers and compaction stay unaware of the
ledger: the session decides where records go and labels each wrapped model with its phase.
The run they belong to travels in a context variable, set by whoever starts the run.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from dexter.models.base import Model
from dexter.models.errors import ModelError
from dexter.models.types import ModelRequest, ModelResponse, RetryNotice, StreamChunk, Usage


@dataclass(frozen=True)
class RunLabel:
    session_id: str | None = None
    run_id: str | None = None


current_run: contextvars.ContextVar[RunLabel | None] = contextvars.ContextVar(
    "dexter_current_run", default=None
)


@dataclass(frozen=True)
class ModelCallRecord:
    session_id: str | None
    run_id: str | None
    provider: str
    model: str
    phase: str  # main, router, compaction, memory, subagent, judge …
    usage: Usage | None
    ok: bool
    error: str | None = None
    tool: str | None = None


Sink = Callable[[ModelCallRecord], None]


class RecordingModel:
    """A Model that reports each call to `sink` after it ends, whatever the outcome.

    Over a retrying model (`models.retry`), pass `note_retry` as its `on_retry`: each attempt it
    gave up on is then recorded as a failed call, so the ledger counts attempts, not outcomes.
    """

    def __init__(self, inner: Model, sink: Sink, *, phase: str, tool: str | None = None) -> None:
        self.inner = inner
        self._sink = sink
        self.phase = phase
        self.tool = tool

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def provider(self) -> str:
        return self.inner.provider

    def _record(self, usage: Usage | None, *, ok: bool, error: str | None = None) -> None:
        label = current_run.get() or RunLabel()
        self._sink(
            ModelCallRecord(
                session_id=label.session_id,
                run_id=label.run_id,
                provider=self.inner.provider,
                model=self.inner.name,
                phase=self.phase,
                usage=usage,
                ok=ok,
                error=error,
                tool=self.tool,
            )
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        try:
            async for chunk in self.inner.stream(request):
                if isinstance(chunk, ModelResponse):
                    self._record(chunk.usage, ok=True)
                yield chunk
        except ModelError as error:
            self._record(None, ok=False, error=f"{error.kind}: {error.message}"[:500])
            raise
        except asyncio.CancelledError:
            self._record(None, ok=False, error="cancelled")
            raise

    def note_retry(self, notice: RetryNotice) -> None:
        failed = notice.error
        self._record(None, ok=False, error=f"{failed.kind}: {failed.message}"[:500])

    async def complete(self, request: ModelRequest) -> ModelResponse:
        try:
            response = await self.inner.complete(request)
        except ModelError as error:
            self._record(None, ok=False, error=f"{error.kind}: {error.message}"[:500])
            raise
        except asyncio.CancelledError:
            self._record(None, ok=False, error="cancelled")
            raise
        self._record(response.usage, ok=True)
        return response
