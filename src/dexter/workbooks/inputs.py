"""The Inputs sheet every model shares (each filed value beside where it was filed) and the
Checks sheet (each input still equals the filed value, plus the model's own ties)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from dexter.workbooks.book import Sheet, address, ref
from dexter.workbooks.history import Fact, History


@dataclass(frozen=True)
class Check:
    label: str
    formula: str | None  # None: a note saying why a check could not be made
    holds: bool = True


class InputsSheet:
    """Filed figures, one per row, each beside where it was filed."""

    HEADER: ClassVar[list[str]] = [
        "Line",
        "Fiscal year",
        "Period end",
        "Value (USD or shares)",
        "XBRL concept",
    ]
    HEADER += ["Form", "Accession", "Filed", "Source"]

    def __init__(self, sheet: Sheet, history: History) -> None:
        self.sheet = sheet
        self.refs: dict[tuple[str, str], list[str]] = {}
        self.parts: dict[tuple[str, str], list[tuple[str, int]]] = {}
        self.rows: list[tuple[int, Fact]] = []
        sheet.put(0, 0, f"{history.name} ({history.ticker}): filed figures", style="title")
        note = "Each value as filed in XBRL (SEC EDGAR companyfacts); the columns to its right "
        note += "say where. Shares are not in USD."
        sheet.put(1, 0, note, style="note")
        for column, text in enumerate(self.HEADER):
            sheet.put(3, column, text, style="header")
        for column, width in enumerate((38, 11, 11, 20, 60, 7, 22, 11, 90)):
            sheet.widths[column] = width
        row = 4
        for fact in history.facts:
            style = "input_shares" if fact.line == "outstanding_shares" else "input_money"
            value = int(fact.value) if float(fact.value).is_integer() else fact.value
            sheet.put(row, 0, fact.label)
            sheet.put(row, 1, fact.fiscal_year)
            sheet.put(row, 2, fact.period_end)
            cell = sheet.put(row, 3, value, style=style)
            sheet.put(row, 4, fact.concept)
            sheet.put(row, 5, fact.form)
            sheet.put(row, 6, fact.accession)
            sheet.put(row, 7, fact.filed)
            sheet.put(row, 8, fact.url)
            self.refs.setdefault((fact.line, fact.fiscal_year), []).append(cell)
            self.parts.setdefault((fact.line, fact.fiscal_year), []).append((cell, fact.sign))
            self.rows.append((row, fact))
            row += 1

    def formula(self, line: str, year: str) -> str | None:
        """A formula for the year's line (summing a line filed as components), or None. A
        part filed as a payment the line counts the other way is negated."""
        parts = self.parts.get((line, year))
        if not parts:
            return None
        terms = [("-" if sign < 0 else "") + cell for cell, sign in parts]
        return terms[0] if len(terms) == 1 else "SUM(" + ",".join(terms) + ")"


def cash_ties(history: History, inputs: InputsSheet) -> list[Check]:
    """Ending cash of one year + the next year's change in cash = that year's ending cash, where
    the filings' ending cash and change in cash measure the same thing."""
    checks = []
    for i in range(1, len(history.years)):
        before, year = history.years[i - 1], history.years[i]
        facts = [
            history.of(line, y)
            for line, y in (
                ("ending_cash_balance", before),
                ("change_in_cash_and_equivalents", year),
                ("ending_cash_balance", year),
            )
        ]
        if any(len(f) != 1 for f in facts):
            continue
        opening, change, closing = (f[0] for f in facts)
        same = change.concept.startswith(opening.concept) and opening.concept == closing.concept
        if not same:
            note = (
                f"Cash {year}: not tied; the filings' ending cash ({closing.concept}) and change "
                f"in cash ({change.concept}) measure different things"
            )
            checks.append(Check(note, None))
            continue
        cells = [inputs.refs[(f.line, f.fiscal_year)][0] for f in (opening, change, closing)]
        checks.append(
            Check(
                f"Cash ties {year}: ending cash {before} + change in cash {year} = "
                f"ending cash {year}",
                f"ROUND({cells[0]}+{cells[1]}-{cells[2]},0)=0",
                round(opening.value + change.value - closing.value) == 0,
            )
        )
    return checks


def checks_sheet(sheet: Sheet, inputs: InputsSheet, extra: list[Check]) -> None:
    """Formulas a reader can trust at a glance: every input still equals what was filed, and
    the model's own ties; one cell at the top is TRUE when all are."""
    sheet.widths.update({0: 100, 1: 10})
    sheet.put(0, 0, "Checks (TRUE when the model agrees with the filings)", style="title")
    sheet.put(2, 0, "Check", style="header")
    sheet.put(2, 1, "Result", style="header")
    row = first = 4
    passed: list[bool] = []
    checks = [
        Check(
            f"{fact.label} {fact.fiscal_year} equals the filed {fact.concept} ({fact.accession})",
            f"{ref('Inputs', input_row, 3)}={_number(fact.value)!r}",
        )
        for input_row, fact in inputs.rows
    ]
    for check in [*checks, *extra]:
        if check.formula is None:
            sheet.put(row, 0, check.label, style="note")
        else:
            sheet.put(row, 0, check.label)
            sheet.put(row, 1, check.holds, formula=check.formula, style="check")
            passed.append(check.holds)
        row += 1
    results = f"{address(first, 1)}:{address(row - 1, 1)}"
    sheet.put(1, 0, "All checks pass", style="header")
    sheet.put(1, 1, all(passed), formula=f"AND({results})", style="check")


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


__all__ = ["Check", "InputsSheet", "cash_ties", "checks_sheet"]
