"""Point-in-time valuations as the model reads them: one column per day, each figure cited."""

from __future__ import annotations

from collections.abc import Sequence

from dexter.data.models import Company
from dexter.data.valuation import Valuation
from dexter.tools.citations import SourceLedger
from dexter.tools.finance.format import _cite, _legend

_ROWS = (
    ("Market cap (M)", "market_cap", "millions"),
    ("Enterprise value (M)", "enterprise_value", "millions"),
    ("P/E (TTM)", "price_to_earnings_ratio", "ratio"),
    ("P/S (TTM)", "price_to_sales_ratio", "ratio"),
    ("P/B", "price_to_book_ratio", "ratio"),
    ("EV/EBITDA (TTM)", "enterprise_value_to_ebitda_ratio", "ratio"),
    ("EV/Sales (TTM)", "enterprise_value_to_revenue_ratio", "ratio"),
    ("Dividend yield (TTM)", "dividend_yield", "percent"),
    ("FCF yield (TTM)", "free_cash_flow_yield", "percent"),
)


def _cell(value: float | int | None, kind: str) -> str:
    if value is None:
        return "—"
    if kind == "millions":
        return f"{value / 1e6:,.0f}"
    if kind == "percent":
        return f"{value * 100:.2f}%"
    return f"{value:,.2f}"


def format_valuation(
    rows: Sequence[Valuation], *, ledger: SourceLedger, company: Company, priced_by: str
) -> str:
    currency = next((v.currency for v in rows if v.currency), "USD")
    head = f"## {company.name} ({company.ticker}) — valuation on {', '.join(v.date for v in rows)}"
    lines = [
        f"{head} ({currency}; each day's close and the statements filed by that day)",
        "| | " + " | ".join(v.date for v in rows) + " |",
        "|---|" + "---:|" * len(rows),
    ]
    price_id = ledger.add(f"{priced_by} daily closes, {company.ticker} (split-adjusted)")
    ids: list[str | None] = [price_id]
    closes = [
        f"{v.inputs['price']:,.2f} on {v.price_date} [{price_id}]" if "price" in v.inputs else "—"
        for v in rows
    ]
    lines.append("| Close | " + " | ".join(closes) + " |")
    shares = []
    for v in rows:
        sid = _cite(ledger, v.input_sources.get("shares_outstanding"))
        ids.append(sid)
        count = v.inputs.get("shares_outstanding")
        factor = v.inputs.get("split_factor", 1)
        text = "—" if count is None else f"{count * factor / 1e6:,.1f}"
        if count is not None and factor != 1:
            text += f" ({count / 1e6:,.1f} filed × {factor:g})"
        shares.append(text + (f" [{sid}]" if sid and count is not None else ""))
    lines.append("| Shares (M) | " + " | ".join(shares) + " |")
    for label, field, kind in _ROWS:
        cells = []
        for v in rows:
            sid = _cite(ledger, v.sources.get(field))
            ids.append(sid)
            value = getattr(v, field)
            cells.append(_cell(value, kind) + (f" [{sid}]" if sid and value is not None else ""))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    formulas = dict.fromkeys(
        f"{name} = {(s.concept or '').removeprefix('computed: ')}"
        for v in rows
        for name, s in v.sources.items()
    )
    if formulas:
        lines.append("Formulas: " + "; ".join(formulas) + ".")
    notes = dict.fromkeys(note for v in rows for note in v.notes)
    if notes:
        lines.append("Notes: " + " ".join(n if n.endswith(".") else f"{n}." for n in notes))
    lines += _legend(ledger, ids)
    return "\n".join(lines)
