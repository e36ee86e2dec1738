"""spawn_subagent: isolation, restricted tools, parallelism, the cap, usage and failures."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from dexter.agent.events import Done, Event, ToolEnd, ToolProgress
from dexter.agent.loop import Agent, AgentConfig
from dexter.agent.subagent import FORBIDDEN_TOOLS, SubagentArgs, SubagentTool
from dexter.models.errors import ErrorKind, ModelError
from dexter.models.scripted import Reply, ScriptedModel, calls, text
from dexter.models.types import ModelRequest, SystemMessage, ToolMessage, Usage, UserMessage
from dexter.tools.ask_user import AskUserTool
from dexter.tools.base import Tool, ToolContext, ToolFailure
from dexter.tools.finance.calculate import CalculateTool
from dexter.tools.registry import ToolRegistry
from tests.support.tools import SleepTool, Timeline, WriteTool

PARENT_SECRET = "parent-only: the user's portfolio is 60% NVDA"


class _NamedArgs(BaseModel):
    command: str = ""


def _named_tool(tool_name: str, approval: bool = False) -> Tool[Any]:
    class Named(Tool[_NamedArgs]):
        name: ClassVar[str] = tool_name
        description: ClassVar[str] = f"The {tool_name} tool."
        Args: ClassVar[type[BaseModel]] = _NamedArgs
        needs_approval: ClassVar[bool] = approval

        async def run(self, args: _NamedArgs, ctx: ToolContext) -> str:
            return "ran"

    return Named()


class SourcedArgs(BaseModel):
    label: str


class SourcedTool(Tool[SourcedArgs]):
    """Registers a source in whatever ledger the run gives it, like the finance tools do."""

    name: ClassVar[str] = "sourced"
    description: ClassVar[str] = "Return a figure with a source id."
    Args: ClassVar[type[BaseModel]] = SourcedArgs
    concurrency_safe: ClassVar[bool] = True

    async def run(self, args: SourcedArgs, ctx: ToolContext) -> str:
        source = ctx.sources.add(f"filing {args.label}")
        return f"{args.label} = 42 [{source}]"


def task_of(request: ModelRequest) -> str:
    user = [m for m in request.messages if isinstance(m, UserMessage)]
    return user[0].content.rsplit("## Task\n", 1)[-1].strip()


def worker_script(seconds: float = 0.2) -> list[Any]:
    """Look the task up with a sleeping tool, then answer with the task's name."""

    def look(request: ModelRequest) -> Reply:
        return calls(("lookup", {"label": task_of(request), "seconds": seconds}))

    def answer(request: ModelRequest) -> Reply:
        return text(
            f"finding for {task_of(request)}", usage=Usage(input_tokens=100, output_tokens=20)
        )

    return [look, answer]


