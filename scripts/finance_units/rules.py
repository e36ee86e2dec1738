"""Statement figures from filed facts: which concept, which filing, and the arithmetic.

Each rule returns a `Figure`: the number, the facts it rests on and a note in words. Rules:

* A field's concepts are tried in the order listed in `FIELDS`; the first one filed for the period
  is the figure. Revenue is the exception: the largest of the revenue concepts filed for the period
  (`Revenues` is the total where a filer also tags part of it as contract revenue).
* Annual flows: the twelve-month fact for the fiscal year. Balance-sheet items: the fact at the
  date (see `raw.Filer.instant`: at a fiscal year-end the annual report's), one value per date
  whether the record is annual or quarterly.
* A quarter's flow: its own three-month fact when filed; otherwise this quarter's year-to-date
  less the previous quarter's year-to-date (both from the first day of the fiscal year), so the
  fourth quarter is the year less nine months. Cash-flow items use the cash-flow concept's own
  year-to-date figures (share-based compensation from `ShareBasedCompensation`, the cash-flow
  add-back, never the expense in the notes).
* Trailing twelve months at a quarter: the sum of that quarter and the three before it.
* Outflows are negative (capital expenditure, dividends paid), as in Dexter's statements.
* Share counts and per-share amounts are on the latest basis: a fact filed before a split is
  multiplied (shares) or divided (per share) by the split ratio. The figure is the latest filed
  value, then adjusted; per-share amounts are compared to four decimal places.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from finance_units.raw import SPANS, Fact, Filer, FiscalYear, fmt

Number = int | Fraction


@dataclass(frozen=True, slots=True)
class Figure:
    value: Number
    facts: tuple[Fact, ...]  # the filed facts it rests on, the main one first
    note: str
    split_adjusted: bool = False

    @property
    def fact(self) -> Fact:
        return self.facts[0]


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    statement: str  # income | balance | cashflow
    concepts: tuple[str, ...]
    kind: str = "flow"  # flow | instant
    unit: str = "USD"  # USD | USD/shares | shares
    sign: int = 1
    largest: bool = False

    @property
    def per_share(self) -> bool:
        return self.unit == "USD/shares"

    @property
    def shares(self) -> bool:
        return self.unit == "shares"


def _field(
    name: str,
    statement: str,
    *concepts: str,
    kind: str = "flow",
    unit: str = "USD",
    sign: int = 1,
    largest: bool = False,
) -> Field:
    return Field(name, statement, concepts, kind, unit, sign, largest)


FIELDS = {
    f.name: f
    for f in (
        _field(
            "revenue",
            "income",
            "RevenueFromContractWithCustomerExcludingAssessedTax",
            "Revenues",
            "SalesRevenueNet",
            largest=True,
        ),
        _field("cost_of_revenue", "income", "CostOfRevenue", "CostOfGoodsAndServicesSold"),
        _field("gross_profit", "income", "GrossProfit"),
        _field("operating_expense", "income", "OperatingExpenses"),
        _field("research_and_development", "income", "ResearchAndDevelopmentExpense"),
        _field(
            "selling_general_and_administrative_expenses",
            "income",
            "SellingGeneralAndAdministrativeExpense",
        ),
        _field("operating_income", "income", "OperatingIncomeLoss"),
        _field("income_tax_expense", "income", "IncomeTaxExpenseBenefit"),
        _field("net_income", "income", "NetIncomeLoss"),
        _field(
            "earnings_per_share",
            "income",
            "EarningsPerShareBasic",
            "EarningsPerShareBasicAndDiluted",
            unit="USD/shares",
        ),
        _field(
            "earnings_per_share_diluted",
            "income",
            "EarningsPerShareDiluted",
            "EarningsPerShareBasicAndDiluted",
            unit="USD/shares",
        ),
        _field(
            "weighted_average_shares",
            "income",
            "WeightedAverageNumberOfSharesOutstandingBasic",
            unit="shares",
        ),
        _field(
            "weighted_average_shares_diluted",
            "income",
            "WeightedAverageNumberOfDilutedSharesOutstanding",
            unit="shares",
        ),
        _field(
            "dividends_per_common_share",
            "income",
            "CommonStockDividendsPerShareDeclared",
            unit="USD/shares",
        ),
        _field("total_assets", "balance", "Assets", kind="instant"),
        _field("current_assets", "balance", "AssetsCurrent", kind="instant"),
        _field(
            "cash_and_equivalents",
            "balance",
            "CashAndCashEquivalentsAtCarryingValue",
            kind="instant",
        ),
        _field("inventory", "balance", "InventoryNet", kind="instant"),
        _field("total_liabilities", "balance", "Liabilities", kind="instant"),
        _field("current_liabilities", "balance", "LiabilitiesCurrent", kind="instant"),
        _field("shareholders_equity", "balance", "StockholdersEquity", kind="instant"),
        _field(
            "retained_earnings", "balance", "RetainedEarningsAccumulatedDeficit", kind="instant"
        ),
        _field(
            "outstanding_shares",
            "balance",
            "CommonStockSharesOutstanding",
            kind="instant",
            unit="shares",
        ),
        _field(
            "net_cash_flow_from_operations",
            "cashflow",
            "NetCashProvidedByUsedInOperatingActivities",
        ),
        _field(
            "net_cash_flow_from_investing",
            "cashflow",
            "NetCashProvidedByUsedInInvestingActivities",
        ),
        _field(
            "net_cash_flow_from_financing",
            "cashflow",
            "NetCashProvidedByUsedInFinancingActivities",
        ),
        _field(
            "capital_expenditure",
            "cashflow",
            "PaymentsToAcquirePropertyPlantAndEquipment",
            "PaymentsToAcquireProductiveAssets",
            sign=-1,
        ),
        _field("share_based_compensation", "cashflow", "ShareBasedCompensation"),
        _field(
            "depreciation_and_amortization",
            "cashflow",
            "DepreciationDepletionAndAmortization",
            "DepreciationAmortizationAndAccretionNet",
            "DepreciationAndAmortization",
        ),
        _field(
            "dividends_and_other_cash_distributions", "cashflow", "PaymentsOfDividends", sign=-1
        ),
    )
}


# -- one fact for one period ---------------------------------------------------------------


def _candidates(field: Field, find: Callable[[str], Fact | None]) -> list[Fact]:
    found = [find(concept) for concept in field.concepts]
    return [f for f in found if f is not None]


def _pick(field: Field, found: list[Fact]) -> Fact | None:
    if not found:
        return None
    if field.largest:
        # Ties go to the earlier concept in the list.
        return max(found, key=lambda f: (abs(f.val), -field.concepts.index(_bare(f.concept))))
    return found[0]


def _bare(concept: str) -> str:
    return concept.split(":", 1)[1]


def _as_figure(filer: Filer, field: Field, fact: Fact, how: str) -> Figure:
    if field.per_share or field.shares:
        return on_latest_basis(filer, field, fact, how)
    value = fact.val * field.sign
    assert isinstance(value, int), f"{fact.cite()} is not a whole number"
    sign = " negated (cash paid out)" if field.sign < 0 else ""
    return Figure(value, (fact,), f"{how}: {fact.cite()}{sign}")


def on_latest_basis(filer: Filer, field: Field, fact: Fact, how: str) -> Figure:
    factor = filer.split_factor(fact)
    raw = Fraction(str(fact.val))
    if factor == 1:
        value: Number = raw if field.per_share else int(raw)
        return Figure(value, (fact,), f"{how}: {fact.cite()}, already on the latest share basis")
    later = [s for s in filer.splits_in_view if fact.filed < s.effective]
    splits = " and ".join(f"{s.ratio}-for-1 ({s.effective})" for s in later)
    splits += " splits" if len(later) > 1 else " split"
    if field.per_share:
        value = raw / factor
        arithmetic = f"{fmt(fact.val)} / {factor} = {float(value):.6g}"
    else:
        value = int(raw * factor)
        arithmetic = f"{fmt(fact.val)} x {factor} = {value:,}"
    return Figure(
        value,
        (fact,),
        f"{how}: {fact.cite()}, filed before the {splits}: {arithmetic}",
        split_adjusted=True,
    )


def annual(filer: Filer, field: Field, year: FiscalYear) -> Figure | None:
    if field.kind == "instant":
        return at_date(filer, field, year.year_end)
    end = year.year_end
    found = _candidates(field, lambda c: _year_fact(filer, c, year.start, end, field.unit))
    fact = _pick(field, found)
    if fact is None:
        return None
    return _as_figure(filer, field, fact, f"fiscal {year.label} ({year.start} to {year.end})")


def _year_fact(filer: Filer, concept: str, start: str, end: str, unit: str) -> Fact | None:
    fact = filer.duration(concept, start, end, unit)
    if fact is None or fact.days is None or not SPANS[4][0] <= fact.days <= SPANS[4][1]:
        return None
    return fact


def at_date(filer: Filer, field: Field, end: str) -> Figure | None:
    found = _candidates(field, lambda c: filer.instant(c, end, field.unit))
    fact = _pick(field, found)
    if fact is None:
        return None
    return _as_figure(filer, field, fact, f"balance at {end}")


def quarter(filer: Filer, field: Field, year: FiscalYear, n: int) -> Figure | None:
    """A three-month flow: filed, or derived from year-to-date figures of one concept."""
    if field.kind == "instant":
        return at_date(filer, field, year.quarter_ends[n - 1])
    found = [_quarter_of(filer, field, c, year, n) for c in field.concepts]
    figures = [f for f in found if f is not None]
    if not figures:
        return None
    if field.largest:
        return max(figures, key=lambda f: (abs(f.value), -figures.index(f)))
    return figures[0]


def _quarter_of(
    filer: Filer, field: Field, concept: str, year: FiscalYear, n: int
) -> Figure | None:
    end = year.quarter_ends[n - 1]
    start = year.quarter_start(n)
    direct = filer.duration(concept, start, end, field.unit)
    if direct is not None and direct.days is not None and SPANS[1][0] <= direct.days <= SPANS[1][1]:
        return _as_figure(filer, field, direct, f"{year.label}-Q{n}, three months as filed")
    if n == 1 or field.per_share or field.shares:
        return None  # per-share amounts and average share counts do not subtract
    ytd = _ytd(filer, concept, year, n, field.unit)
    prior = _ytd(filer, concept, year, n - 1, field.unit)
    if ytd is None or prior is None:
        return None
    value = (ytd.val - prior.val) * field.sign
    assert isinstance(value, int)
    months = {2: "six", 3: "nine", 4: "twelve"}
    sign = ", negated (cash paid out)" if field.sign < 0 else ""
    note = (
        f"{year.label}-Q{n} derived: {months[n]} months {ytd.cite()} less "
        f"{months.get(n - 1, 'three')} months {prior.cite()} = {fmt(ytd.val - prior.val)}{sign}"
    )
    return Figure(value, (ytd, prior), note)


def _ytd(filer: Filer, concept: str, year: FiscalYear, n: int, unit: str) -> Fact | None:
    fact = filer.duration(concept, year.start, year.quarter_ends[n - 1], unit)
    if fact is None or fact.days is None or not SPANS[n][0] <= fact.days <= SPANS[n][1]:
        return None
    return fact


def trailing_quarters(filer: Filer, year: FiscalYear, n: int) -> list[tuple[FiscalYear, int]]:
    keys: list[tuple[FiscalYear, int]] = []
    current: FiscalYear | None = year
    while len(keys) < 4 and current is not None:
        keys.append((current, n))
        if n > 1:
            n -= 1
        else:
            current, n = filer.previous(current), 4
    return keys if len(keys) == 4 else []


def ttm(filer: Filer, field: Field, year: FiscalYear, n: int) -> Figure | None:
    keys = trailing_quarters(filer, year, n)
    if not keys or any(q > len(y.quarter_ends) for y, q in keys):
        return None
    parts = [quarter(filer, field, y, q) for y, q in keys]
    if any(p is None for p in parts):
        return None
    figures = [p for p in parts if p is not None]
    total = sum(p.value for p in figures)
    labels = [f"{y.label}-Q{q} {fmt(p.value)}" for (y, q), p in zip(keys, figures, strict=True)]
    how = " | ".join(p.note for p in reversed(figures))
    note = f"TTM = {' + '.join(reversed(labels))} = {fmt(total)}. {how}"
    facts = tuple(f for p in figures for f in p.facts)
    return Figure(total, facts, note)
