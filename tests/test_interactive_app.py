"""The interactive session, driven headless through textual's Pilot with a ScriptedModel."""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import Markdown

from dexter.agent.loop import Agent, AgentConfig
from dexter.cli.interactive import DexterApp, run_interactive
from dexter.cli.interactive.app import print_transcript
from dexter.cli.interactive.commands import Command, UnknownCommand, parse_command
from dexter.cli.interactive.format import compact_args, format_duration
from dexter.cli.interactive.widgets import Note, ToolRow
from dexter.config import ConfigError
from dexter.models.base import Model, complete_by_streaming
from dexter.models.errors import ErrorKind, ModelError
from dexter.models.retry import RetryPolicy, with_retry
from dexter.models.scripted import ScriptedModel, calls, text
from dexter.models.types import (
    AssistantMessage,
    ModelRequest,
    ModelResponse,
    StreamChunk,
    UserMessage,
)
from dexter.tools.registry import ToolRegistry
from tests.support.tools import SleepTool, WriteTool

SIZE = (100, 40)


class GatedModel:
    """Wraps a ScriptedModel; every call waits until the test opens `gate`, so input typed
    "during a run" is deterministic rather than a race with the model."""

    def __init__(self, inner: ScriptedModel, *, after_chunks: int = 0) -> None:
        self.inner = inner
        self.after_chunks = after_chunks
        self.gate = asyncio.Event()
        self.waiting = False

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def provider(self) -> str:
        return self.inner.provider

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        sent = 0
        async for chunk in self.inner.stream(request):
            if sent == self.after_chunks:
                self.waiting = True
                await self.gate.wait()
                self.waiting = False
            sent += 1
            yield chunk

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return await complete_by_streaming(self, request)


def make_agent(model: Model, tmp_path: Path, *, tools: list[Any] | None = None) -> Agent:
    registry = ToolRegistry(tools if tools is not None else [SleepTool()])

    async def no_sleep(_: float) -> None:
        return None

    retried = with_retry(model, RetryPolicy(sleep=no_sleep))
    return Agent(retried, registry, config=AgentConfig(home=tmp_path / ".dexter"))


async def wait_for(pilot: Pilot[None], condition: Callable[[], bool], limit: float = 5.0) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the app")
        await pilot.pause(0.02)


async def type_and_send(pilot: Pilot[None], message: str) -> None:
    await pilot.press(*message)
    await pilot.press("enter")


async def ask(pilot: Pilot[None], app: DexterApp, question: str) -> None:
    """Send a question and wait until the run (and any follow-ups it starts) has finished."""
    app.prompt.value = question
    await pilot.press("enter")
    await wait_for(pilot, lambda: not app.busy)
    await pilot.pause()


async def ask_and_decide(pilot: Pilot[None], app: DexterApp, question: str, key: str) -> None:
    """Send a question whose run asks for approval, press `key` at the prompt, wait for the end."""
    app.prompt.value = question
    await pilot.press("enter")
    await wait_for(pilot, lambda: app.approval.is_open)
    await pilot.press(key)
    await wait_for(pilot, lambda: not app.busy)
    await pilot.pause()


def notes(app: DexterApp, kind: str) -> list[str]:
    return [note.text for note in app.query(f"#log > Note.{kind}").results(Note)]


def answers(app: DexterApp) -> list[str]:
    return [md.source for md in app.query("#log > Markdown.answer").results(Markdown)]


def rows(app: DexterApp) -> list[ToolRow]:
    return list(app.query(ToolRow).results(ToolRow))


