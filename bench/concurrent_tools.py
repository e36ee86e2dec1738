"""Wall time of 10 concurrency-safe tools that each sleep 200 ms, against a single such tool.

Target: ratio <= 1.15. Prints the figures; asserts nothing.
Run: uv run python bench/concurrent_tools.py
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _common import NapTool, timed_run
from dexter.agent.loop import Agent, AgentConfig
from dexter.models.scripted import ScriptedModel, calls, text
from dexter.tools.registry import ToolRegistry

NAP = 0.2
REPEATS = 5


async def run_with(count: int, home: Path) -> float:
    batch = [("nap", {"seconds": NAP, "label": str(i)}) for i in range(count)]
    model = ScriptedModel([calls(*batch), text("done")], chunk_size=10_000)
    agent = Agent(model, ToolRegistry([NapTool()]), config=AgentConfig(home=home))
    return await timed_run(agent, "q")


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        await run_with(1, home)
        single = [await run_with(1, home) for _ in range(REPEATS)]
        ten = [await run_with(10, home) for _ in range(REPEATS)]
    one, many = statistics.median(single), statistics.median(ten)
    print(f"1 tool x 200 ms:   median {one * 1000:.1f} ms")
    print(f"10 tools x 200 ms: median {many * 1000:.1f} ms")
    print(f"ratio: {many / one:.3f} (target <= 1.15: {'met' if many / one <= 1.15 else 'NOT met'})")


if __name__ == "__main__":
    asyncio.run(main())
