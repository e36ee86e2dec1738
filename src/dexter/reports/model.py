"""A research report as plain data: the question, the answer, its sources, and the tables of
figures the tools fetched. Built from what a run stored (no model call); every renderer
(Markdown, HTML, PDF, XLSX, the terminal) reads only this."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from dexter.data.models import BalanceSheet, CashFlowStatement, FinancialMetrics, IncomeStatement
from dexter.figures.types import Verification
from dexter.tools.finance.format import CellKind, cell_kind, field_label

StatementKind = Literal["income", "balance", "cashflow", "metrics"]

TITLES: Mapping[StatementKind, str] = {
    "income": "Income statement",
    "balance": "Balance sheet",
    "cashflow": "Cash flow statement",
    "metrics": "Financial metrics",
}
# Which data call produced which kind of table.
TOOL_KINDS: Mapping[str, StatementKind] = {
    "income_statements": "income",
    "balance_sheets": "balance",
    "cash_flow_statements": "cashflow",
    "financial_metrics": "metrics",
}
_FIELDS: Mapping[StatementKind, tuple[str, ...]] = {
    "income": tuple(f for f in IncomeStatement.model_fields if f not in BalanceSheet.model_fields),
    "balance": tuple(f for f in BalanceSheet.model_fields if f not in IncomeStatement.model_fields),
    "cashflow": tuple(
        f for f in CashFlowStatement.model_fields if f not in BalanceSheet.model_fields
    ),
    "metrics": tuple(
        f for f in FinancialMetrics.model_fields if f not in BalanceSheet.model_fields
    ),
}
# The lines worth drawing, by kind: (fields plotted together, unit kind).
CHART_LINES: Mapping[StatementKind, tuple[tuple[str, ...], ...]] = {
    "income": (
        ("revenue", "gross_profit", "operating_income", "net_income"),
        ("gross_margin", "operating_margin", "net_margin"),
        ("earnings_per_share_diluted",),
    ),
    "balance": (("total_assets", "total_liabilities", "shareholders_equity", "total_debt"),),
    "cashflow": (("net_cash_flow_from_operations", "capital_expenditure", "free_cash_flow"),),
    "metrics": (
        ("gross_margin", "operating_margin", "net_margin"),
        ("return_on_equity", "return_on_assets", "return_on_invested_capital"),
    ),
}
# Margins an income table does not carry but a reader expects: numerator, denominator.
DERIVED_MARGINS: Mapping[str, tuple[str, str]] = {
    "gross_margin": ("gross_profit", "revenue"),
    "operating_margin": ("operating_income", "revenue"),
    "net_margin": ("net_income", "revenue"),
}


@dataclass(frozen=True)
class Row:
    field: str
    label: str
    kind: CellKind
    values: tuple[float | None, ...]


@dataclass(frozen=True)
class Filed:
    """A filing that figures came from: "SEC EDGAR 10-K filed 2024-11-01, acc. …" and its page."""

    label: str
    url: str | None = None
    filing_date: str | None = None


@dataclass(frozen=True)
class Table:
    """One statement for one company, oldest period first (as charts read it). Each period
    cites the filings its own figures came from: comparatives in a later 10-K cite that 10-K."""

    kind: StatementKind
    company: str
    ticker: str
    currency: str
    periods: tuple[str, ...]  # fiscal labels, e.g. "FY2025" or "Q1 FY2026"
    period_ends: tuple[str, ...]
    rows: tuple[Row, ...]
    source_ids: tuple[str, ...] = ()
    period_sources: tuple[tuple[Filed, ...], ...] = ()  # one tuple per period, newest filing first

    @property
    def title(self) -> str:
        return f"{self.company or self.ticker}: {TITLES[self.kind]}"

    def filed_by_period(self) -> list[tuple[str, tuple[Filed, ...]]]:
        """(period, the filings its figures came from) for every period, oldest first."""
        missing = len(self.periods) - len(self.period_sources)
        return list(zip(self.periods, (*self.period_sources, *[()] * missing), strict=True))

    def row(self, name: str) -> Row | None:
        return next((r for r in self.rows if r.field == name), None)


@dataclass(frozen=True)
class Source:
    id: str
    label: str
    url: str | None = None


@dataclass(frozen=True)
class Report:
    question: str
    answer: str
    status: str
    model: str
    created_at: str  # ISO 8601
    session_id: str
    run_id: str
    sources: tuple[Source, ...] = ()
    tables: tuple[Table, ...] = ()
    as_of: str | None = None
    title: str = field(default="")
    # How the answer's figures were checked against the run's data (None: not checked).
    verification: Verification | None = None

    @property
    def heading(self) -> str:
        return self.title or _title_from(self.question)

    @property
    def latest_filing(self) -> str | None:
        """The day the newest figure in the tables was filed (None when no table says)."""
        days = [f.filing_date for t in self.tables for p in t.period_sources for f in p]
        return max((d for d in days if d), default=None)

    @property
    def figures_after_as_of(self) -> bool:
        """Does the report hold figures filed (or periods ended) after the as-of date it
        states? Then stating that date alone would mislead."""
        if not self.as_of:
            return False
        ends = [end for table in self.tables for end in table.period_ends if end]
        latest = self.latest_filing or max(ends, default="")
        return latest > self.as_of


def _title_from(question: str) -> str:
    text = " ".join(question.split())
    return text if len(text) <= 90 else text[:87].rstrip() + "…"


def fiscal_label(fiscal_period: str, period: str) -> str:
    """'2025-FY' -> 'FY2025'; '2026-Q1' -> 'Q1 FY2026'; anything else unchanged."""
    year, _, part = fiscal_period.partition("-")
    if not year.isdigit() or not part:
        return fiscal_period or period
    return f"FY{year}" if part.upper() == "FY" else f"{part.upper()} FY{year}"


def table_from_records(
    kind: StatementKind, records: Sequence[Mapping[str, Any]], company: Mapping[str, Any]
) -> Table | None:
    """A table from a data call's records (newest first as fetched); None when empty."""
    usable = [r for r in records if isinstance(r, Mapping) and r.get("report_period")]
    if not usable:
        return None
    usable.sort(key=lambda r: str(r.get("report_period")))
    metric = kind == "metrics"
    rows: list[Row] = []
    for name in _FIELDS[kind]:
        values = tuple(_number(r.get(name)) for r in usable)
        if any(v is not None for v in values):
            rows.append(Row(name, field_label(name), cell_kind(name, metric=metric), values))
    if kind == "income":
        rows += _derived_margins(rows)
    first = usable[-1]
    return Table(
        kind=kind,
        company=str(company.get("name") or first.get("ticker") or ""),
        ticker=str(first.get("ticker") or company.get("ticker") or ""),
        currency=str(first.get("currency") or "USD"),
        periods=tuple(
            fiscal_label(str(r.get("fiscal_period") or ""), str(r.get("period") or ""))
            for r in usable
        ),
        period_ends=tuple(str(r.get("report_period")) for r in usable),
        rows=tuple(rows),
        period_sources=tuple(_filed(r) for r in usable),
    )


