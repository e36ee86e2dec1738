"""Shared pieces for the benchmark scripts (not part of the package)."""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import ClassVar

from pydantic import BaseModel

from dexter.agent.loop import Agent
from dexter.tools.base import Tool, ToolContext


class NapArgs(BaseModel):
    seconds: float = 0.0
    label: str = ""


class NapTool(Tool[NapArgs]):
    name: ClassVar[str] = "nap"
    description: ClassVar[str] = "Sleep for `seconds` and return."
    Args = NapArgs
    concurrency_safe: ClassVar[bool] = True

    async def run(self, args: NapArgs, ctx: ToolContext) -> str:
        if args.seconds:
            await asyncio.sleep(args.seconds)
        return f"slept {args.seconds}s {args.label}"


def summary(samples: list[float]) -> str:
    return (
        f"median {statistics.median(samples):.3f}, min {min(samples):.3f}, "
        f"max {max(samples):.3f} (n={len(samples)})"
    )


async def timed_run(agent: Agent, question: str) -> float:
    """Seconds for one whole agent run on `question`, every event drained."""
    started = time.perf_counter()
    async for _ in agent.run(question):
        pass
    return time.perf_counter() - started
