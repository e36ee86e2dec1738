"""The Model interface: one wire protocol, streaming our own chunk types."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from dexter.models.types import ModelRequest, ModelResponse, StreamChunk


@runtime_checkable
class Model(Protocol):
    """A chat model reachable through one wire protocol.

    `stream` yields text, reasoning and tool-call fragments as they arrive and always ends with a
    `ModelResponse` holding the assembled turn. Failures raise `ModelError`.
    """

    @property
    def name(self) -> str: ...

    @property
    def provider(self) -> str:
        """Display name of the endpoint (e.g. "OpenAI", "Ollama"), for messages to people."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]: ...

    async def complete(self, request: ModelRequest) -> ModelResponse: ...


async def complete_by_streaming(model: Model, request: ModelRequest) -> ModelResponse:
    """Run a stream to its end and return the final response (for models that only stream)."""
    final: ModelResponse | None = None
    async for chunk in model.stream(request):
        if isinstance(chunk, ModelResponse):
            final = chunk
    if final is None:
        from dexter.models.errors import ErrorKind, ModelError

        raise ModelError(
            ErrorKind.STREAM, "stream ended without a response", provider=model.provider
        )
    return final
