"""The console that a command's output is printed on, sized for where that output goes.

On a terminal, lines fit its width. Into a pipe or a file there is no screen to fit: a width
of 80 there padded titles with spaces and hard-wrapped labels, sources and sentences that a
script or a text file wants whole. So, unless COLUMNS says how wide to be, output written away
from a terminal is laid out with no width limit: each line as long as what it holds.
"""

from __future__ import annotations

import os
from typing import Any

from rich.console import Console

# Wide enough that nothing a command prints reaches it; not a real screen width.
UNBOUNDED = 10_000
# What a drawing (a bar chart) is fitted to when the output has no width.
DRAWING_WIDTH = 80


def output_console(**options: Any) -> Console:
    """A console on stdout (or `file=`): its terminal's width, COLUMNS, or no limit."""
    console = Console(**options)
    if console.is_terminal or _columns_set():
        return console
    return Console(width=UNBOUNDED, **options)


def drawing_width(console: Console) -> int:
    """The width to draw a chart in: the console's, or 80 columns when it has no limit."""
    return DRAWING_WIDTH if console.width >= UNBOUNDED else console.width


def _columns_set() -> bool:
    return os.environ.get("COLUMNS", "").strip().isdigit()


__all__ = ["DRAWING_WIDTH", "UNBOUNDED", "drawing_width", "output_console"]
