"""A workbook as plain data: sheets of cells, each a value or a formula with the value Dexter
computed for it, a named style and an optional comment; and workbook-level defined names.

Kept free of xlsxwriter so a model can be built, inspected and tested without writing a file;
`dexter.workbooks.xlsx` turns it into bytes."""

from __future__ import annotations

from dataclasses import dataclass, field

CellValue = float | int | str | bool | None


@dataclass(frozen=True)
class Cell:
    """`formula` (without the leading `=`) when the cell is derived; `value` is then what Dexter
    computed for it, stored as the cell's cached result so a viewer that does not recalculate
    shows the same number."""

    value: CellValue
    formula: str | None = None
    style: str = "text"
    comment: str | None = None


@dataclass
class Sheet:
    name: str
    cells: dict[tuple[int, int], Cell] = field(default_factory=dict)
    widths: dict[int, float] = field(default_factory=dict)

    def put(
        self,
        row: int,
        column: int,
        value: CellValue,
        *,
        formula: str | None = None,
        style: str = "text",
        comment: str | None = None,
    ) -> str:
        """Sets a cell and returns its sheet-qualified absolute reference, e.g. `'DCF'!$C$5`."""
        self.cells[(row, column)] = Cell(value, formula, style, comment)
        return ref(self.name, row, column)

    def at(self, row: int, column: int) -> Cell:
        return self.cells[(row, column)]


@dataclass
class Book:
    sheets: list[Sheet] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)  # "WACC" -> "'DCF'!$C$20"

    def sheet(self, name: str) -> Sheet:
        for sheet in self.sheets:
            if sheet.name == name:
                return sheet
        made = Sheet(name)
        self.sheets.append(made)
        return made


def column_letters(column: int) -> str:
    """0 -> A, 25 -> Z, 26 -> AA."""
    letters = ""
    column += 1
    while column:
        column, rest = divmod(column - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def address(row: int, column: int, *, absolute: bool = True) -> str:
    dollar = "$" if absolute else ""
    return f"{dollar}{column_letters(column)}{dollar}{row + 1}"


def ref(sheet: str, row: int, column: int) -> str:
    return f"'{sheet}'!{address(row, column)}"


__all__ = ["Book", "Cell", "CellValue", "Sheet", "address", "column_letters", "ref"]
