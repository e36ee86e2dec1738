"""What research text mentions: tickers, SEC accession numbers, dates and fiscal periods.

Tickers are found without a ticker table (the index must work offline and fast): `$AAPL`,
`NASDAQ: AAPL` and `(AAPL)` count on sight; a bare upper-case word counts only when it appears
at least twice and is not one of the acronyms finance writing is full of (EBITDA, GAAP, WACC …).
Staleness later checks each candidate against SEC's ticker table, so a stray word costs a lookup,
never a wrong answer.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import date

# 0000320193-24-000123; also the 18-digit form in EDGAR archive URLs.
_ACCESSION = re.compile(r"(?<![\d-])(\d{10})-(\d{2})-(\d{6})(?![\d-])")
_ARCHIVE_ACCESSION = re.compile(r"/Archives/edgar/data/\d+/(\d{10})(\d{2})(\d{6})\b")

_STRONG_TICKER = re.compile(
    r"(?:\$([A-Z]{1,5}(?:\.[A-Z])?)\b)"
    r"|(?:\b(?:NASDAQ|NYSE|AMEX|NYSEARCA|NYSE American|OTC|TSX|LSE)\s*:\s*"
    r"([A-Z]{1,5}(?:\.[A-Z])?)\b)"
    r"|(?:\(([A-Z]{2,5})\))"
)
_BARE_TICKER = re.compile(r"(?<![\w$.-])([A-Z]{2,5})(?![\w-])")

# Upper-case words that are not tickers in research text (a word here is still a ticker when
# written `$WORD` or `NYSE: WORD`).
NOT_TICKERS = frozenset(
    """
    AI API APR ARPU ASP AUM BPS CAGR CAPEX CEO CFO COGS COO CPI CSV CTO DCF DDM EBIT EBITDA EPS
    ESG ETF EU EUR EV FAQ FCF FX FY FYE GAAP GBP GDP GM HTML HTTP HTTPS ID IPO IR IRR ISO JSON
    KPI LBO LTM MD MDA NA NAV NI NOI NOPAT NPV OCF OK OPEX PDF PE PEG PP PPE QOQ QA RD ROA ROE
    ROI ROIC RSU SBC SEC SG SGA SQL TAM TBD TODO TTM UK UN URL US USA USD UTC VAT WACC XBRL XLSX
    YOY YTD TSR NOTE NB FIXME PS SS GP OI DA TL DR PM AM ET PT CST EST PST UTF ASCII CIK IFRS
    MRQ MRY ARR NRR LTV CAC SKU DSO DPO DIO CCC IV MA MACD RSI SMA EMA VWAP OTC NASDAQ NYSE AMEX
    LSE TSX BUY SELL HOLD LONG SHORT KEY RISK RISKS MDNA ITEM PART FORM Q1 Q2 Q3 Q4 H1 H2 ON OFF
    AND OR THE FOR TO OF IN IS IT BE AS AT BY NOT NO YES ALL ANY NEW OLD TOP LOW HIGH MAX MIN
    AVG SUM NAN NULL NONE TRUE FALSE YR MO QTR ANN EX EXT REV INC LLC LTD CORP CO PLC AG SA NV
    OUT
    """.split()
)

_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        "january february march april may june july august september october november "
        "december".split()
    )
}
_ISO_DATE = re.compile(r"(?<!\d)((?:19|20)\d{2})-(\d{2})-(\d{2})(?!\d)")
_LONG_DATE = re.compile(
    r"\b(January|February|March|April|May|June|July|August|September|October|November|"
    r"December)\s+(\d{1,2}),\s+((?:19|20)\d{2})\b"
)
# FY2024, FY24, FY 2024, fiscal 2024, 2024A, 2025E; Q3 2024, Q3 FY24, 3Q24, Q3'24.
_FISCAL_YEAR = re.compile(
    r"\b(?:FY\s?'?((?:19|20)?\d{2})([AE])?|fiscal\s+(?:year\s+)?((?:19|20)\d{2})()"
    r"|((?:19|20)\d{2})([AE]))\b",
    re.IGNORECASE,
)
_QUARTER = re.compile(
    r"\b(?:Q([1-4])\s?(?:FY\s?)?'?((?:19|20)?\d{2})|([1-4])Q\s?'?((?:19|20)?\d{2}))\b",
    re.IGNORECASE,
)


def accessions(text: str) -> list[str]:
    """Accession numbers cited, in the dashed form, first mention first."""
    found = [f"{a}-{b}-{c}" for a, b, c in _ACCESSION.findall(text)]
    found += [f"{a}-{b}-{c}" for a, b, c in _ARCHIVE_ACCESSION.findall(text)]
    return list(dict.fromkeys(found))


def tickers(text: str, *, bare: bool = True, min_bare: int = 2) -> list[str]:
    """Ticker candidates, most mentioned first; a bare upper-case word counts from `min_bare`
    mentions (1 for a heading: "# AAPL update" is about Apple)."""
    counts: Counter[str] = Counter()
    strong: set[str] = set()
    for match in _STRONG_TICKER.finditer(text):
        symbol = next(g for g in match.groups() if g)
        if match.group(3) and symbol in NOT_TICKERS:
            continue  # "(EBITDA)" spells out an acronym, not a listing
        strong.add(symbol)
        counts[symbol] += 1
    if bare:
        for match in _BARE_TICKER.finditer(text):
            counts[match.group(1)] += 1
    return [
        s
        for s, n in counts.most_common()
        if s in strong or (n >= min_bare and s not in NOT_TICKERS and not _is_period_word(s))
    ]


def is_ticker_literal(text: str) -> bool:
    """A string literal in code that names a ticker ("AAPL", "BRK.B")."""
    return bool(re.fullmatch(r"[A-Z]{1,5}(?:\.[A-Z])?", text)) and text not in NOT_TICKERS


def _is_period_word(word: str) -> bool:
    return bool(re.fullmatch(r"(?:FY|Q|H)\d*", word))


def dates(text: str) -> list[date]:
    """Calendar dates written out (ISO or "September 28, 2024")."""
    found: list[date] = []
    for y, m, d in _ISO_DATE.findall(text):
        found += _date(int(y), int(m), int(d))
    for month, d, y in _LONG_DATE.findall(text):
        found += _date(int(y), _MONTHS[month.lower()], int(d))
    return found


def _date(y: int, m: int, d: int) -> list[date]:
    try:
        return [date(y, m, d)]
    except ValueError:
        return []


def periods(text: str) -> list[str]:
    """Fiscal periods named, normalised: "FY2024", "Q3 FY2024", "FY2026E" (a projection)."""
    found: list[str] = []
    quarters: list[tuple[int, int]] = []
    for match in _QUARTER.finditer(text):
        q = match.group(1) or match.group(3)
        y = _year(match.group(2) or match.group(4))
        if y:
            found.append(f"Q{q} FY{y}")
            quarters.append(match.span())
    for match in _FISCAL_YEAR.finditer(text):
        if any(start <= match.start() < end for start, end in quarters):
            continue  # the year of "Q1 FY25", not the whole year
        groups = match.groups()
        y = _year(groups[0] or groups[2] or groups[4])
        # A year marked E is a projection: kept apart, since it is not data the model has.
        estimate = "E" if (groups[1] or groups[5] or "").upper() == "E" else ""
        if y:
            found.append(f"FY{y}{estimate}")
    return list(dict.fromkeys(found))


def _year(text: str) -> int | None:
    digits = text.strip("'")
    if len(digits) == 2:
        return 2000 + int(digits)
    year = int(digits)
    return year if 1990 <= year <= 2100 else None


__all__ = ["NOT_TICKERS", "accessions", "dates", "is_ticker_literal", "periods", "tickers"]
