"""Small real tools for driving the loop in tests: they sleep, record and fail on purpose."""

from __future__ import annotations

import asyncio
import time
from typing import ClassVar

from pydantic import BaseModel

from dexter.tools.base import Tool, ToolContext, ToolFailure


class Timeline:
    """Shared record of when each call started and finished, to check concurrency."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, str, float]] = []

    def mark(self, what: str, label: str) -> None:
        self.entries.append((what, label, time.perf_counter()))

    def order(self) -> list[str]:
        return [f"{what}:{label}" for what, label, _ in self.entries]


class SleepArgs(BaseModel):
    label: str
    seconds: float = 0.0
    query: str | None = None


class SleepTool(Tool[SleepArgs]):
    name: ClassVar[str] = "lookup"
    description: ClassVar[str] = "Look something up. Sleeps for `seconds`, then echoes the label."
    Args = SleepArgs
    concurrency_safe: ClassVar[bool] = True

    def __init__(self, timeline: Timeline | None = None) -> None:
        self.timeline = timeline or Timeline()
        self.cancelled = False

    async def run(self, args: SleepArgs, ctx: ToolContext) -> str:
        self.timeline.mark("start", args.label)
        ctx.progress(f"looking up {args.label}")
        try:
            await asyncio.sleep(args.seconds)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        self.timeline.mark("end", args.label)
        return f"result for {args.label}"


class WriteArgs(BaseModel):
    path: str
    content: str = ""


class WriteTool(Tool[WriteArgs]):
    name: ClassVar[str] = "write_note"
    description: ClassVar[str] = "Write a note to a file. Needs approval."
    Args = WriteArgs
    needs_approval: ClassVar[bool] = True

    def __init__(self, timeline: Timeline | None = None) -> None:
        self.timeline = timeline or Timeline()
        self.written: list[str] = []

    async def run(self, args: WriteArgs, ctx: ToolContext) -> str:
        self.timeline.mark("start", args.path)
        await asyncio.sleep(0.01)
        self.written.append(args.path)
        self.timeline.mark("end", args.path)
        return f"wrote {args.path}"


class FailArgs(BaseModel):
    reason: str = "boom"


class FailTool(Tool[FailArgs]):
    name: ClassVar[str] = "flaky"
    description: ClassVar[str] = "Always fails."
    Args = FailArgs
    concurrency_safe: ClassVar[bool] = True

    async def run(self, args: FailArgs, ctx: ToolContext) -> str:
        raise ToolFailure(f"upstream said {args.reason}")
