"""A spinner with elapsed time and what Dexter is waiting for, on a terminal only.

Piped or redirected, `Waiting` does nothing, so scripts see exactly the output they asked for.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text


class _Line:
    def __init__(self, what: str, started: float, clock: Callable[[], float]) -> None:
        self.what = what
        self.started = started
        self.clock = clock
        self.spinner = Spinner("dots", style="cyan")

    def __rich__(self) -> RenderableType:
        elapsed = self.clock() - self.started
        self.spinner.text = Text.assemble(f" {self.what} ", (f"{elapsed:.0f}s", "dim"))
        return Group(self.spinner)


class Waiting:
    """`start(what)` shows (or relabels) the spinner; `stop()` clears it. Safe to call in any
    order, and a no-op when `console` is not a terminal."""

    def __init__(self, console: Console, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.console = console
        self.clock = clock
        self.enabled = console.is_terminal and not console.is_dumb_terminal
        self._live: Live | None = None
        self._line: _Line | None = None

    @property
    def active(self) -> bool:
        return self._live is not None

    def start(self, what: str) -> None:
        if not self.enabled:
            return
        if self._line is not None and self._live is not None:
            if self._line.what != what:
                self._line.what, self._line.started = what, self.clock()
            return
        self._line = _Line(what, self.clock(), self.clock)
        self._live = Live(self._line, console=self.console, transient=True, refresh_per_second=8)
        self._live.start()

    def stop(self) -> None:
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