async def test_question_streams_markdown_answer_and_stats(tmp_path: Path) -> None:
    answer = "Apple's **FY2025** revenue was $416.2B, up 6% on the year before."
    model = ScriptedModel([text(answer)])
    agent = make_agent(model, tmp_path)
    app = DexterApp(agent, model_label="scripted:test")
    async with app.run_test(size=SIZE) as pilot:
        assert app.agent.approver is not None
        assert "scripted:test" in str(app.query_one("#header").render())
        await type_and_send(pilot, "What was Apple's revenue?")
        await wait_for(pilot, lambda: not app.busy)
        await pilot.pause()

        assert notes(app, "question") == ["› What was Apple's revenue?"]
        assert answers(app) == [answer]
        [stats] = notes(app, "stats")
        assert "1 step" in stats and "15 tokens" in stats
        assert not app.working.display
        assert app.prompt.has_focus
    assert agent.history == [UserMessage("What was Apple's revenue?"), AssistantMessage(answer)]


async def test_answer_is_visible_while_it_streams(tmp_path: Path) -> None:
    model = GatedModel(ScriptedModel([text("Revenue grew 6% to $416B.")]), after_chunks=2)
    app = DexterApp(make_agent(model, tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        app.prompt.value = "revenue?"
        await pilot.press("enter")
        await wait_for(pilot, lambda: model.waiting)
        await pilot.pause()
        [streaming] = app.query("#log > Markdown.segment").results(Markdown)
        assert streaming.source == "Revenue grew 6% "
        # Not "answering": the text may still turn out to be a plan.
        assert "writing" in app.working.text
        provisional = streaming.styles.color
        model.gate.set()
        await wait_for(pilot, lambda: not app.busy)
        await pilot.pause()
        assert answers(app) == ["Revenue grew 6% to $416B."]
        assert streaming.has_class("answer")
        # Dim while it might still turn into a plan; the answer's own colour once it is one.
        assert streaming.styles.color != provisional


async def test_tool_row_shows_progress_then_completion(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            calls(("lookup", {"label": "AAPL", "seconds": 0.8}), text="Let me look that up."),
            text("AAPL looked up."),
        ]
    )
    app = DexterApp(make_agent(model, tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        app.prompt.value = "look up AAPL"
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(rows(app)) and rows(app)[0].state == "running")
        row = rows(app)[0]
        assert "lookup(label=AAPL, seconds=0.8)" in row.text
        assert "looking up AAPL" in row.text
        assert "Working…" in app.working.text and "running lookup" in app.working.text
        await wait_for(pilot, lambda: not app.busy)
        await pilot.pause()

        assert row.state == "done"
        assert row.text.startswith("✓ lookup(")
        # The text written alongside the tool call is a plan, folded into the thinking row.
        assert notes(app, "thinking") == ["Let me look that up."]
        shown = [md.source for md in app.query("#log > Markdown").results(Markdown)]
        assert shown == ["AAPL looked up."]
        assert answers(app) == ["AAPL looked up."]


async def test_plan_shows_while_it_streams_then_folds_into_the_thinking_row(
    tmp_path: Path,
) -> None:
    """Round 1 writes a plan and then calls a tool; its text is visible (dim) as it arrives and
    becomes the thinking row above the tool call once the round ends."""
    plan = (
        "I will look up AAPL's last two 10-K filings first, then compare the gross margins of "
        "both years."
    )
    model = GatedModel(
        ScriptedModel(
            [calls(("lookup", {"label": "AAPL", "seconds": 0}), text=plan), text("Done: 46%.")]
        ),
        after_chunks=3,
    )
    app = DexterApp(make_agent(model, tmp_path))
    async with app.run_test(size=(80, 30)) as pilot:
        app.prompt.value = "margins?"
        await pilot.press("enter")
        await wait_for(pilot, lambda: model.waiting)
        await pilot.pause()
        [streaming] = app.query("#log > Markdown.segment").results(Markdown)
        assert streaming.source == plan[:24]
        assert not rows(app) and not notes(app, "thinking")

        model.gate.set()
        await wait_for(pilot, lambda: not app.busy)
        await pilot.pause()
        log = list(app.query_one("#log").children)
        kinds = [
            "thinking" if w.has_class("thinking") else type(w).__name__
            for w in log
            if not w.has_class("question") and not w.has_class("stats")
        ]
        assert kinds == ["thinking", "ToolRow", "Markdown"]
        assert notes(app, "thinking") == [plan]
        # Folded: one row at 80 columns, however long the plan.
        [row] = app.query("#log > Note.thinking").results(Note)
        assert row.size.height == 1
        assert not streaming.is_attached
        assert answers(app) == ["Done: 46%."]
        app.quit()
        await pilot.pause()
    # And so it stays in the scrollback once the session ends.
    out = io.StringIO()
    print_transcript(app.transcript, Console(file=out, width=80, color_system=None))
    printed = out.getvalue().splitlines()
    [folded] = [line for line in printed if "10-K" in line]
    assert folded.startswith("  I will look up AAPL's") and folded.endswith("…")
    assert len(folded) == 80


async def test_approval_allow_once_runs_the_tool(tmp_path: Path) -> None:
    writer = WriteTool()
    model = ScriptedModel([calls(("write_note", {"path": "notes.md"})), text("Saved it.")])
    app = DexterApp(make_agent(model, tmp_path, tools=[writer]))
    async with app.run_test(size=SIZE) as pilot:
        app.prompt.value = "save a note"
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.approval.is_open)
        assert app.approval.request is not None and app.approval.request.tool == "write_note"
        assert "notes.md" in str(app.query_one("#approval-title").render())
        assert writer.written == []
        await pilot.press("enter")  # the highlighted first choice: allow once
        await wait_for(pilot, lambda: not app.busy)
        await pilot.pause()

        assert writer.written == ["notes.md"]
        assert answers(app) == ["Saved it."]
        assert not app.approval.is_open
        assert app.prompt.has_focus
        assert rows(app)[0].state == "done"


async def test_calls_that_run_together_are_approved_together(tmp_path: Path) -> None:
    from dexter.tools.fs import WriteFileTool

    workspace = tmp_path / "ws"
    workspace.mkdir()
    writes = [("write_file", {"path": f"part{i}.md", "content": f"part {i}"}) for i in (1, 2, 3)]
    model = ScriptedModel([calls(*writes), text("Wrote three parts.")])
    app = DexterApp(make_agent(model, tmp_path, tools=[WriteFileTool(workspace)]))
    async with app.run_test(size=SIZE) as pilot:
        app.prompt.value = "write the memo in three parts"
        await pilot.press("enter")
        for number in (1, 2, 3):

            def asking(n: int = number) -> bool:
                request = app.approval.request
                return (
                    app.approval.is_open
                    and request is not None
                    and (request.args.get("path") == f"part{n}.md")
                )

            await wait_for(pilot, asking)
            await pilot.pause()
            title = str(app.query_one("#approval-title").render())
            assert "3 calls would run together" in title
            assert f"▶ {number}. write_file" in title
            await pilot.press("y")
        await wait_for(pilot, lambda: not app.busy)
        await pilot.pause()
        assert sorted(p.name for p in workspace.iterdir()) == ["part1.md", "part2.md", "part3.md"]
        assert [row.together for row in rows(app)] == [3, 3, 3]
        assert answers(app) == ["Wrote three parts."]


async def test_deny_stops_the_run_without_running_the_tool(tmp_path: Path) -> None:
    writer = WriteTool()
    model = ScriptedModel([calls(("write_note", {"path": "notes.md"}))])
    app = DexterApp(make_agent(model, tmp_path, tools=[writer]))
    async with app.run_test(size=SIZE) as pilot:
        await ask_and_decide(pilot, app, "save a note", "n")

        assert writer.written == []
        assert model.calls_made == 1
        assert notes(app, "stopped") == ["Stopped: you denied write_note."]
        assert rows(app)[0].state == "denied"
        assert answers(app) == []
        assert app.prompt.has_focus


async def test_allow_for_session_is_not_asked_again(tmp_path: Path) -> None:
    writer = WriteTool()
    model = ScriptedModel(
        [
            calls(("write_note", {"path": "a.md"})),
            text("Wrote a."),
            calls(("write_note", {"path": "b.md"})),
            text("Wrote b."),
        ]
    )
    app = DexterApp(make_agent(model, tmp_path, tools=[writer]))
    asked: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        app.prompt.value = "write a"
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.approval.is_open)
        asked.append("a")
        await pilot.press("2")
        await wait_for(pilot, lambda: not app.busy)

        app.prompt.value = "write b"
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.approval.is_open or not app.busy)
        if app.approval.is_open:
            asked.append("b")
        await wait_for(pilot, lambda: not app.busy)
        await pilot.pause()

        assert asked == ["a"]
        assert [row.note for row in rows(app)] == ["approved for this session", ""]
        assert writer.written == ["a.md", "b.md"]
        assert answers(app) == ["Wrote a.", "Wrote b."]


