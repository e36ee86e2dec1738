"""What the model reads from a data call: compact markdown with units and source ids.

Pure functions from records (and the run's `SourceLedger`) to text. Every block states its units
and shows an id like [S3] next to its figures, registered in the ledger so the answer can cite it.

Deliberate differences from the original's formatters, whose bugs cost answers:
- every non-empty field is kept (a DCF needs capex, D&A, SBC, shares, debt and cash, not four
  headline columns);
- nothing is dropped silently: a capped table says "showing N of M", and totals cover every row;
- periods are labelled as the company labels them (fiscal period plus period end), never as a
  calendar quarter guessed from the date;
- records are listed, never keyed by ticker or period, so nothing overwrites anything.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from dexter.data.models import (
    Company,
    FactPoint,
    Filing,
    FilingList,
    FilingSection,
    FinancialMetrics,
    HistoryGap,
    Holdings,
    InsiderTrade,
    InsiderTrades,
    InstitutionalHolding,
    NewsItem,
    Price,
    PriceSnapshot,
    ScreenRow,
    Source,
    StatementBase,
)
from dexter.data.notes import period_notes
from dexter.data.sec import urls as sec_urls
from dexter.data.sec.history import missing_history
from dexter.tools.citations import SourceLedger
from dexter.tools.untrusted import wrap_untrusted

NONE = "—"
GAP = "[…]"
MAX_TABLE_ROWS = 25
MAX_PRICE_ROWS = 30
MAX_FACT_ROWS = 100

StatementKind = Literal["income_statement", "balance_sheet", "cash_flow", "metrics"]
PriceRows = Literal["spread", "recent"]

KIND_TITLES: dict[str, str] = {
    "income_statement": "income statement",
    "balance_sheet": "balance sheet",
    "cash_flow": "cash flow statement",
    "metrics": "financial metrics",
}

# ---------------------------------------------------------------------------------------------
# Numbers


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _trim_decimals(text: str, keep: int) -> str:
    """Drop trailing zeros beyond `keep` decimals: 150.8410 -> 150.841, 7.4900 -> 7.49."""
    if "." not in text:
        return text
    whole, fraction = text.split(".")
    fraction = fraction.rstrip("0")
    if len(fraction) < keep:
        fraction = fraction.ljust(keep, "0")
    return f"{whole}.{fraction}" if fraction else whole


def fmt_int(value: float | None) -> str:
    """Whole units with thousands separators: shares, volumes, dollar values of trades."""
    return f"{value:,.0f}" if _finite(value) else NONE


def fmt_money_millions(value: float | None) -> str:
    """A currency amount in millions: one decimal where it says something (416,161; 12.3)."""
    if value is None or not _finite(value):
        return NONE
    millions = value / 1e6
    if millions == 0:
        return "0"
    if abs(millions) < 1:
        # Small amounts would all round to 0.0; three decimals keep them distinguishable.
        return _trim_decimals(f"{millions:,.3f}", 1)
    text = f"{millions:,.1f}"
    return text[:-2] if text.endswith(".0") else text


def fmt_shares_millions(value: float | None) -> str:
    """Share counts in millions, like money: 14,948.5."""
    return fmt_money_millions(value)


def fmt_per_share(value: float | None, *, max_decimals: int = 4) -> str:
    """Per-share amounts and prices: at least two decimals, more when the filing has them."""
    if value is None or not _finite(value):
        return NONE
    return _trim_decimals(f"{value:,.{max(max_decimals, 2)}f}", 2)


fmt_price = fmt_per_share


def fmt_percent(fraction: float | None, *, decimals: int = 1) -> str:
    """A decimal fraction as a percent: 0.469 -> 46.9%."""
    if fraction is None or not _finite(fraction):
        return NONE
    return f"{fraction * 100:,.{decimals}f}%"


def fmt_signed_percent(fraction: float | None, *, decimals: int = 1) -> str:
    if fraction is None or not _finite(fraction):
        return NONE
    return f"{fraction * 100:+,.{decimals}f}%"


def fmt_multiple(value: float | None) -> str:
    """A ratio read as "times": 1.34x."""
    if value is None or not _finite(value):
        return NONE
    return f"{value:,.2f}x"


def fmt_days(value: float | None) -> str:
    if value is None or not _finite(value):
        return NONE
    return f"{value:,.1f} days"


def fmt_plain(value: float | None) -> str:
    """A value with no known scale (an XBRL fact, a screen row): exactly as reported."""
    if value is None or not _finite(value):
        return NONE
    if float(value).is_integer():
        return f"{value:,.0f}"
    return _trim_decimals(f"{value:,.6f}", 1)


# ---------------------------------------------------------------------------------------------
# Shared pieces


def _text(value: object) -> str:
    """A table cell: pipes and line breaks would break the markdown table."""
    if value is None or value == "":
        return NONE
    return re.sub(r"\s+", " ", str(value)).replace("|", "/").strip()


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _who(company: Company | None, ticker: str | None) -> str:
    if company is not None:
        return f"{company.name} ({company.ticker})"
    return ticker or "Unknown company"


def _cite(ledger: SourceLedger, source: Source | Mapping[str, Any] | None) -> str | None:
    """Register a source and return its id; dicts come from providers' raw segment records."""
    if source is None:
        return None
    if not isinstance(source, Source):
        try:
            source = Source.model_validate(dict(source))
        except ValueError:
            return None
    label = source.cite(concept=False)
    if source.accession_number:
        # One filing, one id: statements cite a filing's index page, sections and filing lists
        # its primary document, and the reader should see a single [S#] for both.
        for entry in ledger.entries():
            if entry.label == label:
                return entry.id
    return ledger.add(label, source.url or None)


