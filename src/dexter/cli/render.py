"""Plain (non-interactive) rendering of an agent run: answer on stdout, activity on stderr."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TextIO

from rich.console import Console
from rich.markup import escape

from dexter.agent.events import (
    ContextEvent,
    Done,
    Event,
    QueueDrained,
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
from dexter.cli.progress import Waiting
from dexter.tools.citations import SourceEntry

ARG_PREVIEW = 60


def compact_args(args: dict[str, Any], limit: int = ARG_PREVIEW) -> str:
    parts = []
    for key, value in args.items():
        shown = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
        parts.append(f"{key}={shown}")
    text = ", ".join(parts)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def format_duration(ms: float) -> str:
    return f"{ms:.0f}ms" if ms < 1000 else f"{ms / 1000:.1f}s"


def cited_sources(done: Done) -> list[SourceEntry]:
    """The sources whose marker ([S1] …) appears in the answer: the ones it actually uses."""
    return [source for source in done.sources if f"[{source.id}]" in done.answer]


class PlainRenderer:
    """Streams answer text as it arrives when stdout is a terminal; otherwise prints it once.
    On a terminal, a spinner on stderr says what the run waits for while nothing else shows."""

    def __init__(self, out: TextIO, err: Console, *, live: bool, model: str = "the model") -> None:
        self.out = out
        self.err = err
        self.live = live
        self.model = model
        self.waiting = Waiting(err)
        self._line_open = False

    def close(self) -> None:
        self.waiting.stop()

    def _end_text_line(self) -> None:
        if self._line_open:
            self.out.write("\n")
            self.out.flush()
            self._line_open = False

    def handle(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self.model = event.model or self.model
            self.waiting.start(f"waiting for {self.model}")
            return
        if isinstance(event, TextDelta):
            if self.live:
                self.waiting.stop()  # the answer itself is the progress now
                self.out.write(event.text)
                self.out.flush()
                self._line_open = True
            return
        if isinstance(event, Thinking):
            # The streamed text was a note alongside tool calls, not the answer.
            self._end_text_line()
            if not self.live:
                self.err.print(f"[dim]{escape(event.text)}[/dim]", highlight=False)
            return
        if isinstance(event, Done):
            self.waiting.stop()
            self._finish(event)
            return
        self._end_text_line()
        if isinstance(event, ToolStart):
            together = f" [dim]∥ {event.group_size} together[/dim]" if event.group_size > 1 else ""
            self.err.print(
                f"[cyan]→ {escape(event.tool)}[/cyan]([dim]{escape(compact_args(event.args))}"
                f"[/dim]){together}",
                highlight=False,
            )
            self.waiting.start(f"running {event.tool}")
        elif isinstance(event, ToolProgress):
            self.err.print(
                f"  [dim]{escape(event.tool)}: {escape(event.message)}[/dim]", highlight=False
            )
        elif isinstance(event, ToolEnd):
            note = " [yellow](repeat warning)[/yellow]" if event.warning else ""
            took = format_duration(event.duration_ms)
            self.err.print(
                f"[green]✓ {escape(event.tool)}[/green] [dim]{took}[/dim]{note}", highlight=False
            )
            self.waiting.start(f"waiting for {self.model}")
        elif isinstance(event, ToolError):
            self.err.print(
                f"[red]✗ {escape(event.tool)}: {escape(event.error)}[/red]", highlight=False
            )
            self.waiting.start(f"waiting for {self.model}")
        elif isinstance(event, ToolDenied):
            who = "you" if event.by == "user" else "a permission rule"
            self.err.print(
                f"[yellow]⊘ {escape(event.tool)} denied by {who}[/yellow]", highlight=False
            )
        elif isinstance(event, Retrying):
            self.err.print(
                f"[yellow]↻ retrying in {event.delay:.1f}s "
                f"({event.attempt}/{event.max_attempts - 1}): {escape(event.error)}[/yellow]",
                highlight=False,
            )
            self.waiting.start(f"waiting to retry {self.model}")
        elif isinstance(event, ContextEvent):
            self.err.print(f"[yellow]… {escape(event.detail)}[/yellow]", highlight=False)
        elif isinstance(event, QueueDrained):
            self.err.print(f"[dim]+ follow-up added: {escape(event.text)}[/dim]", highlight=False)

    def _finish(self, done: Done) -> None:
        if done.status == "answered":
            if not self.live:
                self.out.write(done.answer)
                self._line_open = bool(done.answer)
            self._end_text_line()
            cited = cited_sources(done)
            if cited:
                self.out.write("\nSources\n")
                for source in cited:
                    where = f" {source.url}" if source.url else ""
                    self.out.write(f"  [{source.id}] {source.label}{where}\n")
                self.out.flush()
            elif done.sources:
                count = len(done.sources)
                self.err.print(
                    f"[dim]The answer cites none of the {count} sources consulted "
                    "(`--json` lists them).[/dim]",
                    highlight=False,
                )
        else:
            self._end_text_line()
            if done.status == "denied":
                self.err.print("[yellow]Stopped: you denied a tool call.[/yellow]")
            else:
                self.err.print(f"[red]Error: {escape(done.error or '')}[/red]", highlight=False)
        usage = done.usage
        rounds = _plural(done.iterations, "round")
        calls = _plural(len(done.tool_calls), "tool call")
        self.err.print(
            f"[dim]{rounds} · {calls} · "
            f"{usage.input_tokens:,} in / {usage.output_tokens:,} out tokens · "
            f"{format_duration(done.duration_ms)}[/dim]",
            highlight=False,
        )


class JsonRenderer:
    """One JSON object per line. `text` events of a model round are held until the round turns
    out to be the answer: text written before a tool call is sent once, as `thinking`, so joining
    the `text` events gives exactly the answer. `done` carries the session id."""

    def __init__(self, out: TextIO, *, session_id: Callable[[], str | None] | None = None) -> None:
        self.out = out
        self.session_id = session_id
        self._held: list[TextDelta] = []

    def _write(self, payload: dict[str, Any]) -> None:
        self.out.write(json.dumps(payload, ensure_ascii=False, default=str) + "\n")
        self.out.flush()

    def handle(self, event: Event) -> None:
        if isinstance(event, TextDelta):
            self._held.append(event)
            return
        if isinstance(event, Thinking | Retrying):
            # A note before tool calls, or the partial text of a call that is streamed again.
            self._held.clear()
        elif isinstance(event, Done):
            if event.status == "answered":
                for held in self._held:
                    self._write(held.to_dict())
            self._held.clear()
        payload = event.to_dict()
        if isinstance(event, Done) and self.session_id is not None:
            payload["session_id"] = self.session_id()
        self._write(payload)

    def close(self) -> None:
        return None
