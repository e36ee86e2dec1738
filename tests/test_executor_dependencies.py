"""Calls that declare what they touch: independent writes run together, conflicting calls keep
the model's order, approvals come once per wave, and results always come back in call order."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from dexter.agent.events import ApprovalRequest, Event, ToolDenied, ToolStart
from dexter.agent.executor import ExecutionResult, ToolExecutor
from dexter.agent.scratchpad import Scratchpad
from dexter.models.types import ToolCall, ToolMessage
from dexter.permissions.gate import ApprovalAnswer, SimplePolicy
from dexter.tools.base import Resources, Tool, ToolContext
from dexter.tools.fs import EditFileTool, ReadFileTool, WriteFileTool
from dexter.tools.registry import ToolRegistry


class TouchArgs(BaseModel):
    label: str
    reads: list[str] = []
    writes: list[str] = []


class TouchTool(Tool[TouchArgs]):
    """Declares the resources it is given and records when it starts and ends."""

    name: ClassVar[str] = "touch"
    description: ClassVar[str] = "Touch some resources."
    Args = TouchArgs

    def __init__(self) -> None:
        self.log: list[str] = []
        self.running = 0
        self.peak = 0

    def resources(self, args: TouchArgs) -> Resources:
        return Resources.of(reads=args.reads, writes=args.writes)

    async def run(self, args: TouchArgs, ctx: ToolContext) -> str:
        self.log.append(f"start:{args.label}")
        self.running += 1
        self.peak = max(self.peak, self.running)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        self.running -= 1
        self.log.append(f"end:{args.label}")
        return f"done {args.label}"


class RecordingApprover:
    """Approves everything (or denies named calls) and records how requests were grouped."""

    def __init__(self, deny: Sequence[str] = (), *, batch: bool = True) -> None:
        self.deny = set(deny)
        self.prompts: list[list[str]] = []
        self.batch = batch

    def _answer(self, request: ApprovalRequest) -> ApprovalAnswer:
        path = str(request.args.get("path", request.call_id))
        return ApprovalAnswer.DENY if path in self.deny else ApprovalAnswer.ALLOW_ONCE

    async def __call__(self, request: ApprovalRequest) -> ApprovalAnswer:
        self.prompts.append([str(request.args.get("path", request.call_id))])
        return self._answer(request)

    async def approve_many(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalAnswer]:
        self.prompts.append([str(r.args.get("path", r.call_id)) for r in requests])
        return [self._answer(r) for r in requests]


def call(index: int, name: str, **args: Any) -> ToolCall:
    return ToolCall(f"c{index}", name, json.dumps(args))


async def execute(
    executor: ToolExecutor, calls: Sequence[ToolCall]
) -> tuple[list[Event], list[ToolMessage]]:
    events: list[Event] = []
    result: ExecutionResult | None = None
    async for item in executor.execute(calls):
        if isinstance(item, ExecutionResult):
            result = item
        else:
            events.append(item)
    assert result is not None
    return events, result.messages


def executor_for(tmp_path: Path, tools: list[Tool[Any]], approver: Any = None) -> ToolExecutor:
    return ToolExecutor(
        registry=ToolRegistry(tools),
        scratchpad=Scratchpad.create(tmp_path / "pad", "q"),
        policy=SimplePolicy(),
        approver=approver,
        home=tmp_path,
    )


def file_tools(workspace: Path) -> list[Tool[Any]]:
    return [ReadFileTool(workspace), WriteFileTool(workspace), EditFileTool(workspace)]


async def test_writes_to_different_files_are_approved_together_and_run_together(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    approver = RecordingApprover()
    executor = executor_for(tmp_path, file_tools(workspace), approver)
    calls = [call(i, "write_file", path=f"part{i}.md", content=f"section {i}") for i in range(3)]
    events, messages = await execute(executor, calls)
    assert approver.prompts == [["part0.md", "part1.md", "part2.md"]]
    starts = [e for e in events if isinstance(e, ToolStart)]
    assert {(s.group, s.group_size) for s in starts} == {(1, 3)}
    assert [m.tool_call_id for m in messages] == ["c0", "c1", "c2"]
    assert all(not m.is_error for m in messages)
    assert (workspace / "part2.md").read_text() == "section 2"


async def test_a_read_after_a_write_of_the_same_path_sees_the_new_content(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "memo.md").write_text("old text\n")
    executor = executor_for(tmp_path, file_tools(workspace), RecordingApprover())
    calls = [
        call(0, "write_file", path="memo.md", content="new text\n"),
        call(1, "read_file", path="./memo.md"),  # another spelling of the same file
        call(2, "write_file", path="other.md", content="x"),
    ]
    events, messages = await execute(executor, calls)
    assert "new text" in messages[1].content and "old text" not in messages[1].content
    groups = {s.call_id: s.group for s in events if isinstance(s, ToolStart)}
    assert groups["c0"] == groups["c2"] == 1 and groups["c1"] == 2


async def test_two_edits_of_one_file_apply_in_order(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.md").write_text("alpha\n")
    executor = executor_for(tmp_path, file_tools(workspace), RecordingApprover())
    calls = [
        call(0, "edit_file", path="notes.md", old_text="alpha", new_text="beta"),
        call(1, "edit_file", path="notes.md", old_text="beta", new_text="gamma"),
    ]
    _, messages = await execute(executor, calls)
    assert not any(m.is_error for m in messages), [m.content for m in messages]
    assert (workspace / "notes.md").read_text() == "gamma\n"


async def test_a_denial_stops_the_rest_of_the_response(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    approver = RecordingApprover(deny=["b.md"])
    executor = executor_for(tmp_path, file_tools(workspace), approver)
    calls = [
        call(0, "write_file", path="a.md", content="1"),
        call(1, "write_file", path="b.md", content="2"),
        call(2, "write_file", path="a.md", content="3"),  # waits for c0: a later wave
    ]
    events, messages = await execute(executor, calls)
    assert approver.prompts == [["a.md", "b.md"]]
    assert any(isinstance(e, ToolDenied) and e.by == "user" for e in events)
    assert all(m.is_error for m in messages)
    assert not (workspace / "a.md").exists() and not (workspace / "b.md").exists()


async def test_without_a_batch_approver_each_call_is_asked_in_order(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()

    class OneAtATime(RecordingApprover):
        approve_many = None  # type: ignore[assignment]

    approver = OneAtATime(deny=["b.md"])
    executor = executor_for(tmp_path, file_tools(workspace), approver)
    calls = [
        call(i, "write_file", path=p, content="x") for i, p in enumerate(["a.md", "b.md", "c.md"])
    ]
    _, messages = await execute(executor, calls)
    assert approver.prompts == [["a.md"], ["b.md"]]  # nobody is asked about c after a denial
    assert all(m.is_error for m in messages)


async def test_cancelling_mid_graph_stops_running_calls_and_starts_no_more(tmp_path: Path) -> None:
    started: list[str] = []
    release = asyncio.Event()
    running = asyncio.Event()

    class SlowTouch(TouchTool):
        async def run(self, args: TouchArgs, ctx: ToolContext) -> str:
            started.append(args.label)
            running.set()
            await release.wait()
            return "never"

    executor = executor_for(tmp_path, [SlowTouch()])
    calls = [
        call(0, "touch", label="first", writes=["x"]),
        call(1, "touch", label="second", writes=["x"]),
    ]
    task = asyncio.create_task(execute(executor, calls))
    await running.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert started == ["first"]


async def test_unknown_resources_order_against_everything(tmp_path: Path) -> None:
    class Opaque(TouchTool):
        name: ClassVar[str] = "opaque"

        def resources(self, args: TouchArgs) -> Resources:
            return Tool.resources(self, args)  # the default: not concurrency-safe

    touch, opaque = TouchTool(), Opaque()
    opaque.log = touch.log
    executor = executor_for(tmp_path, [touch, opaque])
    calls = [
        call(0, "touch", label="a", reads=["r"]),
        call(1, "opaque", label="b"),
        call(2, "touch", label="c", reads=["r"]),
    ]
    await execute(executor, calls)
    assert touch.log == ["start:a", "end:a", "start:b", "end:b", "start:c", "end:c"]


NAMES = st.sampled_from(["a", "b", "c", "d"])
CALL = st.tuples(st.lists(NAMES, max_size=2), st.lists(NAMES, max_size=2))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(CALL, min_size=1, max_size=7))
def test_conflicting_calls_keep_their_order_and_results_stay_in_call_order(
    tmp_path: Path, specs: list[tuple[list[str], list[str]]]
) -> None:
    tool = TouchTool()
    executor = executor_for(tmp_path, [tool])
    calls = [
        call(i, "touch", label=str(i), reads=reads, writes=writes)
        for i, (reads, writes) in enumerate(specs)
    ]
    _, messages = asyncio.run(execute(executor, calls))
    assert [m.tool_call_id for m in messages] == [c.id for c in calls]
    assert [m.content.split("\n")[0] for m in messages] == [f"done {i}" for i in range(len(calls))]
    position = {entry: index for index, entry in enumerate(tool.log)}
    for j, (reads_j, writes_j) in enumerate(specs):
        for i in range(j):
            reads_i, writes_i = specs[i]
            conflict = set(writes_i) & set(reads_j + writes_j) or set(writes_j) & set(reads_i)
            if conflict:
                assert position[f"end:{i}"] < position[f"start:{j}"], (i, j, specs)
