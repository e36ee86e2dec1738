"""Which period a number is for: the one an answer states, and the one the evidence gives it.

A figure that exists in the evidence for another period than the answer says is wrong (FY2024
revenue quoted with FY2025's number). So each evidence number keeps its period (a statement
column's fiscal label and end date, an XBRL fact's date range, the years a sentence of a filing
names) and each figure the period its sentence gives it; `compatible` says whether the two can
be the same period, leaning to yes whenever either side is vague.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date

from dexter.figures.numbers import MONTHS

_MONTH_NUMBERS = {
    name: i
    for i, names in enumerate(
        (
            "january jan",
            "february feb",
            "march mar",
            "april apr",
            "may",
            "june jun",
            "july jul",
            "august aug",
            "september sep sept",
            "october oct",
            "november nov",
            "december dec",
        ),
        start=1,
    )
    for name in names.split()
}
_ORDINAL_QUARTERS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2}
_ORDINAL_QUARTERS |= {"3rd": 3, "4th": 4}


@dataclass(frozen=True, slots=True)
class EvidencePeriod:
    """What evidence says a number is for; empty sets mean "not said"."""

    # Years the company would name it by (the fiscal label, else the year the period ends).
    fiscal_years: frozenset[int] = frozenset()
    # Calendar years it falls in, for an answer that names a plain year.
    calendar_years: frozenset[int] = frozenset()
    quarter: int | None = None
    end: date | None = None
    # "annual", "quarter", "ytd" (several quarters) or "instant" (a balance-sheet date), if known.
    span: str | None = None

    @property
    def known(self) -> bool:
        return bool(self.fiscal_years or self.calendar_years or self.end)

    def describe(self) -> str:
        parts: list[str] = []
        if self.quarter and self.fiscal_years:
            parts.append(f"Q{self.quarter} FY{min(self.fiscal_years)}")
        elif self.span == "annual" and self.fiscal_years:
            parts.append("FY" + "/".join(str(y) for y in sorted(self.fiscal_years)))
        elif self.fiscal_years or self.calendar_years:
            parts.append("/".join(str(y) for y in sorted(self.fiscal_years | self.calendar_years)))
        if self.end:
            parts.append(f"ended {self.end.isoformat()}")
        return " ".join(parts)


@dataclass(frozen=True, slots=True)
class StatedPeriod:
    """The period an answer gives a figure: a year, maybe a quarter, maybe an exact date."""

    year: int
    fiscal: bool = False
    quarter: int | None = None
    end: date | None = None
    text: str = ""


@dataclass(frozen=True, slots=True)
class Mention:
    start: int
    end: int
    period: StatedPeriod
    # Several mentions joined ("2024 and 2023", "from 2023 to 2024") are kept apart.
    extra: tuple[StatedPeriod, ...] = field(default=())


def compatible(stated: StatedPeriod, found: EvidencePeriod) -> bool:
    """Whether the evidence's period can be the one the answer states (unknown: yes)."""
    if not found.known:
        return True
    if stated.end is not None and found.end is not None:
        # An exact date against an exact date: the same period end, give or take a weekend.
        return abs((stated.end - found.end).days) <= 7
    years = found.fiscal_years if stated.fiscal else found.fiscal_years | found.calendar_years
    if found.end is not None and not found.fiscal_years:
        years = years | {found.end.year}
    if years and stated.year not in years:
        return False
    if stated.quarter is not None:
        if found.quarter is not None and found.quarter != stated.quarter:
            return False
        if found.quarter is None and found.span == "annual":
            return False
    return True


# ---------------------------------------------------------------------------------------------
# Reading periods from evidence labels

_FISCAL_LABEL = re.compile(
    r"\b(?P<y>(?:19|20)[0-9]{2})[- ]?(?P<kind>FY|Q[1-4]|H[12]|TTM|YTD)\b"
    r"|\b(?P<kind2>FY|Q[1-4])[ -]?(?P<y2>(?:19|20)[0-9]{2})\b",
    re.IGNORECASE,
)
_ISO_DATE = re.compile(r"\b((?:19|20)[0-9]{2})-([01][0-9])-([0-3][0-9])\b")
_WORD_DATE = re.compile(
    rf"\b(?P<m>{MONTHS})\.?[ \u00a0]+(?P<d>[0-3]?[0-9]),?[ \u00a0]+(?P<y>(?:19|20)[0-9]{{2}})\b",
    re.IGNORECASE,
)
_YEAR = re.compile(r"(?<![0-9A-Za-z$.,-])((?:19|20)[0-9]{2})(?![0-9,]|\.[0-9]|-[0-9])")


