"""A `Book` as XLSX bytes, with XlsxWriter (imported here only, when a workbook is written).

Formulas are written with Dexter's value as the cached result; text goes through
`dexter.spreadsheet` so a label or a URL is never a formula or a live link."""

from __future__ import annotations

import io
from typing import Any

from dexter.spreadsheet import XLSX_OPTIONS, XlsxCells
from dexter.workbooks.book import Book, Cell, Sheet

_BLUE = "#0000FF"  # the modelling convention for inputs a user may change
_MILLIONS = "#,##0.0,,"  # dollars shown in millions; the cell holds the exact figure
STYLES: dict[str, dict[str, object]] = {
    "text": {},
    "title": {"bold": True, "font_size": 13},
    "header": {"bold": True, "bottom": 1},
    "money": {"num_format": _MILLIONS},
    "money_total": {"num_format": _MILLIONS, "bold": True, "top": 1},
    "shares": {"num_format": "#,##0,,"},
    "percent": {"num_format": "0.0%"},
    "ratio": {"num_format": "0.0000"},
    "year": {"num_format": "0"},
    "per_share": {"num_format": "#,##0.00"},
    "per_share_total": {"num_format": "#,##0.00", "bold": True, "bg_color": "#FFF2CC"},
    "input_money": {"num_format": _MILLIONS, "font_color": _BLUE},
    "input_shares": {"num_format": "#,##0,,", "font_color": _BLUE},
    "input_percent": {"num_format": "0.0%", "font_color": _BLUE},
    "input_number": {"num_format": "0.00", "font_color": _BLUE},
    "input_per_share": {"num_format": "#,##0.00", "font_color": _BLUE},
    "check": {"bold": True, "align": "center"},
    "note": {"italic": True, "font_color": "#595959"},
}


def to_xlsx(book: Book) -> bytes:
    import importlib

    xlsxwriter: Any = importlib.import_module("xlsxwriter")  # untyped; imported when writing

    buffer = io.BytesIO()
    workbook = xlsxwriter.Workbook(buffer, {"in_memory": True, **XLSX_OPTIONS})
    cells = XlsxCells(workbook)
    for sheet in book.sheets:
        _write_sheet(cells, workbook.add_worksheet(sheet.name), sheet)
    for name, target in book.names.items():
        workbook.define_name(name, f"={target}")
    workbook.close()
    return buffer.getvalue()


def _write_sheet(cells: XlsxCells, worksheet: Any, sheet: Sheet) -> None:
    for column, width in sheet.widths.items():
        worksheet.set_column(column, column, width)
    for (row, column), cell in sorted(sheet.cells.items()):
        _write_cell(cells, worksheet, row, column, cell)


def _write_cell(cells: XlsxCells, worksheet: Any, row: int, column: int, cell: Cell) -> None:
    style = STYLES[cell.style]
    if cell.formula is not None:
        value = cell.value if cell.value is not None else ""
        worksheet.write_formula(row, column, "=" + cell.formula, cells.style(**style), value)
    elif isinstance(cell.value, bool):
        worksheet.write_boolean(row, column, cell.value, cells.style(**style))
    elif isinstance(cell.value, int | float):
        cells.number(worksheet, row, column, cell.value, **style)
    elif isinstance(cell.value, str):
        cells.text(worksheet, row, column, cell.value, **style)
    if cell.comment:
        worksheet.write_comment(row, column, cell.comment, {"x_scale": 3, "y_scale": 1.5})


__all__ = ["STYLES", "to_xlsx"]
