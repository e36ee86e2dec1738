"""A spinner with elapsed time and what Dexter is waiting for, on a terminal only; above it,
dim, the tail of text the model is still writing (a draft that may yet turn out not to be the
answer, so it is never printed for good from here).

Piped or redirected, `Waiting` does nothing, so scripts see exactly the output they asked for.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import TYPE_CHECKING

from rich.console import Console, ConsoleOptions, RenderableType
from rich.text import Text

if TYPE_CHECKING:  # the live region's pieces load only on a terminal, when one first shows
    from rich.live import Live

# At most this many lines of a draft show, and never more than half the terminal's height.
DRAFT_LINES = 12
# Characters of a draft kept: more than the tallest draft view can show.
DRAFT_KEEP = 16_000
# Control characters other than tab and newline: a model's text must not move the cursor or
# restyle the terminal under the live region.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def without_controls(text: str) -> str:
    return _CONTROL.sub("", text)


class Draft:
    """The tail of the text being streamed, rendered as the last lines that fit.

    `add` is called for every streamed piece and must stay cheap; the wrapping happens only
    when the live region refreshes, on the last few lines' worth of characters."""

    def __init__(self) -> None:
        self._pieces: list[str] = []
        self._size = 0
        self._version = 0
        self._shown: tuple[tuple[int, int, int], list[Text]] | None = None

    def __bool__(self) -> bool:
        return self._size > 0

    def add(self, text: str) -> None:
        self._pieces.append(text)
        self._size += len(text)
        self._version += 1
        if self._size > 2 * DRAFT_KEEP:
            kept = "".join(self._pieces)[-DRAFT_KEEP:]
            self._pieces, self._size = [kept], len(kept)

    def clear(self) -> None:
        self._pieces, self._size, self._shown = [], 0, None

    def text(self) -> str:
        return "".join(self._pieces)

    def lines(self, console: Console, width: int) -> list[Text]:
        height = max(1, min(DRAFT_LINES, console.height // 2))
        key = (self._version, width, height)
        if self._shown is not None and self._shown[0] == key:
            return self._shown[1]
        # Every line holds at most `width` characters, so the visible tail lies in the last
        # height * width of them; when that cuts into a line, start at the next line break.
        text = self.text()
        tail = text[-(height * width) :]
        if len(tail) < len(text):
            cut = tail.find("\n")
            if 0 <= cut < len(tail) - 1:
                tail = tail[cut + 1 :]
        wrapped = Text(without_controls(tail), style="dim").wrap(console, width, overflow="fold")
        shown = list(wrapped)[-height:]
        self._shown = (key, shown)
        return shown

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Text]:
        yield from self.lines(console, options.max_width)


class _Line:
    def __init__(self, what: str, started: float, clock: Callable[[], float], draft: Draft) -> None:
        self.what = what
        self.started = started
        self.clock = clock
        self.draft = draft
        from rich.spinner import Spinner

        self.spinner = Spinner("dots", style="cyan")

    def __rich__(self) -> RenderableType:
        from rich.console import Group

        elapsed = self.clock() - self.started
        self.spinner.text = Text.assemble(f" {self.what} ", (f"{elapsed:.0f}s", "dim"))
        if self.draft:
            return Group(self.draft, self.spinner)
        return Group(self.spinner)


class Waiting:
    """`start(what)` shows (or relabels) the spinner; `stop()` clears it and the draft. Safe to
    call in any order, and a no-op when `console` is not a terminal. Text added to `draft`
    shows above the spinner while it runs."""

    def __init__(self, console: Console, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.console = console
        self.clock = clock
        self.enabled = console.is_terminal and not console.is_dumb_terminal
        self._live: Live | None = None
        self._line: _Line | None = None
        self.draft = Draft()

    @property
    def active(self) -> bool:
        return self._live is not None

    @property
    def text(self) -> str:
        """What the live region shows now, as plain lines ("" when nothing shows)."""
        if self._line is None:
            return ""
        lines = self.console.render_lines(self._line.__rich__(), pad=False)
        return "\n".join("".join(segment.text for segment in line).rstrip() for line in lines)

    def start(self, what: str) -> None:
        if not self.enabled:
            return
        if self._line is not None and self._live is not None:
            if self._line.what != what:
                self._line.what, self._line.started = what, self.clock()
                self._live.refresh()  # a new step shows at once, not at the next tick
            return
        from rich.live import Live

        self._line = _Line(what, self.clock(), self.clock, self.draft)
        self._live = Live(self._line, console=self.console, transient=True, refresh_per_second=8)
        self._live.start()

    def stop(self) -> None:
        self.draft.clear()
        if self._live is not None:
            self._live.stop()
        self._live = None
        self._line = None

    def __enter__(self) -> Waiting:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()
