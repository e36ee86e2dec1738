"""Plain (non-interactive) rendering of an agent run: answer on stdout, activity on stderr."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TextIO

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from dexter.agent.events import (
    ContextEvent,
    Done,
    Event,
    QueueDrained,
    Reasoning,
    Retrying,
    Revising,
    RunStarted,
    TextDelta,
    Thinking,
    ToolDenied,
    ToolEnd,
    ToolError,
    ToolProgress,
    ToolStart,
)
from dexter.cli.progress import Waiting, without_controls
from dexter.figure_marks import marked_answer, summary_line
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


def revising_line(event: Revising) -> str:
    """What a person reads when the answer goes back for one correction."""
    count = len(event.unsupported)
    if count == 1:
        return f"↻ checking figures: {event.unsupported[0]} not found in the data; revising"
    named = "; ".join(event.unsupported[:4]) + ("; …" if count > 4 else "")
    return f"↻ checking figures: {count} not found in the data ({named}); revising"


def cited_sources(done: Done) -> list[SourceEntry]:
    """The sources whose marker ([S1] …) appears in the answer: the ones it actually uses."""
    return [source for source in done.sources if f"[{source.id}]" in done.answer]


class PlainRenderer:
    """The answer goes to `out` once the run has answered; activity goes to `err`.

    On a terminal (`status`, default `err`) a spinner says what the run waits for, and the text
    the model is writing shows dim above it as it streams: provisional, since a round may still
    turn into tool calls. Then it folds into one dim thinking row on `err`; if the round is the
    answer, the answer is printed to `out`. So `out` only ever receives the final answer."""

    def __init__(
        self,
        out: TextIO,
        err: Console,
        *,
        status: Console | None = None,
        model: str = "the model",
    ) -> None:
        self.out = out
        self.err = err
        self.model = model
        self.waiting = Waiting(status or err)

    def close(self) -> None:
        self.waiting.stop()

    def handle(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self.model = event.model or self.model
            self.waiting.start(f"waiting for {self.model}")
            return
        if isinstance(event, TextDelta):
            if self.waiting.enabled:
                if not self.waiting.draft:
                    self.waiting.start(f"{self.model} is writing")
                self.waiting.draft.add(event.text)
            return
        if isinstance(event, Reasoning):
            return  # streams within the round, alongside its text
        if isinstance(event, Done):
            self.waiting.stop()
            self._finish(event)
            return
        # Whatever comes next, the round's streamed text was not the answer.
        self.waiting.draft.clear()
        if isinstance(event, Thinking):
            self._thinking_row(event.text)
            self.waiting.start("calling tools")
        elif isinstance(event, ToolStart):
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
        elif isinstance(event, Revising):
            self.err.print(f"[yellow]{escape(revising_line(event))}[/yellow]", highlight=False)
            self.waiting.start(f"{self.model} is revising the answer")
        elif isinstance(event, ContextEvent):
            self.err.print(f"[yellow]… {escape(event.detail)}[/yellow]", highlight=False)
        elif isinstance(event, QueueDrained):
            self.err.print(f"[dim]+ follow-up added: {escape(event.text)}[/dim]", highlight=False)

    def _thinking_row(self, text: str) -> None:
        """A note the model wrote before calling tools: folded to one row on a terminal (it was
        just read as it streamed), in full where stderr is kept (a log)."""
        if self.err.is_terminal:
            flat = " ".join(without_controls(text).split())
            row = Text(flat, style="dim")
            self.err.print(row, no_wrap=True, overflow="ellipsis", soft_wrap=False)
        else:
            self.err.print(Text(text, style="dim"))

    def _finish(self, done: Done) -> None:
        if done.status == "answered":
            if done.answer:
                self.out.write(marked_answer(done.answer, done.verification) + "\n")
                self.out.flush()
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
            if done.status == "denied":
                self.err.print("[yellow]Stopped: you denied a tool call.[/yellow]")
            else:
                self.err.print(f"[red]Error: {escape(done.error or '')}[/red]", highlight=False)
        usage = done.usage
        rounds = _plural(done.iterations, "round")
        calls = _plural(len(done.tool_calls), "tool call")
        figures = summary_line(done.verification)
        checked = f" · {figures}" if figures else ""
        self.err.print(
            f"[dim]{rounds} · {calls} · "
            f"{usage.input_tokens:,} in / {usage.output_tokens:,} out tokens · "
            f"{format_duration(done.duration_ms)}{escape(checked)}[/dim]",
            highlight=False,
        )


class JsonRenderer:
    """One JSON object per line. Text streams at once as `draft` events (provisional, with the
    round that wrote it); the `text` events of a round are held until the round turns out to be
    the answer: text written before a tool call is sent once, as `thinking`, so joining the
    `text` events gives exactly the answer. `done` carries the session id."""

    def __init__(self, out: TextIO, *, session_id: Callable[[], str | None] | None = None) -> None:
        self.out = out
        self.session_id = session_id
        self._held: list[TextDelta] = []
        # The text of an answer sent back for revision: sent after all if the revision fails.
        self._superseded: list[TextDelta] = []

    def _write(self, payload: dict[str, Any]) -> None:
        self.out.write(json.dumps(payload, ensure_ascii=False, default=str) + "\n")
        self.out.flush()

    def handle(self, event: Event) -> None:
        if isinstance(event, TextDelta):
            self._write({"type": "draft", "round": event.round, "text": event.text})
            self._held.append(event)
            return
        if isinstance(event, Thinking | Retrying):
            # A note before tool calls, or the partial text of a call that is streamed again.
            self._held.clear()
        elif isinstance(event, Revising):
            self._superseded, self._held = self._held, []
        elif isinstance(event, Done):
            if event.status == "answered":
                held = self._held
                if (
                    "".join(d.text for d in self._superseded)
                    == event.answer
                    != "".join(d.text for d in held)
                ):
                    held = self._superseded  # the revision failed: the first answer stands
                for delta in held:
                    self._write(delta.to_dict())
            self._held.clear()
            self._superseded.clear()
        payload = event.to_dict()
        if isinstance(event, Done) and self.session_id is not None:
            payload["session_id"] = self.session_id()
        self._write(payload)

    def close(self) -> None:
        return None
