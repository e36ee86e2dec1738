"""A 40-call research session with 30,000-character results stays inside the window and still
answers with every figure fetched early."""

from __future__ import annotations

from pathlib import Path

from dexter.agent.context.budget import ContextBudget, estimate_request
from dexter.agent.events import ContextEvent, Done, Event, ToolStart
from dexter.models.errors import ErrorKind, ModelError
from dexter.models.retry import RetryPolicy, no_wait, with_retry
from dexter.models.scripted import ScriptedModel
from tests.support.long_session import (
    CALLS_PER_ROUND,
    FIGURE,
    QUESTION,
    ROUNDS,
    Observed,
    build_agent,
    figure_line,
    summariser,
)

WINDOW = 64_000


async def run(agent, follow_up_at: int | None = None) -> list[Event]:  # type: ignore[no-untyped-def]
    events: list[Event] = []
    starts = 0
    async for event in agent.run(QUESTION):
        events.append(event)
        if isinstance(event, ToolStart):
            starts += 1
            if starts == follow_up_at:
                agent.queue.enqueue("Also state each figure in EUR at 0.92.")
    return events


async def test_forty_calls_never_exceed_the_window_and_keep_every_figure(tmp_path: Path) -> None:
    observed = Observed()
    agent = build_agent(tmp_path, observed, window=WINDOW, fast=summariser(observed))
    events = await run(agent, follow_up_at=9)
    done = events[-1]
    assert isinstance(done, Done) and done.status == "answered"
    assert len(done.tool_calls) == ROUNDS * CALLS_PER_ROUND == 40

    hard_limit = ContextBudget(WINDOW).hard_limit
    assert max(observed.request_tokens) <= hard_limit, observed.request_tokens
    # The context was actively managed (otherwise 40 x 30k characters would be ~340k tokens).
    actions = {e.action for e in events if isinstance(e, ContextEvent)}
    assert "microcompact" in actions

    final = observed.final_request
    assert final is not None
    text = observed.text_of(final)
    assert sorted(set(FIGURE.findall(text))) == sorted(figure_line(n) for n in range(40))
    assert QUESTION in text
    assert "Also state each figure in EUR at 0.92." in text
    # Nothing fetched was lost: the early full documents are on disk for read_tool_result.
    stored = list((tmp_path / "tool-results").glob("*/*.txt"))
    assert len(stored) >= 30


async def test_small_windows_hold_forty_calls_and_summarise_boundedly_only_when_needed(
    tmp_path: Path,
) -> None:
    # Markers that keep only the key and the figure lines hold forty 30,000-character results in
    # an 8k window without any summary; a 4k window needs one, and gets it within its bound.
    for window, summarises in ((16_000, False), (8_000, False), (4_000, True)):
        observed = Observed()
        home = tmp_path / str(window)
        agent = build_agent(home, observed, window=window, fast=summariser(observed))
        events = await run(agent, follow_up_at=5)
        assert isinstance(events[-1], Done) and events[-1].status == "answered"
        bound = ContextBudget(window).hard_limit
        assert max(observed.request_tokens) <= bound
        summarised = any(isinstance(e, ContextEvent) and e.action == "compaction" for e in events)
        assert summarised == summarises, window
        assert bool(observed.summary_requests) == summarises
        assert all(estimate_request(r) <= bound for r in observed.summary_requests)
        final_text = observed.text_of(observed.final_request)  # type: ignore[arg-type]
        assert len(set(FIGURE.findall(final_text))) == 40
        assert "Also state each figure in EUR at 0.92." in final_text
        assert QUESTION in final_text


async def test_failing_summaries_fall_back_to_truncation_and_keep_the_question(
    tmp_path: Path,
) -> None:
    observed = Observed()
    scripted = ScriptedModel([ModelError(ErrorKind.SERVER, "down")] * 200, name="fast-broken")
    broken = with_retry(scripted, no_wait(RetryPolicy()))
    agent = build_agent(tmp_path, observed, window=3_000, fast=broken)
    events = await run(agent)
    assert isinstance(events[-1], Done) and events[-1].status == "answered"
    actions = [e.action for e in events if isinstance(e, ContextEvent)]
    assert "compaction_failed" in actions and "truncation" in actions
    assert max(observed.request_tokens) <= ContextBudget(3_000).hard_limit
    assert QUESTION in observed.text_of(observed.final_request)  # type: ignore[arg-type]
