"""The filed figures a model starts from, each with where it was filed.

Statements come from the data router (SEC EDGAR's companyfacts needs no key). A line the
standardised statements compute from several concepts (Apple's total debt is current long-term
debt + commercial paper + non-current long-term debt) is kept as its filed components, so every
historical input in a workbook is one XBRL fact a reader can look up."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from dexter.data.errors import DataError
from dexter.data.models import FactPoint, Source, StatementBase


class StatementSource(Protocol):
    async def company(self, query: str) -> Any: ...
    async def income_statements(self, ticker: str, **kw: Any) -> list[Any]: ...
    async def balance_sheets(self, ticker: str, **kw: Any) -> list[Any]: ...
    async def cash_flow_statements(self, ticker: str, **kw: Any) -> list[Any]: ...
    async def facts(self, ticker: str, concept: str) -> list[FactPoint]: ...


@dataclass(frozen=True)
class Fact:
    """One filed value: `line` is the statement field ("revenue"), `label` what a reader sees."""

    line: str
    label: str
    fiscal_year: str  # "2025-FY"
    period_end: str
    value: float
    concept: str  # "us-gaap:Revenues"
    accession: str
    filed: str
    form: str
    url: str
    sign: int = 1  # the model's line value is sign x the filed value

    @property
    def line_value(self) -> float:
        return self.sign * self.value


@dataclass(frozen=True)
class History:
    ticker: str
    name: str
    years: list[str]  # fiscal periods, oldest first: ["2022-FY", …, "2025-FY"]
    period_ends: list[str]
    facts: list[Fact]

    def of(self, line: str, year: str) -> list[Fact]:
        return [f for f in self.facts if f.line == line and f.fiscal_year == year]

    def value(self, line: str, year: str) -> float | None:
        found = self.of(line, year)
        return sum(f.line_value for f in found) if found else None


# (statement, field, label): what a DCF needs from each year.
LINES: list[tuple[str, str, str]] = [
    ("income", "revenue", "Revenue"),
    ("income", "operating_income", "Operating income (EBIT)"),
    ("income", "pretax_income", "Pre-tax income"),
    ("income", "income_tax_expense", "Income tax expense"),
    ("cashflow", "depreciation_and_amortization", "Depreciation and amortization"),
    ("cashflow", "capital_expenditure", "Capital expenditure (payments)"),
    ("cashflow", "change_in_cash_and_equivalents", "Change in cash (cash flow statement)"),
    ("cashflow", "ending_cash_balance", "Ending cash (cash flow statement)"),
    ("balance", "cash_and_equivalents", "Cash and equivalents"),
    ("balance", "current_investments", "Short-term investments"),
    ("balance", "total_debt", "Debt"),
    ("balance", "outstanding_shares", "Shares outstanding"),
]
# Lines the model reads as amounts paid out (positive), which the statements show as outflows.
OUTFLOWS = frozenset(
    {
        "capital_expenditure",
        "dividends_and_other_cash_distributions",
        "issuance_or_purchase_of_equity_shares",
    }
)
# Share counts of earlier years come restated to the latest split basis; the model needs only
# the latest, which is as filed.
RESTATED_ON_SPLITS = frozenset({"outstanding_shares"})
REQUIRED = ("revenue", "operating_income", "cash_and_equivalents", "outstanding_shares")


# What a three-statement model adds: the balance sheet's totals and working capital, the
# income statement's cost of revenue and net income, and what was paid out to shareholders.
THREE_STATEMENT_LINES: list[tuple[str, str, str]] = [
    *LINES,
    ("income", "cost_of_revenue", "Cost of revenue"),
    ("income", "net_income", "Net income"),
    ("balance", "trade_and_non_trade_receivables", "Receivables"),
    ("balance", "inventory", "Inventory"),
    ("balance", "property_plant_and_equipment", "Property, plant and equipment"),
    ("balance", "total_assets", "Total assets"),
    ("balance", "trade_and_non_trade_payables", "Payables"),
    ("balance", "total_liabilities", "Total liabilities"),
    ("balance", "shareholders_equity", "Shareholders' equity"),
    ("cashflow", "dividends_and_other_cash_distributions", "Dividends paid"),
    ("cashflow", "issuance_or_purchase_of_equity_shares", "Shares bought back less issued"),
]
THREE_STATEMENT_REQUIRED = (*REQUIRED, "total_assets", "total_liabilities", "shareholders_equity")


async def annual_history(
    source: StatementSource,
    query: str,
    years: int,
    lines: list[tuple[str, str, str]] = LINES,
    required: tuple[str, ...] = REQUIRED,
) -> History:
    """The last `years` fiscal years (plus the one before, for growth) of `lines`."""
    company = await source.company(query)
    ticker = company.ticker
    limit = years + 1
    by_kind: dict[str, list[Any]] = {
        "income": await source.income_statements(ticker, period="annual", limit=limit),
        "balance": await source.balance_sheets(ticker, period="annual", limit=limit),
        "cashflow": await source.cash_flow_statements(ticker, period="annual", limit=limit),
    }
    income = sorted(by_kind["income"], key=lambda s: s.report_period)
    if len(income) < 2:
        raise DataError(f"{ticker}: fewer than two annual income statements filed; no model.")
    fiscal = [s.fiscal_period for s in income]
    ends = [s.report_period for s in income]
    facts: list[Fact] = []
    for kind, line, label in lines:
        for statement in by_kind[kind]:
            if statement.fiscal_period not in fiscal:
                continue
            if line in RESTATED_ON_SPLITS and statement.fiscal_period != fiscal[-1]:
                continue  # older counts are restated for later splits, not as filed
            value = getattr(statement, line, None)
            source_of = statement.sources.get(line)
            if value is None or source_of is None:
                continue
            facts += await _facts_of(source, ticker, statement, line, label, value, source_of)
    history = History(ticker, company.name, fiscal, ends, facts)
    latest = fiscal[-1]
    missing = [line for line in required if history.value(line, latest) is None]
    if missing:
        raise DataError(
            f"{ticker}: the {latest} filing has no {', '.join(missing)}; the model needs them."
        )
    return history


async def _facts_of(
    source: StatementSource,
    ticker: str,
    statement: StatementBase,
    line: str,
    label: str,
    value: float,
    filed: Source,
) -> list[Fact]:
    def fact(concept: str, amount: float, suffix: str = "") -> Fact:
        # Payments are filed as positive amounts the statements show as outflows.
        filed_value = -amount if ":Payments" in concept and amount < 0 else amount
        return Fact(
            line=line,
            label=label + suffix,
            fiscal_year=statement.fiscal_period,
            period_end=statement.report_period,
            value=filed_value,
            concept=concept,
            accession=filed.accession_number or "",
            filed=filed.filing_date or "",
            form=filed.form or "",
            url=filed.url,
            sign=_sign(line, filed_value, amount),
        )

    concept = filed.concept or ""
    if not concept.startswith("computed:"):
        return [fact(concept, value)]
    rule = concept.removeprefix("computed:")
    if any(sign in rule for sign in ("−", " - ", "*", "/")):
        return [fact(concept, value)]  # not a plain sum: the rule is shown as its source
    found: list[Fact] = []
    for part in (p.strip() for p in rule.split("+")):
        try:
            series = await source.facts(ticker, part)
        except DataError:
            return [fact(concept, value)]
        points = [p for p in series if p.end == statement.report_period]
        # The same filing when the series kept it; else the later filing that repeats the value
        # (companyfacts keeps a comparative once, from the newest filing that reports it).
        point = next((p for p in points if p.accession_number == filed.accession_number), None)
        point = point or (points[0] if points else None)
        if point is None or not point.accession_number:
            return [fact(concept, value)]  # shown as computed: the reader sees the sum's rule
        found.append(
            Fact(
                line=line,
                label=f"{label}: {part.split(':')[-1]}",
                fiscal_year=statement.fiscal_period,
                period_end=statement.report_period,
                value=point.value,
                concept=part,
                accession=point.accession_number,
                filed=point.filed or "",
                form=point.form or "",
                url=_same_folder(filed, point.accession_number),
                sign=-1 if line in OUTFLOWS else 1,
            )
        )
    if abs(sum(f.value for f in found) - value) > 0.5:
        return [fact(concept, value)]
    return found


def _sign(line: str, filed_value: float, statement_value: float) -> int:
    """+1 or -1 so that the line's value (payments for OUTFLOWS) is sign x filed value."""
    wanted = -statement_value if line in OUTFLOWS else statement_value
    return -1 if wanted == -filed_value and filed_value != 0 else 1


def _same_folder(filed: Source, accession: str) -> str:
    """The index page of another filing by the same company, from this one's address."""
    old = filed.accession_number or ""
    if not old or old not in filed.url:
        return filed.url
    return filed.url.replace(old.replace("-", ""), accession.replace("-", "")).replace(
        old, accession
    )


__all__ = [
    "LINES",
    "THREE_STATEMENT_LINES",
    "THREE_STATEMENT_REQUIRED",
    "Fact",
    "History",
    "StatementSource",
    "annual_history",
]
