"""Tables for `dexter data`: statements read like statements (line items down, periods across),
every table ends with where its numbers came from."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from dexter.cli.tables import MISSING, Cell, Col, Figure, Grid, print_wrapped
from dexter.data.models import (
    FactPoint,
    Filing,
    FilingSection,
    Holdings,
    InsiderTrade,
    InstitutionalHolding,
    NewsItem,
    Price,
    PriceSnapshot,
    ScreenRow,
    Source,
    StatementBase,
)
from dexter.data.notes import period_notes
from dexter.data.sec.filing_docs import FilingDocuments
from dexter.data.sec.fulltext import SearchPage
from dexter.reports.model import fiscal_label
from dexter.tools.finance.format import CellKind, cell_kind

if TYPE_CHECKING:
    from dexter.data.valuation import Valuation

_BASE_FIELDS = set(StatementBase.model_fields)
_PER_SHARE = ("per_share", "per_common_share")
_SHARE_COUNTS = ("shares",)


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


def _statement_cell(field: str, value: float) -> str:
    if any(key in field for key in _PER_SHARE):
        return f"{value:,.2f}"
    if any(key in field for key in _SHARE_COUNTS):
        return f"{value / 1e6:,.1f}"
    return money(value)


def _metric_cell(kind: CellKind, value: float) -> str:
    if kind == "money":
        return money(value)
    if kind == "percent":
        return percent(value)
    if kind == "days":
        return f"{value:,.1f}"
    return f"{value:,.2f}"  # multiples and per-share figures


def _figure(field: str, value: Any, *, metrics: bool) -> Figure:
    if value is None:
        return MISSING
    text = _metric_cell(cell_kind(field, metric=True), value) if metrics else None
    return Figure(text or _statement_cell(field, value), value)


def _metric_caption(fields: Sequence[str], currency: str) -> str:
    """The units of the metric rows shown, each said once, in the order the rows come."""
    by_kind: dict[CellKind, list[str]] = {}
    for field in fields:
        by_kind.setdefault(cell_kind(field, metric=True), []).append(label(field).lower())
    notes = {
        "percent": "margins, returns, growth, yield and payout in %",
        "multiple": "turnover, liquidity, leverage and valuation ratios as multiples",
        "days": " and ".join(by_kind.get("days", [])) + " in days",
        "per_share_computed": f"per-share figures in {currency}",
        "money": f"market cap and enterprise value in {currency} millions",
    }
    text = "; ".join(notes[kind] for kind in by_kind if kind in notes)
    return text[:1].upper() + text[1:]


def statements_table(rows: Sequence[StatementBase], *, title: str, metrics: bool = False) -> Grid:
    """Line items down, periods across from the oldest to the newest (as charts and reports
    read them)."""
    rows = sorted(rows, key=lambda row: row.report_period)
    currency = rows[0].currency if rows else "USD"
    fields = [f for f in type(rows[0]).model_fields if f not in _BASE_FIELDS] if rows else []
    fields = [f for f in fields if any(getattr(row, f) is not None for row in rows)]
    caption = (
        _metric_caption(fields, currency)
        if metrics
        else f"{currency} millions; per-share figures in {currency}; share counts in millions"
    )
    notes = period_notes(rows, lambda row: fiscal_label(row.fiscal_period, row.period))
    if notes:
        caption = " ".join([caption.rstrip(".") + ".", *notes])
    columns = [Col("", key=True, style="bold", csv_header="line item")]
    # The same period labels as the charts and reports: FY2025, Q1 FY2026 (not 2025-FY).
    columns += [Col(fiscal_label(row.fiscal_period, row.period), figure=True) for row in rows]
    grid = Grid(title=title, columns=columns, caption=caption)
    grid.add_row("Period end", *[Figure(row.report_period) for row in rows], style="dim")
    for field in fields:
        values = [getattr(row, field) for row in rows]
        grid.add_row(label(field), *[_figure(field, v, metrics=metrics) for v in values])
    return grid


def statement_sources(rows: Sequence[StatementBase]) -> list[str]:
    """Per period, oldest first, the filings its numbers came from (a later filing's
    comparatives included)."""
    lines = []
    for row in sorted(rows, key=lambda row: row.report_period):
        # One citation per filing: a restated share figure names the same filing again (the
        # caption says what was restated).
        by_filing: dict[str, str] = {}
        for source in row.sources.values():
            if source.accession_number:
                by_filing.setdefault(source.accession_number, _cited(source))
        cited = by_filing.values()
        period = fiscal_label(row.fiscal_period, row.period)
        if cited:
            lines.append(f"{period}: " + "; ".join(cited))
        elif row.accession_number:
            lines.append(f"{period}: acc. {row.accession_number}")
    return lines


def _cited(source: Source) -> str:
    """A filing's citation; outside EDGAR (ESEF reports) with its URL, which no accession
    number leads a reader to."""
    label = source.cite(concept=False)
    return label if "sec.gov" in source.url or not source.url else f"{label} {source.url}"


def print_sources(console: Console, lines: Sequence[str]) -> None:
    if not lines:
        return
    console.print(Text("Sources", style="bold"))
    for line in dict.fromkeys(lines):
        # Wrapped source lines keep their indent, so each period's citation reads as one item.
        print_wrapped(console, line, style="dim", indent=2)


def _number(value: float | int | None, spec: str = ",.0f") -> Figure:
    return MISSING if value is None else Figure(format(value, spec), value)


def filings_table(filings: Sequence[Filing], *, title: str) -> Grid:
    grid = Grid(
        title=title,
        columns=[
            Col("Form", whole=True, key=True),
            Col("Filed", whole=True, key=True),
            Col("Period", whole=True),
            Col("Accession", whole=True),
            Col("Description"),
            Col("URL", csv_only=True),
        ],
    )
    for f in filings:
        grid.add_row(
            f.filing_type,
            f.filing_date,
            f.report_date or "—",
            f.accession_number,
            f.description or "",
            f.url,
        )
    return grid


def filing_links(filings: Sequence[Filing]) -> list[str]:
    return [f"{f.accession_number}  {f.url}" for f in filings]


def section_text(section: FilingSection) -> tuple[str, str]:
    header = (
        f"{section.ticker} {section.filing_type} {section.report_date or section.filing_date} — "
        f"Item {section.item}: {section.title}"
    )
    return header, section.text


def insider_table(trades: Sequence[InsiderTrade], *, title: str) -> Grid:
    grid = Grid(
        title=title,
        columns=[
            Col("Date", whole=True, key=True),
            # A key: the same trade in a Form 5 and its 5/A differs only here.
            Col("Form", whole=True, key=True),
            Col("Name", key=True, min_width=12),
            Col("Role", min_width=10),
            Col("Type", min_width=8),
            Col("Shares", figure=True),
            Col("Price", figure=True),
            Col("Value", figure=True),
            Col("Owned after", figure=True),
        ],
        caption="prices in USD per share; values in USD; Form: the filing that reported it "
        "(4, or 5 for the annual statement; /A an amendment)",
    )
    for t in trades:
        grid.add_row(
            t.transaction_date or t.filing_date or "—",
            t.form_type or (t.source.form if t.source else None) or "—",
            t.name,
            t.title or ("Director" if t.is_board_director else "—"),
            t.transaction_type or t.transaction_code or "—",
            _number(t.transaction_shares),
            _number(t.transaction_price_per_share, ",.2f"),
            _number(t.transaction_value),
            _number(t.shares_owned_after_transaction),
        )
    return grid


def holdings_table(
    rows: Sequence[InstitutionalHolding], *, title: str, ranked: bool = False
) -> Grid:
    """One row per position; `ranked` when the rows are the report's largest by value, which
    the caption then says (and a # column numbers them)."""
    columns = [Col("#", figure=True, key=True)] if ranked else []
    columns += [
        Col("Issuer", key=True),
        Col("Class", min_width=8),
        Col("CUSIP", whole=True),
        Col("Shares", figure=True),
        Col("Value", figure=True),
        Col("Put/Call", min_width=4),
    ]
    caption = "value in USD; largest value first" if ranked else "value in USD"
    grid = Grid(title=title, columns=columns, caption=caption)
    for rank, h in enumerate(rows, 1):
        cells: list[Cell] = [Figure(str(rank), rank)] if ranked else []
        cells += [
            h.name_of_issuer,
            h.title_of_class or "—",
            h.cusip,
            _number(h.shares),
            _number(h.value_usd),
            h.put_call or "",
        ]
        grid.add_row(*cells)
    return grid


def holdings_shown(rows: Holdings) -> str:
    """How much of the report the list shows: every position, or N of the total with the count
    and value of the rest and how to see them."""
    total = f"USD {rows.total_value_usd:,.0f}"
    if not rows.omitted_count:
        return f"All {rows.total_count:,} holdings of the report, worth {total} in all."
    share = rows.omitted_value_usd / rows.total_value_usd if rows.total_value_usd else None
    part = f", {share:.1%} of the report's {total}" if share is not None else ""
    return (
        f"{len(rows):,} of {rows.total_count:,} holdings, largest value first; the other "
        f"{rows.omitted_count:,} (USD {rows.omitted_value_usd:,.0f}{part}) are not shown: use "
        "--limit N or --all to see more."
    )


def facts_table(points: Sequence[FactPoint], *, title: str) -> Grid:
    unit = points[0].unit if points else ""
    grid = Grid(
        title=f"{title} ({unit})",
        columns=[
            Col("Start", whole=True, key=True),
            Col("End", whole=True, key=True),
            Col("Value", figure=True),
            Col("Form", whole=True),
            Col("Filed", whole=True),
            Col("Accession", whole=True),
        ],
    )
    for p in points:
        grid.add_row(
            p.start or "",
            p.end,
            Figure(f"{p.value:,}", p.value),
            p.form or "",
            p.filed or "",
            p.accession_number or "",
        )
    return grid


def _price(value: float | int | None) -> Figure:
    # Currency pairs and penny stocks need the digits a large-cap price does not.
    return _number(value, ",.2f" if value is None or abs(value) >= 10 else ",.4f")


def prices_table(prices: Sequence[Price], *, title: str) -> Grid:
    """OHLCV; with key-less prices also the adjusted close, dividends and splits."""
    adjusted = any(p.adjusted_close is not None for p in prices)
    events = any(p.dividend is not None or p.split for p in prices)
    currencies = {p.currency for p in prices if p.currency}
    if len(currencies) == 1:
        title = f"{title} ({currencies.pop()})"
    names = ["Open", "High", "Low", "Close"] + (["Adj close"] if adjusted else []) + ["Volume"]
    columns = [Col("Date", whole=True, key=True), *[Col(n, figure=True) for n in names]]
    if events:
        columns += [Col("Dividend", figure=True), Col("Split", whole=True)]
    grid = Grid(title=title, columns=columns)
    for p in prices:
        cells: list[Any] = [p.time[:10], *[_price(v) for v in (p.open, p.high, p.low, p.close)]]
        if adjusted:
            cells.append(_price(p.adjusted_close))
        cells.append(_number(p.volume))
        if events:
            cells += [_number(p.dividend, ",.4f") if p.dividend else "", p.split or ""]
        grid.add_row(*cells)
    return grid


def quote_table(quote: PriceSnapshot, *, title: str) -> Grid:
    grid = Grid(
        title=title,
        columns=[
            Col("Price", figure=True),
            Col("Currency", whole=True),
            Col("Change", figure=True),
            Col("Change %", figure=True),
            Col("Time", whole=True),
        ],
    )
    grid.add_row(
        _price(quote.price),
        quote.currency or "",
        _number(quote.day_change, "+,.4f" if abs(quote.price) < 10 else "+,.2f"),
        _number(quote.day_change_percent, "+.2f"),
        quote.time or "",
    )
    return grid


def news_table(items: Sequence[NewsItem], *, title: str) -> Grid:
    grid = Grid(
        title=title,
        columns=[
            Col("Date", whole=True, key=True),
            Col("Title", key=True),
            Col("Source", min_width=8),
            Col("URL", min_width=20),
        ],
    )
    for n in items:
        grid.add_row((n.date or "")[:10], n.title, n.source or "", n.url or "")
    return grid


def screen_table(rows: Sequence[ScreenRow], *, title: str) -> Grid:
    grid = Grid(
        title=title,
        columns=[
            Col("#", figure=True, key=True),
            Col("Ticker", whole=True, key=True),
            Col("Company", min_width=12),
            Col("Value", figure=True),
            Col("Period end", whole=True),
            Col("Accession", whole=True),
        ],
    )
    for rank, r in enumerate(rows, 1):
        grid.add_row(
            Figure(str(rank), rank),
            r.ticker or "—",
            r.name,
            Figure(f"{r.value:,.0f}", r.value),
            r.period or "",
            r.accession_number or "",
        )
    return grid


def sources_of(items: Sequence[Any]) -> list[str]:
    out: list[str] = []
    for item in items:
        source = getattr(item, "source", None)
        if isinstance(source, Source):
            out.append(source.cite())
    return out


def documents_table(filing: FilingDocuments) -> Grid:
    who = filing.company_name or f"CIK {int(filing.cik)}"
    title = f"{who} — {filing.form or 'filing'} {filing.accession_number}"
    if filing.filing_date:
        title += f", filed {filing.filing_date}"
    grid = Grid(
        title=title,
        columns=[
            Col("Seq", figure=True),
            Col("Type", whole=True, key=True),
            Col("Document", whole=True, key=True),
            Col("Description"),
            Col("Size", figure=True, optional=True),
            Col("URL", csv_only=True),
        ],
        caption="Items: " + "; ".join(filing.items) if filing.items else "",
    )
    for doc in filing.documents:
        grid.add_row(
            str(doc.sequence) if doc.sequence else "",
            doc.type or "",
            doc.name,
            doc.description or "",
            Figure(f"{doc.size:,}", doc.size) if doc.size else "",
            doc.url,
        )
    return grid


def search_table(page: SearchPage) -> Grid:
    exact = "" if page.total_is_exact else "more than "
    grid = Grid(
        title=f"EDGAR full-text search {page.query!r} — {exact}{page.total:,} documents",
        columns=[
            Col("Filed", whole=True, key=True),
            Col("Company"),
            Col("Form", whole=True),
            Col("Type", whole=True),
            Col("Accession", whole=True),
            Col("File", whole=True, optional=True),
            Col("URL", csv_only=True),
        ],
    )
    for hit in page.hits:
        grid.add_row(
            hit.filing_date or "",
            "; ".join(hit.company_names) or hit.cik,
            hit.form or "",
            hit.file_type or "",
            hit.accession_number,
            hit.file_name,
            hit.url,
        )
    return grid


_VALUATION_COLUMNS = (
    ("Market cap (M)", "market_cap", "millions"),
    ("EV (M)", "enterprise_value", "millions"),
    ("P/E", "price_to_earnings_ratio", "ratio"),
    ("P/S", "price_to_sales_ratio", "ratio"),
    ("P/B", "price_to_book_ratio", "ratio"),
    ("EV/EBITDA", "enterprise_value_to_ebitda_ratio", "ratio"),
    ("EV/Sales", "enterprise_value_to_revenue_ratio", "ratio"),
    ("Div. yield", "dividend_yield", "percent"),
    ("FCF yield", "free_cash_flow_yield", "percent"),
)


def valuation_table(rows: Sequence[Valuation], *, title: str) -> Grid:
    """One row per day: the close used and the ratios (values in millions of the currency)."""
    currencies = {v.currency for v in rows if v.currency}
    if len(currencies) == 1:
        title = f"{title} ({currencies.pop()})"
    grid = Grid(
        title=title,
        columns=[
            Col("Date", whole=True, key=True),
            Col("Close on", whole=True),
            Col("Close", figure=True),
            *[Col(header, figure=True) for header, _, _ in _VALUATION_COLUMNS],
        ],
    )
    for v in rows:
        cells: list[Any] = [v.date, v.price_date or "", _price(v.inputs.get("price"))]
        for _, field, kind in _VALUATION_COLUMNS:
            value = getattr(v, field)
            if value is None:
                cells.append(MISSING)
            elif kind == "millions":
                cells.append(Figure(f"{value / 1e6:,.0f}", value))
            elif kind == "percent":
                cells.append(Figure(f"{value * 100:.2f}%", value))
            else:
                cells.append(Figure(f"{value:,.1f}", value))
        grid.add_row(*cells)
    return grid


def valuation_sources(rows: Sequence[Valuation]) -> list[str]:
    """Each formula once, then the filings and the price source the rows rest on, then notes."""
    lines: dict[str, None] = {}
    for v in rows:
        for name, source in v.sources.items():
            lines[f"{name}: {(source.concept or '').removeprefix('computed: ')}"] = None
    for v in rows:
        for source in v.input_sources.values():
            if source.accession_number:
                lines[source.cite(concept=False)] = None
        price = v.input_sources.get("price")
        if price is not None:
            lines[f"prices: {price.provider} (closes split-adjusted to today)"] = None
    return list(lines)


def valuation_notes(rows: Sequence[Valuation]) -> list[str]:
    notes: dict[str, None] = {}
    for v in rows:
        for note in v.notes:
            if note.startswith(("income statement:", "balance sheet:")):
                continue  # the Sources name the filings; every row would repeat these
            notes[note] = None
    return list(notes)