def _iso(match: re.Match[str]) -> date | None:
    try:
        return date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
    except ValueError:
        return None


def _word_date(match: re.Match[str]) -> date | None:
    try:
        month = _MONTH_NUMBERS[match.group("m").lower()]
        return date(int(match.group("y")), month, int(match.group("d")))
    except (ValueError, KeyError):
        return None


def _fiscal_year_of(end: date) -> set[int]:
    """Years a fiscal period ending on `end` may be named by: companies whose year ends in
    January or February name it by either year (NVIDIA: by the year it ends; retailers: by
    the year it mostly covers)."""
    return {end.year, end.year - 1} if end.month <= 2 else {end.year}


def header_period(text: str) -> EvidencePeriod | None:
    """A table header or a period cell: "2025-FY (2025-09-27)", "2026-Q1 (2025-12-27)",
    "2025-01-27 to 2026-01-25", "2024-09-28", "FY2024", "2024"."""
    text = text.strip()
    if not text:
        return None
    dates = [d for d in (_iso(m) for m in _ISO_DATE.finditer(text)) if d is not None]
    dates += [d for d in (_word_date(m) for m in _WORD_DATE.finditer(text)) if d is not None]
    label = _FISCAL_LABEL.search(text)
    fiscal: set[int] = set()
    quarter: int | None = None
    span: str | None = None
    if label:
        year = int(label.group("y") or label.group("y2"))
        kind = (label.group("kind") or label.group("kind2")).upper()
        fiscal = {year}
        if kind.startswith("Q"):
            quarter, span = int(kind[1]), "quarter"
        elif kind == "FY":
            span = "annual"
    end = dates[-1] if dates else None
    if len(dates) >= 2:
        days = (dates[-1] - dates[0]).days
        span = "annual" if days > 340 else "quarter" if days < 100 else "ytd"
    elif len(dates) == 1 and span is None and not label:
        span = "instant"
    calendar: set[int] = set()
    if end is not None:
        calendar = {end.year}
        if not fiscal:
            fiscal = _fiscal_year_of(end)
            if span == "annual" and end.month <= 2:
                calendar.add(end.year - 1)
    if not fiscal and not end:
        stripped = re.sub(r"[^0-9A-Za-z ]", " ", text).split()
        years = [int(w) for w in stripped if re.fullmatch(r"(?:19|20)[0-9]{2}", w)]
        if len(years) == 1 and len(stripped) <= 3:
            fiscal = {years[0]}
            calendar = {years[0]}
    if not fiscal and not calendar and end is None:
        return None
    return EvidencePeriod(frozenset(fiscal), frozenset(calendar), quarter, end, span)


def years_in(text: str) -> EvidencePeriod | None:
    """Years a sentence of evidence prose names, as a loose period (any of them)."""
    years = {int(m.group(1)) for m in _YEAR.finditer(text)}
    years |= {d.year for d in (_iso(m) for m in _ISO_DATE.finditer(text)) if d}
    if not years:
        return None
    quarter = None
    q = re.search(
        r"\b(first|second|third|fourth)[ \u00a0]+(?:fiscal[ \u00a0]+)?quarter", text, re.I
    )
    if q and len(years) == 1:
        quarter = _ORDINAL_QUARTERS[q.group(1).lower()]
    frozen = frozenset(years)
    return EvidencePeriod(frozen, frozen, quarter, None, None)


# ---------------------------------------------------------------------------------------------
# Reading the periods an answer states