def _filed(record: Mapping[str, Any]) -> tuple[Filed, ...]:
    """The filings one period's figures came from, per field provenance; newest filing first."""
    from dexter.data.models import Source as DataSource

    found: dict[str, Filed] = {}
    sources = record.get("sources")
    for raw in sources.values() if isinstance(sources, Mapping) else ():
        try:
            source = DataSource.model_validate(raw)
        except ValueError:
            continue  # a stored record from another version: its other sources still count
        key = source.accession_number or source.url
        if key and key not in found:
            said = [
                source.provider,
                source.form,
                f"filed {source.filing_date}" if source.filing_date else None,
            ]
            label = " ".join(part for part in said if part)
            if source.accession_number:
                label += f", acc. {source.accession_number}"
            found[key] = Filed(label, source.url, source.filing_date)
    if not found and record.get("accession_number"):
        accession = str(record["accession_number"])
        url = record.get("filing_url")
        found[accession] = Filed(f"acc. {accession}", str(url) if url else None)
    return tuple(sorted(found.values(), key=lambda f: f.filing_date or "", reverse=True))


def _derived_margins(rows: Sequence[Row]) -> list[Row]:
    by_name = {r.field: r for r in rows}
    derived = []
    for name, (top, bottom) in DERIVED_MARGINS.items():
        if name in by_name or top not in by_name or bottom not in by_name:
            continue
        values = tuple(
            (t / b) if t is not None and b not in (None, 0) else None
            for t, b in zip(by_name[top].values, by_name[bottom].values, strict=True)
        )
        derived.append(Row(name, f"{field_label(name)} (computed)", "percent", values))
    return derived


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


__all__ = [
    "CHART_LINES",
    "TITLES",
    "TOOL_KINDS",
    "Filed",
    "Report",
    "Row",
    "Source",
    "StatementKind",
    "Table",
    "fiscal_label",
    "table_from_records",
]
