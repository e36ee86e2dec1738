"""Agent overhead per iteration with a 100-message context, on a zero-latency scripted model.

Target: <= 2 ms per iteration. Prints the figure; asserts nothing.
Run: uv run python bench/agent_overhead.py
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
from dexter.models.types import AssistantMessage, UserMessage
from dexter.tools.registry import ToolRegistry

ITERATIONS = 10
RUNS = 40
HISTORY_MESSAGES = 100


async def one_run(home: Path) -> float:
    script = [calls(("nap", {"label": str(i)})) for i in range(ITERATIONS - 1)]
    script.append(text("final answer"))
    model = ScriptedModel(script, chunk_size=10_000)
    agent = Agent(
        model,
        ToolRegistry([NapTool()]),
        config=AgentConfig(max_iterations=ITERATIONS + 1, home=home),
    )
    for i in range(HISTORY_MESSAGES // 2):
        agent.history.append(UserMessage(f"earlier question {i} about revenue and margins"))
        agent.history.append(AssistantMessage(content=f"earlier answer {i}: " + "figures " * 40))
    return await timed_run(agent, "benchmark question") / ITERATIONS


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        await one_run(home)  # warm-up: imports, first file creation
        samples = [await one_run(home) for _ in range(RUNS)]
    per_iteration_ms = [s * 1000 for s in samples]
    median = statistics.median(per_iteration_ms)
    print(
        f"context: {HISTORY_MESSAGES} history messages + system + query, growing with tool rounds"
    )
    print(
        f"agent overhead per iteration: median {median:.3f} ms, min {min(per_iteration_ms):.3f} ms"
        f" over {RUNS} runs x {ITERATIONS} iterations"
    )
    print(f"target <= 2 ms: {'met' if median <= 2 else 'NOT met'}")


if __name__ == "__main__":
    asyncio.run(main())