class _Spawner(Agent):
    """The agent a factory hands out; the tool runs a clone of it, which `ran` collects."""

    def __init__(self, *args: Any, ran: list[Agent], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ran = ran

    def clone(self, **changes: Any) -> Agent:
        agent = super().clone(**changes)
        self.ran.append(agent)
        return agent


class Factory:
    """make_agent for tests: every sub-agent gets a fresh ScriptedModel from `script`;
    `agents` are the sub-agents that ran (clones of what the factory made)."""

    def __init__(
        self,
        tmp_path: Path,
        tools: list[Tool[Any]],
        script: Callable[[], list[Any]] = worker_script,
    ) -> None:
        self.tmp_path = tmp_path
        self.tools = tools
        self.script = script
        self.models: list[ScriptedModel] = []
        self.agents: list[Agent] = []
        self.requested: list[list[str] | None] = []

    def __call__(self, names: list[str] | None) -> Agent:
        self.requested.append(names)
        model = ScriptedModel(self.script())
        self.models.append(model)
        config = AgentConfig(max_iterations=20, home=self.tmp_path / ".dexter")
        return _Spawner(model, ToolRegistry(self.tools), config=config, ran=self.agents)


def spawn(task: str, **extra: Any) -> tuple[str, dict[str, Any]]:
    return ("spawn_subagent", {"description": f"research {task}", "task": task, **extra})


def parent_agent(tmp_path: Path, model: ScriptedModel, tool: SubagentTool) -> Agent:
    registry = ToolRegistry([tool, CalculateTool()])
    return Agent(model, registry, config=AgentConfig(home=tmp_path / ".dexter"))


async def run_all(agent: Agent, query: str) -> list[Event]:
    return [event async for event in agent.run(query)]


def max_overlap(timeline: Timeline) -> int:
    active = peak = 0
    for what, _label, _at in sorted(timeline.entries, key=lambda e: e[2]):
        active += 1 if what == "start" else -1
        peak = max(peak, active)
    return peak


async def test_two_subagents_run_in_parallel_with_isolated_context(tmp_path: Path) -> None:
    timeline = Timeline()
    factory = Factory(tmp_path, [SleepTool(timeline), CalculateTool()])
    tool = SubagentTool(factory)
    parent_model = ScriptedModel(
        [
            calls(spawn("AAPL margins", context="fiscal 2024"), spawn("MSFT margins")),
            text("combined answer"),
        ]
    )
    parent = parent_agent(tmp_path, parent_model, tool)
    parent.history = [UserMessage(PARENT_SECRET)]

    started = asyncio.get_running_loop().time()
    events = await run_all(parent, "compare AAPL and MSFT margins")
    elapsed = asyncio.get_running_loop().time() - started

    assert isinstance(events[-1], Done) and events[-1].answer == "combined answer"
    # Both lookups started before either finished: the sub-agents overlapped.
    assert max_overlap(timeline) == 2
    assert elapsed < 0.4, elapsed  # two 0.2 s sub-agents in sequence take 0.4 s or more

    # Each sub-agent's model saw only the worker prompt and its own task and context.
    assert len(factory.models) == 2
    for model in factory.models:
        first = model.requests[0].messages
        assert len(first) == 2
        assert isinstance(first[0], SystemMessage) and "research worker" in first[0].content
        assert isinstance(first[1], UserMessage)
        for request in model.requests:
            joined = "\n".join(str(getattr(m, "content", "")) for m in request.messages)
            assert PARENT_SECRET not in joined
            assert "compare AAPL and MSFT margins" not in joined
    tasks = sorted(task_of(m.requests[0]) for m in factory.models)
    assert tasks == ["AAPL margins", "MSFT margins"]
    aapl = next(m for m in factory.models if task_of(m.requests[0]) == "AAPL margins")
    assert "## Context\nfiscal 2024" in aapl.requests[0].messages[1].content

    # The parent got each answer with a usage footer.
    results = [m.content for m in parent_model.requests[1].messages if isinstance(m, ToolMessage)]
    assert results[0].startswith("finding for AAPL margins")
    assert results[1].startswith("finding for MSFT margins")
    assert all("tokens" in r and "1 tool call" in r for r in results)

    progress = [e.message for e in events if isinstance(e, ToolProgress)]
    assert any("lookup" in p for p in progress)


async def test_restricted_tool_list(tmp_path: Path) -> None:
    recursive = SubagentTool(lambda names: Factory(tmp_path, [])(names))
    tools: list[Tool[Any]] = [
        SleepTool(),
        CalculateTool(),
        recursive,
        AskUserTool(None),
        WriteTool(),  # needs approval: dropped
        _named_tool("bash"),
        _named_tool("write_file"),
        _named_tool("edit_file"),
    ]
    factory = Factory(tmp_path, tools)
    tool = SubagentTool(factory)
    result = await tool.run(SubagentArgs(description="d", task="AAPL"), ToolContext())
    specs = {spec.name for spec in factory.models[0].requests[0].tools}
    assert specs == {"lookup", "calculate"}
    assert not specs & FORBIDDEN_TOOLS
    assert factory.requested == [None]
    assert result.data["tools"] == ["lookup", "calculate"]


async def test_a_parent_with_tools_on_request_offers_its_sub_agent_all_it_may_use(
    tmp_path: Path,
) -> None:
    class OnRequest(Factory):
        def __call__(self, names: list[str] | None) -> Agent:
            agent = super().__call__(names)
            agent.tools = ToolRegistry(self.tools, on_request={"calculate"})
            return agent

    factory = OnRequest(tmp_path, [SleepTool(), CalculateTool()])
    result = await SubagentTool(factory).run(
        SubagentArgs(description="d", task="AAPL"), ToolContext()
    )
    first = factory.models[0].requests[0]
    assert {spec.name for spec in first.tools} == {"lookup", "calculate"}
    system = first.messages[0]
    assert isinstance(system, SystemMessage) and "load_tools" not in system.content
    assert result.data["tools"] == ["lookup", "calculate"]


async def test_requested_subset_and_forbidden_names(tmp_path: Path) -> None:
    factory = Factory(tmp_path, [SleepTool(), CalculateTool(), _named_tool("bash")])
    tool = SubagentTool(factory)
    args = SubagentArgs(
        description="d", task="AAPL", tools=["lookup", "bash", "spawn_subagent", "nope"]
    )
    result = await tool.run(args, ToolContext())
    assert factory.requested == [["lookup", "nope"]]
    assert {s.name for s in factory.models[0].requests[0].tools} == {"lookup"}
    assert result.data["ignored_tools"] == ["bash", "spawn_subagent", "nope"]
    assert "not available to sub-agents: bash, spawn_subagent, nope" in result.content

    with pytest.raises(ToolFailure, match="cannot use bash"):
        await tool.run(SubagentArgs(description="d", task="x", tools=["bash"]), ToolContext())
    with pytest.raises(ToolFailure, match="Available: lookup, calculate"):
        await tool.run(SubagentArgs(description="d", task="x", tools=["nope"]), ToolContext())


async def test_answer_usage_sources_and_iteration_cap(tmp_path: Path) -> None:
    def script() -> list[Any]:
        return [
            calls(("sourced", {"label": "10-K"}), usage=Usage(input_tokens=300, output_tokens=30)),
            text("margin is 42 [S1]", usage=Usage(input_tokens=400, output_tokens=40)),
        ]

    factory = Factory(tmp_path, [SourcedTool()], script)
    tool = SubagentTool(factory, max_iterations=3)
    ctx = ToolContext(progress=lambda message: progress.append(message))
    progress: list[str] = []
    ctx.sources.add("an earlier parent source")  # the parent already has S1
    result = await tool.run(SubagentArgs(description="AAPL margin", task="t"), ctx)

    assert result.data["usage"] == Usage(input_tokens=700, output_tokens=70)
    assert result.content.startswith("margin is 42 [S2]")
    assert "770 tokens (700 in, 70 out)" in result.content
    assert [e.label for e in ctx.sources.entries()] == ["an earlier parent source", "filing 10-K"]
    assert result.data["sources"] == [{"id": "S2", "label": "filing 10-K", "url": None}]
    assert factory.agents[0].config.max_iterations == 3
    assert factory.agents[0].config.system_prompt is not None
    assert progress[0] == "AAPL margin: started"
    assert "AAPL margin: sourced (tool call 1)" in progress
    assert progress[-1] == "AAPL margin: done"


async def test_semaphore_caps_parallel_subagents(tmp_path: Path) -> None:
    timeline = Timeline()
    factory = Factory(tmp_path, [SleepTool(timeline)], lambda: worker_script(0.1))
    tool = SubagentTool(factory, max_parallel=2)
    progress: list[str] = []

    async def one(task: str) -> str:
        ctx = ToolContext(progress=progress.append)
        result = await tool.run(SubagentArgs(description=task, task=task), ctx)
        return result.content

    results = await asyncio.gather(one("A"), one("B"), one("C"))
    assert [r.split("\n")[0] for r in results] == [
        "finding for A",
        "finding for B",
        "finding for C",
    ]
    assert max_overlap(timeline) == 2
    assert any("waiting for a free sub-agent slot" in p for p in progress)


async def test_semaphore_is_shared_between_tools_with_the_same_cap(tmp_path: Path) -> None:
    timeline = Timeline()
    factory = Factory(tmp_path, [SleepTool(timeline)], lambda: worker_script(0.1))
    first, second = SubagentTool(factory, max_parallel=1), SubagentTool(factory, max_parallel=1)
    await asyncio.gather(
        first.run(SubagentArgs(description="a", task="A"), ToolContext()),
        second.run(SubagentArgs(description="b", task="B"), ToolContext()),
    )
    assert max_overlap(timeline) == 1


async def test_subagent_model_error_is_a_tool_failure(tmp_path: Path) -> None:
    def script() -> list[Any]:
        return [ModelError(ErrorKind.AUTH, "bad key", provider="Scripted")]

    factory = Factory(tmp_path, [SleepTool()], script)
    tool = SubagentTool(factory)
    with pytest.raises(ToolFailure, match="sub-agent 'broken' failed"):
        await tool.run(SubagentArgs(description="broken", task="t"), ToolContext())


async def test_subagent_failure_reaches_the_parent_as_a_tool_error(tmp_path: Path) -> None:
    def script() -> list[Any]:
        return [ModelError(ErrorKind.AUTH, "bad key", provider="Scripted")]

    tool = SubagentTool(Factory(tmp_path, [SleepTool()], script))
    parent_model = ScriptedModel([calls(spawn("x")), text("could not")])
    events = await run_all(parent_agent(tmp_path, parent_model, tool), "q")
    assert isinstance(events[-1], Done) and events[-1].answer == "could not"
    errors = [
        m for m in parent_model.requests[1].messages if isinstance(m, ToolMessage) and m.is_error
    ]
    assert len(errors) == 1 and "sub-agent 'research x' failed" in errors[0].content
    assert not [e for e in events if isinstance(e, ToolEnd)]


async def test_factory_error_and_empty_answer_are_tool_failures(tmp_path: Path) -> None:
    def broken(_: list[str] | None) -> Agent:
        raise RuntimeError("no model configured")

    with pytest.raises(ToolFailure, match=r"could not start the sub-agent.*no model configured"):
        await SubagentTool(broken).run(SubagentArgs(description="d", task="t"), ToolContext())

    empty = SubagentTool(Factory(tmp_path, [], lambda: [text("   ")]))
    with pytest.raises(ToolFailure, match="without an answer"):
        await empty.run(SubagentArgs(description="d", task="t"), ToolContext())


async def test_factory_config_is_not_mutated(tmp_path: Path) -> None:
    shared = AgentConfig(max_iterations=20, home=tmp_path / ".dexter")

    def make(_: list[str] | None) -> Agent:
        return Agent(ScriptedModel([text("ok")]), ToolRegistry([]), config=shared)

    result = await SubagentTool(make).run(SubagentArgs(description="d", task="t"), ToolContext())
    assert result.content.startswith("ok")
    assert shared.max_iterations == 20 and shared.system_prompt is None
