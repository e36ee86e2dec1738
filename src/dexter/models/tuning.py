"""Sampling settings fixed for every call of one agent or judge: a temperature and a seed.

Interactive runs leave both to the server. An evaluation sets them on every phase model (main
loop, compaction, constraints, routers, judges) so that a run says how it sampled and can be
repeated; a request that sets its own value keeps it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, replace

from dexter.models.base import Model
from dexter.models.types import ModelRequest, ModelResponse, StreamChunk


@dataclass(frozen=True, slots=True)
class Sampling:
    temperature: float | None = None
    seed: int | None = None

    @property
    def is_default(self) -> bool:
        return self.temperature is None and self.seed is None

    def apply(self, request: ModelRequest) -> ModelRequest:
        if self.is_default:
            return request
        temperature = request.temperature if request.temperature is not None else self.temperature
        seed = request.seed if request.seed is not None else self.seed
        return replace(request, temperature=temperature, seed=seed)


class SampledModel:
    """`inner` with `sampling` filled into every request that does not set its own."""

    def __init__(self, inner: Model, sampling: Sampling) -> None:
        self.inner = inner
        self.sampling = sampling

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def provider(self) -> str:
        return self.inner.provider

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        async for chunk in self.inner.stream(self.sampling.apply(request)):
            yield chunk

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return await self.inner.complete(self.sampling.apply(request))


__all__ = ["SampledModel", "Sampling"]
