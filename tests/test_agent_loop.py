"""The agent loop driven by a ScriptedModel: what a user of `dexter ask` would see happen."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from dexter.agent.events import (
    ContextEvent,
    Done,
    Event,
    QueueDrained,
    Reasoning,
    Retrying,
    RunStarted,
    TextDelta,
    Thinking,
    ToolDenied,
    ToolEnd,
    ToolError,
    ToolProgress,
    ToolStart,
)
from dexter.agent.executor import Approver
from dexter.agent.loop import FINAL_ROUND_NOTE, Agent, AgentConfig
from dexter.agent.queue import MessageQueue
from dexter.models.errors import ErrorKind, ModelError
from dexter.models.retry import RetryPolicy, with_retry
from dexter.models.scripted import Reply, ScriptedModel, calls, text
from dexter.models.types import (
    AssistantMessage,
    ModelRequest,
    SystemMessage,
    ToolMessage,
    Usage,
    UserMessage,
)
from dexter.permissions.gate import ApprovalAnswer, SimplePolicy
from dexter.tools.registry import ToolRegistry
from tests.support.tools import FailTool, SleepTool, Timeline, WriteTool


def make_agent(
    model: ScriptedModel,
    tmp_path: Path,
    *,
    tools: list[Any] | None = None,
    approver: Approver | None = None,
    policy: SimplePolicy | None = None,
    max_iterations: int = 10,
    queue: MessageQueue | None = None,
) -> Agent:
    registry = ToolRegistry(tools if tools is not None else [SleepTool()])
    config = AgentConfig(max_iterations=max_iterations, home=tmp_path / ".dexter")

    async def no_sleep(_: float) -> None:
        return None

    return Agent(
        with_retry(model, RetryPolicy(sleep=no_sleep)),
        registry,
        config=config,
        approver=approver,
        policy=policy,
        queue=queue,
    )


async def collect(agent: Agent, query: str) -> list[Event]:
    return [event async for event in agent.run(query)]


def done_of(events: list[Event]) -> Done:
    assert isinstance(events[-1], Done)
    return events[-1]


def tool_messages(request: ModelRequest) -> list[ToolMessage]:
    return [m for m in request.messages if isinstance(m, ToolMessage)]


async def test_answer_without_tools_streams_text_and_reports_usage(tmp_path: Path) -> None:
    model = ScriptedModel(
        [text("Apple's FY2025 revenue was $416.2B.", usage=Usage(120, 30, 100, 5))]
    )
    events = await collect(make_agent(model, tmp_path), "What was Apple's FY2025 revenue?")

    assert isinstance(events[0], RunStarted)
    streamed = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert streamed == "Apple's FY2025 revenue was $416.2B."
    assert len([e for e in events if isinstance(e, TextDelta)]) > 1
    done = done_of(events)
    assert done.status == "answered"
    assert done.answer == streamed
    assert done.iterations == 1
    assert done.usage == Usage(120, 30, 100, 5)
    assert done.to_dict()["usage"]["total_tokens"] == 150
    json.dumps(done.to_dict())  # the --json contract: every event serialises


async def test_streamed_text_names_its_round_and_a_plan_is_named_by_the_same_round(
    tmp_path: Path,
) -> None:
    """A consumer shows text as it arrives and must know which of it became a plan: every delta
    carries its round, and `Thinking` names the round whose text it replaces."""
    model = ScriptedModel(
        [
            calls(("lookup", {"label": "AAPL", "seconds": 0}), text="Checking the 10-K first."),
            text("Gross margin was 46.2%."),
        ]
    )
    events = await collect(make_agent(model, tmp_path), "AAPL gross margin?")
    by_round: dict[int, str] = {}
    for event in events:
        if isinstance(event, TextDelta):
            by_round[event.round] = by_round.get(event.round, "") + event.text
    assert by_round == {1: "Checking the 10-K first.", 2: "Gross margin was 46.2%."}
    [thinking] = [e for e in events if isinstance(e, Thinking)]
    assert (thinking.round, thinking.text) == (1, by_round[1])
    # The plan is folded before its round's tools start.
    assert events.index(thinking) < next(
        i for i, e in enumerate(events) if isinstance(e, ToolStart)
    )
    assert done_of(events).answer == by_round[2]


async def test_parallel_tools_run_together_and_results_keep_call_order(tmp_path: Path) -> None:
    timeline = Timeline()
    model = ScriptedModel(
        [
            calls(
                ("lookup", {"label": "slow", "seconds": 0.3}),
                ("lookup", {"label": "mid", "seconds": 0.2}),
                ("lookup", {"label": "fast", "seconds": 0.1}),
                text="Fetching three things.",
            ),
            text("done"),
        ]
    )
    agent = make_agent(model, tmp_path, tools=[SleepTool(timeline)])
    started = time.perf_counter()
    events = await collect(agent, "q")
    elapsed = time.perf_counter() - started

    assert elapsed < 0.5, "three 0.1-0.3 s tools should overlap, not add up to 0.6 s"
    assert timeline.order()[:3] == ["start:slow", "start:mid", "start:fast"]
    assert [e.args["label"] for e in events if isinstance(e, ToolEnd)] == ["fast", "mid", "slow"]
    results = [m.content for m in tool_messages(model.requests[1])]
    assert results == ["result for slow", "result for mid", "result for fast"]
    assert any(isinstance(e, Thinking) and e.text == "Fetching three things." for e in events)
    assert any(isinstance(e, ToolProgress) and e.message == "looking up mid" for e in events)
    assert done_of(events).answer == "done"
    assert [r.result for r in done_of(events).tool_calls] == [
        "result for fast",
        "result for mid",
        "result for slow",
    ]


async def test_unsafe_call_runs_alone_between_safe_batches(tmp_path: Path) -> None:
    timeline = Timeline()
    model = ScriptedModel(
        [
            calls(
                ("lookup", {"label": "a", "seconds": 0.05}),
                ("lookup", {"label": "b", "seconds": 0.01}),
                ("write_note", {"path": "w"}),
                ("lookup", {"label": "c", "seconds": 0.01}),
            ),
            text("ok"),
        ]
    )

    async def allow(_: Any) -> ApprovalAnswer:
        return ApprovalAnswer.ALLOW_ONCE

    agent = make_agent(
        model, tmp_path, tools=[SleepTool(timeline), WriteTool(timeline)], approver=allow
    )
    await collect(agent, "q")
    order = timeline.order()
    # a and b overlap; the write starts only after both finished; c only after the write.
    assert order.index("start:b") < order.index("end:a")
    assert order.index("start:w") > max(order.index("end:a"), order.index("end:b"))
    assert order.index("start:c") > order.index("end:w")
    contents = [m.content.split("\n\n")[0] for m in tool_messages(model.requests[1])]
    assert contents == ["result for a", "result for b", "wrote w", "result for c"]


async def test_iteration_cap_ends_with_a_synthesised_answer(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            calls(("lookup", {"label": "1"})),
            calls(("lookup", {"label": "2"})),
            # Even if the model still asks for a tool on the last round, its text is the answer.
            calls(("lookup", {"label": "3"}), text="Based on 1 and 2: the answer is 42."),
        ]
    )
    events = await collect(make_agent(model, tmp_path, max_iterations=3), "q")
    done = done_of(events)
    assert done.status == "answered"
    assert done.answer == "Based on 1 and 2: the answer is 42."
    assert done.iterations == 3
    last = model.requests[-1]
    assert last.tool_choice == "none"
    assert isinstance(last.messages[-1], UserMessage)
    assert last.messages[-1].content == FINAL_ROUND_NOTE
    assert [r.args["label"] for r in done.tool_calls] == ["1", "2"]
    assert model.requests[0].tool_choice == "auto"


async def test_iteration_cap_without_any_text_is_a_clear_failure(tmp_path: Path) -> None:
    model = ScriptedModel([calls(("lookup", {"label": "1"})), calls(("lookup", {"label": "2"}))])
    done = done_of(await collect(make_agent(model, tmp_path, max_iterations=2), "q"))
    assert done.status == "error"
    assert done.error is not None and "after 2 rounds" in done.error


async def test_rule_denial_goes_back_to_the_model_and_the_run_continues(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            calls(("write_note", {"path": "x"}), ("lookup", {"label": "a"})),
            text("Used lookup only."),
        ]
    )
    writer = WriteTool()
    agent = make_agent(
        model, tmp_path, tools=[SleepTool(), writer], policy=SimplePolicy(deny=["write_note"])
    )
    events = await collect(agent, "q")
    denied = [e for e in events if isinstance(e, ToolDenied)]
    assert len(denied) == 1 and denied[0].by == "rule"
    assert writer.written == []
    first, second = tool_messages(model.requests[1])
    assert first.is_error and "permission denied" in first.content
    assert second.content == "result for a"
    assert done_of(events).answer == "Used lookup only."


async def test_user_denial_stops_remaining_calls_and_ends_cleanly(tmp_path: Path) -> None:
    asked: list[str] = []

    async def deny(request: Any) -> ApprovalAnswer:
        asked.append(request.tool)
        return ApprovalAnswer.DENY

    writer = WriteTool()
    model = ScriptedModel(
        [
            calls(
                ("write_note", {"path": "x"}),
                ("write_note", {"path": "y"}),
                ("lookup", {"label": "z"}),
            )
        ]
    )
    agent = make_agent(model, tmp_path, tools=[SleepTool(), writer], approver=deny)
    events = await collect(agent, "q")
    assert asked == ["write_note"], "after a deny, the user is not asked again"
    assert writer.written == []
    assert not any(isinstance(e, ToolStart) for e in events)
    done = done_of(events)
    assert done.status == "denied"
    assert done.answer == ""
    assert model.calls_made == 1


async def test_allow_for_session_is_remembered_across_runs(tmp_path: Path) -> None:
    asked: list[str] = []

    async def allow_session(request: Any) -> ApprovalAnswer:
        asked.append(request.tool)
        return ApprovalAnswer.ALLOW_SESSION

    writer = WriteTool()
    model = ScriptedModel(
        [
            calls(("write_note", {"path": "a"})),
            text("1"),
            calls(("write_note", {"path": "b"})),
            text("2"),
        ]
    )
    agent = make_agent(model, tmp_path, tools=[writer], approver=allow_session)
    await collect(agent, "first")
    await collect(agent, "second")
    assert asked == ["write_note"]
    assert writer.written == ["a", "b"]


async def test_cancellation_stops_tools_and_makes_no_more_model_calls(tmp_path: Path) -> None:
    tool = SleepTool()
    model = ScriptedModel([calls(("lookup", {"label": "long", "seconds": 30})), text("never")])
    agent = make_agent(model, tmp_path, tools=[tool])
    seen: list[Event] = []
    tool_started = asyncio.Event()

    async def consume() -> None:
        async for event in agent.run("q"):
            seen.append(event)
            if isinstance(event, ToolStart):
                tool_started.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(tool_started.wait(), timeout=5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert tool.cancelled
    assert model.calls_made == 1
    assert not any(isinstance(e, Done) for e in seen)
    pad = next((tmp_path / ".dexter" / "scratchpad").glob("*.jsonl"))
    assert '"type": "cancelled"' in pad.read_text()


async def test_cancel_during_retry_backoff_does_not_retry(tmp_path: Path) -> None:
    model = ScriptedModel(
        [ModelError(ErrorKind.RATE_LIMIT, "slow down", retry_after=30), text("never")]
    )
    registry = ToolRegistry([SleepTool()])
    waiting = asyncio.Event()

    async def backoff(seconds: float) -> None:
        # A real sleep, announced: the cancellation lands during the 30 s Retry-After wait
        # (not before the first call, however slow the machine).
        waiting.set()
        await asyncio.sleep(seconds)

    policy = RetryPolicy(sleep=backoff)
    agent = Agent(with_retry(model, policy), registry, config=AgentConfig(home=tmp_path))
    task = asyncio.create_task(collect(agent, "q"))
    await asyncio.wait_for(waiting.wait(), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert model.calls_made == 1


async def test_malformed_arguments_come_back_as_a_correctable_error(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            calls(("lookup", '{"label": "a", ')),
            calls(("lookup", {"seconds": 1})),
            calls(("nonexistent", {})),
            calls(("lookup", {"label": "a"})),
            text("fixed"),
        ]
    )
    events = await collect(make_agent(model, tmp_path), "q")
    errors = [e for e in events if isinstance(e, ToolError)]
    assert len(errors) == 3
    assert "not valid JSON" in tool_messages(model.requests[1])[-1].content
    assert "label: Field required" in tool_messages(model.requests[2])[-1].content
    assert "unknown tool `nonexistent`" in tool_messages(model.requests[3])[-1].content
    assert tool_messages(model.requests[4])[-1].content.startswith("result for a")
    assert done_of(events).answer == "fixed"


async def test_tool_failure_is_reported_to_the_model(tmp_path: Path) -> None:
    model = ScriptedModel([calls(("flaky", {"reason": "HTTP 503"})), text("Source unavailable.")])
    events = await collect(make_agent(model, tmp_path, tools=[FailTool()]), "q")
    error = next(e for e in events if isinstance(e, ToolError))
    assert error.error == "upstream said HTTP 503"
    message = tool_messages(model.requests[1])[0]
    assert message.is_error and message.content == "Error: upstream said HTTP 503"
    assert done_of(events).tool_calls[0].is_error


async def test_soft_limit_warnings_reach_the_model(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            calls(("lookup", {"label": "a", "query": "apple revenue fiscal 2025"})),
            calls(("lookup", {"label": "b", "query": "apple revenue 2025 fiscal"})),
            calls(("lookup", {"label": "c", "query": "microsoft cloud growth"})),
            calls(("lookup", {"label": "d", "query": "nvidia data center"})),
            text("done"),
        ]
    )
    events = await collect(make_agent(model, tmp_path), "q")
    first = tool_messages(model.requests[1])[-1].content
    similar = tool_messages(model.requests[2])[-1].content
    approaching = tool_messages(model.requests[3])[-1].content
    over = tool_messages(model.requests[4])[-1].content
    assert first == "result for a"
    assert "very similar to an earlier one" in similar
    assert "called 3 of 3" in approaching
    assert "called 4 times" in over
    warned = [e for e in events if isinstance(e, ToolEnd) and e.warning]
    assert len(warned) == 3


async def test_transient_errors_are_retried_by_streaming_again(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            ModelError(ErrorKind.RATE_LIMIT, "429", retry_after=2.0, provider="OpenAI"),
            ModelError(ErrorKind.SERVER, "500", provider="OpenAI"),
            text("third time lucky"),
        ]
    )
    delays: list[float] = []

    async def record_sleep(seconds: float) -> None:
        delays.append(seconds)

    retried = with_retry(model, RetryPolicy(sleep=record_sleep))
    agent = Agent(retried, ToolRegistry(), config=AgentConfig(home=tmp_path))
    events = await collect(agent, "q")
    retries = [e for e in events if isinstance(e, Retrying)]
    assert [r.attempt for r in retries] == [1, 2]
    assert delays[0] == 2.0, "Retry-After is honoured"
    assert 0.8 <= delays[1] <= 1.2, "then exponential backoff: 0.5 s * 2"
    assert done_of(events).answer == "third time lucky"


async def test_auth_error_is_not_retried_and_fails_clearly(tmp_path: Path) -> None:
    model = ScriptedModel([ModelError(ErrorKind.AUTH, "invalid x-api-key", provider="Anthropic")])
    events = await collect(make_agent(model, tmp_path), "q")
    done = done_of(events)
    assert model.calls_made == 1
    assert done.status == "error"
    assert done.error is not None and "rejected the API key" in done.error
    assert not any(isinstance(e, Retrying) for e in events)


async def test_context_overflow_drops_old_material_but_never_the_question(tmp_path: Path) -> None:
    overflow = ModelError(ErrorKind.CONTEXT_OVERFLOW, "too long")
    model = ScriptedModel(
        [
            text("first answer"),
            calls(("lookup", {"label": "1"})),
            calls(("lookup", {"label": "2"})),
            overflow,
            text("recovered"),
        ]
    )
    agent = make_agent(model, tmp_path)
    await collect(agent, "earlier question")
    events = await collect(agent, "the current question")
    context = [e for e in events if isinstance(e, ContextEvent)]
    assert len(context) == 1
    retried = model.requests[-1]
    users = [m.content for m in retried.messages if isinstance(m, UserMessage)]
    assert users == ["the current question"]
    assert isinstance(retried.messages[0], SystemMessage)
    assert done_of(events).answer == "recovered"


async def test_overflow_recovery_gives_up_after_two_attempts(tmp_path: Path) -> None:
    overflow = ModelError(ErrorKind.CONTEXT_OVERFLOW, "too long")
    script: list[Any] = [calls(("lookup", {"label": str(i)})) for i in range(5)]
    script += [overflow, overflow, overflow]
    model = ScriptedModel(script)
    events = await collect(make_agent(model, tmp_path), "q")
    assert len([e for e in events if isinstance(e, ContextEvent)]) == 2
    done = done_of(events)
    assert done.status == "error" and done.error is not None and "too large" in done.error
    assert model.calls_made == 8


async def test_reasoning_is_streamed_and_kept_only_on_the_last_two_turns(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            calls(("lookup", {"label": "1"}), reasoning="plan one"),
            calls(("lookup", {"label": "2"}), reasoning="plan two"),
            calls(("lookup", {"label": "3"}), reasoning="plan three"),
            text("answer", reasoning="final thoughts"),
        ]
    )
    events = await collect(make_agent(model, tmp_path), "q")
    assert "".join(e.text for e in events if isinstance(e, Reasoning)).startswith("plan one")
    last = model.requests[-1]
    reasoning = [m.reasoning for m in last.messages if isinstance(m, AssistantMessage)]
    assert reasoning == ["", "plan two", "plan three"]


async def test_tool_calls_without_ids_get_unique_ids(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            Reply(
                tool_calls=[("lookup", {"label": "a"}), ("lookup", {"label": "b"})],
                call_ids=[None, None],
            ),
            text("ok"),
        ]
    )
    await collect(make_agent(model, tmp_path), "q")
    request = model.requests[1]
    assistant = next(m for m in request.messages if isinstance(m, AssistantMessage))
    ids = [c.id for c in assistant.tool_calls]
    assert all(ids) and len(set(ids)) == 2
    assert [m.tool_call_id for m in tool_messages(request)] == ids


async def test_queued_follow_up_is_injected_at_the_next_round(tmp_path: Path) -> None:
    queue = MessageQueue()

    def check(request: ModelRequest) -> Reply:
        return text("answer including follow-up")

    model = ScriptedModel([calls(("lookup", {"label": "a", "seconds": 0.05})), check])
    agent = make_agent(model, tmp_path, queue=queue)
    events: list[Event] = []
    async for event in agent.run("compare AAPL and MSFT"):
        events.append(event)
        if isinstance(event, ToolStart):
            queue.enqueue("also include NVDA")
    drained = [e for e in events if isinstance(e, QueueDrained)]
    assert drained and drained[0].text == "also include NVDA"
    last = model.requests[-1].messages[-1]
    assert isinstance(last, UserMessage) and last.content == "also include NVDA"
    assert len(queue) == 0


async def test_conversation_carries_across_turns(tmp_path: Path) -> None:
    model = ScriptedModel([text("AAPL revenue was 416.2B."), text("That is 6.4% growth.")])
    agent = make_agent(model, tmp_path)
    await collect(agent, "Apple revenue?")
    await collect(agent, "And the growth?")
    second = model.requests[1].messages
    contents = [m.content for m in second if isinstance(m, UserMessage | AssistantMessage)]
    assert contents == ["Apple revenue?", "AAPL revenue was 416.2B.", "And the growth?"]
    agent.clear()
    assert agent.history == []


async def test_scratchpad_records_the_run_and_names_are_unique(tmp_path: Path) -> None:
    model = ScriptedModel(
        [calls(("lookup", {"label": "a"}), text="checking"), text("answer"), text("again")]
    )
    agent = make_agent(model, tmp_path)
    await collect(agent, "same question")
    await collect(agent, "same question")
    files = sorted((tmp_path / ".dexter" / "scratchpad").glob("*.jsonl"))
    assert len(files) == 2, "identical queries in the same second get separate files"
    records = [json.loads(line) for line in files[0].read_text().splitlines()]
    if records[0]["content"] != "same question" or len(records) < 3:
        records = [json.loads(line) for line in files[1].read_text().splitlines()]
    types = [r["type"] for r in records]
    assert types == ["init", "thinking", "tool_call", "answer"]
    call = records[2]
    assert call["tool"] == "lookup" and call["args"]["label"] == "a"
    assert call["result"] == "result for a" and call["error"] is None
    assert "duration_ms" in call and all("timestamp" in r for r in records)


async def test_system_prompt_lists_only_bound_tools_and_user_files(tmp_path: Path) -> None:
    home = tmp_path / ".dexter"
    home.mkdir()
    (home / "RULES.md").write_text("Always show {revenue} in USD billions {0}.")
    model = ScriptedModel([text("ok")])
    agent = make_agent(model, tmp_path, tools=[SleepTool()])
    await collect(agent, "q")
    system = model.requests[0].messages[0]
    assert isinstance(system, SystemMessage)
    assert "`lookup`" in system.content
    assert "write_note" not in system.content and "calculate" not in system.content
    assert "Always show {revenue} in USD billions {0}." in system.content
    assert "Current date:" in system.content
