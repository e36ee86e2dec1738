"""The answer's figure check in a report: each figure with where it was found or how it follows,
and the ones the data did not support flagged, in the answer and in a list after it.

Markdown and plain text mark an unsupported figure with a dagger (`dexter.figure_marks`); HTML
(and the PDF made from it) also highlights it and links it to its row in the figures table,
while a verified or derived figure carries its source or calculation as a tooltip, quietly.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass

from dexter.figure_marks import MARK
from dexter.figures.types import Figure, Verification

STATUS_LABELS = {
    "verified": "verified",
    "derived": "derived",
    "unsupported": "not found in the data",
}
# Private-use characters bracket each figure while the answer's Markdown becomes HTML: they pass
# through the parser as text and cannot occur in a model's answer to any effect, since any
# already there are removed first.
_CLOSE = "\ue000"
_OPEN_BASE = 0xE100
_MAX_MARKED = 0x600
_SENTINELS = re.compile("[\ue000-\ue6ff]")
_MARKED = re.compile("([\ue100-\ue6ff])([^\ue000<>]*)\ue000")


@dataclass(frozen=True, slots=True)
class FigureRow:
    number: int
    figure: Figure

    @property
    def anchor(self) -> str:
        return f"fig-{self.number}"

    @property
    def status(self) -> str:
        return STATUS_LABELS.get(self.figure.status, self.figure.status)

    @property
    def detail(self) -> str:
        """Where it was found, how it follows, or what is missing."""
        figure = self.figure
        if figure.status == "verified":
            return figure.source or "found in the data"
        if figure.status == "derived":
            return figure.formula or "calculated from figures in the data"
        # Found for another period than the answer states, or nowhere at all.
        return figure.source or "no tool result or calculation of this run shows it"

    @property
    def unsupported(self) -> bool:
        return self.figure.status == "unsupported"


def figure_rows(verification: Verification | None) -> list[FigureRow]:
    """The checked figures in the order the answer states them, numbered from 1."""
    if verification is None:
        return []
    ordered = sorted(verification.figures, key=lambda f: f.start)
    return [FigureRow(number, figure) for number, figure in enumerate(ordered, start=1)]


def _positions(answer: str, rows: list[FigureRow]) -> list[tuple[int, int, FigureRow]]:
    """Where each figure stands in `answer` (its offsets when they still hold), in order and
    without overlaps; figures that cannot be placed are left to the table."""
    placed: list[tuple[int, int, FigureRow]] = []
    taken_to = 0
    for row in rows[:_MAX_MARKED]:
        figure = row.figure
        start = figure.start
        if not figure.text:
            continue
        if not (start >= taken_to and answer[start : figure.end] == figure.text):
            start = answer.find(figure.text, taken_to)
            if start < 0:
                continue
        placed.append((start, start + len(figure.text), row))
        taken_to = start + len(figure.text)
    return placed


def answer_html_with_figures(
    answer: str, verification: Verification | None, render: Callable[[str], str]
) -> str:
    """`render(answer)` (the answer's Markdown as safe HTML) with every checked figure wrapped:
    a quiet tooltip for a verified or derived one, a highlight, a dagger and a link to its row
    for one the data did not support."""
    rows = figure_rows(verification)
    answer = _SENTINELS.sub("", answer)
    if not rows:
        return render(answer)
    by_open: dict[str, FigureRow] = {}
    parts: list[str] = []
    at = 0
    for start, end, row in _positions(answer, rows):
        opener = chr(_OPEN_BASE + row.number - 1)
        by_open[opener] = row
        parts += [answer[at:start], opener, answer[start:end], _CLOSE]
        at = end
    parts.append(answer[at:])
    rendered = render("".join(parts))

    def wrap(match: re.Match[str]) -> str:
        row = by_open.get(match.group(1))
        inner = match.group(2)
        if row is None:
            return inner
        tip = html.escape(f"{row.status}: {row.detail}", quote=True)
        if row.unsupported:
            return (
                f'<mark class="fig unchecked" title="{tip}">{inner}</mark>'
                f'<sup class="unchecked"><a href="#{row.anchor}">{MARK}</a></sup>'
            )
        return f'<span class="fig {row.figure.status}" title="{tip}">{inner}</span>'

    return _SENTINELS.sub("", _MARKED.sub(wrap, rendered))


__all__ = [
    "STATUS_LABELS",
    "FigureRow",
    "answer_html_with_figures",
    "figure_rows",
]
