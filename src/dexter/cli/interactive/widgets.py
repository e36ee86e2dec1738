"""The session's small widgets: tool rows, the working line, notes and the input with history."""

from __future__ import annotations

import time
from typing import Any, ClassVar, Literal

from rich.text import Text
from textual.app import RenderResult
from textual.binding import Binding, BindingType
from textual.widget import Widget
from textual.widgets import Input, Static

from dexter.cli.interactive.format import compact_args, format_duration, one_line

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
SPINNER_INTERVAL = 0.1


def spinner_frame(now: float | None = None) -> str:
    moment = time.monotonic() if now is None else now
    return SPINNER[int(moment / SPINNER_INTERVAL) % len(SPINNER)]


class Note(Static):
    """One line of plain text in the log; never parsed as markup, since it echoes user and
    model text that may contain square brackets."""

    DEFAULT_CSS = """
    Note { height: auto; }
    """

    def __init__(self, text: str, *, classes: str = "") -> None:
        super().__init__(text, markup=False, classes=classes)
        self.text = text

    def set_text(self, text: str) -> None:
        self.text = text
        self.update(text)


ToolState = Literal["pending", "running", "done", "error", "denied", "cancelled"]
_FINISHED: frozenset[str] = frozenset({"done", "error", "denied", "cancelled"})


class ToolRow(Widget):
    """One tool call: name and arguments, a spinner and progress while it runs, then the outcome."""

    DEFAULT_CSS = """
    ToolRow { height: auto; padding: 0 0 0 2; }
    """

    def __init__(self, call_id: str, tool: str, args: dict[str, Any]) -> None:
        super().__init__(classes="tool-row")
        self.call_id = call_id
        self.tool = tool
        self.args = args
        self.state: ToolState = "pending"
        self.note = ""
        self.progress = ""
        self.detail = ""
        # How many calls of the response ran together with this one (1: alone).
        self.together = 1
        self.duration_ms: float | None = None
        self._started = time.monotonic()

    @property
    def finished(self) -> bool:
        return self.state in _FINISHED

    @property
    def text(self) -> str:
        return self.build().plain

    def start(self) -> None:
        self._started = time.monotonic()
        self._set("running")

    def set_progress(self, message: str) -> None:
        self.progress = one_line(message, 80)
        self.refresh(layout=True)

    def succeed(self, duration_ms: float, warning: str | None = None) -> None:
        self.duration_ms = duration_ms
        self.detail = one_line(warning, 100) if warning else ""
        self._set("done")

    def fail(self, error: str, duration_ms: float = 0.0) -> None:
        self.duration_ms = duration_ms or None
        self.detail = one_line(error, 160)
        self._set("error")

    def deny(self, reason: str) -> None:
        self.detail = one_line(reason, 160)
        self._set("denied")

    def cancel(self) -> None:
        if not self.finished:
            self.detail = "cancelled"
            self._set("cancelled")

    def _set(self, state: ToolState) -> None:
        self.state = state
        self.set_class(self.finished, "-finished")
        self.set_class(state == "error" or state == "denied", "-failed")
        self.refresh(layout=True)

    def tick(self) -> None:
        if self.state == "running":
            self.refresh()

    def build(self) -> Text:
        args = compact_args(self.args)
        call = Text.assemble((self.tool, "bold"), ("(", "dim"), (args, "dim"), (")", "dim"))
        note = f" · {self.note}" if self.note else ""
        if self.together > 1:
            note += f" · ∥ {self.together} together"
        if self.state == "running":
            elapsed = format_duration((time.monotonic() - self._started) * 1000)
            head = Text(f"{spinner_frame()} ", style="cyan")
            tail = Text(f"  {self.progress or 'running…'} {elapsed}{note}", style="dim")
        elif self.state == "pending":
            head = Text("• ", style="dim")
            tail = Text(f"  waiting{note}", style="dim")
        elif self.state == "done":
            head = Text("✓ ", style="green")
            duration = format_duration(self.duration_ms or 0.0)
            tail = Text(f"  {duration}{note}", style="dim")
            if self.detail:
                tail.append(f"  {self.detail}", style="yellow")
        elif self.state == "cancelled":
            head = Text("✗ ", style="yellow")
            tail = Text("  cancelled", style="yellow")
        else:
            head = Text("✗ ", style="red")
            label = "denied: " if self.state == "denied" else ""
            tail = Text(f"  {label}{self.detail}", style="red")
        return Text.assemble(head, call, tail)

    def render(self) -> RenderResult:
        return self.build()


class WorkingIndicator(Widget):
    """ "Working… 3.2s · running lookup" with a spinner; hidden while idle."""

    DEFAULT_CSS = """
    WorkingIndicator { height: 1; display: none; padding: 0 1; }
    WorkingIndicator.-active { display: block; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.started = time.monotonic()
        self.phase = ""
        self.queued = 0

    def begin(self) -> None:
        self.started = time.monotonic()
        self.phase = "thinking"
        self.queued = 0
        self.add_class("-active")
        self.refresh()

    def end(self) -> None:
        self.remove_class("-active")

    def set_phase(self, phase: str) -> None:
        if phase != self.phase:
            self.phase = phase
            self.refresh()

    @property
    def text(self) -> str:
        return self.build().plain

    def build(self) -> Text:
        elapsed = time.monotonic() - self.started
        text = Text(f"{spinner_frame()} ", style="cyan")
        text.append(f"Working… {elapsed:.1f}s", style="bold")
        if self.phase:
            text.append(f" · {self.phase}", style="dim")
        if self.queued:
            text.append(f" · {self.queued} queued", style="dim")
        text.append(" · ctrl+c to cancel", style="dim")
        return text

    def render(self) -> RenderResult:
        return self.build()


class HistoryInput(Input):
    """The question box. Up/Down walk back through what was sent in this session; the line being
    typed is kept as a draft and comes back after the newest entry."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "history_previous", "Previous message", show=False),
        Binding("down", "history_next", "Next message", show=False),
    ]

    def __init__(self, *, placeholder: str = "", id: str | None = None) -> None:
        super().__init__(placeholder=placeholder, id=id)
        self.history: list[str] = []
        self._position: int | None = None
        self._draft = ""

    def remember(self, text: str) -> None:
        if text and (not self.history or self.history[-1] != text):
            self.history.append(text)
        self._position = None
        self._draft = ""

    def action_history_previous(self) -> None:
        if not self.history:
            return
        if self._position is None:
            self._draft = self.value
            self._position = len(self.history)
        if self._position == 0:
            return
        self._position -= 1
        self._show(self.history[self._position])

    def action_history_next(self) -> None:
        if self._position is None:
            return
        self._position += 1
        if self._position >= len(self.history):
            self._position = None
            self._show(self._draft)
        else:
            self._show(self.history[self._position])

    def _show(self, value: str) -> None:
        self.value = value
        self.cursor_position = len(value)
