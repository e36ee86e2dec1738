"""Excel workbooks, read with openpyxl in read-only mode (formulas as written, nothing
evaluated): sheets and their size, defined names and what they point at, input cells (constants
on input sheets and the single cells names point at), links to other workbooks, the periods the
column headers cover, and tickers in the text."""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import IO, Any

from dexter.workspace import entities
from dexter.workspace.model import (
    EXTERNAL,
    NAME,
    NAMED_RANGE,
    PERIOD,
    SHEET,
    TICKER,
    FileTags,
)

# Cells read per workbook: a model's structure shows long before this; a data dump is not read
# to the end.
MAX_CELLS = 200_000
MAX_ROWS = 50_000  # per sheet, empty rows included
HEADER_ROWS = 6
MAX_INPUTS = 12
_INPUT_SHEET = re.compile(r"input|assumption|driver|scenario", re.IGNORECASE)
_EXTERNAL_REF = re.compile(r"\[([^\]]+\.xls[xmb]?)\]", re.IGNORECASE)
_FORMULA_NAME = re.compile(r"(?<![\w.!$:'\"])([A-Za-z_][A-Za-z0-9_.]*)(?![\w(!])")
_SINGLE_CELL = re.compile(r"^'?([^'!]+)'?!\$?([A-Z]{1,3})\$?(\d+)$")


def tag_workbook_bytes(data: IO[bytes]) -> FileTags:
    """Raises on a file openpyxl cannot open (the caller falls back to a coarse outline)."""
    import openpyxl  # type: ignore[import-untyped]

    book = openpyxl.load_workbook(data, read_only=True, data_only=False, keep_links=True)
    try:
        return _tag(book)
    finally:
        book.close()


def _tag(book: Any) -> FileTags:
    found = FileTags("workbook")
    names: dict[str, str] = {}
    for name, defined in book.defined_names.items():
        names[name] = str(defined.attr_text or "")
    for sheet in book.worksheets:
        for name, defined in (getattr(sheet, "defined_names", None) or {}).items():
            names.setdefault(name, str(defined.attr_text or ""))
    for name, target in names.items():
        found.add(name, NAMED_RANGE, "def", 0, f"{name} = {target}")
    pointed = _single_cells(names)
    texts: list[str] = []
    headers: list[str] = []
    header_dates: list[date] = []
    inputs: list[str] = []
    used_names: dict[str, str] = {}  # name -> the first cell whose formula uses it
    links: set[str] = set()
    budget = MAX_CELLS
    sheet_lines: list[str] = []
    for sheet in book.worksheets:
        rows = 0
        columns = 0
        is_input = bool(_INPUT_SHEET.search(sheet.title))
        label: dict[int, str] = {}
        for row in sheet.iter_rows():
            if budget <= 0 or rows >= MAX_ROWS:
                break
            rows += 1
            for cell in row:
                value = getattr(cell, "value", None)
                if value is None:
                    continue
                budget -= 1
                column = getattr(cell, "column", 0) or 0
                columns = max(columns, column)
                number = getattr(cell, "row", rows) or rows
                coordinate = f"{sheet.title}!{getattr(cell, 'coordinate', '')}"
                if isinstance(value, str):
                    if value.startswith("="):
                        for used in _names_in(value, names):
                            used_names.setdefault(used, coordinate)
                        links.update(_EXTERNAL_REF.findall(value))
                        continue
                    texts.append(value)
                    label[number] = value
                    if number <= HEADER_ROWS:
                        headers.append(value)
                elif isinstance(value, (datetime, date)):
                    if number <= HEADER_ROWS or column == 1:
                        header_dates.append(value.date() if isinstance(value, datetime) else value)
                elif isinstance(value, (int, float)) and not isinstance(value, bool):
                    key = (sheet.title, getattr(cell, "column_letter", ""), number)
                    named = pointed.get(key)
                    if (named or is_input) and len(inputs) < MAX_INPUTS:
                        what = named or label.get(number, "")
                        inputs.append(f"{coordinate}{f' ({what})' if what else ''} = {value:g}")
        found.add(sheet.title, SHEET, "def", 0, f"sheet {sheet.title}")
        sheet_lines.append(f"{sheet.title} ({rows} rows x {columns} cols)")
    for name, where in sorted(used_names.items()):
        found.add(name, NAME, "ref", 0, f"in {where}")
    for link in getattr(book, "_external_links", None) or []:
        linked = getattr(getattr(link, "file_link", None), "Target", None)
        if linked:
            links.add(str(linked))
    for target in sorted(links):
        found.add(target.removeprefix("file:///"), EXTERNAL, "ref", 0, "external link")
    header_text = "\n".join(headers)
    covered = entities.periods(header_text)
    for period in covered:
        found.add(period, PERIOD, "ref")
    for day in sorted(set(header_dates)):
        found.add(day.isoformat(), PERIOD, "ref", 0, "header date")
    prose = "\n".join(texts)
    for symbol in entities.tickers(prose):
        found.add(symbol, TICKER, "ref")
    for accession in entities.accessions(prose):
        found.add(accession, "accession", "ref")
    found.outline = ["sheets: " + "; ".join(sheet_lines[:10])]
    if names:
        shown = [f"{n} = {t}" for n, t in list(names.items())[:10]]
        found.outline.append("names: " + "; ".join(shown))
    if inputs:
        found.outline.append("inputs: " + "; ".join(inputs))
    span = _span(covered, header_dates)
    if span:
        found.outline.append(f"periods: {span}")
    if links:
        found.outline.append("links to: " + ", ".join(sorted(links)[:5]))
    tickers = found.names(TICKER)
    if tickers:
        found.outline.append("tickers: " + ", ".join(tickers[:8]))
    if budget <= 0:
        found.outline.append(f"(read the first {MAX_CELLS:,} cells)")
    return found


def _single_cells(names: dict[str, str]) -> dict[tuple[str, str, int], str]:
    pointed: dict[tuple[str, str, int], str] = {}
    for name, target in names.items():
        match = _SINGLE_CELL.match(target.strip())
        if match:
            pointed[(match.group(1), match.group(2), int(match.group(3)))] = name
    return pointed


def _names_in(formula: str, names: dict[str, str]) -> set[str]:
    """The workbook's defined names a formula uses (names are case-insensitive in Excel)."""
    by_fold = {n.casefold(): n for n in names}
    words = (m.group(1) for m in _FORMULA_NAME.finditer(_without_strings(formula)))
    return {by_fold[w.casefold()] for w in words if w.casefold() in by_fold}


def _without_strings(formula: str) -> str:
    return re.sub(r"\"[^\"]*\"|'[^']*'!", '""', formula)


def _span(periods: list[str], days: list[date]) -> str:
    labels = sorted(periods, key=lambda p: (p.split("FY")[-1], p))
    parts = []
    if labels:
        parts.append(labels[0] if len(labels) == 1 else f"{labels[0]} .. {labels[-1]}")
    if days:
        parts.append(f"{min(days).isoformat()} .. {max(days).isoformat()}")
    return "; ".join(parts)


__all__ = ["tag_workbook_bytes"]
