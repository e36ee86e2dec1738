"""`dexter ask` in scripts: the question from stdin, `--json` text that joins to the answer,
the session id on `done`, only cited sources, and a spinner only on a terminal."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from dexter.agent.events import (
    ContextEvent,
    Done,
    Event,
    QueueDrained,
    Retrying,
    RunStarted,
    TextDelta,
    Thinking,
    ToolEnd,
    ToolError,
    ToolStart,
)
from dexter.agent.loop import Agent, AgentConfig
from dexter.cli.main import main
from dexter.cli.render import JsonRenderer, PlainRenderer
from dexter.models.scripted import ScriptedModel, calls
from dexter.models.scripted import text as reply_text
from dexter.tools.citations import SourceEntry
from dexter.tools.registry import ToolRegistry
from tests.support.tools import SleepTool
from tests.support.wire_server import WireServer, sse
from tests.test_cli import USAGE_CHUNK, chunk, point_at, workdir  # noqa: F401


class FakeStdin(io.StringIO):
    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.buffer = io.BytesIO(text.encode())

    def isatty(self) -> bool:
        return False


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def strip_ansi(text: str) -> str:
    return ANSI.sub("", text)


def answer_stream(text: str) -> bytes:
    return sse([chunk({"content": text}), chunk({}, "stop"), USAGE_CHUNK])


@pytest.mark.parametrize("argv", [["ask"], ["ask", "-"]])
def test_question_from_stdin(
    workdir: Path,  # noqa: F811
    wire_server: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
) -> None:
    point_at(wire_server, monkeypatch)
    monkeypatch.setattr(sys, "stdin", FakeStdin("What is 2+2?\n"))
    wire_server.push(answer_stream("Four."))
    assert main([*argv, "--model", "openai:gpt-test"]) == 0
    assert capsys.readouterr().out.strip() == "Four."
    sent = wire_server.requests[0].json()["messages"]
    assert any("What is 2+2?" in str(m.get("content")) for m in sent)


def test_no_question_and_a_terminal_is_a_usage_error(
    workdir: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    class Tty(FakeStdin):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", Tty(""))
    assert main(["ask"]) == 2
    assert "echo" in capsys.readouterr().err


def push_plan_then_answer(server: WireServer) -> None:
    """Round 1 streams a plan and then calls `calculate`; round 2 streams the answer."""
    calc = json.dumps({"operation": "evaluate", "expression": "2+2"})
    tool_call = {
        "index": 0,
        "id": "call_a",
        "type": "function",
        "function": {"name": "calculate", "arguments": calc},
    }
    server.push(
        sse(
            [
                chunk({"role": "assistant", "content": "Let me "}),
                chunk({"content": "compute that. "}),
                chunk({"tool_calls": [tool_call]}),
                chunk({}, "tool_calls"),
                USAGE_CHUNK,
            ]
        ),
        sse([chunk({"content": "It is "}), chunk({"content": "4."}), chunk({}, "stop")]),
    )


def ask_plan_then_answer_as_json(
    server: WireServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> list[dict[str, Any]]:
    point_at(server, monkeypatch)
    push_plan_then_answer(server)
    assert main(["ask", "--json", "--model", "openai:gpt-test", "2+2?"]) == 0
    return [json.loads(x) for x in capsys.readouterr().out.splitlines()]


def test_json_text_joins_to_the_answer_and_done_has_the_session(
    workdir: Path,  # noqa: F811
    wire_server: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    events = ask_plan_then_answer_as_json(wire_server, monkeypatch, capsys)
    done = events[-1]
    assert "".join(e["text"] for e in events if e["type"] == "text") == done["answer"] == "It is 4."
    assert [e["text"] for e in events if e["type"] == "thinking"] == ["Let me compute that."]
    assert done["session_id"]
    assert main(["sessions", "show", done["session_id"], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["turns"][0]["answer"] == "It is 4."


def _done(answer: str, sources: list[SourceEntry]) -> Done:
    return Done(answer=answer, status="answered", iterations=1, sources=sources)


def test_only_cited_sources_are_listed() -> None:
    out, err = io.StringIO(), io.StringIO()
    renderer = PlainRenderer(out, Console(file=err))
    sources = [SourceEntry("S1", "10-K 2025", None), SourceEntry("S2", "10-Q Q1", None)]
    renderer.handle(_done("Revenue was $416B [S2].", sources))
    assert "[S2] 10-Q Q1" in out.getvalue() and "S1" not in out.getvalue()


def test_text_that_looks_like_markup_is_shown_as_typed() -> None:
    """A follow-up, a tool name or an error with square brackets is text, not rich markup
    (`[/x]` used to end the run with a markup error)."""
    out, err = io.StringIO(), io.StringIO()
    renderer = PlainRenderer(out, Console(file=err, width=200))
    renderer.handle(QueueDrained(count=1, text="compare [/b] and [bold]MSFT[/bold]"))
    renderer.handle(ContextEvent("constraints", "noted: use [red]GAAP[/red] only"))
    renderer.handle(ToolEnd(call_id="c", tool="mcp[/x]", args={}, result="ok", duration_ms=1))
    renderer.handle(ToolError(call_id="d", tool="t[/]", args={}, error="bad [/i] input"))
    renderer.handle(Done(answer="", status="error", iterations=1, error="HTTP 500 [/oops]"))
    shown = err.getvalue()
    for text in (
        "compare [/b] and [bold]MSFT[/bold]",
        "use [red]GAAP[/red] only",
        "mcp[/x]",
        "t[/]: bad [/i] input",
        "Error: HTTP 500 [/oops]",
    ):
        assert text in shown


def test_spinner_only_on_a_terminal() -> None:
    events = [
        RunStarted(run_id="r1", query="q", model="openai:gpt-test", tools=[], scratchpad=""),
        ToolStart(call_id="c", tool="calculate", args={}),
    ]
    terminal = io.StringIO()
    renderer = PlainRenderer(io.StringIO(), Console(file=terminal, force_terminal=True, width=80))
    renderer.handle(events[0])
    assert renderer.waiting.active
    renderer.handle(events[1])
    renderer.handle(TextDelta("An", 1))
    # The text being written shows (dim) above the spinner, which now says so.
    assert renderer.waiting.text.splitlines()[0] == "An"
    assert "openai:gpt-test is writing" in renderer.waiting.text
    renderer.close()
    assert "waiting for openai:gpt-test" in terminal.getvalue()
    assert "running calculate" in terminal.getvalue()

    piped = io.StringIO()
    quiet = PlainRenderer(io.StringIO(), Console(file=piped))
    for event in events:
        quiet.handle(event)
    assert not quiet.waiting.active and "waiting" not in piped.getvalue()


def test_json_retracts_nothing_when_no_tool_follows() -> None:
    out = io.StringIO()
    renderer = JsonRenderer(out, session_id=lambda: "abc12345")
    for event in (TextDelta("Hel"), TextDelta("lo"), Thinking("Hello"), TextDelta("Bye")):
        renderer.handle(event)
    renderer.handle(_done("Bye", []))
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    assert [x["type"] for x in lines] == ["draft", "draft", "thinking", "draft", "text", "done"]
    assert lines[-1]["session_id"] == "abc12345"


@pytest.mark.parametrize("as_json", [False, True])
def test_an_empty_answer_is_a_failure_said_on_stderr(
    workdir: Path,  # noqa: F811
    wire_server: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    as_json: bool,
) -> None:
    """Nothing on stdout and exit 0 used to pass for an answer in a script."""
    point_at(wire_server, monkeypatch)
    wire_server.push(answer_stream(""))
    flags = ["--json"] if as_json else []
    assert main(["ask", *flags, "--model", "openai:gpt-test", "-o", "memo.md", "q?"]) == 1
    captured = capsys.readouterr()
    assert "empty answer" in captured.err and "memo.md was not written" in captured.err
    if as_json:
        assert json.loads(captured.out.splitlines()[-1])["type"] == "done"
    else:
        assert captured.out.strip() == ""
    assert not (workdir / "memo.md").exists()


def test_output_name_without_a_format_suggests_no_missing_option(
    workdir: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`ask` has no --format, so the message must not tell the user to pass one."""
    assert main(["ask", "-o", "memo.txt", "q?"]) == 2
    err = capsys.readouterr().err
    assert "cannot tell the format from 'memo.txt'" in err and "--format" not in err