async def test_conversation_carries_across_turns_and_clear_forgets_it(tmp_path: Path) -> None:
    model = ScriptedModel([text("First answer."), text("Second answer."), text("Fresh.")])
    agent = make_agent(model, tmp_path)
    app = DexterApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, app, "first")
        await ask(pilot, app, "second")
        second_request = model.requests[1].messages
        assert UserMessage("first") in second_request
        assert len(agent.history) == 4

        await ask(pilot, app, "/clear")
        assert agent.history == []
        assert answers(app) == [] and notes(app, "question") == []
        assert notes(app, "info") == ["Conversation cleared."]

        await ask(pilot, app, "third")
        assert UserMessage("first") not in model.requests[2].messages


async def test_help_lists_commands_and_keys(tmp_path: Path) -> None:
    app = DexterApp(make_agent(ScriptedModel([]), tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, "/help")
        await pilot.pause()
        [help_note] = notes(app, "help")
        for expected in ("/model", "/clear", "/exit", "Ctrl+C", "Up / Down", "allow once"):
            assert expected in help_note
        await ask(pilot, app, "/bogus")
        assert notes(app, "error") == ["Unknown command /bogus. Type /help for commands."]


async def test_model_command_switches_and_reports_errors(tmp_path: Path) -> None:
    replacement = ScriptedModel([text("From the new model.")], name="other-model")
    requested: list[str] = []

    def switch_model(spec: str) -> Model:
        requested.append(spec)
        if spec.startswith("nope:"):
            raise ConfigError("Unknown provider 'nope'. Known providers: openai, anthropic.")
        return replacement

    agent = make_agent(ScriptedModel([]), tmp_path)
    app = DexterApp(agent, switch_model=switch_model, model_label="scripted")
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, app, "/model")
        assert "Model: scripted" in notes(app, "info")[-1]

        await ask(pilot, app, "/model nope:thing")
        assert notes(app, "error") == [
            "Could not switch model: Unknown provider 'nope'. Known providers: openai, anthropic."
        ]
        assert agent.model is not replacement

        await ask(pilot, app, "/model other:other-model")
        assert agent.model is replacement
        assert "other:other-model" in str(app.query_one("#header").render())
        await ask(pilot, app, "hello")
        assert answers(app) == ["From the new model."]
    assert requested == ["nope:thing", "other:other-model"]


