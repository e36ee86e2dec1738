"""The approval prompt: shown inline above the input when a tool asks permission to run."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import ClassVar

from rich.cells import cell_len
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.events import Resize
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from dexter.agent.events import ApprovalRequest
from dexter.permissions.gate import ApprovalAnswer

# The keys, longest spelling first: the hint shows the first that fits the prompt's width (the
# choices themselves are listed above it, so a narrow terminal can do without the arrows).
HINTS = (
    "↑/↓ enter · 1/y once · 2/a this session · 3/n/esc deny · ctrl+c cancel",
    "1/y once · 2/a session · 3/n/esc deny · ctrl+c cancel",
    "1/y · 2/a · 3/n/esc · ctrl+c cancel",
)
HINTS_ALWAYS = (
    "↑/↓ enter · 1/y once · 2/a this session · 3/n/esc deny · 4/r always · ctrl+c cancel",
    "↑/↓ enter · 1/y once · 2/a session · 3/n/esc deny · 4/r always · ctrl+c cancel",
    "1/y once · 2/a session · 3/n/esc deny · 4/r always · ctrl+c cancel",
    "1/y · 2/a · 3/n/esc · 4/r · ctrl+c cancel",
)
ARGS_PREVIEW_LINES = 8
ARGS_PREVIEW_CHARS = 600

CHOICES: tuple[tuple[ApprovalAnswer, str], ...] = (
    (ApprovalAnswer.ALLOW_ONCE, "1  Allow once"),
    (ApprovalAnswer.ALLOW_SESSION, "2  Allow for this session"),
    (ApprovalAnswer.DENY, "3  Deny (stops this answer)"),
)


def _one_line(request: ApprovalRequest, limit: int = 60) -> str:
    text = " ".join(json.dumps(request.args, ensure_ascii=False, default=str).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_args(request: ApprovalRequest) -> str:
    """Full arguments, pretty-printed, because the person is deciding on exactly these."""
    if not request.args:
        return "(no arguments)"
    text = json.dumps(request.args, indent=2, ensure_ascii=False, default=str)
    lines = text.splitlines()
    if len(lines) > ARGS_PREVIEW_LINES:
        lines = [*lines[:ARGS_PREVIEW_LINES], "  …"]
    text = "\n".join(lines)
    return text if len(text) <= ARGS_PREVIEW_CHARS else text[: ARGS_PREVIEW_CHARS - 1] + "…"


def fitting_hint(width: int, *, always: bool) -> str:
    """The longest spelling of the keys that fits in `width` cells (the shortest, to wrap,
    when none does): a hint cut at the border used to lose "ctrl+c cancel" at 80 columns."""
    hints = HINTS_ALWAYS if always else HINTS
    return next((hint for hint in hints if cell_len(hint) <= width), hints[-1])


class ApprovalHint(Static):
    """The keys line under the choices, respelled to fit whenever the width changes."""

    DEFAULT_CSS = """
    ApprovalHint { height: auto; color: $text-muted; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(HINTS[0], id=id, markup=False)
        self.always = False

    def show_keys(self, *, always: bool) -> None:
        self.always = always
        self._fit()

    def on_resize(self, _: Resize) -> None:
        self._fit()

    def _fit(self) -> None:
        width = self.content_size.width
        if width:
            self.update(fitting_hint(width, always=self.always))


class ApprovalPrompt(Vertical):
    """Resolves the future it was opened with exactly once; closing it is the caller's job."""

    DEFAULT_CSS = """
    ApprovalPrompt {
        height: auto;
        display: none;
        border: round $warning;
        padding: 0 1;
    }
    ApprovalPrompt.-open { display: block; }
    ApprovalPrompt #approval-title { height: auto; }
    ApprovalPrompt #approval-options { height: auto; border: none; padding: 0; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("1,y", "choose('allow_once')", "Allow once", show=False),
        Binding("2,a", "choose('allow_session')", "Allow for this session", show=False),
        Binding("3,n,escape", "choose('deny')", "Deny", show=False),
        Binding("4,r", "choose('allow_always')", "Always allow", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.request: ApprovalRequest | None = None
        self._future: asyncio.Future[ApprovalAnswer] | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="approval-title")
        yield OptionList(
            *(Option(label, id=answer.value) for answer, label in CHOICES),
            id="approval-options",
        )
        yield ApprovalHint(id="approval-hint")

    @property
    def is_open(self) -> bool:
        return self.has_class("-open")

    def open(
        self,
        request: ApprovalRequest,
        future: asyncio.Future[ApprovalAnswer],
        *,
        batch: Sequence[ApprovalRequest] = (),
    ) -> None:
        self.request = request
        self._future = future
        title = Text()
        if len(batch) > 1:
            title.append(f"{len(batch)} calls would run together:\n", style="bold")
            for number, item in enumerate(batch, 1):
                marker = "▶" if item is request else " "
                shown = f"$ {item.command}" if item.command else _one_line(item)
                title.append(f" {marker} {number}. {item.tool}: {shown}\n", style="dim")
        title.append_text(
            Text.assemble(
                ("Allow ", "bold"),
                (request.tool, "bold yellow"),
                (" to run?", "bold"),
            )
        )
        if request.reason:
            title.append(f"  ({request.reason.replace('`', '')})", style="dim")
        title.append("\n")
        if request.command:
            title.append(f"$ {request.command}", style="bold")
        else:
            title.append(describe_args(request), style="dim")
        self.query_one("#approval-title", Static).update(title)
        options = self.query_one("#approval-options", OptionList)
        options.clear_options()
        options.add_options([Option(label, id=answer.value) for answer, label in CHOICES])
        if request.proposed_rule:
            label = f"4  Always allow (saves the rule {request.proposed_rule})"
            options.add_option(Option(label, id=ApprovalAnswer.ALLOW_ALWAYS.value))
        self.query_one("#approval-hint", ApprovalHint).show_keys(always=bool(request.proposed_rule))
        options.highlighted = 0
        self.add_class("-open")
        options.focus()

    def close(self) -> None:
        self.remove_class("-open")
        self.request = None
        self._future = None

    def action_choose(self, answer: str) -> None:
        if answer == ApprovalAnswer.ALLOW_ALWAYS.value and not (
            self.request and self.request.proposed_rule
        ):
            return  # nothing safe to save for this call
        self._resolve(ApprovalAnswer(answer))

    @on(OptionList.OptionSelected, "#approval-options")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option_id is not None:
            self._resolve(ApprovalAnswer(event.option_id))

    def _resolve(self, answer: ApprovalAnswer) -> None:
        if self._future is not None and not self._future.done():
            self._future.set_result(answer)
