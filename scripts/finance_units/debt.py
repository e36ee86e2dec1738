"""Total debt at a balance-sheet date: each balance-sheet line of borrowings counted once.

Rules:

* Current debt is `DebtCurrent` when filed: by definition it is the whole current line (short-term
  borrowings and the current part of long-term debt). A filing that also tags the same line as
  `LongTermDebtCurrent` (NVIDIA files both, with one amount) does not add it again. Without
  `DebtCurrent`, current debt is the current part of long-term debt (`LongTermDebtCurrent`, else
  `ConvertibleDebtCurrent`, else `ConvertibleNotesPayableCurrent`) plus short-term borrowings
  (`CommercialPaper`, else `ShortTermBorrowings`): two separate lines (Apple's commercial paper
  and its current term debt).
* Non-current debt is `LongTermDebtNoncurrent`, else `ConvertibleDebtNoncurrent`, else
  `ConvertibleLongTermNotesPayable`; else `LongTermDebt` when no current part of long-term debt
  is tagged at that date: then `LongTermDebt` is the long-term line itself (Tesla since 2017,
  NVIDIA before 2020, whose current debt is a separate line). Where `LongTermDebtCurrent` is
  tagged, `LongTermDebt` includes it and is never added to it.
* Notes only: lease liabilities (`FinanceLeaseLiabilityCurrent`, `CapitalLeaseObligations…`)
  are not debt here, so a current finance-lease liability is never added to a notes-only total.
* A date is left out when its tags contradict each other: when `LongTermDebt` stands for the
  long-term line but does not equal the combined long-term debt and capital leases less the
  capital leases, to the million (Tesla's 2016 tags); and when a later filing shows the
  borrowings only inside lines that include capital leases (Tesla's FY2015 10-K for 2014), where
  a notes-only figure would be a difference of rounded amounts rather than a filed one.
"""

from __future__ import annotations

from dataclasses import dataclass

from finance_units.raw import Fact, Filer, fmt

CURRENT_LONG_TERM = (
    "LongTermDebtCurrent",
    "ConvertibleDebtCurrent",
    "ConvertibleNotesPayableCurrent",
)
SHORT_TERM = ("CommercialPaper", "ShortTermBorrowings")
NONCURRENT = (
    "LongTermDebtNoncurrent",
    "ConvertibleDebtNoncurrent",
    "ConvertibleLongTermNotesPayable",
)


@dataclass(frozen=True, slots=True)
class Debt:
    current: int | None
    noncurrent: int | None
    facts: tuple[Fact, ...]
    note: str

    @property
    def total(self) -> int:
        return (self.current or 0) + (self.noncurrent or 0)


def _first(filer: Filer, concepts: tuple[str, ...], end: str) -> Fact | None:
    for concept in concepts:
        fact = filer.instant(concept, end)
        if fact is not None:
            return fact
    return None


def debt_at(filer: Filer, end: str) -> Debt | None:
    notes: list[str] = []
    facts: list[Fact] = []
    whole_current = filer.instant("DebtCurrent", end)
    long_term_current = _first(filer, CURRENT_LONG_TERM, end)
    current: int | None
    if whole_current is not None:
        current = int(whole_current.val)
        facts.append(whole_current)
        notes.append(f"current: {whole_current.cite()}")
        if long_term_current is not None:
            same = "the same amount" if long_term_current.val == whole_current.val else "a part"
            notes.append(
                f"({long_term_current.concept} {fmt(long_term_current.val)}, {same}, not added)"
            )
    else:
        short_term = _first(filer, SHORT_TERM, end)
        parts = [f for f in (long_term_current, short_term) if f is not None]
        current = sum(int(f.val) for f in parts) if parts else None
        facts += parts
        if parts:
            notes.append("current: " + " + ".join(f.cite() for f in parts))
    noncurrent_fact = _first(filer, NONCURRENT, end)
    whole_long_term = filer.instant("LongTermDebt", end)
    if noncurrent_fact is None and whole_long_term is not None:
        if filer.instant("LongTermDebtCurrent", end) is None:
            if not _consistent_long_term(filer, whole_long_term, end):
                return None
            noncurrent_fact = whole_long_term
            notes.append("LongTermDebt is the long-term line (no current part tagged)")
    noncurrent = int(noncurrent_fact.val) if noncurrent_fact is not None else None
    if noncurrent_fact is not None:
        facts.append(noncurrent_fact)
        notes.append(f"non-current: {noncurrent_fact.cite()}")
    if current is None and noncurrent is None:
        return None
    if _superseded_by_lease_lines(filer, facts, end):
        return None
    leases = filer.instant("FinanceLeaseLiabilityCurrent", end)
    if leases is not None:
        notes.append(f"FinanceLeaseLiabilityCurrent {fmt(leases.val)} is a lease, not added")
    total = (current or 0) + (noncurrent or 0)
    notes.append(f"total {fmt(current or 0)} + {fmt(noncurrent or 0)} = {fmt(total)}")
    return Debt(current, noncurrent, tuple(facts), "; ".join(notes))


def _superseded_by_lease_lines(filer: Filer, used: list[Fact], end: str) -> bool:
    """A later filing shows the borrowings only inside lines with capital leases: the notes-only
    amount would then be a difference of rounded figures, not a filed one."""
    newest = max(f.filed for f in used)
    combined = [
        filer.instant(c, end)
        for c in (
            "LongTermDebtAndCapitalLeaseObligations",
            "LongTermDebtAndCapitalLeaseObligationsCurrent",
        )
    ]
    return any(f is not None and f.filed > newest for f in combined)


def _consistent_long_term(filer: Filer, long_term: Fact, end: str) -> bool:
    combined = filer.instant("LongTermDebtAndCapitalLeaseObligations", end)
    leases = filer.instant("CapitalLeaseObligationsNoncurrent", end)
    if combined is None or leases is None:
        return True
    # Later filings restate these in whole millions, so a difference under a million is rounding.
    return abs(combined.val - leases.val - long_term.val) < 1_000_000
