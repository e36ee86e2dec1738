"""Total debt at a balance-sheet date: each balance-sheet line of borrowings counted once.

Rules:

* One filing's figures: the debt lines of a date are read together from the filing that defines
  the date's balances (at a fiscal year-end the latest annual report tagging any debt line then,
  else the latest periodic report), never one line from one filing and another from another.
* Current debt is `DebtCurrent` when tagged: by definition the whole current line (short-term
  borrowings and the current part of long-term debt), so `LongTermDebtCurrent` beside it (NVIDIA
  tags both, with one amount) is not added. Otherwise current debt is the current part of
  long-term debt (`LongTermDebtCurrent`, `ConvertibleDebtCurrent`,
  `ConvertibleNotesPayableCurrent`) plus short-term borrowings (`CommercialPaper`,
  `ShortTermBorrowings`, `OtherShortTermBorrowings`): separate lines (Apple's commercial paper
  and its current term debt).
* Non-current debt is the sum of `LongTermDebtNoncurrent`, `ConvertibleDebtNoncurrent` and
  `ConvertibleLongTermNotesPayable` (Tesla's FY2013 10-K tags long-term debt of 0 and convertible
  notes beside it); without any of them, `LongTermDebt` when the filing tags no current part of
  long-term debt: it is then the long-term line itself (Tesla since 2017, NVIDIA before 2020).
  Where `LongTermDebtCurrent` is tagged, `LongTermDebt` includes it and is never added to it.
* Two concepts carrying the same amount in one filing are one line tagged twice, counted once
  (Tesla's 10-Q of May 2014 tags its convertible notes as both `LongTermDebtNoncurrent` and
  `ConvertibleDebtNoncurrent`).
* Notes only: lease liabilities (`FinanceLeaseLiabilityCurrent`, `CapitalLeaseObligations…`)
  are not debt here, so a current finance-lease liability is never added to a notes-only total.
* A date is left out when the filing shows its borrowings only inside lines that include capital
  leases (`LongTermDebtAndCapitalLeaseObligations…`, Tesla's FY2015 10-K for 2014): a notes-only
  figure would be a difference of rounded amounts, not a filed one; and when its tags contradict
  each other: `LongTermDebt` standing for the long-term line but not equal, to the million, to
  the combined long-term debt and capital leases less the capital leases (Tesla's 2016 tags).
"""

from __future__ import annotations

from dataclasses import dataclass

from finance_units.raw import ANNUAL_FORMS, Fact, Filer, fmt

WHOLE_CURRENT = "us-gaap:DebtCurrent"
CURRENT_LONG_TERM = (
    "us-gaap:LongTermDebtCurrent",
    "us-gaap:ConvertibleDebtCurrent",
    "us-gaap:ConvertibleNotesPayableCurrent",
)
SHORT_TERM = (
    "us-gaap:CommercialPaper",
    "us-gaap:ShortTermBorrowings",
    "us-gaap:OtherShortTermBorrowings",
)
NONCURRENT = (
    "us-gaap:LongTermDebtNoncurrent",
    "us-gaap:ConvertibleDebtNoncurrent",
    "us-gaap:ConvertibleLongTermNotesPayable",
)
WHOLE_LONG_TERM = "us-gaap:LongTermDebt"
WITH_LEASES = (
    "us-gaap:LongTermDebtAndCapitalLeaseObligations",
    "us-gaap:LongTermDebtAndCapitalLeaseObligationsCurrent",
)
NOTES = (WHOLE_CURRENT, *CURRENT_LONG_TERM, *SHORT_TERM, *NONCURRENT, WHOLE_LONG_TERM)


@dataclass(frozen=True, slots=True)
class Debt:
    current: int | None
    noncurrent: int | None
    facts: tuple[Fact, ...]
    note: str

    @property
    def total(self) -> int:
        return (self.current or 0) + (self.noncurrent or 0)


def _tagged(filer: Filer, concepts: tuple[str, ...], end: str) -> list[Fact]:
    return [
        f for concept in concepts for f in filer.facts(concept) if f.start is None and f.end == end
    ]


def _defining_filing(filer: Filer, end: str) -> str | None:
    """The filing whose debt lines stand for this date."""
    tagged = _tagged(filer, (*NOTES, *WITH_LEASES), end)
    if end in filer.year_ends:
        tagged = [f for f in tagged if f.form in ANNUAL_FORMS] or tagged
    newest = max(tagged, key=lambda f: (f.filed, f.accn), default=None)
    return newest.accn if newest is not None else None


def _lines(facts: list[Fact]) -> list[Fact]:
    """One fact per distinct amount: a line tagged with two concepts is still one line."""
    seen: dict[int | float, Fact] = {}
    for fact in facts:
        seen.setdefault(fact.val, fact)
    return list(seen.values())


def debt_at(filer: Filer, end: str) -> Debt | None:
    accn = _defining_filing(filer, end)
    if accn is None:
        return None

    def tagged(*concepts: str) -> list[Fact]:
        return [f for f in _tagged(filer, concepts, end) if f.accn == accn]

    notes: list[str] = []
    used: list[Fact] = []
    whole_current = tagged(WHOLE_CURRENT)
    current_parts = tagged(*CURRENT_LONG_TERM)
    current: int | None = None
    if whole_current:
        current = int(whole_current[0].val)
        used.append(whole_current[0])
        notes.append(f"current: {whole_current[0].cite()}")
        for part in current_parts:
            same = "the same amount" if part.val == current else "a part of it"
            notes.append(f"({part.concept} {fmt(part.val)}, {same}, not added)")
    else:
        parts = _lines([*current_parts, *tagged(*SHORT_TERM)])
        if parts:
            current = sum(int(f.val) for f in parts)
            used += parts
            notes.append("current: " + " + ".join(f.cite() for f in parts))
    noncurrent_parts = _lines(tagged(*NONCURRENT))
    noncurrent: int | None = None
    if noncurrent_parts:
        noncurrent = sum(int(f.val) for f in noncurrent_parts)
        used += noncurrent_parts
        notes.append("non-current: " + " + ".join(f.cite() for f in noncurrent_parts))
    elif tagged(WHOLE_LONG_TERM) and not tagged("us-gaap:LongTermDebtCurrent"):
        long_term = tagged(WHOLE_LONG_TERM)[0]
        if not _consistent_long_term(filer, long_term, end):
            return None
        noncurrent = int(long_term.val)
        used.append(long_term)
        notes.append(
            f"non-current: {long_term.cite()} (the long-term line: no current part tagged)"
        )
    if not used:
        return None  # only lines that include capital leases
    leases = [f for f in filer.facts("FinanceLeaseLiabilityCurrent") if f.end == end]
    if any(f.accn == accn for f in leases):
        lease = next(f for f in leases if f.accn == accn)
        notes.append(f"FinanceLeaseLiabilityCurrent {fmt(lease.val)} is a lease, not added")
    total = (current or 0) + (noncurrent or 0)
    notes.append(f"total {fmt(current or 0)} + {fmt(noncurrent or 0)} = {fmt(total)}")
    return Debt(current, noncurrent, tuple(used), "; ".join(notes))


def _consistent_long_term(filer: Filer, long_term: Fact, end: str) -> bool:
    combined = filer.instant("LongTermDebtAndCapitalLeaseObligations", end)
    leases = filer.instant("CapitalLeaseObligationsNoncurrent", end)
    if combined is None or leases is None:
        return True
    # Later filings restate these in whole millions, so a difference under a million is rounding.
    return abs(combined.val - leases.val - long_term.val) < 1_000_000