def _ids(ids: Iterable[str | None]) -> str:
    unique = sorted({i for i in ids if i}, key=lambda i: int(i[1:]))
    return " ".join(f"[{i}]" for i in unique) if unique else NONE


def _legend(ledger: SourceLedger, ids: Iterable[str | None]) -> list[str]:
    """The sources a block cites, spelled out, so the model knows what each id stands for."""
    wanted = {i for i in ids if i}
    entries = [e for e in ledger.entries() if e.id in wanted]
    if not entries:
        return []
    return ["Sources:", *(f"- [{e.id}] {e.label}" for e in entries)]


def _showing(shown: int, total: int, what: str) -> str:
    return f"Showing {shown} of {total} {what}."


# ---------------------------------------------------------------------------------------------
# Statements and metrics

_BASE_FIELDS = frozenset(StatementBase.model_fields)
_SHARE_COUNTS = frozenset(
    {"weighted_average_shares", "weighted_average_shares_diluted", "outstanding_shares"}
)
_LABELS = {
    "revenue": "Revenue",
    "ebit": "EBIT",
    "earnings_per_share": "EPS, basic",
    "earnings_per_share_diluted": "EPS, diluted",
    "dividends_per_common_share": "Dividends per share",
    "selling_general_and_administrative_expenses": "SG&A",
    "research_and_development": "R&D",
    "net_cash_flow_from_operations": "Operating cash flow",
    "net_cash_flow_from_investing": "Investing cash flow",
    "net_cash_flow_from_financing": "Financing cash flow",
    "depreciation_and_amortization": "Depreciation & amortization",
    "share_based_compensation": "Share-based compensation",
    "capital_expenditure": "Capital expenditure",
    "free_cash_flow": "Free cash flow",
    "property_plant_and_equipment": "PP&E, net",
    "goodwill_and_intangible_assets": "Goodwill & intangibles",
    "trade_and_non_trade_receivables": "Receivables",
    "trade_and_non_trade_payables": "Payables",
    "accumulated_other_comprehensive_income": "AOCI",
    "price_to_earnings_ratio": "P/E",
    "price_to_book_ratio": "P/B",
    "price_to_sales_ratio": "P/S",
    "enterprise_value_to_ebitda_ratio": "EV/EBITDA",
    "enterprise_value_to_revenue_ratio": "EV/Revenue",
    "peg_ratio": "PEG",
    "return_on_equity": "ROE (average equity)",
    "return_on_assets": "ROA (average assets)",
    "return_on_equity_ending": "ROE (ending equity)",
    "return_on_assets_ending": "ROA (ending assets)",
    "pretax_income": "Pre-tax income",
    "return_on_invested_capital": "ROIC",
    "free_cash_flow_yield": "FCF yield",
    "free_cash_flow_per_share": "FCF per share",
    "free_cash_flow_growth": "FCF growth",
    "earnings_per_share_growth": "EPS growth",
    "ebitda_growth": "EBITDA growth",
    "book_value_per_share": "Book value per share",
}
_ACRONYMS = {"ebit": "EBIT", "ebitda": "EBITDA", "eps": "EPS", "fcf": "FCF"}

CellKind = Literal[
    "money", "shares", "per_share", "per_share_computed", "percent", "multiple", "days"
]


def field_label(field: str) -> str:
    if field in _LABELS:
        return _LABELS[field]
    words = [_ACRONYMS.get(word, word) for word in field.split("_")]
    text = " ".join(words)
    return text[:1].upper() + text[1:]


def cell_kind(field: str, *, metric: bool = False) -> CellKind:
    """What a statement or metric field holds (money, shares, per share, percent, …)."""
    return _metric_cell_kind(field) if metric else _statement_cell_kind(field)


def _statement_cell_kind(field: str) -> CellKind:
    if field in _SHARE_COUNTS:
        return "shares"
    if "per_share" in field or "per_common_share" in field:
        return "per_share"
    return "money"


def _metric_cell_kind(field: str) -> CellKind:
    if (
        field.endswith(("_margin", "_growth", "_yield"))
        or field.startswith("return_on_")
        or field == "payout_ratio"
    ):
        return "percent"
    if field in ("market_cap", "enterprise_value"):
        return "money"
    if "per_share" in field:
        return "per_share_computed"
    if field.startswith("days_") or field == "operating_cycle":
        return "days"
    return "multiple"


_FORMATTERS: dict[CellKind, Callable[[float | None], str]] = {
    "money": fmt_money_millions,
    "shares": fmt_shares_millions,
    "per_share": fmt_per_share,
    # Computed per-share metrics carry float noise; reported ones keep the filing's decimals.
    "per_share_computed": lambda value: fmt_per_share(value, max_decimals=2),
    "percent": fmt_percent,
    "multiple": fmt_multiple,
    "days": fmt_days,
}


def format_cell(kind: CellKind, value: float | None) -> str:
    """A value as the statement tables print it (money and shares in millions)."""
    return _FORMATTERS[kind](value)


def _unit_suffix(kind: CellKind, currency: str) -> str:
    if kind in ("per_share", "per_share_computed"):
        return f" ({currency})"
    if kind == "shares":
        return " (millions)"
    return ""


def _column_sources(record: StatementBase, fields: Sequence[str], ledger: SourceLedger) -> str:
    """The [S#] ids of the filings a column's figures came from (comparatives included)."""
    ids: list[str | None] = []
    for field in fields:
        if getattr(record, field, None) is not None:
            ids.append(_cite(ledger, record.sources.get(field)))
    if not any(ids) and (record.accession_number or record.filing_url):
        label = f"filing acc. {record.accession_number}" if record.accession_number else "filing"
        ids.append(ledger.add(label, record.filing_url))
    return _ids(ids)


