"""Which period a number is for: the one an answer states, and the one the evidence gives it.

A figure that exists in the evidence for another period than the answer says is wrong (FY2024
revenue quoted with FY2025's number). So each evidence number keeps its period (a statement
column's fiscal label and end date, an XBRL fact's date range, a price row's date, the years a
sentence of a filing names) and each figure the period its answer gives it; `compatible` says
whether the two can be the same period, leaning to yes whenever either side is vague.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from functools import lru_cache

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
_ORDINAL_QUARTERS = {"first": 1, "second": 2, "third": 3, "fourth": 4}
_ORDINAL_QUARTERS |= {"1st": 1, "2nd": 2, "3rd": 3, "4th": 4}
# Fiscal period ends fall on a weekday near a month end: 52/53-week years move by days.
_PERIOD_END_SLACK = 7


@dataclass(frozen=True, slots=True)
class EvidencePeriod:
    """What evidence says a number is for; empty sets mean "not said"."""

    # Years the company would name it by (the fiscal label, else the year the period ends).
    fiscal_years: frozenset[int] = frozenset()
    # Calendar years it falls in, for an answer that names a plain year.
    calendar_years: frozenset[int] = frozenset()
    quarter: int | None = None
    end: date | None = None
    # "annual", "quarter", "ytd", "ttm" or "instant" (one date: a balance, a price), if known.
    span: str | None = None

    @property
    def known(self) -> bool:
        return bool(self.fiscal_years or self.calendar_years or self.end)

    def describe(self) -> str:
        parts: list[str] = []
        years = sorted(self.fiscal_years)
        if self.quarter and len(years) == 1:
            parts.append(f"Q{self.quarter} FY{years[0]}" + (" TTM" if self.span == "ttm" else ""))
        elif self.span == "annual" and years:
            parts.append("FY" + "/".join(str(y) for y in years))
        elif self.span == "instant" and self.end:
            return self.end.isoformat()
        elif self.fiscal_years or self.calendar_years:
            parts.append("/".join(str(y) for y in sorted(self.fiscal_years | self.calendar_years)))
        if self.end:
            parts.append(f"ended {self.end.isoformat()}")
        return " ".join(parts)


@dataclass(frozen=True, slots=True)
class StatedPeriod:
    """The period an answer gives a figure. Any part may be missing: "Q3" has no year,
    "the September quarter" only a month, "October 14" a day whose year the context gives."""

    year: int | None = None
    fiscal: bool = False
    quarter: int | None = None
    end: date | None = None
    text: str = ""
    month: int | None = None
    day: int | None = None
    # A range of years ("FY2021-FY2025"): any year from `first_year` to `year`.
    first_year: int | None = None
    # "TTM", "trailing twelve months": the latest trailing period (or the one to `end`).
    ttm: bool = False
    # A range of dates ("between August 31, 2020 and November 6, 2020"): from `start` to `end`.
    start: date | None = None
    # "the latest fiscal year" ("annual"), "the most recent quarter" ("quarter").
    latest: str | None = None
    # "ended 2021", "at the end of 2021": the year's last day (a price's, a balance's).
    year_end: bool = False
    # "in the quarter" ("quarter"), "year to date" ("ytd").
    span: str | None = None

    @property
    def key(self) -> tuple[object, ...]:
        return (
            self.year,
            self.quarter,
            self.end,
            self.month,
            self.day,
            self.first_year,
            self.ttm,
            self.start,
            self.latest,
            self.span,
        )


@dataclass(frozen=True, slots=True)
class Mention:
    start: int
    end: int
    period: StatedPeriod


def compatible(
    stated: StatedPeriod,
    found: EvidencePeriod,
    latest: Mapping[str, date] | None = None,
    newest: bool = True,
) -> bool:
    """Whether the evidence's period can be the one the answer states (unknown: yes).

    `latest` holds the company's latest fiscal year end ("annual"), quarter end ("quarter")
    and period end of any length ("trailing"): "the latest fiscal year" and "TTM" without a
    date mean those."""
    if not found.known:
        return True
    if stated.span is not None and found.span in ("quarter", "ytd") and found.span != stated.span:
        return False
    latest = latest or {}
    if stated.ttm and stated.end is None and stated.year is None:
        trailing = latest.get("trailing")
        if found.span in ("ttm", "annual") and trailing is not None and found.end is not None:
            return found.end == trailing
        return found.span != "quarter"
    if stated.latest is not None:
        wanted = latest.get(stated.latest)
        if found.span in ("annual", "quarter", "ttm") and found.span != stated.latest:
            return False
        return wanted is None or found.end is None or found.end == wanted
    end = found.end
    if stated.year_end and stated.year is not None and found.span == "instant" and end:
        # The year's last day, or the Friday before it when it falls on a weekend.
        last = date(stated.year, 12, 31)
        while last.weekday() >= 5:
            last -= timedelta(days=1)
        return end == last
    if stated.start is not None and stated.end is not None and end is not None:
        return (
            stated.start - timedelta(days=_PERIOD_END_SLACK)
            <= end
            <= stated.end + timedelta(days=_PERIOD_END_SLACK)
        )
    if stated.end is not None and end is not None:
        # An instant (a price's day, a balance at a date) is that day; a period end may move
        # by a few days between a company's label and its calendar.
        slack = 0 if found.span == "instant" and stated.day is not None else _PERIOD_END_SLACK
        return abs((stated.end - end).days) <= slack
    if stated.month is not None and end is not None:
        if stated.day is not None:
            year = stated.year or end.year
            try:
                day = date(year, stated.month, stated.day)
            except ValueError:
                return True
            slack = 0 if found.span == "instant" else _PERIOD_END_SLACK
            if abs((day - end).days) > slack:
                return False
        elif not _in_month(end, stated.month, stated.year):
            return False
    if stated.year is not None:
        years = found.fiscal_years if stated.fiscal else found.fiscal_years | found.calendar_years
        if end is not None and not found.fiscal_years:
            years = years | {end.year}
        named = range(stated.first_year or stated.year, stated.year + 1)
        if years and not any(y in years for y in named):
            return False
    if stated.quarter is not None:
        if found.quarter is not None and found.quarter != stated.quarter:
            return False
        if stated.year is None and stated.end is None and end is not None and not newest:
            # "Q3" without a year is the latest third quarter (or the year to its date): the
            # same quarter of an earlier year is not it.
            span = "ytd" if stated.span == "ytd" else "quarter"
            if found.span == span:
                return False
        # A quarter is not a year, nor the year to its date, unless the answer says "year to
        # date" (through that quarter).
        if found.quarter is None and found.span == "annual":
            return False
        if found.quarter is None and found.span == "ytd" and stated.span != "ytd":
            return False
    return True


def _in_month(end: date, month: int, year: int | None) -> bool:
    """A period "of September 2025" ends in that month, give or take a few days (52/53-week
    years end near a month's turn)."""
    years = [year] if year is not None else [end.year, end.year - 1, end.year + 1]
    slack = timedelta(days=_PERIOD_END_SLACK)
    for y in years:
        first = date(y, month, 1)
        last = date(y, month, calendar.monthrange(y, month)[1])
        if first - slack <= end <= last + slack:
            return True
    return False


# ---------------------------------------------------------------------------------------------
# Reading periods from evidence labels

_FISCAL_LABEL = re.compile(
    r"\b(?P<y>(?:19|20)[0-9]{2})[- ]?(?P<kind>FY|Q[1-4]|H[12]|YTD)(?P<ttm>[- ]TTM)?\b"
    r"|\b(?P<kind2>FY|Q[1-4])[ -]?(?P<y2>(?:19|20)[0-9]{2})\b",
    re.IGNORECASE,
)
_ISO_DATE = re.compile(r"\b((?:19|20)[0-9]{2})-([01][0-9])-([0-3][0-9])\b")
_WORD_DATE = re.compile(
    rf"\b(?P<m>{MONTHS})\.?[ \u00a0]+(?P<d>[0-3]?[0-9]),?[ \u00a0]+(?P<y>(?:19|20)[0-9]{{2}})\b",
    re.IGNORECASE,
)
_YEAR = re.compile(r"(?<![0-9A-Za-z$.,-])((?:19|20)[0-9]{2})(?![0-9]|,[0-9]|\.[0-9]|-[0-9])")


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


@lru_cache(maxsize=4096)
def header_period(text: str) -> EvidencePeriod | None:
    """A table header or a period cell: "2025-FY (2025-09-27)", "2026-Q1 (2025-12-27)",
    "2027-Q1-TTM (2026-04-26)", "2025-01-27 to 2026-01-25", "2024-09-28", "FY2024", "2024"."""
    text = text.strip()
    if not text or len(text) > 80:
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
        if label.group("ttm"):
            span = "ttm"
    end = dates[-1] if dates else None
    if len(dates) >= 2:
        days = (dates[-1] - dates[0]).days
        span = "annual" if days > 340 else "quarter" if days < 100 else "ytd"
    elif len(dates) == 1 and span is None and not label:
        span = "instant"
    calendar_years: set[int] = set()
    if end is not None:
        calendar_years = {end.year}
        if not fiscal:
            fiscal = _fiscal_year_of(end)
            if span == "annual" and end.month <= 2:
                calendar_years.add(end.year - 1)
    if not fiscal and not end:
        words = re.sub(r"[^0-9A-Za-z ]", " ", text).split()
        years = [int(w) for w in words if re.fullmatch(r"(?:19|20)[0-9]{2}", w)]
        if len(years) == 1 and len(words) <= 3:
            fiscal = {years[0]}
            calendar_years = {years[0]}
    if not fiscal and not calendar_years and end is None:
        return None
    return EvidencePeriod(frozenset(fiscal), frozenset(calendar_years), quarter, end, span)


def years_in(text: str) -> EvidencePeriod | None:
    """Years a sentence of evidence prose names, as a loose period (any of them)."""
    years = {int(m.group(1)) for m in _YEAR.finditer(text)}
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

_SP = r"[ \u00a0]"
_Y4 = r"(?:19|20)[0-9]{2}"
_FY_YEAR = rf"(?:FY{_SP}?'?(?:{_Y4}|[0-9]{{2}})|fiscal(?:{_SP}year)?{_SP}{_Y4}|{_Y4})"
_RANGE = rf"""
    (?P<range>(?P<btw>\bbetween{_SP}+)?\b(?P<ra>{_FY_YEAR})
        {_SP}*(?:-|–|—|to|through|(?(btw)and|(?!))){_SP}*(?P<rb>{_FY_YEAR})\b(?![-/][0-9]))
    |"""
_SINGLE = rf"""
    (?P<q1>\bQ(?P<qa>[1-4]){_SP}?(?:of{_SP})?(?P<qf>FY|fiscal(?:{_SP}year)?)?{_SP}?['’]?
        (?P<qy>{_Y4}|[0-9]{{2}})\b)
    |(?P<q2>\b(?P<qb>[1-4])Q{_SP}?['’]?(?P<qy2>(?:19|20)?[0-9]{{2}})\b)
    |(?P<q3>\b(?P<qo>first|second|third|fourth|1st|2nd|3rd|4th){_SP}(?:fiscal{_SP})?quarter
        (?:{_SP}of)?(?:{_SP}(?P<qf3>fiscal(?:{_SP}year)?|FY))?{_SP}?(?P<qy3>{_Y4})\b)
    |(?P<lbl>\b(?P<ly>{_Y4})-(?P<lk>FY|Q[1-4])(?P<lt>-TTM)?\b)
    |(?P<fy>\bFY{_SP}?['’]?(?P<fyy>{_Y4}|[0-9]{{2}})\b)
    |(?P<fw>\bfiscal(?:{_SP}year)?s?{_SP}(?:ended{_SP})?(?P<fwy>{_Y4})\b)
    |(?P<wd>\b(?P<wm>{MONTHS})\.?{_SP}+(?P<wdd>[0-3]?[0-9]),?{_SP}+(?:(?P<wdy>{_Y4})\b|['’](?P<wdy2>[0-9]{{2}})\b))
    |(?P<iso>\b(?P<iy>{_Y4})-(?P<im>[01][0-9])-(?P<id>[0-3][0-9])\b)
    |(?P<my>\b(?P<mym>{MONTHS})\.?{_SP}+(?P<myy>{_Y4})\b)
    |(?P<md>\b(?P<mdm>{MONTHS})\.?{_SP}+(?P<mdd>[0-3]?[0-9])\b(?!,?{_SP}*[0-9]|{_SP}['’][0-9]))
    |(?P<mq>\b(?P<mqm>{MONTHS})(?:-ending|-end)?{_SP}+quarter\b)
    |(?P<mo>(?<=in{_SP}|at{_SP}|by{_SP}|of{_SP})(?P<mom>{MONTHS})\b)
    |(?P<qo2>\b(?P<qoo>first|second|third|fourth){_SP}(?:fiscal{_SP})?quarter\b)
    |(?P<qq>\bQ(?P<qqn>[1-4])\b)
    |(?P<ye>\b(?:ended|end{_SP}of|year[- ]end|close{_SP}of|closed{_SP}out){_SP}
        (?P<yey>{_Y4})\b(?!-))
    |(?P<same>\b(?:that|the{_SP}same){_SP}(?:fiscal{_SP})?(?:year|quarter)\b)
    |(?P<lat>\b(?:latest|most{_SP}recent|last{_SP}reported|current){_SP}(?:full{_SP})?
        (?:fiscal{_SP})?(?P<ltk>year|quarter)s?\b)
    |(?P<ttm>\b(?:TTM|LTM|trailing{_SP}twelve{_SP}months|trailing{_SP}12{_SP}months|
        last{_SP}twelve{_SP}months)\b
        (?:{_SP}(?:to|through|ended|ending|until){_SP}(?:(?P<tm>{MONTHS})\.?{_SP}+(?P<td>[0-3]?[0-9]),?
        {_SP}+(?P<ty>{_Y4})|(?P<tiso>{_Y4}-[01][0-9]-[0-3][0-9])))?)
    |(?P<yr>(?<![0-9A-Za-z$.,])(?P<yy>{_Y4})
        (?![0-9%]|,[0-9]|\.[0-9]|{_SP}?(?:billion|million|thousand)))
    """
_MENTION = re.compile(_RANGE + _SINGLE, re.VERBOSE | re.IGNORECASE)
# The same without ranges, to read the two ends of a range that is not one ("2025-2024").
_MENTION_SINGLE = re.compile(
    _RANGE.replace("(?P<range>", "(?P<range>(?!)").replace("(?(btw)and|(?!))", "(?!)") + _SINGLE,
    re.VERBOSE | re.IGNORECASE,
)
_FISCAL_BEFORE = re.compile(
    r"\b(?:fiscal(?:[ \u00a0]years?)?|FY)[ \u00a0]*(?:and[ \u00a0]+)?$", re.I
)
# Dates that say when something was filed or announced, not what a figure is for.
_NOT_A_PERIOD = re.compile(
    r"(?:filed|filing|announced|released|published|dated|issued|signed)"
    r"[ \u00a0]+(?:on[ \u00a0]+)?$",
    re.IGNORECASE,
)
_MONTH_DAY_IN_MONTHS = re.compile(rf"^(?:{MONTHS})$", re.IGNORECASE)


def _year(text: str) -> int:
    value = int(text)
    return 2000 + value if value < 100 else value


def _fy_year(text: str) -> tuple[int, bool]:
    digits = re.findall(r"[0-9]+", text)[-1]
    return _year(digits), not text[:1].isdigit()


def _month(name: str) -> int:
    return _MONTH_NUMBERS[name.lower().rstrip(".")]


def mentions(text: str) -> list[Mention]:
    """Every period the text names, in order: quarters, fiscal years, dates, plain years."""
    found: list[Mention] = []
    for m in _MENTION.finditer(text):
        if found and _joins_range(text, found[-1], m):
            merged = _date_range(found[-1], m, text)
            if merged is not None:
                found[-1] = merged
                continue
        if _NOT_A_PERIOD.search(text[max(0, m.start() - 24) : m.start()]):
            continue
        period = _period(m, text, found)
        if period is not None:
            found.append(Mention(m.start(), m.end(), period))
        elif m.group("range"):
            for part in _MENTION_SINGLE.finditer(text, m.start(), m.end()):
                single = _period(part, text, found)
                if single is not None:
                    found.append(Mention(part.start(), part.end(), single))
    return found


def _period(m: re.Match[str], text: str, found: list[Mention]) -> StatedPeriod | None:
    whole = m.group(0)
    if m.group("range"):
        (a, fiscal_a), (b, fiscal_b) = _fy_year(m.group("ra")), _fy_year(m.group("rb"))
        if not a < b <= a + 30:
            return None
        return StatedPeriod(b, fiscal_a or fiscal_b, text=whole, first_year=a)
    if m.group("q1"):
        return StatedPeriod(
            _year(m.group("qy")), bool(m.group("qf")), int(m.group("qa")), text=whole
        )
    if m.group("q2"):
        return StatedPeriod(_year(m.group("qy2")), False, int(m.group("qb")), text=whole)
    if m.group("q3"):
        quarter = _ORDINAL_QUARTERS[m.group("qo").lower()]
        return StatedPeriod(int(m.group("qy3")), bool(m.group("qf3")), quarter, text=whole)
    if m.group("lbl"):
        kind = m.group("lk").upper()
        label_quarter = int(kind[1]) if kind.startswith("Q") else None
        return StatedPeriod(
            int(m.group("ly")), True, label_quarter, text=whole, ttm=bool(m.group("lt"))
        )
    if m.group("fy"):
        return StatedPeriod(_year(m.group("fyy")), True, text=whole)
    if m.group("fw"):
        return StatedPeriod(int(m.group("fwy")), True, text=whole)
    if m.group("wd"):
        try:
            year = int(m.group("wdy")) if m.group("wdy") else 2000 + int(m.group("wdy2"))
            day = date(year, _month(m.group("wm")), int(m.group("wdd")))
        except (ValueError, KeyError):
            return None
        return StatedPeriod(day.year, False, None, day, whole, day.month, day.day)
    if m.group("iso"):
        try:
            day = date(int(m.group("iy")), int(m.group("im")), int(m.group("id")))
        except ValueError:
            return None
        return StatedPeriod(day.year, False, None, day, whole, day.month, day.day)
    if m.group("my"):
        return StatedPeriod(int(m.group("myy")), False, text=whole, month=_month(m.group("mym")))
    if m.group("md"):
        day_number = int(m.group("mdd"))
        if not 1 <= day_number <= 31 or _MONTH_DAY_IN_MONTHS.match(m.group("mdm")) is None:
            return None
        # "May 2" is a date; "may 5" in prose is a verb: dates take a capital.
        if not m.group("mdm")[0].isupper():
            return None
        return StatedPeriod(None, False, text=whole, month=_month(m.group("mdm")), day=day_number)
    if m.group("mq"):
        return StatedPeriod(None, False, text=whole, month=_month(m.group("mqm")))
    if m.group("mo"):
        if not m.group("mom")[0].isupper():
            return None
        return StatedPeriod(None, False, text=whole, month=_month(m.group("mom")))
    if m.group("qo2"):
        return StatedPeriod(None, False, _ORDINAL_QUARTERS[m.group("qoo").lower()], text=whole)
    if m.group("qq"):
        return StatedPeriod(None, False, int(m.group("qqn")), text=whole)
    if m.group("ye"):
        return StatedPeriod(int(m.group("yey")), False, text=whole, year_end=True)
    if m.group("same"):
        # "R&D that year": the period named last before it.
        return found[-1].period if found else None
    if m.group("lat"):
        kind = "annual" if m.group("ltk").lower() == "year" else "quarter"
        return StatedPeriod(None, False, text=whole, latest=kind)
    if m.group("ttm"):
        to: date | None = None
        try:
            if m.group("ty"):
                to = date(int(m.group("ty")), _month(m.group("tm")), int(m.group("td")))
            elif m.group("tiso"):
                to = date.fromisoformat(m.group("tiso"))
        except (ValueError, KeyError):
            to = None
        if to is None:
            return StatedPeriod(None, False, text=whole, ttm=True)
        return StatedPeriod(to.year, False, None, to, whole, to.month, to.day, ttm=True)
    if m.group("yr"):
        # "fiscal 2024 and 2023": the second year is fiscal too.
        fiscal = bool(_FISCAL_BEFORE.search(text[max(0, m.start() - 20) : m.start()]))
        if not fiscal and found and found[-1].period.fiscal:
            between = text[found[-1].end : m.start()]
            fiscal = bool(
                re.fullmatch(r"[ \u00a0]*(?:,|and|to|through|vs\.?|versus)[ \u00a0]*", between)
            )
        return StatedPeriod(int(m.group("yy")), fiscal, text=whole)
    return None


_BETWEEN = re.compile(r"\b(?:between|from)[ \u00a0]+$", re.IGNORECASE)
_AND = re.compile(
    r"^[ \u00a0]*(?:\([^()]*\)[ \u00a0]*)?,?[ \u00a0]*(?:and|to|through|until|–|-)[ \u00a0]+$", re.I
)


def _joins_range(text: str, first: Mention, m: re.Match[str]) -> bool:
    """ "between August 31, 2020 (...) and November 6, 2020", "Nov 1 '21 to Jan 28 '22": two
    days that make one span."""
    if first.period.day is None or first.period.start is not None:
        return False
    between = text[first.end : m.start()]
    if not _AND.match(between):
        return False
    return bool(_BETWEEN.search(text[max(0, first.start - 10) : first.start])) or bool(
        re.match(r"^[ \u00a0]*(?:to|through|until|–|-)[ \u00a0]+$", between)
    )


def _date_range(first: Mention, m: re.Match[str], text: str) -> Mention | None:
    second = _period(m, text, [])
    if second is None or second.end is None:
        return None
    start = first.period.end
    if start is None and first.period.month is not None and first.period.day is not None:
        # "between June 1 and August 11, 2023": the first day takes the second's year.
        try:
            start = date(second.end.year, first.period.month, first.period.day)
            if start > second.end:
                start = date(second.end.year - 1, first.period.month, first.period.day)
        except ValueError:
            return None
    if start is None or second.end <= start:
        return None
    whole = text[first.start : m.end()]
    period = StatedPeriod(
        second.end.year,
        False,
        None,
        second.end,
        whole,
        first_year=start.year if start.year != second.end.year else None,
        start=start,
    )
    return Mention(first.start, m.end(), period)
