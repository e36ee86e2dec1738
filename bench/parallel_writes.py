"""Ten 200 ms writes to different files against one write, and ten to the same file.

The executor orders calls by the resources they declare: writes to different files run
together; writes to one file keep their order. Targets: ten different files <= 1.2x one write;
one file no faster than serial, final content from the last call. Prints figures; asserts nothing.
Run: uv run python bench/parallel_writes.py
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).parent))

from _common import timed_run
from dexter.agent.loop import Agent, AgentConfig
from dexter.models.scripted import ScriptedModel, calls, text
from dexter.permissions.gate import SimplePolicy
from dexter.tools.base import Resources, Tool, ToolContext
from dexter.tools.registry import ToolRegistry

WRITE_SECONDS = 0.2
REPEATS = 3


class SlowWriteArgs(BaseModel):
    path: str
    content: str


class SlowWrite(Tool[SlowWriteArgs]):
    """A write that takes 200 ms (a slow disk, a network share) and declares its file."""

    name: ClassVar[str] = "slow_write"
    description: ClassVar[str] = "Write a file slowly."
    Args = SlowWriteArgs

    def __init__(self, root: Path) -> None:
        self.root = root

    def resources(self, args: SlowWriteArgs) -> Resources:
        return Resources.of(writes=[f"file:{(self.root / args.path).resolve()}"])

    async def run(self, args: SlowWriteArgs, ctx: ToolContext) -> str:
        await asyncio.sleep(WRITE_SECONDS)
        (self.root / args.path).write_text(args.content)
        return f"wrote {args.path}"


async def run(paths: list[str], root: Path) -> float:
    batch = [("slow_write", {"path": p, "content": str(i)}) for i, p in enumerate(paths)]
    model = ScriptedModel([calls(*batch), text("done")], chunk_size=10_000)
    agent = Agent(
        model,
        ToolRegistry([SlowWrite(root)]),
        config=AgentConfig(home=root / ".dexter"),
        policy=SimplePolicy(allow=["slow_write"]),
    )
    return await timed_run(agent, "q")


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        one = statistics.median([await run(["one.txt"], root) for _ in range(REPEATS)])
        spread = statistics.median(
            [await run([f"f{i}.txt" for i in range(10)], root) for _ in range(REPEATS)]
        )
        same = statistics.median([await run(["same.txt"] * 10, root) for _ in range(REPEATS)])
        last = (root / "same.txt").read_text()
    print(f"1 write x 200 ms:               median {one * 1000:.0f} ms")
    print(
        f"10 writes, different files:     median {spread * 1000:.0f} ms, ratio {spread / one:.2f} "
        f"(target <= 1.2: {'met' if spread / one <= 1.2 else 'NOT met'})"
    )
    print(
        f"10 writes, one file:            median {same * 1000:.0f} ms, ratio {same / one:.2f} "
        f"(serial; last content {last!r}, expected '9': {'ok' if last == '9' else 'REORDERED'})"
    )


if __name__ == "__main__":
    asyncio.run(main())