def format_statements(
    records: Sequence[StatementBase],
    *,
    kind: StatementKind,
    ledger: SourceLedger,
    company: Company | None = None,
) -> str:
    """Line items down, periods across, a Sources row of [S#] per column, and the units."""
    what = KIND_TITLES[kind]
    ticker = records[0].ticker if records else (company.ticker if company else None)
    who = _who(company, ticker)
    if not records:
        return f"## {who} — {what}\nNo {what} data was reported for the requested periods."
    periods = sorted({r.period for r in records})
    lines = [f"## {who} — {what} ({', '.join(periods)})"]
    currency = records[0].currency
    metrics = kind == "metrics" or isinstance(records[0], FinancialMetrics)
    cell_kind = _metric_cell_kind if metrics else _statement_cell_kind
    fields = [
        f
        for f in type(records[0]).model_fields
        if f not in _BASE_FIELDS and any(getattr(r, f, None) is not None for r in records)
    ]
    header = ["Line item", *(f"{r.fiscal_period} ({r.report_period})" for r in records)]
    rows: list[list[str]] = []
    for field in fields:
        kind_of = cell_kind(field)
        render = _FORMATTERS[kind_of]
        label = field_label(field) + _unit_suffix(kind_of, currency)
        rows.append([label, *(render(getattr(r, field, None)) for r in records)])
    if not rows:
        return f"## {who} — {what}\nThe source reported no {what} figures for these periods."
    sources = [_column_sources(r, fields, ledger) for r in records]
    rows.append(["Sources", *sources])
    lines += _table(header, rows)
    if metrics:
        lines.append(
            "Units: margins, returns, growth, yields and payout ratio in %; other ratios as "
            f"multiples (x); market cap and enterprise value in {currency} millions; per-share "
            f"values in {currency}. Computed metrics cite the filing of their main input."
        )
    else:
        lines.append(
            f"Units: {currency} millions, except per-share values ({currency}) and share counts "
            "(millions)."
        )
    # Say when periods were put on one share basis, so no one compares them with the filing's
    # own (pre-split) figures unawares.
    lines += [f"Note: {note}" for note in period_notes(records, lambda r: r.fiscal_period)]
    lines += _legend(ledger, re.findall(r"S\d+", " ".join(sources)))
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Filings and sections


def filing_source(filing: Filing) -> Source:
    """A filing as a citable source; the same filing always gets the same ledger id."""
    return Source(
        # ESEF reports listed by the filings.xbrl.org source come as filings too.
        provider="filings.xbrl.org" if filing.filing_type == "ESEF" else "SEC EDGAR",
        url=filing.url,
        form=filing.filing_type,
        accession_number=filing.accession_number,
        filing_date=filing.filing_date,
    )


def format_filings(
    filings: Sequence[Filing],
    *,
    ledger: SourceLedger,
    company: Company | None = None,
) -> str:
    ticker = next((f.ticker for f in filings if f.ticker), None)
    who = _who(company, ticker)
    if not filings:
        return f"## {who} — filings\nNo filings of the requested forms were found."
    rows = []
    ids = []
    for f in filings:
        sid = _cite(ledger, filing_source(f))
        ids.append(sid)
        rows.append(
            [
                _text(f.filing_type),
                _text(f.filing_date),
                _text(f.report_date),
                _text(f.accession_number),
                _text(f.description),
                _ids([sid]),
            ]
        )
    lines = [f"## {who} — {len(filings)} filings, newest first"]
    lines += _table(["Form", "Filed", "Period", "Accession", "Description", "Source"], rows)
    lines.append("Use an accession number with filing_section to read an item of that filing.")
    if isinstance(filings, FilingList) and filings.gaps:
        lines.append(incomplete_history_note(filings.gaps))
    lines += _legend(ledger, ids)
    return "\n".join(lines)


def incomplete_history_note(gaps: Sequence[HistoryGap]) -> str:
    """The line that stops a list missing older filings from passing for the whole history."""
    return (
        f"INCOMPLETE: {missing_history(gaps)} Say so if the answer depends on older filings; "
        "do not read this list as all there is."
    )


