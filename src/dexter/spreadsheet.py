"""Cells for spreadsheets, CSV and XLSX alike: text stays text, numbers stay numbers.

A question, a page title or a filing label that starts with `=`, `+`, `-`, `@`, a tab or a carriage
return is a formula to Excel, LibreOffice and Google Sheets (`=HYPERLINK(...)` sends data away when
clicked, `=cmd|...` once ran programs). Every CSV and XLSX Dexter writes goes through here:
- CSV: such text gets a leading `'` (OWASP's advice), which spreadsheets read as "this is text";
- XLSX: text is always written as a string cell, never a formula, and one that starts like a
  formula is also marked quote-prefixed, as Excel marks text typed after a `'`, so it stays text
  when the cell is edited. Numbers are written as numbers and are never prefixed.

Standard library only; the XLSX helper takes an xlsxwriter workbook without importing it.
"""

from __future__ import annotations

import csv
import warnings
from collections.abc import Iterable, Sequence
from typing import IO, Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# xlsxwriter's `write()` guesses a type from a string: never let it make a formula or a link.
XLSX_OPTIONS = {"strings_to_formulas": False, "strings_to_urls": False, "strings_to_numbers": False}


def starts_like_formula(text: str) -> bool:
    return text.startswith(FORMULA_STARTS)


def csv_field(value: object) -> object:
    """`value` for a CSV row: numbers as they are, formula-like text behind a `'`."""
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, int | float):
        text = str(value)
        return "'" + text if starts_like_formula(text) else text
    return value


def write_csv(out: IO[str], rows: Iterable[Sequence[object]]) -> None:
    writer = csv.writer(out, lineterminator="\n")
    for row in rows:
        writer.writerow([csv_field(value) for value in row])


class XlsxCells:
    """Writes the cells of one xlsxwriter workbook: `text` never becomes a formula or a link,
    `number` is a real number, `link` is a hyperlink only to a URL the caller vetted.

    Styles are given as xlsxwriter format properties ({"bold": True}) and made once each."""

    def __init__(self, book: Any) -> None:
        self.book = book
        self._styles: dict[tuple[tuple[str, object], ...], Any] = {}

    def style(self, **properties: object) -> Any:
        key = tuple(sorted(properties.items()))
        if key not in self._styles:
            self._styles[key] = self.book.add_format(dict(properties)) if properties else None
        return self._styles[key]

    def text(self, sheet: Any, row: int, column: int, value: str, **style: object) -> None:
        if starts_like_formula(value):
            style = {**style, "quote_prefix": True}
        sheet.write_string(row, column, value, self.style(**style))

    def texts(
        self, sheet: Any, row: int, column: int, values: Sequence[str], **style: object
    ) -> None:
        for offset, value in enumerate(values):
            self.text(sheet, row, column + offset, value, **style)

    def number(self, sheet: Any, row: int, column: int, value: float, **style: object) -> None:
        sheet.write_number(row, column, value, self.style(**style))

    def link(self, sheet: Any, row: int, column: int, url: str) -> None:
        """A hyperlink to `url`, which must already be a plain web address; as text when
        xlsxwriter refuses it (too long, too many links on the sheet)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # xlsxwriter warns, then returns < 0
            refused = sheet.write_url(row, column, url, string=url) < 0
        if refused:
            self.text(sheet, row, column, url)


__all__ = [
    "FORMULA_STARTS",
    "XLSX_OPTIONS",
    "XlsxCells",
    "csv_field",
    "starts_like_formula",
    "write_csv",
]
