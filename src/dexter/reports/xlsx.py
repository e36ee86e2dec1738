"""A `Report` as an XLSX workbook: a summary sheet, a sheet per table with real numbers and units,
and a sources sheet. Every cell goes through `dexter.spreadsheet`: text is written as text (a
question starting with `=` is not a formula), figures as numbers, links only to web addresses."""

from __future__ import annotations

import io
import math
import re
from collections.abc import Callable
from typing import Any

from dexter.figure_marks import marked_answer
from dexter.reports.figures import figure_rows
from dexter.reports.markup import web_url
from dexter.reports.model import Report, Table
from dexter.spreadsheet import XLSX_OPTIONS, XlsxCells

_NUMBER_FORMATS = {
    "money": "#,##0",
    "shares": "#,##0",
    "per_share": "0.00",
    "per_share_computed": "0.00",
    "percent": "0.0%",
    "multiple": "0.00",
    "days": "0.0",
}


def to_xlsx(
    report: Report,
    xlsxwriter: Any,
    meta: list[tuple[str, str]],
    unit_header: Callable[[Table, str], str],
) -> bytes:
    """The workbook's bytes; `meta` and `unit_header` are the renderers' shared summary lines
    and unit notes."""
    buffer = io.BytesIO()
    book = xlsxwriter.Workbook(buffer, {"in_memory": True, **XLSX_OPTIONS})
    cells = XlsxCells(book)
    summary = book.add_worksheet("Report")
    summary.set_column(0, 0, 14)
    summary.set_column(1, 1, 100)
    cells.text(summary, 0, 0, report.heading, bold=True)
    line = 2
    answer = marked_answer(report.answer, report.verification)
    for key, value in [*meta, ("Question", report.question), ("Answer", answer)]:
        cells.text(summary, line, 0, key, bold=True)
        cells.text(summary, line, 1, value, text_wrap=True, valign="top")
        line += 1
    used: set[str] = {"Report", "Sources", "Figures"}
    for table in report.tables:
        sheet = book.add_worksheet(_sheet_name(f"{table.ticker} {table.kind}", used))
        _table_sheet(cells, sheet, table, unit_header)
    # After the tables, so the sheets of a workbook without a check keep their places.
    if report.verification is not None and report.verification.figures:
        _figures_sheet(cells, book.add_worksheet("Figures"), report)
    sources = book.add_worksheet("Sources")
    cells.texts(sources, 0, 0, ["Id", "Source", "Link"], bold=True)
    sources.set_column(0, 0, 6)
    sources.set_column(1, 1, 80)
    sources.set_column(2, 2, 80)
    for index, source in enumerate(report.sources, start=1):
        cells.texts(sources, index, 0, [source.id, source.label])
        link = web_url(source.url)
        if link:
            cells.link(sources, index, 2, link)
        elif source.url:
            cells.text(sources, index, 2, source.url)  # shown, never a live link
    book.close()
    return buffer.getvalue()


def _figures_sheet(cells: XlsxCells, sheet: Any, report: Report) -> None:
    """Every figure the answer states, as checked: the value read, where it was found or how
    it follows, and the ones the data did not support flagged."""
    header = ["#", "Figure", "Value", "Unit", "Check", "Source or calculation"]
    cells.texts(sheet, 0, 0, header, bold=True)
    for column, width in enumerate((4, 22, 18, 10, 22, 90)):
        sheet.set_column(column, column, width)
    for line, row in enumerate(figure_rows(report.verification), start=1):
        figure = row.figure
        cells.number(sheet, line, 0, row.number)
        cells.text(sheet, line, 1, figure.text)
        if math.isfinite(figure.value):
            cells.number(sheet, line, 2, figure.value, num_format="#,##0.####")
        cells.text(sheet, line, 3, figure.unit)
        cells.text(
            sheet, line, 4, ("† " if row.unsupported else "") + row.status, bold=row.unsupported
        )
        cells.text(sheet, line, 5, row.detail, text_wrap=True)


def _table_sheet(
    cells: XlsxCells, sheet: Any, table: Table, unit_header: Callable[[Table, str], str]
) -> None:
    cells.text(sheet, 0, 0, table.title, bold=True)
    cells.texts(sheet, 2, 0, ["Line", "Unit", *table.periods], bold=True)
    cells.texts(sheet, 3, 0, ["Period end", "", *table.period_ends])
    sheet.set_column(0, 0, 34)
    sheet.set_column(1, 1, 14)
    sheet.set_column(2, 1 + len(table.periods), 14)
    for index, row in enumerate(table.rows, start=4):
        cells.text(sheet, index, 0, row.label)
        cells.text(sheet, index, 1, unit_header(table, row.kind))
        money = row.kind in ("money", "shares")
        for column, number in enumerate(row.values, start=2):
            if number is not None:
                # Money and share counts in millions, as the header says; real numbers, shown
                # as the report's tables show them: whole millions, a decimal only where the
                # filing has one (2,271.5), never "416,161.0".
                value = number / 1e6 if money else number
                shown = _millions_format(value) if money else _NUMBER_FORMATS[row.kind]
                cells.number(sheet, index, column, value, num_format=shown)
    _period_sources(cells, sheet, table, 5 + len(table.rows))


def _millions_format(millions: float) -> str:
    if millions and abs(millions) < 1:
        return "#,##0.000"
    return "#,##0" if round(millions, 1) == round(millions) else "#,##0.0"


def _period_sources(cells: XlsxCells, sheet: Any, table: Table, line: int) -> None:
    """Under the figures: each period's filings, and a link to the newest of them."""
    if not any(table.period_sources):
        return
    cells.text(sheet, line, 0, "Filed in", bold=True)
    cells.text(sheet, line + 1, 0, "Filing link", bold=True)
    for column, (_, filed) in enumerate(table.filed_by_period(), start=2):
        cells.text(sheet, line, column, "; ".join(f.label for f in filed), text_wrap=True)
        link = next((u for f in filed if (u := web_url(f.url))), None)
        if link:
            cells.link(sheet, line + 1, column, link)


def _sheet_name(wanted: str, used: set[str]) -> str:
    # Excel refuses []:*?/\ in a sheet name, and a leading or trailing apostrophe.
    base = re.sub(r"[\[\]:*?/\\\x00-\x1f]", " ", wanted)[:28].strip(" '") or "Table"
    name, n = base, 2
    while name.lower() in {u.lower() for u in used}:
        name, n = f"{base[:25]} {n}", n + 1
    used.add(name)
    return name


__all__ = ["to_xlsx"]