_STOP_WORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers him his how i if in into is it its itself just
    me more most my no nor not now of off on once only or other our ours out over own same she
    should so some such than that the their theirs them then there these they this those through
    to too under until up very was we were what when where which while who whom why will with
    would you your yours item items section part company companys s t say says said tell me
    describe discuss discussion explain what whats how does did any
    """.split()
)
_WORD = re.compile(r"[a-z0-9]+")
# Paragraphs longer than this are split, so a section without blank lines can still be trimmed.
_MAX_PARAGRAPH = 2_000


def _stem(word: str) -> str:
    for suffix, replacement in (("ies", "y"), ("sses", "ss"), ("es", "e"), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: -len(suffix)] + replacement
    return word


def focus_words(focus: str | None) -> list[str]:
    """The words of a focus that carry meaning, stemmed, in order, without duplicates."""
    if not focus:
        return []
    words = [_stem(w) for w in _WORD.findall(focus.lower()) if w not in _STOP_WORDS]
    return list(dict.fromkeys(w for w in words if len(w) > 1))


def _paragraphs(text: str) -> list[str]:
    out: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        block = block.strip()
        if len(block) <= _MAX_PARAGRAPH:
            if block:
                out.append(block)
            continue
        # Cut oversized blocks at line breaks (or else sentence ends) into chunks, slicing the
        # original so every kept chunk is verbatim.
        breaks = [m.end() for m in re.finditer(r"\n", block)]
        if not breaks:
            breaks = [m.end() for m in re.finditer(r"(?<=[.!?])\s+", block)]
        start = 0
        last_cut = 0
        for cut in [*breaks, len(block)]:
            if cut - start > _MAX_PARAGRAPH and last_cut > start:
                out += _hard_cut(block[start:last_cut].strip())
                start = last_cut
            last_cut = cut
        if block[start:].strip():
            out += _hard_cut(block[start:].strip())
    return out


def _hard_cut(piece: str) -> list[str]:
    """Last resort for text with no line or sentence breaks: cut at spaces."""
    chunks = []
    while len(piece) > _MAX_PARAGRAPH:
        cut = piece.rfind(" ", 0, _MAX_PARAGRAPH)
        cut = cut if cut > 0 else _MAX_PARAGRAPH
        chunks.append(piece[:cut].strip())
        piece = piece[cut:].strip()
    return [*chunks, piece] if piece else chunks


@dataclass(frozen=True)
class Trimmed:
    """A long text cut down to a budget: the kept paragraphs and what was left out."""

    text: str
    total_chars: int
    kept_chars: int
    total_paragraphs: int
    kept_paragraphs: int
    matched: bool  # the focus words were found and chose the kept paragraphs

    @property
    def trimmed(self) -> bool:
        return self.kept_paragraphs < self.total_paragraphs


def trim_text(text: str, *, focus: str | None, max_chars: int) -> Trimmed:
    """Keep the opening and the paragraphs that best match `focus`, in document order.

    Ranking is plain keyword overlap: first whether the whole focus phrase occurs, then how many
    distinct focus words a paragraph contains, then how often, rarer words weighing more (a word
    found in every paragraph, like the company's name, tells nothing apart).
    """
    paragraphs = _paragraphs(text)
    total = len(text)
    if total <= max_chars or not paragraphs:
        return Trimmed(text.strip(), total, total, len(paragraphs), len(paragraphs), False)

    cost = [len(p) + 2 for p in paragraphs]
    keep: set[int] = set()
    used = 0

    def take(i: int) -> bool:
        nonlocal used
        if i in keep or used + cost[i] > max_chars:
            return False
        keep.add(i)
        used += cost[i]
        return True

    # The opening frames the section (its heading and introduction) whatever was asked.
    opening_budget = min(max(max_chars // 8, 400), 2_000)
    for i in range(len(paragraphs)):
        if keep and used + cost[i] > opening_budget:
            break
        if not take(i):
            break

    words = focus_words(focus)
    scores: dict[int, tuple[int, int, float]] = {}
    if words:
        counters = [Counter(_stem(w) for w in _WORD.findall(p.lower())) for p in paragraphs]
        phrase = " ".join(_WORD.findall((focus or "").lower()))
        document_frequency = {w: sum(1 for c in counters if _mentions(c, w)) for w in words}
        n = len(paragraphs)
        for i, counter in enumerate(counters):
            if i in keep:
                continue
            hits = {w: _mentions(counter, w) for w in words}
            distinct = sum(1 for count in hits.values() if count)
            if not distinct:
                continue
            weight = sum(
                math.log((n + 1) / (document_frequency[w] + 1)) * (1 + math.log(count))
                for w, count in hits.items()
                if count
            )
            spelled = " ".join(_WORD.findall(paragraphs[i].lower()))
            has_phrase = int(len(words) > 1 and phrase in spelled)
            scores[i] = (has_phrase, distinct, weight)

    matched = bool(scores)
    if matched:
        for i in sorted(scores, key=lambda i: (scores[i], -i), reverse=True):
            if max_chars - used < 200:
                break
            if take(i) and i > 0 and i - 1 not in keep and cost[i - 1] <= 300:
                # A short paragraph just before a match is usually its heading (a risk factor's
                # title): worth its few characters for context.
                take(i - 1)
    else:
        for i in range(len(paragraphs)):
            if i not in keep and not take(i):
                break

    pieces: list[str] = []
    previous = -1
    for i in sorted(keep):
        if i != previous + 1:
            pieces.append(GAP)
        pieces.append(paragraphs[i])
        previous = i
    if previous < len(paragraphs) - 1:
        pieces.append(GAP)
    kept_chars = sum(len(paragraphs[i]) for i in keep)
    return Trimmed("\n\n".join(pieces), total, kept_chars, len(paragraphs), len(keep), matched)


def _mentions(counter: Counter[str], word: str) -> int:
    """How often a paragraph uses `word` or a longer form of it (chain -> chains, supplier …)."""
    count = counter.get(word, 0)
    if len(word) >= 5:
        count += sum(c for token, c in counter.items() if token != word and token.startswith(word))
    return count


def format_section(
    section: FilingSection,
    *,
    ledger: SourceLedger,
    focus: str | None = None,
    max_chars: int = 12_000,
) -> str:
    """One filing item as text, trimmed to `max_chars` around `focus`, with the filing's [S#]."""
    sid = _cite(ledger, section.source)
    period = f"period ended {section.report_date}, " if section.report_date else ""
    lines = [
        f"## {section.ticker} {section.filing_type} ({period}filed {section.filing_date}) — "
        f"Item {section.item}: {section.title} [{sid}]"
    ]
    trimmed = trim_text(section.text, focus=focus, max_chars=max_chars)
    # Filing text is written by the filer, not the user: framed so it is read as data only.
    source = section.source.url or f"{section.ticker} {section.filing_type} item {section.item}"
    lines.append(wrap_untrusted(source, trimmed.text))
    if trimmed.trimmed:
        omitted = trimmed.total_chars - trimmed.kept_chars
        shown = (
            f"Showing {trimmed.kept_chars:,} of {trimmed.total_chars:,} characters "
            f"({trimmed.kept_paragraphs} of {trimmed.total_paragraphs} paragraphs; "
            f"{omitted:,} omitted, marked {GAP})"
        )
        if trimmed.matched:
            how = (
                f": the opening and the paragraphs that best match {focus!r}, in document "
                "order. For other parts ask again with a narrower or different focus, or a "
                "larger max_chars."
            )
        elif focus_words(focus):
            how = (
                f": nothing matched {focus!r}, so this is the opening. Try other words for the "
                "focus, or a larger max_chars."
            )
        else:
            how = (
                ": the opening only. Give a focus (the topic you need) to get the matching "
                "paragraphs instead, or a larger max_chars."
            )
        lines.append(f"\nNote: {shown}{how}")
    lines += _legend(ledger, [sid])
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Ownership


def _trade_type(trade: InsiderTrade) -> str:
    return trade.transaction_type or trade.transaction_code or "Unspecified"


def format_insider_trades(
    trades: Sequence[InsiderTrade],
    *,
    ledger: SourceLedger,
    company: Company | None = None,
    max_rows: int = MAX_TABLE_ROWS,
) -> str:
    ticker = next((t.ticker for t in trades), None)
    who = _who(company, ticker)
    if not trades:
        return f"## {who} — insider trades\nNo insider transactions were found in recent filings."
    dates = sorted(d for t in trades if (d := t.transaction_date or t.filing_date))
    span = f", {dates[0]} to {dates[-1]}" if dates else ""
    forms = Counter(_trade_form(t) for t in trades)
    by_form = ", ".join(
        f"{count} from Form {form}" for form, count in sorted(forms.items()) if form != NONE
    )
    lines = [
        f"## {who} — insider trades (Forms 4 and 5), {len(trades)} transactions{span}"
        + (f" ({by_form})" if by_form else "")
    ]

    totals: dict[str, list[float]] = {}
    for t in trades:
        entry = totals.setdefault(_trade_type(t), [0, 0.0, 0.0, 0])
        entry[0] += 1
        entry[1] += t.transaction_shares or 0
        if t.transaction_value is not None:
            entry[2] += t.transaction_value
            entry[3] += 1
    lines.append(f"Totals by type (all {len(trades)} transactions):")
    lines += _table(
        ["Type", "Transactions", "Shares (net)", "Value (USD)"],
        [
            [
                _text(kind),
                f"{int(count):,}",
                fmt_int(shares),
                fmt_int(value) if valued else NONE,
            ]
            for kind, (count, shares, value, valued) in sorted(
                totals.items(), key=lambda item: -item[1][0]
            )
        ],
    )

    shown = trades[:max_rows]
    ids: list[str | None] = []
    rows = []
    for t in shown:
        sid = _cite(ledger, t.source)
        ids.append(sid)
        rows.append(
            [
                _text(t.transaction_date or t.filing_date),
                _trade_form(t),
                _text(t.name),
                _text(t.title or ("Director" if t.is_board_director else None)),
                _text(_trade_type(t)),
                _text(t.security_title),
                fmt_int(t.transaction_shares),
                fmt_price(t.transaction_price_per_share),
                fmt_int(t.transaction_value),
                fmt_int(t.shares_owned_after_transaction),
                _ids([sid]),
            ]
        )
    lines.append("")
    lines += _table(
        [
            "Date",
            "Form",
            "Insider",
            "Role",
            "Type",
            "Security",
            "Shares",
            "Price (USD)",
            "Value (USD)",
            "Owned after",
            "Source",
        ],
        rows,
    )
    if len(trades) > len(shown):
        lines.append(
            _showing(len(shown), len(trades), "transactions, most recent first")
            + f" The totals above cover all {len(trades)}."
        )
    lines.append(
        "Units: shares in shares; prices and values in USD. Negative shares and values are "
        "dispositions (sales, gifts, withholding). Form: 4 is filed within two business days of "
        "a trade; 5 is the annual statement of trades exempt from or missed on Form 4; /A an "
        "amendment, which may repeat rows of the form it amends."
    )
    if isinstance(trades, InsiderTrades):
        if trades.failures:
            lines.append(
                f"INCOMPLETE: {len(trades.failures)} ownership filing(s) could not be read, so "
                f"transactions may be missing; first: {trades.failures[0]}"
            )
        if trades.gaps:
            lines.append(incomplete_history_note(trades.gaps))
    lines += _legend(ledger, ids)
    return "\n".join(lines)


def _trade_form(trade: InsiderTrade) -> str:
    return trade.form_type or (trade.source.form if trade.source else None) or NONE


def format_holdings(
    holdings: Sequence[InstitutionalHolding],
    *,
    ledger: SourceLedger,
    company: Company | None = None,
    max_rows: int = MAX_TABLE_ROWS,
) -> str:
    """A 13F filer's portfolio, or (with `company`) the institutions holding that company."""
    if not holdings:
        subject = f"of {company.ticker}" if company else "for this filer"
        return f"## Institutional holdings\nNo 13F holdings were found {subject}."
    shown = holdings[:max_rows]
    ids: list[str | None] = []
    total_value = sum(h.value_usd or 0 for h in holdings)
    if company is not None:
        lines = [f"## Institutional holders of {_who(company, None)} (13F)"]
        rows = []
        for h in shown:
            sid = _cite(ledger, h.source)
            ids.append(sid)
            rows.append(
                [
                    _text(h.filer_name or (f"CIK {h.filer_cik}" if h.filer_cik else None)),
                    fmt_int(h.shares),
                    fmt_money_millions(h.value_usd),
                    _text(h.report_period),
                    _text(h.filing_date),
                    _ids([sid]),
                ]
            )
        lines += _table(
            ["Filer", "Shares", "Value (USD millions)", "Report period", "Filed", "Source"], rows
        )
    else:
        first = holdings[0]
        sid = _cite(ledger, first.source)
        ids.append(sid)
        filer = first.filer_name or (f"CIK {first.filer_cik}" if first.filer_cik else "filer")
        lines = [
            f"## 13F holdings of {filer} — report period {first.report_period or NONE}, "
            f"filed {first.filing_date or NONE} [{sid}]"
        ]
        rows = []
        for rank, h in enumerate(shown, 1):
            other = _cite(ledger, h.source)
            if other != sid:
                ids.append(other)
            rows.append(
                [
                    str(rank),
                    _text(h.name_of_issuer),
                    _text(h.ticker),
                    _text(h.title_of_class),
                    _text(h.cusip),
                    fmt_int(h.shares)
                    + ("" if h.share_type in (None, "SH") else f" {h.share_type}"),
                    fmt_money_millions(h.value_usd),
                    _text(h.put_call) if h.put_call else "",
                ]
            )
        lines += _table(
            [
                "#",
                "Issuer",
                "Ticker",
                "Class",
                "CUSIP",
                "Shares",
                "Value (USD millions)",
                "Put/Call",
            ],
            rows,
        )
    if len(holdings) > len(shown):
        lines.append(_showing(len(shown), len(holdings), "positions, largest value first"))
    if isinstance(holdings, Holdings):
        lines.append(_holdings_coverage(holdings, listed=len(shown)))
    else:
        lines.append(
            f"Total value of the {len(holdings)} positions listed: USD "
            f"{fmt_money_millions(total_value)} million."
        )
    lines.append(
        "Units: shares in shares (PRN = principal amount); values in USD millions as reported "
        "on Form 13F."
    )
    lines += _legend(ledger, ids)
    return "\n".join(lines)


def _holdings_coverage(report: Holdings, *, listed: int) -> str:
    """How much of the 13F report the table covers, with the count and value of what it
    leaves out, so a cut list is never read as the whole portfolio."""
    whole = f"USD {fmt_money_millions(report.total_value_usd)} million"
    if listed >= report.total_count:
        return f"All {report.total_count} positions of the report are listed; total value {whole}."
    listed_value = sum(h.value_usd or 0 for h in report[:listed])
    omitted_value = report.total_value_usd - listed_value
    share = omitted_value / report.total_value_usd if report.total_value_usd else None
    of_total = f" ({fmt_percent(share)} of the total)" if share is not None else ""
    return (
        f"TRUNCATED: the {listed} largest of the report's {report.total_count} positions by "
        f"value are listed; the other {report.total_count - listed} positions, worth USD "
        f"{fmt_money_millions(omitted_value)} million{of_total}, are not. Total value of all "
        f"{report.total_count}: {whole}. Call again with a larger limit or all=true to list "
        "them."
    )


# ---------------------------------------------------------------------------------------------
# Market data


def _spread(count: int, wanted: int) -> list[int]:
    """`wanted` indices evenly spread over range(count), first and last included."""
    if count <= wanted:
        return list(range(count))
    if wanted <= 1:
        return [count - 1]
    step = (count - 1) / (wanted - 1)
    return sorted({round(i * step) for i in range(wanted)})


def format_prices(
    prices: Sequence[Price],
    *,
    ledger: SourceLedger,
    company: Company | None = None,
    source_label: str | None = None,
    interval: str = "day",
    rows: PriceRows = "spread",
    max_rows: int = MAX_PRICE_ROWS,
) -> str:
    """A summary over the whole range, then up to `max_rows` bars (spread out, or the latest)."""
    ticker = next((p.ticker for p in prices), None)
    who = _who(company, ticker)
    sid = ledger.add(source_label) if source_label else None
    cite = f" [{sid}]" if sid else ""
    if not prices:
        return f"## {who} — prices{cite}\nNo prices were returned for this range."
    bars = sorted(prices, key=lambda p: p.time)
    first, last = bars[0], bars[-1]
    lines = [
        f"## {who} — {interval} prices, {first.time[:10]} to {last.time[:10]} "
        f"({len(bars)} bars){cite}"
    ]
    closes = [p for p in bars if p.close is not None]
    summary: list[str] = []
    if closes:
        start, end = closes[0], closes[-1]
        change = (
            (end.close - start.close) / start.close
            if start.close and end.close is not None
            else None
        )
        summary.append(
            f"first close {fmt_price(start.close)} ({start.time[:10]}), last close "
            f"{fmt_price(end.close)} ({end.time[:10]}), change {fmt_signed_percent(change)}"
        )
    highs = [(p.high, p) if p.high is not None else (p.close, p) for p in bars]
    lows = [(p.low, p) if p.low is not None else (p.close, p) for p in bars]
    high = max(((v, p) for v, p in highs if v is not None), key=lambda i: i[0], default=None)
    low = min(((v, p) for v, p in lows if v is not None), key=lambda i: i[0], default=None)
    if high is not None and low is not None:
        summary.append(
            f"high {fmt_price(high[0])} ({high[1].time[:10]}), low {fmt_price(low[0])} "
            f"({low[1].time[:10]})"
        )
    if summary:
        lines.append("Summary over the whole range: " + "; ".join(summary) + ".")
    if rows == "recent":
        picked = list(range(max(0, len(bars) - max_rows), len(bars)))
    else:
        picked = _spread(len(bars), max_rows)
    lines += _table(
        ["Date", "Open", "High", "Low", "Close", "Volume"],
        [
            [
                _text(bars[i].time[:10] if interval != "minute" else bars[i].time),
                fmt_price(bars[i].open),
                fmt_price(bars[i].high),
                fmt_price(bars[i].low),
                fmt_price(bars[i].close),
                fmt_int(bars[i].volume),
            ]
            for i in picked
        ],
    )
    if len(picked) < len(bars):
        how = (
            "the most recent"
            if rows == "recent"
            else "evenly spread across the range (first and last included)"
        )
        lines.append(_showing(len(picked), len(bars), f"bars, {how}"))
    lines.append("Units: prices in USD; volume in shares.")
    lines += _legend(ledger, [sid])
    return "\n".join(lines)


def format_price_snapshot(
    snapshot: PriceSnapshot, *, ledger: SourceLedger, company: Company | None = None
) -> str:
    sid = _cite(ledger, snapshot.source)
    cite = f" [{sid}]" if sid else ""
    change = ""
    if snapshot.day_change is not None and _finite(snapshot.day_change):
        previous = snapshot.price - snapshot.day_change
        # Computed rather than read: providers disagree on whether "percent" means 1.2 or 0.012.
        pct = snapshot.day_change / previous if previous else None
        change = f", day change {snapshot.day_change:+,.2f} ({fmt_signed_percent(pct, decimals=2)})"
    elif snapshot.day_change_percent is not None and _finite(snapshot.day_change_percent):
        change = f", day change {snapshot.day_change_percent:+.2f}%"
    when = f" as of {snapshot.time}" if snapshot.time else ""
    lines = [
        f"## {_who(company, snapshot.ticker)} — latest price",
        f"{fmt_price(snapshot.price)} {snapshot.currency or 'USD'}{change}{when}{cite}",
    ]
    lines += _legend(ledger, [sid])
    return "\n".join(lines)


def format_news(
    items: Sequence[NewsItem],
    *,
    ledger: SourceLedger,
    company: Company | None = None,
) -> str:
    ticker = next((n.ticker for n in items if n.ticker), None)
    who = _who(company, ticker)
    if not items:
        return f"## {who} — news\nNo recent news articles were found."
    lines = [f"## {who} — {len(items)} news articles, newest first"]
    headlines: list[str] = []
    for number, item in enumerate(items, 1):
        date = (item.date or "")[:10]
        label = f"{item.source or 'News'}: {item.title}" + (f" ({date})" if date else "")
        sid = ledger.add(label, item.url) if item.url else None
        meta = ", ".join(x for x in (item.source, date) if x)
        headlines.append(
            f"{number}. {_text(item.title)}"
            + (f" — {meta}" if meta else "")
            + (f" [{sid}]" if sid else "")
        )
    # Headlines are written by publishers, not the user.
    lines.append(wrap_untrusted(f"company_news:{ticker or who}", "\n".join(headlines)))
    lines.append("Headlines only; the articles themselves were not read.")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Facts, screens and segments


def fact_source(point: FactPoint, cik: str | None) -> Source | None:
    """The filing a fact came from, cited exactly as statements cite it (same ledger id)."""
    if not point.accession_number:
        return None
    url = sec_urls.filing_index_page(cik, point.accession_number) if cik else ""
    return Source(
        provider="SEC EDGAR",
        url=url,
        form=point.form,
        accession_number=point.accession_number,
        filing_date=point.filed,
    )


def format_facts(
    points: Sequence[FactPoint],
    *,
    ledger: SourceLedger,
    company: Company | None = None,
    total: int | None = None,
    max_rows: int = MAX_FACT_ROWS,
) -> str:
    """Every value filed for one XBRL concept, exactly as reported (no scaling)."""
    who = _who(company, None)
    if not points:
        return f"## {who} — XBRL facts\nNo values were found for this concept."
    total = max(total or 0, len(points))
    shown = points[:max_rows]
    concept = points[0].concept
    units = sorted({p.unit for p in points})
    mixed = len(units) > 1
    lines = [
        f"## {who} — {concept}, {total} reported values" + ("" if mixed else f" (unit: {units[0]})")
    ]
    ids: list[str | None] = []
    rows = []
    for p in shown:
        sid = _cite(ledger, fact_source(p, company.cik if company else None))
        ids.append(sid)
        period = f"{p.start} to {p.end}" if p.start else f"at {p.end}"
        row = [
            _text(period),
            fmt_plain(p.value),
            *([_text(p.unit)] if mixed else []),
            _text(f"{p.fiscal_year} {p.fiscal_period}" if p.fiscal_year else p.fiscal_period),
            _text(p.form),
            _text(p.filed),
            _text(p.frame),
            _ids([sid]),
        ]
        rows.append(row)
    header = [
        "Period",
        "Value",
        *(["Unit"] if mixed else []),
        "Filing's fiscal period",
        "Form",
        "Filed",
        "Frame",
        "Source",
    ]
    lines += _table(header, rows)
    if total > len(shown):
        lines.append(_showing(len(shown), total, "values, latest period first"))
    lines.append(
        "Values are exactly as filed, in the unit shown (USD means dollars, not millions). "
        "A later filing's restatement appears beside the original."
    )
    lines += _legend(ledger, ids)
    return "\n".join(lines)


def format_screen(
    rows: Sequence[ScreenRow],
    *,
    ledger: SourceLedger,
    concept: str,
    period: str,
    unit: str = "USD",
    min_value: float | None = None,
    max_value: float | None = None,
    source_label: str | None = None,
    more: bool = False,
) -> str:
    bounds = []
    if min_value is not None:
        bounds.append(f"≥ {fmt_plain(min_value)}")
    if max_value is not None:
        bounds.append(f"≤ {fmt_plain(max_value)}")
    sid = ledger.add(source_label) if source_label else None
    cite = f" [{sid}]" if sid else ""
    title = f"## Screen: {concept}, {period}, {unit}" + (
        f" ({' and '.join(bounds)})" if bounds else ""
    )
    if not rows:
        return f"{title}{cite}\nNo company matched."
    money = unit.upper() in ("USD", "EUR", "GBP", "JPY", "CAD", "CHF", "CNY")
    render = fmt_money_millions if money else fmt_plain
    value_header = f"Value ({unit} millions)" if money else f"Value ({unit})"
    lines = [f"{title} — {len(rows)} companies, largest first{cite}"]
    lines += _table(
        ["#", "Ticker", "Company", value_header, "Period", "Accession"],
        [
            [
                str(rank),
                _text(r.ticker),
                _text(r.name),
                render(r.value),
                _text(r.period),
                _text(r.accession_number),
            ]
            for rank, r in enumerate(rows, 1)
        ],
    )
    if more:
        lines.append(
            f"More companies match beyond these {len(rows)}: raise limit or tighten "
            "min_value/max_value."
        )
    lines += _legend(ledger, [sid])
    return "\n".join(lines)


_SEGMENT_META = frozenset(
    {
        "ticker",
        "report_period",
        "fiscal_period",
        "period",
        "currency",
        "accession_number",
        "filing_url",
        "source",
        "cik",
    }
)


def _segment_lines(node: Any, depth: int, out: list[str]) -> None:
    pad = "  " * depth
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key in _SEGMENT_META or value in (None, [], {}):
                continue
            if isinstance(value, Mapping | list):
                out.append(f"{pad}- {field_label(str(key))}:")
                _segment_lines(value, depth + 1, out)
            elif _finite(value):
                out.append(f"{pad}- {field_label(str(key))}: {fmt_money_millions(value)}")
            else:
                out.append(f"{pad}- {field_label(str(key))}: {_text(value)}")
    elif isinstance(node, list):
        for item in node:
            if isinstance(item, Mapping):
                name = item.get("label") or item.get("name") or item.get("segment")
                value = next(
                    (item[k] for k in ("value", "amount", "revenue") if _finite(item.get(k))),
                    None,
                )
                rest = {
                    k: v
                    for k, v in item.items()
                    if k not in ("label", "name", "segment", "value", "amount", "revenue")
                }
                if name is not None and value is not None:
                    out.append(f"{pad}- {_text(name)}: {fmt_money_millions(value)}")
                    if rest:
                        _segment_lines(rest, depth + 1, out)
                else:
                    _segment_lines(item, depth, out)
            elif _finite(item):
                out.append(f"{pad}- {fmt_money_millions(item)}")
            elif item is not None:
                out.append(f"{pad}- {_text(item)}")


def format_segments(
    records: Sequence[Mapping[str, Any]],
    *,
    ledger: SourceLedger,
    company: Company | None = None,
) -> str:
    """Provider-shaped nested breakdowns (by product, segment, geography) as readable bullets."""
    ticker = next((str(r["ticker"]) for r in records if r.get("ticker")), None)
    who = _who(company, ticker)
    if not records:
        return f"## {who} — segments\nNo segment breakdowns were reported."
    if all("breakdowns" in r for r in records):
        return _xbrl_segments(records, ledger=ledger, who=who)
    lines = [f"## {who} — segment breakdowns"]
    ids: list[str | None] = []
    currency = next((str(r["currency"]) for r in records if r.get("currency")), "USD")
    for record in records:
        source = record.get("source")
        sid = _cite(ledger, source) if isinstance(source, Mapping | Source) else None
        ids.append(sid)
        label = record.get("fiscal_period") or record.get("period") or ""
        end = record.get("report_period")
        head = f"{label} ({end})" if label and end else str(label or end or "Period")
        lines.append(f"\n**{head}**" + (f" [{sid}]" if sid else ""))
        body: list[str] = []
        _segment_lines(record, 0, body)
        lines += body or ["- No breakdowns reported for this period."]
    lines.append(f"\nUnits: {currency} millions.")
    lines += _legend(ledger, ids)
    return "\n".join(lines)


def _segment_amount(value: Any, unit: str) -> str:
    if not _finite(value):
        return NONE
    if unit.upper() == "USD":
        return (
            f"{float(value) / 1e6:,.0f}"
            if float(value) % 1e6 == 0
            else f"{float(value) / 1e6:,.3f}"
        )
    return f"{float(value):,.0f}"


def _xbrl_segments(records: Sequence[Mapping[str, Any]], *, ledger: SourceLedger, who: str) -> str:
    """Breakdowns read from a filing's XBRL (`dexter.data.sec.segments`): one line per breakdown
    with its members in the company's labels, the reported total and whether they add up."""
    lines = [f"## {who} — segments from the filing's XBRL"]
    ids: list[str | None] = []
    for record in records:
        source = record.get("source")
        sid = _cite(ledger, source) if isinstance(source, Mapping) else None
        ids.append(sid)
        start, end = record.get("start_date"), record.get("report_period")
        head = f"{record.get('fiscal_period')} ({start} to {end})"
        lines.append(f"\n**{head}**" + (f" [{sid}]" if sid else ""))
        for b in record.get("breakdowns") or []:
            unit = str(b.get("unit") or "")
            scale = "USD millions" if unit.upper() == "USD" else unit
            within = ", ".join(str(w.get("label")) for w in b.get("within") or [])
            title = f"{b.get('measure')} by {b.get('axis_kind')}" + (
                f" ({within} only)" if within else ""
            )
            members = "; ".join(
                f"{_text(m.get('label'))} {_segment_amount(m.get('value'), unit)}"
                for m in b.get("members") or []
            )
            total = b.get("total")
            if total is None:
                check = f"sum {_segment_amount(b.get('members_sum'), unit)}, no reported total"
            else:
                check = f"reported total {_segment_amount(total, unit)}: {b.get('check')}" + (
                    f" (gap {_segment_amount(b.get('difference'), unit)})"
                    if b.get("difference")
                    else ""
                )
            lines.append(f"- {title}, {scale}: {members}. {check.capitalize()}.")
            if b.get("note"):
                lines.append(f"  Note: {_text(b.get('note'))}")
    lines.append(
        "\nMembers are the company's own XBRL labels; amounts as filed (USD in millions, "
        "other units as counts)."
    )
    lines += _legend(ledger, ids)
    return "\n".join(lines)


# Shared with the filing-document formatters (format_docs.py).
cite = _cite
source_legend = _legend