async def test_model_switch_unavailable_without_callback(tmp_path: Path) -> None:
    app = DexterApp(make_agent(ScriptedModel([]), tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, app, "/model openai:gpt")
        assert notes(app, "error") == ["Switching models is not available here."]


async def test_follow_up_typed_during_run_is_queued_and_delivered(tmp_path: Path) -> None:
    model = GatedModel(
        ScriptedModel([calls(("lookup", {"label": "MSFT"})), text("MSFT and NVDA compared.")])
    )
    app = DexterApp(make_agent(model, tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        app.prompt.value = "look up MSFT"
        await pilot.press("enter")
        await wait_for(pilot, lambda: model.waiting)
        await type_and_send(pilot, "also NVDA")
        assert notes(app, "queued") == ["↳ queued: also NVDA"]
        assert "1 queued" in app.working.text
        model.gate.set()
        await wait_for(pilot, lambda: not app.busy)
        await pilot.pause()

        assert notes(app, "delivered") == ["↳ sent with the next step: also NVDA"]
        assert UserMessage("also NVDA") in model.inner.requests[1].messages
        assert answers(app) == ["MSFT and NVDA compared."]
        assert notes(app, "question") == ["› look up MSFT"]
        assert len(app.agent.queue) == 0


async def test_follow_up_left_in_queue_becomes_the_next_question(tmp_path: Path) -> None:
    model = GatedModel(ScriptedModel([text("First."), text("Second.")]))
    app = DexterApp(make_agent(model, tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        app.prompt.value = "one"
        await pilot.press("enter")
        await wait_for(pilot, lambda: model.waiting)
        app.prompt.value = "two"
        await pilot.press("enter")
        app.prompt.value = "three"
        await pilot.press("enter")
        model.gate.set()
        await wait_for(pilot, lambda: not app.busy)
        await pilot.pause()

        assert notes(app, "question") == ["› one", "› two\n\nthree"]
        assert answers(app) == ["First.", "Second."]
        assert len(notes(app, "delivered")) == 2
        assert app.agent.history[-2] == UserMessage("two\n\nthree")


async def test_ctrl_c_cancels_a_run_and_the_session_stays_usable(tmp_path: Path) -> None:
    slow = SleepTool()
    model = ScriptedModel(
        [calls(("lookup", {"label": "slow", "seconds": 30})), text("Still here.")]
    )
    agent = make_agent(model, tmp_path, tools=[slow])
    app = DexterApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        app.prompt.value = "take forever"
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(rows(app)) and rows(app)[0].state == "running")
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: not app.busy)
        await pilot.pause()

        assert slow.cancelled
        assert notes(app, "cancelled") == ["Cancelled."]
        assert notes(app, "error") == []
        assert rows(app)[0].state == "cancelled"
        assert agent.history == []
        await pilot.press("ctrl+c")  # a double-tap right after cancelling must not quit
        assert app.is_running

        await ask(pilot, app, "are you there?")
        assert answers(app) == ["Still here."]


async def test_ctrl_c_while_waiting_for_approval_cancels(tmp_path: Path) -> None:
    writer = WriteTool()
    model = ScriptedModel([calls(("write_note", {"path": "x.md"}))])
    app = DexterApp(make_agent(model, tmp_path, tools=[writer]))
    async with app.run_test(size=SIZE) as pilot:
        app.prompt.value = "write"
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.approval.is_open)
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: not app.busy)
        await pilot.pause()

        assert not app.approval.is_open
        assert writer.written == []
        assert notes(app, "cancelled") == ["Cancelled."]
        assert app.prompt.has_focus


async def test_ctrl_c_when_idle_clears_the_line_then_quits(tmp_path: Path) -> None:
    app = DexterApp(make_agent(ScriptedModel([]), tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("h", "i")
        await pilot.press("ctrl+c")
        assert app.prompt.value == ""
        assert app.is_running
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not app.is_running


async def test_exit_command_and_ctrl_d_quit(tmp_path: Path) -> None:
    app = DexterApp(make_agent(ScriptedModel([]), tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, "/exit")
        await pilot.pause()
        assert not app.is_running
    assert app.return_code == 0

    app = DexterApp(make_agent(ScriptedModel([]), tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+d")
        await pilot.pause()
        assert not app.is_running


async def test_up_and_down_recall_earlier_messages(tmp_path: Path) -> None:
    app = DexterApp(make_agent(ScriptedModel([]), tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, app, "/help")
        await ask(pilot, app, "/model")
        await pilot.press("d", "r", "a", "f", "t")
        await pilot.press("up")
        assert app.prompt.value == "/model"
        await pilot.press("up")
        assert app.prompt.value == "/help"
        await pilot.press("up")
        assert app.prompt.value == "/help"
        await pilot.press("down")
        assert app.prompt.value == "/model"
        await pilot.press("down")
        assert app.prompt.value == "draft"


async def test_retry_notice_is_shown_and_the_answer_follows(tmp_path: Path) -> None:
    model = ScriptedModel(
        [ModelError(ErrorKind.RATE_LIMIT, "429", retry_after=2.0, provider="X"), text("Got it.")]
    )
    app = DexterApp(make_agent(model, tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, app, "hi")
        [notice] = notes(app, "notice")
        assert notice.startswith("Retrying (1/")
        assert answers(app) == ["Got it."]


async def test_model_error_is_shown_in_red_without_crashing(tmp_path: Path) -> None:
    model = ScriptedModel([ModelError(ErrorKind.AUTH, "bad key", provider="Scripted")])
    app = DexterApp(make_agent(model, tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, app, "hi")
        [error] = notes(app, "error")
        assert error.startswith("Error: ")
        assert answers(app) == []
        assert app.is_running


def test_run_interactive_runs_inline_and_keeps_scrollback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: dict[str, Any] = {}

    def fake_run(self: DexterApp, **kwargs: Any) -> None:
        seen.update(kwargs, label=self.model_label)
        self.transcript += [("question", "first?"), ("answer", "**One.**")]

    monkeypatch.setattr(DexterApp, "run", fake_run)
    agent = make_agent(ScriptedModel([]), tmp_path)
    assert run_interactive(agent, switch_model=None, model_label="openai:x") == 0
    # The inline region is cleared; the conversation is printed to the normal screen instead.
    assert seen["inline"] is True and seen["inline_no_clear"] is False
    assert seen["label"] == "openai:x"
    out = capsys.readouterr().out
    assert "› first?" in out and "One." in out and "**" not in out


def test_parse_command_and_formatting() -> None:
    assert parse_command("what is AAPL?") is None
    assert parse_command("/model openai:gpt-5") == Command("/model", "openai:gpt-5")
    assert parse_command("/quit") == Command("/exit")
    assert parse_command("/nope") == UnknownCommand("/nope")
    assert compact_args({"ticker": "AAPL", "limit": 4}) == "ticker=AAPL, limit=4"
    assert compact_args({"q": "a, b"}) == 'q="a, b"'
    assert len(compact_args({"text": "x" * 500})) <= 80
    assert format_duration(250) == "250ms"
    assert format_duration(3200) == "3.2s"


async def test_every_turn_is_printed_to_the_terminal_after_exit(tmp_path: Path) -> None:
    model = ScriptedModel(
        [text("First answer."), text("| FY | Revenue |\n|---|---|\n| 2025 | 416,161 |")]
    )
    app = DexterApp(make_agent(model, tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, app, "first")
        await ask(pilot, app, "a table")
        app.quit()
        await pilot.pause()
    out = io.StringIO()
    print_transcript(app.transcript, Console(file=out, width=80, color_system=None))
    screen = out.getvalue()
    assert screen.index("› first") < screen.index("First answer.") < screen.index("› a table")
    assert "416,161" in screen and "Revenue" in screen


async def test_resumed_session_shows_its_earlier_turns(tmp_path: Path) -> None:
    from tests.test_sessions_resume import session_agent

    first = session_agent(tmp_path, ScriptedModel([text("Apple's FY2025 revenue: $416.2B.")]))
    old = first.new_session()
    async for _ in first.run("Apple revenue?"):
        pass
    agent = session_agent(tmp_path, ScriptedModel([]))
    agent.new_session()
    agent.resume(old)
    app = DexterApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "› Apple revenue?" in notes(app, "question")
        assert any("416.2B" in a for a in answers(app))
        await ask(pilot, app, "/resume")
        listing = notes(app, "info")[-1]
        assert f"* {old}" in listing and "(current)" in listing
        assert " 1 turn  Apple revenue?" in listing and "T" not in listing.split()[2]
    assert ("answer", "Apple's FY2025 revenue: $416.2B.") in app.transcript


async def test_link_targets_stay_visible(tmp_path: Path) -> None:
    model = ScriptedModel([text("Read [the 10-K](https://www.sec.gov/a.htm) first.")])
    app = DexterApp(make_agent(model, tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, app, "where?")
        assert answers(app) == ["Read the 10-K (https://www.sec.gov/a.htm) first."]


async def test_export_writes_the_latest_answer_as_a_report_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.test_sessions_resume import session_agent

    pytest.importorskip("jinja2")
    monkeypatch.chdir(tmp_path)
    agent = session_agent(tmp_path, ScriptedModel([text("Apple's FY2025 revenue: **$416.2B**.")]))
    agent.new_session()
    app = DexterApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, app, "/export")
        await wait_for(pilot, lambda: any("Could not export" in n for n in notes(app, "error")))
        assert "no answered question" in notes(app, "error")[-1]
        await ask(pilot, app, "Apple revenue?")
        await ask(pilot, app, "/export html my memo.html")
        await wait_for(pilot, lambda: notes(app, "info")[-1].startswith("Wrote"))
        await ask(pilot, app, "/export")  # default: HTML in the working directory
        await wait_for(pilot, lambda: notes(app, "info")[-1].startswith("Wrote dexter-report-"))
        await ask(pilot, app, "/export memo.docx")
        await wait_for(pilot, lambda: "cannot tell the format" in notes(app, "error")[-1])
        # /export has no --format option: the message says how to give the format here.
        assert "--format" not in notes(app, "error")[-1]
        assert "/export pdf PATH" in notes(app, "error")[-1]
    _check_exported(tmp_path)


def _check_exported(folder: Path) -> None:
    html = (folder / "my memo.html").read_text()
    assert "Apple revenue?" in html and "<strong>$416.2B</strong>" in html
    assert len(list(folder.glob("dexter-report-*.html"))) == 1


@pytest.mark.parametrize("columns", [80, 60, 120])
async def test_approval_keys_fit_the_terminal_width(tmp_path: Path, columns: int) -> None:
    """At 80 columns the hint used to be cut at the border, losing "ctrl+c cancel"."""
    from textual.widgets import Static

    from dexter.agent.events import ApprovalRequest

    app = DexterApp(make_agent(ScriptedModel([]), tmp_path))
    async with app.run_test(size=(columns, 30)) as pilot:
        request = ApprovalRequest(
            "c1", "write_file", {"path": "notes/aapl.md"}, proposed_rule="Write(./notes/aapl.md)"
        )
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        app.approval.open(request, future)
        await pilot.pause()
        await pilot.pause()
        hint = app.query_one("#approval-hint", Static)
        shown = str(hint.render())
        assert "4/r" in shown and shown.endswith("ctrl+c cancel")
        assert len(shown) <= hint.content_size.width and hint.outer_size.height == 1
        if columns >= 100:
            assert shown.startswith("↑/↓ enter · 1/y once · 2/a this session")


async def test_leaving_keeps_tool_rows_approvals_and_commands_and_says_how_to_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The printed conversation used to hold only questions and answers: no tool row, no
    approval, no command and its error, and no word on how to come back to it."""
    from dexter.cli.interactive.app import print_conversation
    from tests.support.sessions import hand_session

    monkeypatch.chdir(tmp_path)
    writer = WriteTool()
    model = ScriptedModel([calls(("write_note", {"path": "notes.md"})), text("Saved it.")])
    agent = hand_session(tmp_path, model, tools=[writer])
    session_id = agent.new_session()
    app = DexterApp(agent)
    async with app.run_test(size=(80, 30)) as pilot:
        await ask_and_decide(pilot, app, "save a note", "y")
        await ask(pilot, app, f"/export md {tmp_path / 'nope' / 'x.md'}")
        await wait_for(pilot, lambda: any("does not exist" in n for n in notes(app, "error")))
        app.quit()
        await pilot.pause()
    out = io.StringIO()
    print_conversation(app, Console(file=out, width=400, color_system=None))
    screen = out.getvalue()
    shown_in_order = [
        "› save a note",
        "✓ write_note(path=notes.md)",
        "approved",
        "Saved it.",
        "› /export md",
        f"the folder {tmp_path / 'nope'} does not exist",
        f"dexter --resume {session_id}",
    ]
    positions = [screen.find(text) for text in shown_in_order]
    assert -1 not in positions and positions == sorted(positions), screen
    assert screen.count("Saved it.") == 1
    assert not (tmp_path / "nope").exists()


async def test_nothing_to_resume_after_clear_and_no_hint_without_a_saved_session(
    tmp_path: Path,
) -> None:
    from dexter.cli.interactive.app import print_conversation
    from tests.support.sessions import hand_session

    agent = hand_session(tmp_path, ScriptedModel([text("Four.")]))
    agent.new_session()
    app = DexterApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, app, "2+2?")
        assert app.has_turns
        await ask(pilot, app, "/clear")
        app.quit()
        await pilot.pause()
    out = io.StringIO()
    print_conversation(app, Console(file=out, width=80, color_system=None))
    assert "Four." in out.getvalue() and "Conversation cleared." in out.getvalue()
    assert "--resume" not in out.getvalue()


async def test_quitting_mid_run_keeps_the_cancelled_run_and_draws_an_empty_region_last(
    tmp_path: Path,
) -> None:
    """The last frame drawn is what a terminal may keep in its scrollback when the region is
    cleared (tmux does once the region reached the top), so it must hold nothing: it used to
    hold the whole last screen, printed again just below it as the conversation."""
    model = ScriptedModel([calls(("lookup", {"label": "AAPL", "seconds": 30}))])
    app = DexterApp(make_agent(model, tmp_path))
    at_exit: dict[str, bool] = {}
    leave = app.exit

    def exit_and_note(*args: Any, **kwargs: Any) -> None:
        at_exit.update(log=app.log_view.display, header=app.query_one("#header").display)
        leave(*args, **kwargs)

    app.exit = exit_and_note  # type: ignore[method-assign]
    async with app.run_test(size=(80, 30)) as pilot:
        app.prompt.value = "look up AAPL"
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(rows(app)) and rows(app)[0].state == "running")
        app.quit()
        await wait_for(pilot, lambda: bool(at_exit))
    assert at_exit == {"log": False, "header": False}
    assert ("question", "look up AAPL") in app.transcript
    assert ("warning", "Cancelled.") in app.transcript
    [tool] = [entry for kind, entry in app.transcript if kind == "tool"]
    assert tool.startswith("✗ lookup(label=AAPL") and tool.endswith("cancelled")


async def test_always_allow_is_said_in_words_on_the_tool_row(tmp_path: Path) -> None:
    from dexter.permissions.policy import RulesPolicy
    from dexter.tools.fs import WriteFileTool

    workspace = tmp_path / "ws"
    workspace.mkdir()
    model = ScriptedModel(
        [calls(("write_file", {"path": "a.md", "content": "x"})), text("Wrote a.md.")]
    )
    agent = make_agent(model, tmp_path, tools=[WriteFileTool(workspace)])
    agent.policy = RulesPolicy(tmp_path / "settings.json", workspace, sandboxed=False)
    app = DexterApp(agent)
    async with app.run_test(size=SIZE) as pilot:
        await ask_and_decide(pilot, app, "write a.md", "r")
        assert rows(app)[0].note == "always allowed (rule saved)"  # was "allow_always"
    assert "Write(" in (tmp_path / "settings.json").read_text()
