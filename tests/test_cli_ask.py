"""`dexter ask` in scripts: the question from stdin, `--json` text that joins to the answer,
the session id on `done`, only cited sources, and a spinner only on a terminal."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from dexter.agent.events import (
    ContextEvent,
    Done,
    QueueDrained,
    RunStarted,
    TextDelta,
    Thinking,
    ToolEnd,
    ToolError,
    ToolStart,
)
from dexter.cli.main import main
from dexter.cli.render import JsonRenderer, PlainRenderer
from dexter.tools.citations import SourceEntry
from tests.support.wire_server import WireServer, sse
from tests.test_cli import USAGE_CHUNK, chunk, point_at, workdir  # noqa: F401


class FakeStdin(io.StringIO):
    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.buffer = io.BytesIO(text.encode())

    def isatty(self) -> bool:
        return False


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


def test_json_text_joins_to_the_answer_and_done_has_the_session(
    workdir: Path,  # noqa: F811
    wire_server: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    point_at(wire_server, monkeypatch)
    calc = json.dumps({"operation": "evaluate", "expression": "2+2"})
    tool_call = {
        "index": 0,
        "id": "call_a",
        "type": "function",
        "function": {"name": "calculate", "arguments": calc},
    }
    wire_server.push(
        sse(
            [
                chunk({"role": "assistant", "content": "Let me compute that. "}),
                chunk({"tool_calls": [tool_call]}),
                chunk({}, "tool_calls"),
                USAGE_CHUNK,
            ]
        ),
        sse([chunk({"content": "It is "}), chunk({"content": "4."}), chunk({}, "stop")]),
    )
    assert main(["ask", "--json", "--model", "openai:gpt-test", "2+2?"]) == 0
    events: list[dict[str, Any]] = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
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
    renderer = PlainRenderer(out, Console(file=err), live=False)
    sources = [SourceEntry("S1", "10-K 2025", None), SourceEntry("S2", "10-Q Q1", None)]
    renderer.handle(_done("Revenue was $416B [S2].", sources))
    assert "[S2] 10-Q Q1" in out.getvalue() and "S1" not in out.getvalue()


def test_text_that_looks_like_markup_is_shown_as_typed() -> None:
    """A follow-up, a tool name or an error with square brackets is text, not rich markup
    (`[/x]` used to end the run with a markup error)."""
    out, err = io.StringIO(), io.StringIO()
    renderer = PlainRenderer(out, Console(file=err, width=200), live=False)
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
    renderer = PlainRenderer(
        io.StringIO(), Console(file=terminal, force_terminal=True, width=80), live=True
    )
    renderer.handle(events[0])
    assert renderer.waiting.active
    renderer.handle(events[1])
    renderer.handle(TextDelta("An"))
    assert not renderer.waiting.active  # the answer streaming is the progress
    renderer.close()
    assert "waiting for openai:gpt-test" in terminal.getvalue()
    assert "running calculate" in terminal.getvalue()

    piped = io.StringIO()
    quiet = PlainRenderer(io.StringIO(), Console(file=piped), live=False)
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
    assert [x["type"] for x in lines] == ["thinking", "text", "done"]
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
