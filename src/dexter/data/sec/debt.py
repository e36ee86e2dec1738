"""Current, non-current and total debt from the debt facts one filing tagged for one date.

Debt is the line of a balance sheet that filers tag most variously: as a total and as its parts,
under concepts whose definitions overlap (`LongTermDebt` holds its current maturities,
`LongTermDebtAndCapitalLeaseObligations` holds leases, `DebtInstrumentCarryingAmount` restates the
notes), with the balance-sheet line itself sometimes a company concept companyfacts leaves out.
Picking the first concept that reports, field by field, adds the same amount twice or mixes a
lease-inclusive part with a lease-exclusive one. So debt is read as a whole, by these rules:

* **One filing per date.** Every line comes from the same filing: at a fiscal year-end the latest
  annual report that tags a debt line for the date, else (and at quarter-ends) the latest periodic
  report; annual and quarterly records of one date therefore agree. A line two filings tag under
  different concepts (commercial paper in the 10-K, "other short-term borrowings" in the next
  10-Q) is then never added twice.
* **Debt is borrowings: lease liabilities are not debt.** The us-gaap debt concepts exclude
  finance (capital) leases; where a filer's only line includes them (`…AndCapitalLeaseObligations`)
  the lease part it tagged for that date (in any periodic filing: the amount is the same) is taken
  off. A lease liability is never added to anything.
* **Current debt**: `DebtCurrent` (the total) when tagged; else short-term borrowings (commercial
  paper, short-term borrowings: one amount tagged under two of them counts once, different
  amounts are separate lines) plus current maturities of long-term debt (`LongTermDebtCurrent`,
  or the current convertible notes); else the lease-inclusive current line less its leases plus
  short-term borrowings.
* **Non-current debt**: `LongTermDebtNoncurrent`; else the lease-inclusive non-current line less
  its leases; else the convertible notes' non-current line; else `LongTermDebt` less
  `LongTermDebtCurrent` when both are tagged (it holds its current maturities by definition),
  and `LongTermDebt` alone as the non-current line when the filing tags no current maturities
  under that concept (NVIDIA FY2017-FY2019, Apple FY2013 and Tesla FY2016-FY2022 tag their
  "long-term debt" line so, with current debt under `DebtCurrent` or convertible concepts).
* **A total and its part.** Where a total concept and one of its parts are both tagged (long-term
  debt and convertible notes), the total stands when it is at least the part; a "total" smaller
  than its part cannot hold it and is a separate line (Tesla's 2013 10-K: long-term debt 0,
  convertible notes 586 M), so both count.
* **Total debt**: a reported total of all borrowings (`DebtLongtermAndShorttermCombinedAmount`,
  IFRS `Borrowings`) when tagged; else current + non-current (either alone when the other is not
  tagged), except that a filing tagging no non-current line but a notes total
  (`DebtInstrumentCarryingAmount`) at least its current debt has that total; else the notes
  total alone. Some filers tag principal as that total (Apple, Tesla), so it ranks last, and it
  is an alternative to the lines, never added to them (nor is a lease liability added to it).
* **IFRS**: current `CurrentBorrowingsAndCurrentPortionOfNoncurrentBorrowings`; non-current
  `NoncurrentPortionOfNoncurrentBorrowings`, else `LongtermBorrowings` (which includes its current
  portion) less `CurrentPortionOfLongtermBorrowings`; total `Borrowings`, else the parts, else
  `LongtermBorrowings` alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

G = "us-gaap:"
IFRS = "ifrs-full:"

DEBT_CURRENT = G + "DebtCurrent"
SHORT_TERM = (
    G + "CommercialPaper",
    G + "ShortTermBorrowings",
    G + "OtherShortTermBorrowings",
    G + "ShortTermBankLoansAndNotesPayable",
    IFRS + "ShorttermBorrowings",
)
LTD_CURRENT = G + "LongTermDebtCurrent"
CONVERTIBLE_CURRENT = (G + "ConvertibleDebtCurrent", G + "ConvertibleNotesPayableCurrent")
CURRENT_WITH_LEASES = G + "LongTermDebtAndCapitalLeaseObligationsCurrent"
LTD_NONCURRENT = G + "LongTermDebtNoncurrent"
CONVERTIBLE_NONCURRENT = (G + "ConvertibleDebtNoncurrent", G + "ConvertibleLongTermNotesPayable")
CONVERTIBLE_TOTAL = G + "ConvertibleNotesPayable"  # current and non-current together
NONCURRENT_WITH_LEASES = G + "LongTermDebtAndCapitalLeaseObligations"
LONG_TERM_DEBT = G + "LongTermDebt"  # includes current maturities, excludes leases
COMBINED_TOTAL = G + "DebtLongtermAndShorttermCombinedAmount"
NOTES_TOTAL = G + "DebtInstrumentCarryingAmount"
LEASES_CURRENT = (G + "FinanceLeaseLiabilityCurrent", G + "CapitalLeaseObligationsCurrent")
LEASES_NONCURRENT = (G + "FinanceLeaseLiabilityNoncurrent", G + "CapitalLeaseObligationsNoncurrent")
IFRS_CURRENT = IFRS + "CurrentBorrowingsAndCurrentPortionOfNoncurrentBorrowings"
IFRS_NONCURRENT = IFRS + "NoncurrentPortionOfNoncurrentBorrowings"
IFRS_LONGTERM = IFRS + "LongtermBorrowings"  # includes its current portion
IFRS_LONGTERM_CURRENT = IFRS + "CurrentPortionOfLongtermBorrowings"
IFRS_TOTAL = IFRS + "Borrowings"

# Concepts that are a balance-sheet debt line (or its IFRS equivalent): a filing tagging one of
# them for a date is where that date's debt is read.
LINE_CONCEPTS = (
    DEBT_CURRENT,
    *SHORT_TERM,
    LTD_CURRENT,
    *CONVERTIBLE_CURRENT,
    CURRENT_WITH_LEASES,
    LTD_NONCURRENT,
    *CONVERTIBLE_NONCURRENT,
    CONVERTIBLE_TOTAL,
    NONCURRENT_WITH_LEASES,
    LONG_TERM_DEBT,
    COMBINED_TOTAL,
    IFRS_CURRENT,
    IFRS_NONCURRENT,
    IFRS_LONGTERM,
    IFRS_LONGTERM_CURRENT,
    IFRS_TOTAL,
)
NOTES_CONCEPTS = (NOTES_TOTAL,)  # read only where no filing tags a line for the date
LEASE_INCLUSIVE = (CURRENT_WITH_LEASES, NONCURRENT_WITH_LEASES)
LEASE_CONCEPTS = (*LEASES_CURRENT, *LEASES_NONCURRENT)  # read only to take off those lines


@dataclass(frozen=True, slots=True)
class Amount:
    """A debt figure and how it was made: concepts added, then concepts taken off."""

    value: float
    added: tuple[str, ...]
    subtracted: tuple[str, ...] = ()

    def __add__(self, other: Amount) -> Amount:
        return Amount(
            self.value + other.value, self.added + other.added, self.subtracted + other.subtracted
        )

    def less(self, other: Amount | None) -> Amount:
        if other is None:
            return self
        return Amount(
            self.value - other.value, self.added, self.subtracted + other.added + other.subtracted
        )

    @property
    def concept(self) -> str:
        """The concept that names it, or how it was computed."""
        if len(self.added) == 1 and not self.subtracted:
            return self.added[0]
        text = " + ".join(self.added) + "".join(f" − {c}" for c in self.subtracted)
        return f"computed: {text}"


_ZERO = Amount(0, ())


@dataclass(frozen=True, slots=True)
class Debt:
    current: Amount | None
    non_current: Amount | None
    total: Amount | None


def resolve(lines: Mapping[str, float], leases: Mapping[str, float]) -> Debt:
    """Debt from one filing's debt facts for one date (`lines`, concept -> value), with the lease
    liabilities tagged for that date (`leases`, from any filing)."""
    facts = _Facts(lines, leases)
    current = _current(facts)
    non_current = _non_current(facts)
    return Debt(current, non_current, _total(facts, current, non_current))


class _Facts:
    def __init__(self, lines: Mapping[str, float], leases: Mapping[str, float]) -> None:
        self.lines, self.leases = lines, leases

    def get(self, concept: str) -> Amount | None:
        value = self.lines.get(concept)
        return None if value is None else Amount(value, (concept,))

    def first(self, concepts: tuple[str, ...]) -> Amount | None:
        return next((a for c in concepts if (a := self.get(c)) is not None), None)

    def lease(self, concepts: tuple[str, ...]) -> Amount | None:
        concept = next((c for c in concepts if c in self.leases), None)
        return None if concept is None else Amount(self.leases[concept], (concept,))


def _sum(amounts: list[Amount]) -> Amount | None:
    if not amounts:
        return None
    total = amounts[0]
    for amount in amounts[1:]:
        total = total + amount
    return total


def _distinct(facts: _Facts, concepts: tuple[str, ...]) -> Amount | None:
    """Separate lines: each amount once (one amount tagged under two concepts is one line)."""
    kept: list[Amount] = []
    for concept in concepts:
        amount = facts.get(concept)
        if amount is not None and all(k.value != amount.value for k in kept):
            kept.append(amount)
    return _sum(kept)


def _with_part(total: Amount | None, part: Amount | None) -> Amount | None:
    """A total concept holds its part unless it is smaller than it; then they are two lines."""
    if total is None or part is None:
        return total or part
    return total if abs(total.value) >= abs(part.value) else total + part


def _current(facts: _Facts) -> Amount | None:
    if (ifrs := facts.get(IFRS_CURRENT)) is not None:
        return ifrs
    if (total := facts.get(DEBT_CURRENT)) is not None:
        return total
    short_term = _distinct(facts, SHORT_TERM)
    maturities = _with_part(facts.get(LTD_CURRENT), facts.first(CONVERTIBLE_CURRENT))
    if maturities is None and (with_leases := facts.get(CURRENT_WITH_LEASES)) is not None:
        maturities = with_leases.less(facts.lease(LEASES_CURRENT))
    return _sum([a for a in (maturities, short_term) if a is not None])


def _non_current(facts: _Facts) -> Amount | None:
    if (ifrs := facts.get(IFRS_NONCURRENT)) is not None:
        return ifrs
    if (longterm := facts.get(IFRS_LONGTERM)) is not None:
        portion = facts.get(IFRS_LONGTERM_CURRENT)
        return longterm.less(portion) if portion is not None else None
    convertible = facts.first(CONVERTIBLE_NONCURRENT)
    if convertible is None and (notes := facts.get(CONVERTIBLE_TOTAL)) is not None:
        convertible = notes.less(facts.first(CONVERTIBLE_CURRENT))
    if (total := facts.get(LTD_NONCURRENT)) is not None:
        return _with_part(total, convertible)
    if (with_leases := facts.get(NONCURRENT_WITH_LEASES)) is not None:
        return with_leases.less(facts.lease(LEASES_NONCURRENT))
    if convertible is not None:
        return convertible
    if (long_term := facts.get(LONG_TERM_DEBT)) is not None:
        return long_term.less(facts.get(LTD_CURRENT))
    return None


def _total(facts: _Facts, current: Amount | None, non_current: Amount | None) -> Amount | None:
    reported = facts.get(IFRS_TOTAL) or facts.get(COMBINED_TOTAL)
    if reported is not None:
        return reported
    notes = facts.get(NOTES_TOTAL)
    if non_current is None and notes is not None and notes.value >= (current or _ZERO).value:
        # Only a current line and the notes' total: the total holds the current part.
        return notes
    if current is not None or non_current is not None:
        return _sum([a for a in (current, non_current) if a is not None])
    return facts.get(IFRS_LONGTERM) or notes