_MENTION = re.compile(
    r"""
    (?P<q1>\bQ(?P<qa>[1-4])[ \u00a0]?(?:of[ \u00a0])?
        (?P<qf>FY|fiscal(?:[ \u00a0]year)?)?[ \u00a0'’]?
        (?P<qy>(?:19|20)[0-9]{2}|[0-9]{2})\b)
    |(?P<q2>\b(?P<qb>[1-4])Q[ \u00a0'’]?(?P<qy2>(?:19|20)?[0-9]{2})\b)
    |(?P<q3>\b(?P<qo>first|second|third|fourth|1st|2nd|3rd|4th)[ \u00a0](?:fiscal[ \u00a0])?quarter
        (?:[ \u00a0]of)?(?:[ \u00a0](?P<qf3>fiscal(?:[ \u00a0]year)?|FY))?[ \u00a0]?
        (?P<qy3>(?:19|20)[0-9]{2})\b)
    |(?P<lbl>\b(?P<ly>(?:19|20)[0-9]{2})-(?P<lk>FY|Q[1-4])\b)
    |(?P<fy>\bFY[ \u00a0'’]?(?P<fyy>(?:19|20)[0-9]{2}|[0-9]{2})\b)
    |(?P<fw>\bfiscal(?:[ \u00a0]year)?s?[ \u00a0](?:ended[ \u00a0])?(?P<fwy>(?:19|20)[0-9]{2})\b)
    |(?P<wd>\b(?P<wm>"""
    + MONTHS
    + r""")\.?[ \u00a0]+(?P<wdd>[0-3]?[0-9]),?[ \u00a0]+(?P<wdy>(?:19|20)[0-9]{2})\b)
    |(?P<iso>\b(?P<iy>(?:19|20)[0-9]{2})-(?P<im>[01][0-9])-(?P<id>[0-3][0-9])\b)
    |(?P<yr>(?<![0-9A-Za-z$.,])(?P<yy>(?:19|20)[0-9]{2})
        (?![0-9,%]|\.[0-9]|[ \u00a0]?(?:billion|million|thousand)))
    """,
    re.VERBOSE | re.IGNORECASE,
)
_FISCAL_BEFORE = re.compile(
    r"\b(?:fiscal(?:[ \u00a0]years?)?|FY)[ \u00a0]*(?:and[ \u00a0]+)?$", re.I
)


def _year(text: str) -> int:
    value = int(text)
    return 2000 + value if value < 100 else value


def mentions(text: str) -> list[Mention]:
    """Every period the text names, in order: quarters, fiscal years, dates, plain years."""
    found: list[Mention] = []
    for m in _MENTION.finditer(text):
        period: StatedPeriod | None = None
        if m.group("q1"):
            period = StatedPeriod(_year(m.group("qy")), bool(m.group("qf")), int(m.group("qa")))
        elif m.group("q2"):
            period = StatedPeriod(_year(m.group("qy2")), False, int(m.group("qb")))
        elif m.group("q3"):
            ordinal = _ORDINAL_QUARTERS[m.group("qo").lower()]
            period = StatedPeriod(int(m.group("qy3")), bool(m.group("qf3")), ordinal)
        elif m.group("lbl"):
            kind = m.group("lk").upper()
            period = StatedPeriod(
                int(m.group("ly")), True, int(kind[1]) if kind.startswith("Q") else None
            )
        elif m.group("fy"):
            period = StatedPeriod(_year(m.group("fyy")), True)
        elif m.group("fw"):
            period = StatedPeriod(int(m.group("fwy")), True)
        elif m.group("wd"):
            try:
                day = date(
                    int(m.group("wdy")),
                    _MONTH_NUMBERS[m.group("wm").lower()],
                    int(m.group("wdd")),
                )
            except (ValueError, KeyError):
                continue
            period = StatedPeriod(day.year, False, None, day)
        elif m.group("iso"):
            try:
                day = date(int(m.group("iy")), int(m.group("im")), int(m.group("id")))
            except ValueError:
                continue
            period = StatedPeriod(day.year, False, None, day)
        elif m.group("yr"):
            # "fiscal 2024 and 2023": the second year is fiscal too.
            fiscal = bool(_FISCAL_BEFORE.search(text[max(0, m.start() - 20) : m.start()]))
            if not fiscal and found and found[-1].period.fiscal:
                between = text[found[-1].end : m.start()]
                fiscal = bool(
                    re.fullmatch(r"[ \u00a0]*(?:,|and|to|through|vs\.?|versus)[ \u00a0]*", between)
                )
            period = StatedPeriod(int(m.group("yy")), fiscal)
        if period is not None:
            found.append(Mention(m.start(), m.end(), _with_text(period, m.group(0))))
    return found


def _with_text(period: StatedPeriod, text: str) -> StatedPeriod:
    return StatedPeriod(period.year, period.fiscal, period.quarter, period.end, text)