def test_json_drafts_stream_at_once_with_their_round(
    workdir: Path,  # noqa: F811
    wire_server: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A script can show text as the model writes it: `draft` events arrive before the round is
    decided, name their round, and a round that turns into tool calls is named by `thinking`."""
    events = ask_plan_then_answer_as_json(wire_server, monkeypatch, capsys)
    types = [e["type"] for e in events]
    drafts = [(e["round"], e["text"]) for e in events if e["type"] == "draft"]
    assert drafts == [(1, "Let me "), (1, "compute that. "), (2, "It is "), (2, "4.")]
    thinking = next(e for e in events if e["type"] == "thinking")
    assert (thinking["round"], thinking["text"]) == (1, "Let me compute that.")
    # Round 1's drafts came before it was known to be a plan, round 2's before the answer.
    assert types.index("draft") < types.index("thinking") < types.index("tool_start")
    assert max(i for i, t in enumerate(types) if t == "draft") < types.index("text")
    assert types[-1] == "done" and events[-1]["answer"] == "It is 4."


def test_piped_ask_prints_only_the_final_answer(
    workdir: Path,  # noqa: F811
    wire_server: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`dexter ask "…" | cat`: stdout is the answer alone, without the plan streamed before the
    tool call and without escape codes; the plan goes to stderr in full, as a log would want."""
    point_at(wire_server, monkeypatch)
    push_plan_then_answer(wire_server)
    assert main(["ask", "--model", "openai:gpt-test", "2+2?"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "It is 4.\n"
    assert "Let me compute that." in captured.err
    assert "\x1b" not in captured.out + captured.err


def terminal(width: int = 80) -> tuple[io.StringIO, Console]:
    screen = io.StringIO()
    return screen, Console(file=screen, force_terminal=True, width=width, height=24)


async def test_terminal_shows_the_plan_while_it_streams_then_folds_it(tmp_path: Path) -> None:
    """Round 1 writes a plan, then calls a tool; round 2 writes the answer. On a terminal each
    round's text shows (dim, above the spinner) while it arrives; the plan then becomes one
    thinking row, and only the answer is printed as the answer."""
    plan = (
        "I will look up Apple's latest 10-K first, then the one before it, and compare the "
        "gross margins of the two years."
    )
    answer = "Gross margin rose from 44.1% to 46.2% [S1]."
    model = ScriptedModel(
        [calls(("lookup", {"label": "AAPL", "seconds": 0}), text=plan), reply_text(answer)]
    )
    agent = Agent(model, ToolRegistry([SleepTool()]), config=AgentConfig(home=tmp_path / ".dexter"))
    out = io.StringIO()
    err_screen, err = terminal()
    _, status = terminal()
    renderer = PlainRenderer(out, err, status=status)
    seen: list[tuple[Event, str]] = []
    async for event in agent.run("AAPL margins?"):
        renderer.handle(event)
        seen.append((event, renderer.waiting.text))
    renderer.close()

    round_one = [
        shown for event, shown in seen if isinstance(event, TextDelta) and event.round == 1
    ]
    # Part-way through the plan (three pieces of eight characters), its first words are on
    # screen above the spinner.
    first_words, spinner = round_one[2].splitlines()
    assert first_words == plan[:24] and "scripted is writing" in spinner
    assert plan[:70] in " ".join(round_one[-1].splitlines())
    [after_plan] = [shown for event, shown in seen if isinstance(event, Thinking)]
    assert "look up" not in after_plan and "calling tools" in after_plan
    # The plan is folded into one dim row on stderr, cut to the terminal's width.
    rows = [line for line in strip_ansi(err_screen.getvalue()).splitlines() if "look up" in line]
    assert rows == [plan[:79] + "…"]
    round_two = [
        shown for event, shown in seen if isinstance(event, TextDelta) and event.round == 2
    ]
    assert round_two[-1].splitlines()[0] == answer
    # stdout received the answer once, and nothing of the plan.
    assert out.getvalue() == answer + "\n"
    assert not renderer.waiting.active


def test_a_retried_stream_leaves_no_partial_text_behind() -> None:
    """The attempt that failed half-way had already shown some text; the retry streams it all
    again. Only the complete answer reaches stdout, once."""
    out = io.StringIO()
    _, status = terminal()
    renderer = PlainRenderer(out, Console(file=io.StringIO()), status=status)
    renderer.handle(RunStarted(run_id="r", query="q", model="m", tools=[], scratchpad=""))
    renderer.handle(TextDelta("Revenue was", 1))
    assert renderer.waiting.text.startswith("Revenue was")
    renderer.handle(Retrying(attempt=1, max_attempts=3, delay=1.0, error="connection reset"))
    assert "Revenue" not in renderer.waiting.text
    renderer.handle(TextDelta("Revenue was $416.2B.", 1))
    renderer.handle(_done("Revenue was $416.2B.", []))
    renderer.close()
    assert out.getvalue() == "Revenue was $416.2B.\n"


def test_a_draft_cannot_drive_the_terminal() -> None:
    """Escape sequences or carriage returns in the model's text would move the cursor inside
    the live region (or clear the screen); the draft shows the text without them."""
    _, status = terminal()
    renderer = PlainRenderer(io.StringIO(), Console(file=io.StringIO()), status=status)
    renderer.handle(TextDelta("Revenue\x1b[2J\r was\x07 up", 1))
    assert renderer.waiting.text.splitlines()[0] == "Revenue[2J was up"
    renderer.close()


class TtyOut(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_goes_to_stdout_when_only_stdout_is_a_terminal(
    workdir: Path,  # noqa: F811
    wire_server: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`dexter ask "…" 2> log`: the person watches stdout, so what the run is doing shows there
    (and is cleared), and the log gets no escape codes."""
    point_at(wire_server, monkeypatch)
    push_plan_then_answer(wire_server)
    screen = TtyOut()
    monkeypatch.setattr(sys, "stdout", screen)
    assert main(["ask", "--model", "openai:gpt-test", "2+2?"]) == 0
    shown = strip_ansi(screen.getvalue())
    assert "gpt-test is writing" in shown
    assert shown.endswith("It is 4.\n")
    log = capsys.readouterr().err
    assert "Let me compute that." in log and "\x1b" not in log
