"""Tools offered on request: bound and named in the prompt, their schemas sent only once a run
loads them with `load_tools`, so every request stays small and the model can still do all it
could."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import pytest
from pydantic import BaseModel

from dexter.agent.events import Done, ToolEnd
from dexter.cli.open_runtime import open_runtime
from dexter.config import load_settings
from dexter.models.scripted import Reply, ScriptedModel
from dexter.models.types import ModelRequest, SystemMessage, ToolMessage
from dexter.runtime import ASK, AgentSpec
from dexter.tools.base import Tool, ToolContext, ToolFailure
from dexter.tools.load_tools import LoadTools, LoadToolsArgs
from dexter.tools.registry import ToolRegistry

MODEL = "openai:gpt-test"
CHECK = "Alert if NVDA's gross margin falls below 70% in a new 10-Q."
NOTE = "Holds 120 NVDA at an average cost of $412.50; wants no more than 15% in one name."


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in ("OPENAI_BASE_URL", "DEXTER_ROUTER_MODEL", "DEXTER_MODEL", "DEXTER_MEMORY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123456")
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def offered(request: ModelRequest) -> set[str]:
    return {spec.name for spec in request.tools}


def system_text(request: ModelRequest) -> str:
    system = request.messages[0]
    assert isinstance(system, SystemMessage)
    return system.content


@pytest.fixture
def checklist(home: Path) -> Path:
    home.mkdir(parents=True)
    (home / "HEARTBEAT.md").write_text(f"- {CHECK}\n")
    return home


async def test_a_tool_on_request_is_found_loaded_and_used_and_only_in_that_run(
    checklist: Path,
) -> None:
    def first(request: ModelRequest) -> Reply:
        # Not offered yet, but named in the prompt with what it is for.
        assert "heartbeat" not in offered(request) and "load_tools" in offered(request)
        assert "- `heartbeat`: the checklist of periodic unattended checks" in system_text(request)
        return Reply(tool_calls=[("load_tools", {"names": ["heartbeat"]})], call_ids=["c1"])

    def second(request: ModelRequest) -> Reply:
        spec = next(s for s in request.tools if s.name == "heartbeat")
        assert "HEARTBEAT.md" in spec.description and "view" in json.dumps(spec.parameters)
        return Reply(tool_calls=[("heartbeat", {"action": "view"})], call_ids=["c2"])

    def third(request: ModelRequest) -> Reply:
        result = request.messages[-1]
        assert isinstance(result, ToolMessage) and CHECK in result.content
        return Reply(text="Your heartbeat checks NVDA's gross margin.")

    def next_run(request: ModelRequest) -> Reply:
        assert "heartbeat" not in offered(request)  # loaded for that run only
        # A model that calls it by the name in the prompt, without loading it, still gets it.
        return Reply(tool_calls=[("heartbeat", {"action": "view"})], call_ids=["c3"])

    def next_answer(request: ModelRequest) -> Reply:
        result = request.messages[-1]
        assert isinstance(result, ToolMessage) and CHECK in result.content
        assert "heartbeat" in offered(request)  # called, so offered from then on
        return Reply(text="ok")

    model = ScriptedModel([first, second, third, next_run, next_answer])
    runtime = open_runtime(load_settings())
    runtime._clients[runtime.resolve(MODEL).spec] = model
    async with runtime:
        session = runtime.agent(AgentSpec(model=MODEL, channel=ASK))
        events = [event async for event in session.run("What does my heartbeat check?")]
        done = events[-1]
        assert isinstance(done, Done) and done.status == "answered", done
        assert done.answer == "Your heartbeat checks NVDA's gross margin."
        ends = [e for e in events if isinstance(e, ToolEnd)]
        assert [e.tool for e in ends] == ["load_tools", "heartbeat"]
        assert "Loaded: heartbeat" in ends[0].result
        later = [event async for event in session.run("Thanks.")]
    assert isinstance(later[-1], Done) and later[-1].status == "answered"
    assert model.calls_made == 5


class _Args(BaseModel):
    x: int = 0


class _Named(Tool[_Args]):
    description: ClassVar[str] = "A test tool. It does nothing at all."
    Args = _Args
    concurrency_safe: ClassVar[bool] = True

    def __init__(self, name: str) -> None:
        self.name = name  # type: ignore[misc]

    async def run(self, args: _Args, ctx: ToolContext) -> str:
        return self.name


async def test_loading_is_per_run_and_unknown_names_list_what_can_be_loaded() -> None:
    registry = ToolRegistry(
        [_Named("lookup"), _Named("cron"), _Named("browser")], on_request={"cron", "browser"}
    )
    assert registry.names() == ["lookup", "cron", "browser", "load_tools"]
    assert [s.name for s in registry.offered_specs("r1")] == ["lookup", "load_tools"]
    assert [s.name for s in registry.specs()] == registry.names()  # `tools list` shows all

    loader = registry.get("load_tools")
    assert isinstance(loader, LoadTools)
    result = await loader.run(LoadToolsArgs(names=["cron", "nope"]), ToolContext(run_id="r1"))
    assert (
        result.content == "Loaded: cron. Call them from your next step. Unknown, not loaded: nope."
    )
    assert [s.name for s in registry.offered_specs("r1")] == ["lookup", "cron", "load_tools"]
    assert "cron" not in {s.name for s in registry.offered_specs("r2")}
    with pytest.raises(ToolFailure, match="Tools to load: browser, cron"):
        await loader.run(LoadToolsArgs(names=["nope"]), ToolContext(run_id="r1"))
    await loader.run_finished("r1")
    assert "cron" not in {s.name for s in registry.offered_specs("r1")}


def test_a_subset_of_the_tools_offers_everything_it_binds() -> None:
    # A sub-agent's tools are a subset of its parent's: the parent's loader would load into the
    # parent, so the subset drops it and offers every tool it has.
    parent = ToolRegistry([_Named("lookup"), _Named("browser")], on_request={"browser"})
    subset = ToolRegistry(t for t in parent if t.name != "lookup")
    assert subset.names() == ["browser"]
    assert [s.name for s in subset.offered_specs("r1")] == ["browser"]


def test_recall_is_offered_once_there_is_something_to_recall(home: Path) -> None:
    runtime = open_runtime(load_settings())
    fresh = runtime.tools(AgentSpec(channel=ASK))
    assert "memory_search" in fresh.on_request and "memory_search" in fresh.names()
    runtime.close_local()

    (home / "memory").mkdir(parents=True)
    (home / "memory" / "MEMORY.md").write_text(f"{NOTE}\n")
    runtime = open_runtime(load_settings())
    remembered = runtime.tools(AgentSpec(channel=ASK))
    assert "memory_search" not in remembered.on_request
    assert "memory_search" in {s.name for s in remembered.offered_specs("r1")}
    runtime.close_local()


def test_tools_named_one_by_one_are_all_offered(home: Path) -> None:
    runtime = open_runtime(load_settings())
    chosen = runtime.tools(AgentSpec(channel=ASK, tools=frozenset({"calculate", "bash"})))
    assert chosen.names() == ["calculate", "bash"]
    assert [s.name for s in chosen.offered_specs("r1")] == ["calculate", "bash"]
    runtime.close_local()


def test_every_request_of_a_default_ask_stays_small(home: Path) -> None:
    """What every request of `dexter ask` carries before any result: the system prompt and the
    schemas offered up front. It was 29,000 characters; a long session's total depends on it."""
    runtime = open_runtime(load_settings())
    session = runtime.agent(AgentSpec(model=MODEL, channel=ASK))
    agent = session.agent
    prompt = agent.system_prompt()
    specs = agent.tools.offered_specs("r1")
    schemas = sum(
        len(json.dumps({"name": s.name, "description": s.description, "parameters": s.parameters}))
        for s in specs
    )
    runtime.close_local()
    # About 9,400 now; past ~10,000 the long session of bench/long_session.py sends more than
    # 20% of what an unmanaged context would (each 1,000 characters here cost ~0.14 points).
    assert len(prompt) + schemas <= 10_000, (len(prompt), schemas)
    # Everything bound is still reachable: offered, or named in the prompt for `load_tools`.
    for name in agent.tools.names():
        assert name in {s.name for s in specs} or f"- `{name}`:" in prompt, name
