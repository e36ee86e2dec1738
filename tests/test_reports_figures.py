"""A report shows how the answer's figures were checked: verified ones with their source,
derived ones with their calculation, and the one the data did not support flagged in the answer
and in the list, in every format."""

from __future__ import annotations

import io
from html.parser import HTMLParser

import pytest

from dexter.figures.types import Figure, Verification
from dexter.reports.model import Report
from dexter.reports.render import to_html, to_markdown, to_xlsx

ANSWER = (
    "## Revenue\n\nApple's revenue was **$416,161 million** in FY2025 [S1], up 6.4% from "
    "$391,305 million in FY2024 [S1]."
)


def _at(text: str, value: float, unit: str, status: str, **extra: str) -> Figure:
    start = ANSWER.index(text)
    return Figure(text, value, unit, status, start=start, end=start + len(text), **extra)  # type: ignore[arg-type]


CHECKED = Verification(
    (
        _at(
            "$416,161 million",
            416_161e6,
            "USD",
            "verified",
            source='income_statements (company="AAPL"): Revenue 2025-FY = 416,161',
        ),
        _at("6.4%", 6.4, "%", "derived", formula="(416161 - 391035) / 391035 = 6.43%"),
        _at("$391,305 million", 391_305e6, "USD", "unsupported"),
    )
)


def report(verification: Verification | None = CHECKED) -> Report:
    return Report(
        question="How did Apple's revenue change in FY2025?",
        answer=ANSWER,
        status="answered",
        model="openai:gpt-test",
        created_at="2026-01-01T00:00:00Z",
        session_id="feedbeef",
        run_id="run1",
        verification=verification,
    )


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def test_html_highlights_the_unsupported_figure_and_lists_every_check() -> None:
    pytest.importorskip("jinja2")
    html = to_html(report(), charts=[])
    parser = _Text()
    parser.feed(html)
    text = " ".join(parser.parts)
    # In the answer: the unsupported figure highlighted, daggered, linked to its row.
    assert (
        '<mark class="fig unchecked" title="not found in the data: no tool result or calculation'
        in html
    )
    assert '$391,305 million</mark><sup class="unchecked"><a href="#fig-3">†</a></sup>' in html
    # A checked figure is quiet: its source as a tooltip, inside the answer's own bold.
    assert '<strong><span class="fig verified" title="verified: income_statements' in html
    assert "† 1 figure could not be checked against the data: $391,305 million" in text
    # The list: every figure with its source or calculation, the unsupported one flagged.
    assert '<tr id="fig-3" class="unsupported">' in html
    assert "(416161 - 391035) / 391035 = 6.43%" in text
    assert "Revenue 2025-FY = 416,161" in html.replace("&#34;", '"').replace("&quot;", '"')
    assert "\ue000" not in html and "\ue100" not in html  # no bracket characters left behind


def test_markdown_marks_the_figure_and_tables_the_checks() -> None:
    text = to_markdown(report())
    assert "from $391,305 million† in FY2024 [^S1]" in text
    assert "*† 1 figure could not be checked against the data: $391,305 million*" in text
    assert "## Figures checked" in text
    assert "| 3 | $391,305 million | **not found in the data** † |" in text
    assert "| 2 | 6.4% | derived | (416161 - 391035) / 391035 = 6.43% |" in text


def test_xlsx_has_a_figures_sheet_and_the_marked_answer() -> None:
    openpyxl = pytest.importorskip("openpyxl")
    xlsxwriter = pytest.importorskip("xlsxwriter")
    del xlsxwriter
    book = openpyxl.load_workbook(io.BytesIO(to_xlsx(report())))
    sheet = book["Figures"]
    rows = [[cell.value for cell in row] for row in sheet.iter_rows(min_row=2)]
    assert rows[0][:5] == [1, "$416,161 million", 416_161e6, "USD", "verified"]
    assert rows[2][1] == "$391,305 million" and rows[2][4] == "† not found in the data"
    summary = [[c.value for c in row] for row in book["Report"].iter_rows()]
    answer = next(row[1] for row in summary if row[0] == "Answer")
    assert "$391,305 million†" in answer and answer.endswith("$391,305 million")


def test_a_report_of_an_unchecked_answer_has_no_figure_section() -> None:
    pytest.importorskip("jinja2")
    assert "Figures checked" not in to_html(report(None), charts=[])
    assert "Figures checked" not in to_markdown(report(None))
