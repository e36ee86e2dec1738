"""ScriptedModel: a test double that replays a list of responses, chunk by chunk."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dexter.models.errors import ModelError
from dexter.models.types import (
    AssistantMessage,
    ModelRequest,
    ModelResponse,
    ReasoningChunk,
    StreamChunk,
    TextChunk,
    ToolCall,
    ToolCallChunk,
    Usage,
)


@dataclass(frozen=True)
class Reply:
    """One scripted turn: optional reasoning, text and tool calls (name, args) with usage."""

    text: str = ""
    tool_calls: Sequence[tuple[str, dict[str, Any] | str]] = ()
    reasoning: str = ""
    usage: Usage = field(default_factory=lambda: Usage(input_tokens=10, output_tokens=5))
    call_ids: Sequence[str | None] | None = None
    delay: float = 0.0


def text(answer: str, **kwargs: Any) -> Reply:
    return Reply(text=answer, **kwargs)


def calls(*tool_calls: tuple[str, dict[str, Any] | str], text: str = "", **kwargs: Any) -> Reply:
    return Reply(text=text, tool_calls=tool_calls, **kwargs)


ScriptStep = Reply | ModelError | Callable[[ModelRequest], "Reply | ModelError"]


class ScriptedModel:
    """Replays `script` in order, one step per call, recording every request it was given.

    A step may be a `Reply`, a `ModelError` to raise, or a callable that decides from the request.
    Text is streamed in small pieces so consumers see real incremental deltas.
    """

    def __init__(
        self,
        script: Sequence[ScriptStep],
        *,
        name: str = "scripted",
        provider: str = "Scripted",
        chunk_size: int = 8,
    ) -> None:
        self._script = list(script)
        self._name = name
        self._provider = provider
        self._chunk_size = chunk_size
        self.requests: list[ModelRequest] = []

    @property
    def name(self) -> str:
        return self._name

    @property
    def provider(self) -> str:
        return self._provider

    @property
    def calls_made(self) -> int:
        return len(self.requests)

    def _next(self, request: ModelRequest) -> Reply:
        self.requests.append(request)
        if not self._script:
            raise AssertionError(
                f"ScriptedModel ran out of replies after {len(self.requests)} calls"
            )
        step = self._script.pop(0)
        if callable(step) and not isinstance(step, Reply | ModelError):
            step = step(request)
        if isinstance(step, ModelError):
            raise step
        return step

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        reply = self._next(request)
        if reply.delay:
            await asyncio.sleep(reply.delay)
        size = self._chunk_size
        for i in range(0, len(reply.reasoning), size):
            yield ReasoningChunk(reply.reasoning[i : i + size])
        for i in range(0, len(reply.text), size):
            yield TextChunk(reply.text[i : i + size])
        tool_calls: list[ToolCall] = []
        for index, (name, args) in enumerate(reply.tool_calls):
            raw = args if isinstance(args, str) else json.dumps(args)
            call_id = reply.call_ids[index] if reply.call_ids is not None else f"call_{index}"
            yield ToolCallChunk(index=index, id=call_id, name=name)
            half = len(raw) // 2
            yield ToolCallChunk(index=index, arguments=raw[:half])
            yield ToolCallChunk(index=index, arguments=raw[half:])
            tool_calls.append(ToolCall(id=call_id or "", name=name, arguments=raw))
        message = AssistantMessage(
            content=reply.text, tool_calls=tuple(tool_calls), reasoning=reply.reasoning
        )
        yield ModelResponse(
            message=message,
            usage=reply.usage,
            stop_reason="tool_calls" if tool_calls else "stop",
        )

    async def complete(self, request: ModelRequest) -> ModelResponse:
        from dexter.models.base import complete_by_streaming

        return await complete_by_streaming(self, request)
