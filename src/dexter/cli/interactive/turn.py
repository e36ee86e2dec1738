"""Rendering one question's run into the chat log, event by event."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.widget import Widget
from textual.widgets import Markdown
from textual.widgets.markdown import MarkdownStream

from dexter.agent.events import (
    ContextEvent,
    Done,
    Event,
    Reasoning,
    Retrying,
    Revising,
    TextDelta,
    Thinking,
    ToolApproval,
    ToolDenied,
    ToolEnd,
    ToolError,
    ToolProgress,
    ToolStart,
)
from dexter.cli.interactive.format import format_stats, one_line, with_link_targets
from dexter.cli.interactive.widgets import Note, ToolRow
from dexter.cli.render import cited_sources, revising_line
from dexter.figure_marks import marked_answer

_APPROVAL_NOTES = {
    "allow_once": "approved",
    "allow_session": "approved for this session",
    "allow_always": "always allowed (rule saved)",
}


class TurnView:
    """Owns the widgets of one run. Streamed text is provisional (dim) until the model's turn
    ends: if tools follow, it was a plan and folds into a thinking row; if the run ends, it
    was the answer."""

    def __init__(self, log: Widget, set_phase: Callable[[str], None]) -> None:
        self.log = log
        self.set_phase = set_phase
        self.rows: dict[str, ToolRow] = {}
        self.segment: Markdown | None = None
        self.stream: MarkdownStream | None = None
        self.answer: Markdown | None = None
        self.denied_tool: str | None = None
        self.approvals: dict[str, str] = {}

    async def handle(self, event: Event) -> None:
        if isinstance(event, TextDelta):
            if self.stream is None:
                await self._open_segment()
            assert self.stream is not None
            self.set_phase("writing")
            await self.stream.write(event.text)
        elif isinstance(event, Reasoning):
            self.set_phase("reasoning")
        elif isinstance(event, Thinking):
            await self._fold_segment(one_line(event.text, 300))
        elif isinstance(event, Retrying):
            await self._drop_segment()
            await self._note(
                f"Retrying ({event.attempt}/{event.max_attempts}) in {event.delay:.1f}s: "
                f"{one_line(event.error, 200)}",
                "notice",
            )
        elif isinstance(event, Revising):
            # The answer just streamed gives way to the note; the revision streams below it,
            # as `ask` replaces its draft (two near-identical answers would read as one twice).
            await self._drop_segment()
            await self._note(revising_line(event), "notice")
            self.set_phase("revising")
        elif isinstance(event, ContextEvent):
            await self._note(event.detail, "notice")
        elif isinstance(event, ToolApproval):
            # The call's row appears when it starts (ToolStart carries the arguments).
            self.approvals[event.call_id] = _APPROVAL_NOTES.get(event.answer, event.answer)
        elif isinstance(event, ToolStart):
            row = await self._row(event.call_id, event.tool, event.args)
            row.args = event.args
            row.together = event.group_size
            row.start()
            self._update_phase()
        elif isinstance(event, ToolProgress):
            existing = self.rows.get(event.call_id)
            if existing is not None:
                existing.set_progress(event.message)
        elif isinstance(event, ToolEnd):
            row = await self._row(event.call_id, event.tool, event.args)
            row.succeed(event.duration_ms, event.warning)
            self._update_phase()
        elif isinstance(event, ToolError):
            row = await self._row(event.call_id, event.tool, event.args)
            row.fail(event.error, event.duration_ms)
            self._update_phase()
        elif isinstance(event, ToolDenied):
            row = await self._row(event.call_id, event.tool, event.args)
            row.args = event.args
            row.deny("by you" if event.by == "user" else event.reason or "by a permission rule")
            if event.by == "user":
                self.denied_tool = event.tool
        elif isinstance(event, Done):
            await self._finish(event)

    async def cancel(self) -> None:
        await self._close_segment(interim=True)
        for row in self.rows.values():
            row.cancel()
        await self._note("Cancelled.", "cancelled")

    async def fail(self, message: str) -> None:
        await self._close_segment(interim=True)
        for row in self.rows.values():
            row.cancel()
        await self._note(message, "error")

    async def _finish(self, done: Done) -> None:
        if done.status == "answered":
            answer = self.segment
            await self._close_segment(interim=False)
            shown = with_link_targets(marked_answer(done.answer, done.verification))
            if answer is None:
                answer = Markdown(shown or "_(no answer)_", classes="answer")
                await self.log.mount(answer)
            elif answer.source != shown:
                await answer.update(shown)
            self.answer = answer
            cited = cited_sources(done)
            if cited:
                lines = [f"[{s.id}] {s.label}" + (f"  {s.url}" if s.url else "") for s in cited]
                await self._note("Sources\n" + "\n".join(lines), "sources")
        else:
            await self._close_segment(interim=True)
            if done.status == "denied":
                tool = self.denied_tool or "a tool call"
                await self._note(f"Stopped: you denied {tool}.", "stopped")
            else:
                await self._note(f"Error: {done.error or 'the run failed'}", "error")
        await self._note(format_stats(done), "stats")

    async def _open_segment(self) -> None:
        self.segment = Markdown("", classes="segment")
        await self.log.mount(self.segment)
        self.stream = Markdown.get_stream(self.segment)

    async def _take_segment(self) -> Markdown | None:
        """End the streaming text of the current model turn; its widget, if there was one."""
        segment, stream = self.segment, self.stream
        self.segment = self.stream = None
        if stream is not None:
            await stream.stop()
        return segment

    async def _close_segment(self, *, interim: bool) -> bool:
        """Keep the current turn's text where it is; False when there was none."""
        segment = await self._take_segment()
        if segment is None:
            return False
        if interim and not segment.source.strip():
            await segment.remove()
            return True
        segment.remove_class("segment")
        segment.add_class("interim" if interim else "answer")
        return True

    async def _fold_segment(self, thinking: str) -> None:
        """The turn went on to call tools: its text was a plan, so it becomes the thinking row,
        in its place."""
        segment = await self._take_segment()
        row = Note(thinking, classes="thinking")
        await self.log.mount(row, before=segment)
        if segment is not None:
            await segment.remove()

    async def _drop_segment(self) -> None:
        segment = await self._take_segment()
        if segment is not None:
            await segment.remove()

    async def _row(self, call_id: str, tool: str, args: dict[str, Any]) -> ToolRow:
        # Call ids can repeat across rounds (some servers number them per response), so a
        # finished row is never reused.
        row = self.rows.get(call_id)
        if row is None or row.finished:
            await self._close_segment(interim=True)
            row = ToolRow(call_id, tool, args)
            row.note = self.approvals.pop(call_id, "")
            self.rows[call_id] = row
            await self.log.mount(row)
        return row

    def _update_phase(self) -> None:
        running = [row.tool for row in self.rows.values() if row.state == "running"]
        if running:
            names = ", ".join(dict.fromkeys(running))
            self.set_phase(f"running {names}")
        else:
            self.set_phase("thinking")

    async def _note(self, text: str, kind: str) -> None:
        await self.log.mount(Note(text, classes=kind))
