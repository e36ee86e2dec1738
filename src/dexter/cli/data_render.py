"""Tables for `dexter data`: statements read like statements (line items down, periods across),
every table ends with where its numbers came from."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from dexter.data.models import (
    FactPoint,
    Filing,
    FilingSection,
    InsiderTrade,
    InstitutionalHolding,
    NewsItem,
    Price,
    ScreenRow,
    Source,
    StatementBase,
)

_BASE_FIELDS = set(StatementBase.model_fields)
_PER_SHARE = ("per_share", "per_common_share")
_SHARE_COUNTS = ("shares",)
# Multiples and day counts; everything else in a metrics table is a fraction shown as a percent.
_RATIO_FIELDS = ("ratio", "turnover", "coverage", "debt_to", "days_sales", "operating_cycle")
_PERCENT_FIELDS = {"payout_ratio", "free_cash_flow_yield"}


_ACRONYMS = {"ebit": "EBIT", "ebitda": "EBITDA"}


def label(field: str) -> str:
    words = [_ACRONYMS.get(word, word) for word in field.split("_")]
    text = " ".join(words)
    return text[0].upper() + text[1:]


def money(value: float | None, *, millions: bool = True) -> str:
    if value is None:
        return "—"
    if millions:
        return f"{value / 1e6:,.0f}"
    return f"{value:,.2f}"


def percent(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


def _cell(field: str, value: Any, *, metrics: bool) -> str:
    if value is None:
        return "—"
    if metrics:
        if field in ("market_cap", "enterprise_value"):
            return money(value)
        if field in _PERCENT_FIELDS:
            return percent(value)
        if any(key in field for key in _RATIO_FIELDS) or field in _PER_SHARE_FIELDS:
            return f"{value:,.2f}"
        return percent(value)
    if any(key in field for key in _PER_SHARE):
        return f"{value:,.2f}"
    if any(key in field for key in _SHARE_COUNTS):
        return f"{value / 1e6:,.1f}"
    return money(value)


_PER_SHARE_FIELDS = {"earnings_per_share", "book_value_per_share", "free_cash_flow_per_share"}


def statements_table(rows: Sequence[StatementBase], *, title: str, metrics: bool = False) -> Table:
    currency = rows[0].currency if rows else "USD"
    caption = (
        "margins, returns and growth in %; other ratios as multiples"
        if metrics
        else f"{currency} millions; per-share figures in {currency}; share counts in millions"
    )
    table = Table(title=title, title_justify="left", caption=caption, caption_justify="left")
    table.add_column("", style="bold", no_wrap=True)
    for row in rows:
        table.add_column(row.fiscal_period, justify="right", no_wrap=True)
    fields = [f for f in type(rows[0]).model_fields if f not in _BASE_FIELDS] if rows else []
    table.add_row("Period end", *[row.report_period for row in rows], style="dim")
    for field in fields:
        values = [getattr(row, field) for row in rows]
        if all(v is None for v in values):
            continue
        table.add_row(label(field), *[_cell(field, v, metrics=metrics) for v in values])
    return table


def statement_sources(rows: Sequence[StatementBase]) -> list[str]:
    """Per period, the filings its numbers came from (a later filing's comparatives included)."""
    lines = []
    for row in rows:
        cited = dict.fromkeys(
            source.cite(concept=False) for source in row.sources.values() if source.accession_number
        )
        if cited:
            lines.append(f"{row.fiscal_period}: " + "; ".join(cited))
        elif row.accession_number:
            lines.append(f"{row.fiscal_period}: acc. {row.accession_number}")
    return lines


def print_sources(console: Console, lines: Sequence[str]) -> None:
    if not lines:
        return
    console.print(Text("Sources", style="bold"))
    for line in dict.fromkeys(lines):
        console.print(Text(f"  {line}", style="dim"))


def filings_table(filings: Sequence[Filing], *, title: str) -> Table:
    table = Table(title=title, title_justify="left")
    for column in ("Form", "Filed", "Period", "Accession", "Description"):
        table.add_column(column, no_wrap=column != "Description", overflow="fold")
    for f in filings:
        table.add_row(
            f.filing_type,
            f.filing_date,
            f.report_date or "—",
            f.accession_number,
            f.description or "",
        )
    return table


def filing_links(filings: Sequence[Filing]) -> list[str]:
    return [f"{f.accession_number}  {f.url}" for f in filings]


def section_text(section: FilingSection) -> tuple[str, str]:
    header = (
        f"{section.ticker} {section.filing_type} {section.report_date or section.filing_date} — "
        f"Item {section.item}: {section.title}"
    )
    return header, section.text


def insider_table(trades: Sequence[InsiderTrade], *, title: str) -> Table:
    table = Table(title=title, title_justify="left")
    for column in ("Date", "Name", "Role", "Type", "Shares", "Price", "Value", "Owned after"):
        table.add_column(
            column,
            justify="right" if column in ("Shares", "Price", "Value", "Owned after") else "left",
            overflow="fold",
        )
    for t in trades:
        table.add_row(
            t.transaction_date or t.filing_date or "—",
            t.name,
            t.title or ("Director" if t.is_board_director else "—"),
            t.transaction_type or t.transaction_code or "—",
            "—" if t.transaction_shares is None else f"{t.transaction_shares:,.0f}",
            "—"
            if t.transaction_price_per_share is None
            else f"{t.transaction_price_per_share:,.2f}",
            "—" if t.transaction_value is None else f"{t.transaction_value:,.0f}",
            "—"
            if t.shares_owned_after_transaction is None
            else f"{t.shares_owned_after_transaction:,.0f}",
        )
    return table


def holdings_table(rows: Sequence[InstitutionalHolding], *, title: str) -> Table:
    table = Table(title=title, title_justify="left", caption="value in USD", caption_justify="left")
    for column in ("Issuer", "Class", "CUSIP", "Shares", "Value", "Put/Call"):
        table.add_column(column, justify="right" if column in ("Shares", "Value") else "left")
    for h in rows:
        table.add_row(
            h.name_of_issuer,
            h.title_of_class or "—",
            h.cusip,
            "—" if h.shares is None else f"{h.shares:,.0f}",
            "—" if h.value_usd is None else f"{h.value_usd:,.0f}",
            h.put_call or "",
        )
    return table


def facts_table(points: Sequence[FactPoint], *, title: str) -> Table:
    unit = points[0].unit if points else ""
    table = Table(title=f"{title} ({unit})", title_justify="left")
    for column in ("Period", "Value", "Form", "Filed", "Accession"):
        table.add_column(column, justify="right" if column == "Value" else "left", no_wrap=True)
    for p in points:
        period = f"{p.start}\n→ {p.end}" if p.start else p.end
        table.add_row(period, f"{p.value:,}", p.form or "", p.filed or "", p.accession_number or "")
    return table


def prices_table(prices: Sequence[Price], *, title: str) -> Table:
    table = Table(title=title, title_justify="left")
    for column in ("Date", "Open", "High", "Low", "Close", "Volume"):
        table.add_column(column, justify="left" if column == "Date" else "right")
    for p in prices:
        table.add_row(
            p.time[:10],
            *[("—" if v is None else f"{v:,.2f}") for v in (p.open, p.high, p.low, p.close)],
            "—" if p.volume is None else f"{p.volume:,.0f}",
        )
    return table


def news_table(items: Sequence[NewsItem], *, title: str) -> Table:
    table = Table(title=title, title_justify="left")
    for column in ("Date", "Title", "Source", "URL"):
        table.add_column(column, overflow="fold")
    for n in items:
        table.add_row((n.date or "")[:10], n.title, n.source or "", n.url or "")
    return table


def screen_table(rows: Sequence[ScreenRow], *, title: str) -> Table:
    table = Table(title=title, title_justify="left")
    for column in ("#", "Ticker", "Company", "Value", "Period end", "Accession"):
        table.add_column(column, justify="right" if column in ("#", "Value") else "left")
    for rank, r in enumerate(rows, 1):
        table.add_row(
            str(rank),
            r.ticker or "—",
            r.name,
            f"{r.value:,.0f}",
            r.period or "",
            r.accession_number or "",
        )
    return table


def sources_of(items: Sequence[Any]) -> list[str]:
    out: list[str] = []
    for item in items:
        source = getattr(item, "source", None)
        if isinstance(source, Source):
            out.append(source.cite())
    return out
