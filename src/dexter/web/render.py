"""Run text as HTML for the page: the model's Markdown made safe, figure marks, citations.

Everything shown came from outside (the model's answer, steered by what it read; tool results;
page titles): the answer goes through the reports' safe Markdown (no raw HTML, no images, links
to web addresses only) and everything else is escaped by Jinja or set as text by the page's
script. This is the only module that makes HTML from run text.
"""

from __future__ import annotations

import json
import re
from typing import Any

from dexter.figure_marks import footer, summary_line
from dexter.figures.types import Verification
from dexter.reports.figures import answer_html_with_figures
from dexter.reports.markup import answer_html, plain, web_url
from dexter.tools.citations import SourceEntry

_CITATION = re.compile(r"\[(S\d+(?:\s*[,;]\s*S\d+)*)\]")
# What a tool row shows of arguments and results; the full text stays in the scratchpad.
SHOWN_CHARS = 4000


def markdown_html(text: str) -> str:
    """The answer's Markdown as safe HTML, headings from <h3> down (the page has its own)."""
    return _cited(answer_html(text, top=3), "")


def answer_with_marks(answer: str, verification: Verification | None, run_id: str = "") -> str:
    """The final answer as HTML with each checked figure marked: verified and derived ones
    quietly (a title saying so), unsupported ones highlighted with a dagger. Citations link to
    `source_anchor(run_id, id)`, so several answers on one page keep their sources apart."""
    marked = answer_html_with_figures(answer, verification, lambda text: answer_html(text, top=3))
    return _cited(marked, run_id)


def source_anchor(run_id: str, source_id: str) -> str:
    return f"src-{run_id}-{source_id}" if run_id else f"src-{source_id}"


def source_href(run_id: str, source_id: str, occurrence: int) -> str:
    """Where a citation leads: the source's page, at the passage the `occurrence`-th citation
    of the answer points to (`dexter.web.views.sources`); the list below the answer while the
    run has no id yet."""
    if not run_id:
        return f"#{source_anchor(run_id, source_id)}"
    return f"/sources/{run_id}/{source_id}?c={occurrence}#passage"


def _cited(html: str, run_id: str) -> str:
    count = iter(range(1_000_000))

    def cite(match: re.Match[str]) -> str:
        ids = re.findall(r"S\d+", match.group(1))
        at = next(count)
        links = ",".join(
            f'<a href="{source_href(run_id, i, at)}" class="cite" aria-label="source {i}">{i}</a>'
            for i in ids
        )
        return f"<sup>[{links}]</sup>"

    return _CITATION.sub(cite, html)


def figures_note(verification: Verification | None) -> dict[str, Any] | None:
    """What the page says under an answer about its figures: a count, and the footer naming
    any that could not be checked."""
    summary = summary_line(verification)
    if summary is None:
        return None
    counts = {"verified": 0, "derived": 0, "unsupported": 0}
    for figure in verification.figures if verification else ():
        counts[figure.status] = counts.get(figure.status, 0) + 1
    return {"summary": summary, "unchecked": footer(verification), "counts": counts}


def sources_list(sources: list[SourceEntry], run_id: str = "") -> list[dict[str, Any]]:
    return [
        {
            "id": source.id,
            "anchor": source_anchor(run_id, source.id),
            "label": plain(source.label or source.url or source.id),
            "link": web_url(source.url),
        }
        for source in sources
    ]


def shown(value: Any) -> str:
    """Arguments or a result as text for a tool row, cut to `SHOWN_CHARS`."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = plain(text)
    if len(text) > SHOWN_CHARS:
        text = text[: SHOWN_CHARS - 1] + f"… ({len(text):,} characters in all)"
    return text


__all__ = [
    "SHOWN_CHARS",
    "answer_with_marks",
    "figures_note",
    "markdown_html",
    "shown",
    "source_anchor",
    "source_href",
    "sources_list",
]
