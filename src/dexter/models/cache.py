"""A response cache keyed on the full request: the same call twice is answered once.

The key is a SHA-256 over the model's identity (provider:model and the endpoint it is reached
at) and everything the request carries: messages, tools, tool choice, output limit,
temperature and seed. Change any of them and the call goes to the model again. A hit is replayed
as a stream (reasoning, text, tool calls, the finished turn) and reports no usage: a rerun of an
unchanged evaluation question costs nothing. Only finished turns are stored; a failed call is
not.

Where entries live is the caller's business (`ResponseStore`); the store's lookups are blocking
and run off the event loop.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from dexter.models.base import Model
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

KEY_VERSION = 1  # bump when the key's recipe changes, so old entries stop matching


class ResponseStore(Protocol):
    def get(self, key: str) -> dict[str, Any] | None: ...

    def put(self, key: str, model: str, response: dict[str, Any]) -> None: ...


@dataclass
class CacheTally:
    """Hits and misses of the calls made under one context (an evaluation question)."""

    hits: int = 0
    misses: int = 0


tally: contextvars.ContextVar[CacheTally | None] = contextvars.ContextVar(
    "dexter_cache_tally", default=None
)


def request_key(identity: str, request: ModelRequest) -> str:
    payload = {"v": KEY_VERSION, "model": identity, "request": asdict(request)}
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def response_to_dict(response: ModelResponse) -> dict[str, Any] | None:
    """The turn as JSON data, or None when it holds something JSON cannot keep exactly."""
    data = {
        "content": response.message.content,
        "reasoning": response.message.reasoning,
        "tool_calls": [[c.id, c.name, c.arguments] for c in response.message.tool_calls],
        "provider_data": dict(response.message.provider_data),
        "stop_reason": response.stop_reason,
    }
    try:
        if json.loads(json.dumps(data)) != data:
            return None
    except (TypeError, ValueError):
        return None
    return data


def response_from_dict(data: Mapping[str, Any]) -> ModelResponse:
    message = AssistantMessage(
        content=str(data.get("content") or ""),
        tool_calls=tuple(ToolCall(*map(str, call)) for call in data.get("tool_calls") or ()),
        reasoning=str(data.get("reasoning") or ""),
        provider_data=dict(data.get("provider_data") or {}),
    )
    return ModelResponse(message=message, usage=Usage(), stop_reason=str(data["stop_reason"]))


def _replay(response: ModelResponse) -> list[StreamChunk]:
    message = response.message
    chunks: list[StreamChunk] = []
    if message.reasoning:
        chunks.append(ReasoningChunk(message.reasoning))
    if message.content:
        chunks.append(TextChunk(message.content))
    for index, call in enumerate(message.tool_calls):
        chunks.append(ToolCallChunk(index=index, id=call.id, name=call.name))
        chunks.append(ToolCallChunk(index=index, arguments=call.arguments))
    chunks.append(response)
    return chunks


class CachedModel:
    """`inner` answered from `store` when the identical request was answered before."""

    def __init__(self, inner: Model, store: ResponseStore, identity: str) -> None:
        self.inner = inner
        self.store = store
        self.identity = identity

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def provider(self) -> str:
        return self.inner.provider

    async def _lookup(self, key: str) -> ModelResponse | None:
        found = await asyncio.to_thread(self.store.get, key)
        counter = tally.get()
        if counter is not None:
            if found is None:
                counter.misses += 1
            else:
                counter.hits += 1
        return response_from_dict(found) if found is not None else None

    async def _keep(self, key: str, response: ModelResponse) -> None:
        data = response_to_dict(response)
        if data is not None:
            await asyncio.to_thread(self.store.put, key, self.identity, data)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        key = request_key(self.identity, request)
        cached = await self._lookup(key)
        if cached is not None:
            for chunk in _replay(cached):
                yield chunk
            return
        final: ModelResponse | None = None
        async for chunk in self.inner.stream(request):
            if isinstance(chunk, ModelResponse):
                final = chunk
            yield chunk
        if final is not None:
            await self._keep(key, final)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        key = request_key(self.identity, request)
        cached = await self._lookup(key)
        if cached is not None:
            return cached
        response = await self.inner.complete(request)
        await self._keep(key, response)
        return response


__all__ = [
    "CacheTally",
    "CachedModel",
    "ResponseStore",
    "request_key",
    "response_from_dict",
    "response_to_dict",
    "tally",
]
