"""Numbers as finance writes them: one scanner for answers and for the evidence they rest on.

A `Token` is one written number with everything attached to it that changes what it means: a sign
or parentheses, a currency, a scale word ("billion", "bn", "B"), a percent sign or "basis
points", a multiple sign ("28.5x"), "per share" or "shares" after it. It also says how precisely
the number was written (decimals), which is the rounding a match must allow, and why it is not a
figure at all when it is a year, a date, an item or form number, a citation marker, list
numbering, an ordinal or an identifier.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

SCALES: dict[str, float] = {
    "thousand": 1e3,
    "thousands": 1e3,
    "k": 1e3,
    "million": 1e6,
    "millions": 1e6,
    "mn": 1e6,
    "mm": 1e6,
    "mil": 1e6,
    "m": 1e6,
    "billion": 1e9,
    "billions": 1e9,
    "bn": 1e9,
    "bil": 1e9,
    "b": 1e9,
    "trillion": 1e12,
    "trillions": 1e12,
    "tn": 1e12,
    "trn": 1e12,
    "t": 1e12,
}

CURRENCIES: dict[str, str] = {
    "$": "USD",
    "us$": "USD",
    "usd": "USD",
    "€": "EUR",
    "eur": "EUR",
    "£": "GBP",
    "gbp": "GBP",
    "¥": "JPY",
    "jpy": "JPY",
    "₹": "INR",
    "inr": "INR",
    "c$": "CAD",
    "ca$": "CAD",
    "cad": "CAD",
    "a$": "AUD",
    "au$": "AUD",
    "aud": "AUD",
    "hk$": "HKD",
    "hkd": "HKD",
    "cny": "CNY",
    "rmb": "CNY",
    "chf": "CHF",
    "dollars": "USD",
    "dollar": "USD",
    "euros": "EUR",
    "euro": "EUR",
}

# The number itself: grouped thousands first, so "391,035" is one number and "1,2345" is not.
# Accounting negatives "(1,234)" and "$(2.8)", and signs before or after the currency.
_NUMBER = re.compile(
    r"""
    (?P<open>\()?
    (?P<sign>[-−–+])?
    (?P<cur>US\$|CA\$|AU\$|C\$|A\$|HK\$|[$€£¥₹]|(?:USD|EUR|GBP|JPY|CNY|RMB|CHF|INR|CAD|AUD|HKD))?
    (?(cur)[ \u00a0]?)
    (?P<open2>\()?
    (?P<sign2>[-−–])?
    (?P<num>[0-9]{1,3}(?:,[0-9]{3})+(?![0-9])(?:\.[0-9]+)?|[0-9]+(?:\.[0-9]+)?|\.[0-9]+)
    """,
    re.VERBOSE,
)

# What may follow the number and changes its meaning, tried in this order at its end. A
# single line break is a space (Markdown prose wraps).
_PERCENT = re.compile(
    r"[ \u00a0\n]?(?:%|percent(?:age[ \u00a0\n]points?)?\b|per[ \u00a0\n]cent\b|pct\b|"
    r"percentage[ \u00a0\n]points?\b|ppts?\b|pp\b)",
    re.IGNORECASE,
)
_BPS = re.compile(r"[ \u00a0\n]?(?:bps|bp|basis[ \u00a0\n]points?)\b", re.IGNORECASE)
_SCALE_WORD = re.compile(
    r"[ \u00a0\n]?(?P<w>thousands?|millions?|billions?|trillions?|mn|bn|tn|trn|bil|mil)"
    r"(?![A-Za-z])",
    re.IGNORECASE,
)
# Single letters only when glued to the number ("391.0B", "$5M", "12k"), never "5 m".
_SCALE_LETTER = re.compile(r"(?P<w>MM|mm|[kKmMbBT])(?![A-Za-z0-9])")
_MULTIPLE = re.compile(r"(?:[ \u00a0\n]?[x×](?![A-Za-z0-9])|[ \u00a0\n]times\b)")
_CURRENCY_AFTER = re.compile(
    r"[ \u00a0\n](?P<c>USD|EUR|GBP|JPY|CNY|RMB|CHF|INR|CAD|AUD|HKD|dollars?|euros?)\b",
    re.IGNORECASE,
)
_PER_SHARE = re.compile(
    r"[ \u00a0\n](?:per|a|each)[ \u00a0\n]"
    r"(?:(?:diluted|basic|common|ordinary|class[ \u00a0]\w|[A-Z][A-Za-z.&-]*)[ \u00a0\n])*"
    r"(?:share|ADS|ADR)\b",
)
# "15.1 billion shares", "58,228 Apple shares", "91,978 common shares outstanding".
_SHARES = re.compile(
    r"[ \u00a0\n](?:(?:diluted|basic|common|ordinary|outstanding|weighted[- ]average|of|"
    r"[A-Z][A-Za-z.&-]*)[ \u00a0\n]){0,3}(?:shares|Shares)\b",
)

# Words after which a number names something rather than measuring it.
_NAMING_WORDS = frozenset(
    {
        "item",
        "items",
        "part",
        "parts",
        "note",
        "notes",
        "section",
        "sections",
        "rule",
        "rules",
        "form",
        "forms",
        "exhibit",
        "exhibits",
        "schedule",
        "asc",
        "asu",
        "topic",
        "page",
        "pages",
        "cik",
        "no",
        "no.",
        "nos",
        "number",
        "level",
        "tier",
        "series",
        "class",
        "chapter",
        "article",
        "figure",
        "table",
        "step",
        "phase",
        "version",
        "ios",
        "iphone",
        "watchos",
        "macos",
        "ipados",
        "visionos",
        "tvos",
        "windows",
        "s&p",
        "russell",
        "nasdaq",
        "ftse",
        "dax",
        "nikkei",
        "accession",
        "footnote",
        "footnotes",
        "source",
        "sources",
        "question",
        "row",
        "column",
        "category",
        "stage",
        "day",
        "week",
    }
)
MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_MONTH_BEFORE = re.compile(rf"(?:{MONTHS})\.?[ \u00a0]$", re.IGNORECASE)
_MONTH_AFTER = re.compile(rf"^[ \u00a0](?:{MONTHS})\b", re.IGNORECASE)
_WORD_BEFORE = re.compile(r"([A-Za-z&][A-Za-z&.]*)[ \u00a0]+$")
_LIST_NUMBER = re.compile(r"(?:^|\n)[ \t]*(?:[-*+][ \t]+)?$")


class Token(NamedTuple):
    """One written number (a tuple: a filing holds thousands)."""

    start: int
    end: int
    text: str
    # The number as written, sign applied, before any scale: "391.0" -> 391.0, "(1,234)" -> -1234.
    mantissa: float
    # Digits after the decimal point as written: the display rounding.
    decimals: int
    grouped: bool
    negative: bool
    currency: str | None
    scale: float
    scale_word: str | None
    percent: bool
    bps: bool
    multiple: bool
    per_share: bool
    shares: bool
    # Why this is not a figure ("year", "date", "identifier", ...), or None when it is one.
    skip: str | None

    @property
    def value(self) -> float:
        """Normalised: amounts in whole units, percents in percent (basis points too)."""
        if self.bps:
            return self.mantissa / 100
        return self.mantissa * self.scale


# A table cell that is one plain number: "416,161", "-12,715", "(4)%", "$1.02", "46.9%", "1.16x".
_SIMPLE_CELL = re.compile(
    r"(?P<open>\()?(?P<sign>[-−])?(?P<cur>\$)?(?P<num>[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?|"
    r"[0-9]+(?:\.[0-9]+)?)(?P<close>\))?(?P<suffix>%|x)?"
)


def simple_cell(cell: str) -> Token | None:
    """The one number a table cell holds, read without the full scanner; None when the cell
    is anything else (then `scan` reads it)."""
    m = _SIMPLE_CELL.fullmatch(cell)
    if m is None or (m.group("open") is None) != (m.group("close") is None):
        return None
    num = m.group("num")
    if "," not in num and "." not in num and len(num) == 4 and num[:2] in ("19", "20"):
        return None  # a year: let the scanner decide
    mantissa, decimals = _num_value(num)
    negative = bool(m.group("sign") or m.group("open"))
    suffix = m.group("suffix")
    return Token(
        start=0,
        end=len(cell),
        text=cell,
        mantissa=-mantissa if negative else mantissa,
        decimals=decimals,
        grouped="," in num,
        negative=negative,
        currency="USD" if m.group("cur") else None,
        scale=1.0,
        scale_word=None,
        percent=suffix == "%",
        bps=False,
        multiple=suffix == "x",
        per_share=False,
        shares=False,
        skip=None,
    )


def _num_value(digits: str) -> tuple[float, int]:
    plain = digits.replace(",", "")
    decimals = len(plain.split(".", 1)[1]) if "." in plain else 0
    return float(plain), decimals


_DIGIT = re.compile(r"[0-9]")
# The longest lead a number may have: "(-US$ " before its first digit.
_LEAD = 8


def scan(text: str, *, start: int = 0, end: int | None = None) -> Iterator[Token]:
    """Every written number in text[start:end], figures and non-figures (see `Token.skip`)."""
    stop = len(text) if end is None else end
    pos = start
    while pos < stop:
        # Find the next digit with a cheap search, then read the number from a few characters
        # before it (its sign, parenthesis or currency): the full pattern tried at every
        # position of a long filing would cost far more.
        digit = _DIGIT.search(text, pos, stop)
        if digit is None:
            return
        match = _NUMBER.search(text, max(pos, digit.start() - _LEAD), stop)
        if match is None:
            return
        token = _token(text, match, stop)
        pos = max(token.end, match.end())
        yield token


def _token(text: str, match: re.Match[str], stop: int) -> Token:
    num = match.group("num")
    mantissa, decimals = _num_value(num)
    n_start, n_end = match.span("num")
    t_start = match.start()
    cur_raw = match.group("cur")
    currency = CURRENCIES.get(cur_raw.strip().lower()) if cur_raw else None
    opened = match.group("open") is not None or match.group("open2") is not None
    sign = match.group("sign")
    if sign and t_start > 0 and (text[t_start - 1].isalnum()) and not opened:
        # A hyphen glued to what precedes it joins words ("10-K", "2023-2024"): no sign.
        sign = None
        t_start = match.start("cur") if cur_raw else n_start
    sign = sign or match.group("sign2")
    negative = sign is not None and sign != "+"
    pos = n_end
    closed = opened and text.startswith(")", pos)
    if closed:
        negative = True
        pos += 1
    elif opened:
        # A parenthesis that does not close on the number is punctuation, not a sign.
        if match.group("open") is not None:
            t_start += 1
    percent = bps = multiple = per_share = shares = False
    scale = 1.0
    scale_word: str | None = None
    rest = text[pos:stop]
    if m := _PERCENT.match(rest):
        percent = True
        pos += m.end()
    elif m := _BPS.match(rest):
        bps = True
        pos += m.end()
    else:
        if m := _SCALE_WORD.match(rest):
            scale_word = m.group("w").lower()
            scale = SCALES[scale_word]
            pos += m.end()
        elif not closed and (m := _SCALE_LETTER.match(rest)):
            scale_word = m.group("w").lower()
            scale = SCALES[scale_word]
            pos += m.end()
        rest = text[pos:stop]
        if m := _MULTIPLE.match(rest):
            multiple = True
            pos += m.end()
        else:
            if m := _CURRENCY_AFTER.match(rest):
                currency = currency or CURRENCIES[m.group("c").lower()]
                pos += m.end()
                rest = text[pos:stop]
            if m := _PER_SHARE.match(rest):
                per_share = True
                pos += m.end()
            elif m := _SHARES.match(rest):
                shares = True
                pos += m.end()
    skip = _why_not(text, t_start, n_start, n_end, pos, mantissa, decimals)
    unit_given = bool(currency or scale_word or percent or bps or multiple or per_share)
    if skip is None and not unit_given and not shares:
        skip = _bare_skip(num, mantissa, decimals)
    elif currency and skip in (_NAMED, _DATE_OR_ID) and text[t_start] in _CURRENCY_START:
        # An amount is an amount after a product's name ("iPhone $201.2B") or in a range of
        # amounts ("$150.84-$154.76").
        skip = None
    return Token(
        start=t_start,
        end=pos,
        text=text[t_start:pos],
        mantissa=-mantissa if negative else mantissa,
        decimals=decimals,
        grouped="," in num,
        negative=negative,
        currency=currency,
        scale=scale,
        scale_word=scale_word,
        percent=percent,
        bps=bps,
        multiple=multiple,
        per_share=per_share,
        shares=shares,
        skip=skip,
    )


_NAMED = "name or number of something"
_DATE_OR_ID = "date or identifier"
_CURRENCY_START = frozenset("$€£¥₹UCAH")


def _bare_skip(num: str, mantissa: float, decimals: int) -> str | None:
    """A number with no unit at all: years and small counts in prose are not figures."""
    if decimals == 0 and "," not in num:
        if 1900 <= mantissa <= 2100 and len(num) == 4:
            return "year"
        if mantissa < 1000:
            return "small count"
        if len(num) >= 9 and num.startswith("0"):
            return "identifier"
    return None


def _why_not(
    text: str,
    t_start: int,
    n_start: int,
    n_end: int,
    t_end: int,
    mantissa: float,
    decimals: int,
) -> str | None:
    prev = text[t_start - 1] if t_start > 0 else ""
    prev_n = text[n_start - 1] if n_start > 0 else ""
    after_n = text[n_end] if n_end < len(text) else ""
    after = text[t_end] if t_end < len(text) else ""
    after2 = text[n_end : n_end + 2]
    # Glued to letters or other numbers: FY2025, Q3, S1, 3Q24, 10b5, 1st, 2024E, v1.2.
    if (prev and (prev.isalpha() or prev in "_'’^#")) or prev_n.isalpha():
        return "identifier"
    if t_end == n_end and after and (after.isalpha() or after == "_"):
        return "identifier"
    # Dates, accession numbers, ranges, times, fractions: 2024-09-28, 09/28/2024, 10:30.
    if prev and prev in "-–/:." and t_start > 1 and text[t_start - 2].isdigit():
        return "date or identifier"
    if prev and prev in "-–" and t_start > 1 and text[t_start - 2].isalpha():
        return "identifier"
    if after2[:1] and after2[:1] in "-–/:" and after2[1:2].isalnum() and t_end == n_end:
        return "date or identifier"
    if after_n == "-" and text[n_end + 1 : n_end + 2].isalpha():
        return "identifier"
    # Citation markers and footnotes: [S1], [1], [^2].
    if prev == "[" and after == "]":
        return "citation"
    # "September 28, 2024", "28 Sept 2024".
    head = text[max(0, t_start - 12) : t_start]
    if _MONTH_BEFORE.search(head) or _MONTH_AFTER.match(text[t_end : t_end + 12]):
        return "date"
    if re.match(r",[ \u00a0]?(?:19|20)[0-9]{2}\b", text[t_end : t_end + 7]) and decimals == 0:
        if mantissa <= 31:
            return "date"
    word = _WORD_BEFORE.search(text[max(0, t_start - 24) : t_start])
    if word and word.group(1).lower().rstrip(".") in _NAMING_WORDS | {"no"}:
        if word.group(1).lower() in ("no", "number") and t_end > n_end:
            return None
        return "name or number of something"
    # List numbering at the start of a line: "1. ", "2) ".
    if _LIST_NUMBER.search(text[max(0, t_start - 8) : t_start]) and decimals == 0:
        if re.match(r"[.)][ \t]", text[n_end : n_end + 2]):
            return "list numbering"
    return None
