"""Notes that travel with statement records, said once under a table with the periods they
concern: "Per-share values and share counts restated to the latest basis for the 3-for-1 stock
split of 2022 (filed before it): FY2020, FY2021."
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from dexter.data.models import StatementBase


def period_notes(rows: Sequence[StatementBase], label: Callable[[StatementBase], str]) -> list[str]:
    """Each distinct note once, as a sentence ending with the periods it applies to (oldest
    first, each named by `label`)."""
    periods: dict[str, list[str]] = {}
    for row in sorted(rows, key=lambda row: row.report_period):
        for note in row.notes or ():
            periods.setdefault(note, []).append(label(row))
    return [
        f"{note[:1].upper()}{note[1:]}: {', '.join(dict.fromkeys(names))}."
        for note, names in periods.items()
    ]
