"""Standardized statements from SEC companyfacts JSON (`/api/xbrl/companyfacts/CIK##########.json`).

companyfacts holds every non-dimensional XBRL fact a company ever filed, grouped by taxonomy,
concept and unit; each fact carries its period (`start`/`end`), value, and the filing it came from
(`accn`, `form`, `filed`, `fy`, `fp`). Turning that into statements takes these decisions:

* **Which periods exist, and what the company calls them.** `fy`/`fp` describe the *filing*, not
  the fact (a 10-K's comparatives carry the later filing's `fy`), and companies get them wrong:
  NVIDIA tagged its 10-Ks for the years ended January 2011–2014 one year low, and Snowflake tagged
  a Q1 10-Q "FY". So we find each filing's own current period (the latest period end that carries
  a good share of its facts), take the fiscal year-ends from annual reports, learn from the latest
  annual reports how the company numbers its years relative to the calendar, and place every other
  period on that calendar by its dates.
* **Which fact is the figure.** For one concept and one (start, end), the most recently filed
  value wins, so restatements replace originals; only periodic reports count (a proxy statement's
  pay-versus-performance table repeats net income later and would otherwise win). A year's flows
  and a fiscal year-end's balances prefer annual reports (a later 10-Q's comparative fills only
  what none tagged); a quarter-end's balances are the latest periodic report's. The rule depends
  on the date, never on the record asking, so annual, quarterly and TTM records of one date agree.
* **Which concept fills a field.** Candidates in priority order, per period (see `concepts.py`);
  debt, whose concepts overlap, is read as a whole from one filing (see `debt.py`).
* **Quarters nobody filed.** A fourth quarter exists only inside the 10-K, and many cash-flow
  statements are year-to-date only, so a quarter is `YTD − prior YTD` (or `YTD − earlier
  quarters`) when no three-month fact exists; its source says "derived". Each candidate concept
  is tried as filed, then derived, before the next: the statement line derived from year-to-date
  figures beats a narrower concept filed for three months (share-based compensation is the
  cash-flow add-back, not the notes' expense). Per-share amounts are never subtracted.
* **One share basis.** Share counts and per-share amounts filed before a stock split (or any
  change of share basis) are restated to the latest basis, and say so (see `share_basis.py`).

Everything here is a pure function of the parsed JSON. Indexing a 3.7 MB file takes a few tens of
milliseconds, so `index_facts` memoises the index per facts object.
"""

from __future__ import annotations

import difflib
import math
import threading
from bisect import bisect_left
from collections import Counter, OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date
from functools import lru_cache
from typing import Any, Literal, NamedTuple, overload

from dexter.data.errors import NotFound, UpstreamError
from dexter.data.models import (
    BalanceSheet,
    CashFlowStatement,
    FactPoint,
    IncomeStatement,
    Number,
    Source,
)
from dexter.data.sec import debt, urls
from dexter.data.sec.concepts import (
    ANNUAL_FORMS,
    COMPUTED,
    FIELDS,
    FINANCIAL_TAXONOMIES,
    PERIODIC_FORMS,
    QUARTERLY_FORMS,
    Computed,
    FieldSpec,
    Statement,
)
from dexter.data.sec.share_basis import (
    DECLARED_RATIO_CONCEPT,
    PER_SHARE_CONCEPTS,
    SHARE_COUNT_CONCEPTS,
    Declared,
    Figure,
    Observation,
    Split,
)
from dexter.data.sec.share_basis import detect as detect_basis_changes
from dexter.data.sec.share_basis import factor as basis_factor

PROVIDER = "SEC EDGAR"
StatementPeriod = Literal["annual", "quarterly", "ttm"]
AnyStatement = IncomeStatement | BalanceSheet | CashFlowStatement

_MODELS: dict[Statement, type[IncomeStatement] | type[BalanceSheet] | type[CashFlowStatement]] = {
    "income": IncomeStatement,
    "balance": BalanceSheet,
    "cashflow": CashFlowStatement,
}

YEAR_DAYS = 365.2425
QUARTER_DAYS = YEAR_DAYS / 4
# 52/53-week years put period ends up to a week off the calendar; 14 days absorbs that and a
# 14-week quarter without letting a month-long stub pass as a quarter.
TOLERANCE_DAYS = 14
ANNUAL_RANGE = (350, 380)
QUARTER_RANGE = (80, 100)

# Preference tiers when several filings report the same period: the first tier with a fact wins,
# and within a tier the latest filed. `None` means any form.
Tiers = tuple[frozenset[str] | None, ...]
Finder = Callable[["_Series"], "_Point | None"]
_ANNUAL_TIERS: Tiers = (ANNUAL_FORMS, PERIODIC_FORMS, None)
_PERIODIC_TIERS: Tiers = (PERIODIC_FORMS, None)


@lru_cache(maxsize=65536)
def _ordinal(iso: str) -> int:
    return date.fromisoformat(iso).toordinal()


def _iso(ordinal: int) -> str:
    return date.fromordinal(ordinal).isoformat()


def _nominal_year(ordinal: int) -> int:
    """The calendar year a fiscal year-end "belongs" to: a 52/53-week year that ends on
    2 January 2027 is the 2026 year, so look a week back before reading the year."""
    return date.fromordinal(ordinal - 7).year


# --------------------------------------------------------------------------------------------
# Parsed facts


class _Point(NamedTuple):
    """One filed fact. A NamedTuple because thousands are built per document and tuple
    construction is several times cheaper than a frozen dataclass's."""

    concept: str  # "us-gaap:Revenues"
    unit: str
    value: Number
    start: str | None
    end: str
    accn: str
    fy: int | None
    fp: str | None
    form: str
    filed: str
    frame: str | None
    # Share-basis changes this value was restated for (filed before them; see `Split`).
    restated: tuple[Split, ...] = ()


def _parse_point(concept: str, unit: str, raw: Any) -> _Point | None:
    """One raw fact, or None when it lacks a value or a filing (malformed rows are skipped,
    not fatal: one bad fact should not hide a company's statements)."""
    # Concrete-type checks: an ABC isinstance (Mapping) costs more than the rest of the parse.
    if not isinstance(raw, dict):
        return None
    value, end, accn, start = raw.get("val"), raw.get("end"), raw.get("accn"), raw.get("start")
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    if not isinstance(end, str) or not isinstance(accn, str):
        return None
    if not isinstance(start, str):
        start = None  # the dates themselves were checked once per period by _Series
    form, filed, fy, fp = _filing_meta(raw)
    frame = raw.get("frame")
    return _Point(
        concept,
        unit,
        value,
        start,
        end,
        accn,
        fy,
        fp,
        form,
        filed,
        frame if type(frame) is str else None,
    )


def _filing_meta(raw: Mapping[str, Any]) -> tuple[str, str, int | None, str | None]:
    form, filed, fy, fp = raw.get("form"), raw.get("filed"), raw.get("fy"), raw.get("fp")
    return (
        form if type(form) is str else "",
        filed if type(filed) is str else "",
        fy if type(fy) is int else None,  # `type is` also keeps booleans out
        fp if type(fp) is str else None,
    )


def _best(points: Iterable[_Point], tiers: Tiers) -> _Point | None:
    """The figure among repeats of one period: first tier with any fact, then latest filed."""
    pool = list(points)
    for forms in tiers:
        eligible = [p for p in pool if forms is None or p.form in forms]
        if eligible:
            return max(eligible, key=lambda p: (p.filed, p.accn))
    return None


class _Series:
    """All facts of one concept in one unit, grouped by period.

    Raw facts are only grouped here; a period's facts become `_Point`s when that period is asked
    for, so a statement parses the few dozen facts it shows rather than every fact of every
    concept it looks at.
    """

    def __init__(
        self,
        concept: str,
        unit: str,
        raw_points: Iterable[Any],
        adjust: Callable[[_Point], _Point] | None = None,
    ) -> None:
        self.concept, self.unit = concept, unit
        self._adjust = adjust
        grouped: dict[tuple[str | None, str], list[dict[str, Any]]] = {}
        for raw in raw_points:
            if not isinstance(raw, dict):
                continue
            start, end = raw.get("start"), raw.get("end")
            if not isinstance(end, str):
                continue
            key = (start if isinstance(start, str) else None, end)
            bucket = grouped.get(key)
            if bucket is None:
                grouped[key] = [raw]
            else:
                bucket.append(raw)
        self._raw = {key: raws for key, raws in grouped.items() if _valid_period(*key)}
        self._parsed: dict[tuple[str | None, str], list[_Point]] = {}
        self.starts_by_end: dict[str, set[str | None]] = {}
        self.ends_by_start: dict[str, set[str]] = {}
        for start, end in self._raw:
            self.starts_by_end.setdefault(end, set()).add(start)
            if start is not None:
                self.ends_by_start.setdefault(start, set()).add(end)

    def adjusted(self, adjust: Callable[[_Point], _Point]) -> _Series:
        """The same facts, each passed through `adjust` when parsed (grouping is shared)."""
        copy = object.__new__(_Series)
        copy.concept, copy.unit, copy._adjust = self.concept, self.unit, adjust
        copy._raw, copy._parsed = self._raw, {}
        copy.starts_by_end, copy.ends_by_start = self.starts_by_end, self.ends_by_start
        return copy

    def repeats(self, changed_only: bool) -> Iterator[tuple[tuple[str | None, str], list[Any]]]:
        """Periods filed more than once (only those filed at different values when
        `changed_only`), raw: what split detection reads, without parsing every fact."""
        for key, raws in self._raw.items():
            if len(raws) > 1:
                if changed_only:
                    first = raws[0].get("val")
                    if all(r.get("val") == first for r in raws):
                        continue
                yield key, raws

    def points(self, start: str | None, end: str) -> list[_Point]:
        key = (start, end)
        if key not in self._parsed:
            parsed = (_parse_point(self.concept, self.unit, raw) for raw in self._raw.get(key, ()))
            points = [p for p in parsed if p is not None]
            if self._adjust is not None:
                points = [self._adjust(p) for p in points]
            self._parsed[key] = points
        return self._parsed[key]

    def instant(self, end: str, tiers: Tiers) -> _Point | None:
        return _best(self.points(None, end), tiers)

    def duration_ending(self, end: str, quarters: int, tiers: Tiers) -> _Point | None:
        """A flow ending at `end` that spans `quarters` quarters (1 = three months, 4 = a year)."""
        starts = [s for s in self.starts_by_end.get(end, ()) if s is not None]
        fitting = [s for s in starts if _spans(_ordinal(end) - _ordinal(s), quarters)]
        return _best((p for s in fitting for p in self.points(s, end)), tiers)

    def duration_from(self, start: str, quarters: int, tiers: Tiers) -> _Point | None:
        """A flow beginning at `start` that spans `quarters` quarters (the prior YTD)."""
        ends = self.ends_by_start.get(start, ())
        fitting = [e for e in ends if _spans(_ordinal(e) - _ordinal(start), quarters)]
        return _best((p for e in fitting for p in self.points(start, e)), tiers)

    def periods(self) -> list[tuple[str | None, str]]:
        return list(self._raw)

    def all_points(self) -> Iterator[_Point]:
        for start, end in self._raw:
            yield from self.points(start, end)


def _valid_period(start: str | None, end: str) -> bool:
    try:
        _ordinal(end)
        if start is not None:
            _ordinal(start)
    except ValueError:
        return False
    return True


def _spans(days: int, quarters: int) -> bool:
    if quarters == 4:
        return ANNUAL_RANGE[0] <= days <= ANNUAL_RANGE[1]
    if quarters == 1:
        return QUARTER_RANGE[0] <= days <= QUARTER_RANGE[1]
    return abs(days - quarters * QUARTER_DAYS) <= TOLERANCE_DAYS


# --------------------------------------------------------------------------------------------
# Filings and the fiscal calendar


@dataclass(frozen=True, slots=True)
class _Filing:
    accn: str
    form: str
    filed: str
    fy: int | None
    fp: str | None
    current_end: str | None  # the period this filing reports as current


@dataclass(frozen=True, slots=True)
class _Slot:
    """A period placed on the company's fiscal calendar."""

    end: str
    fiscal_year: int
    quarter: int  # 1-4; annual periods are 4
    deviation: int  # days between `end` and where the calendar expects it

    def label(self, period: StatementPeriod) -> str:
        if period == "annual":
            return f"{self.fiscal_year}-FY"
        suffix = "-TTM" if period == "ttm" else ""
        return f"{self.fiscal_year}-Q{self.quarter}{suffix}"


class _Calendar:
    """Fiscal year-ends (ordinals) plus how the company numbers its years.

    `offset` is fiscal year minus the nominal calendar year of the year-end: 0 for Apple (the year
    ended 2025-09-27 is fiscal 2025) and NVIDIA (ended 2026-01-25 is fiscal 2026), -1 for
    retailers that name a year ending in January after the previous calendar year.
    """

    def __init__(self, year_ends: Sequence[int], offset: int) -> None:
        self.year_ends = sorted(set(year_ends))
        self.offset = offset

    def locate(self, end: str) -> _Slot:
        day = _ordinal(end)
        year_end = self._year_end_for(day)
        previous = self._previous_year_end(year_end)
        quarter_length = (year_end - previous) / 4
        quarter = min(4, max(1, round((day - previous) / quarter_length)))
        expected = previous + round(quarter * quarter_length)
        return _Slot(end, _nominal_year(year_end) + self.offset, quarter, abs(day - expected))

    def _year_end_for(self, day: int) -> int:
        ends = self.year_ends
        if not ends:  # nothing learned: assume calendar years
            return date(date.fromordinal(day - TOLERANCE_DAYS).year, 12, 31).toordinal()
        i = bisect_left(ends, day - TOLERANCE_DAYS)
        if i == len(ends):  # after the last known year-end: project forward
            years = math.ceil((day - ends[-1] - TOLERANCE_DAYS) / YEAR_DAYS)
            return ends[-1] + round(years * YEAR_DAYS)
        gap = ends[i] - day
        if gap < YEAR_DAYS - TOLERANCE_DAYS:
            return ends[i]
        years = math.floor((gap + TOLERANCE_DAYS) / YEAR_DAYS)  # before the data, or a gap
        return ends[i] - round(years * YEAR_DAYS)

    def _previous_year_end(self, year_end: int) -> int:
        i = bisect_left(self.year_ends, year_end)
        if 0 < i < len(self.year_ends) and self.year_ends[i] == year_end:
            previous = self.year_ends[i - 1]
            if ANNUAL_RANGE[0] <= year_end - previous <= ANNUAL_RANGE[1]:
                return previous
        return year_end - round(YEAR_DAYS)


def _current_end(ends: Counter[str]) -> str | None:
    """The period a filing reports as current: the latest end date carrying at least a quarter
    as many facts as its busiest date. A bare maximum fails on stray future-dated facts (NVIDIA's
    10-Q for October 2013 tags a dividend declared for the quarter ending January 2014)."""
    if not ends:
        return None
    floor = max(1, max(ends.values()) // 4)
    return max(end for end, count in ends.items() if count >= floor)


def _build_calendar(filings: Collection[_Filing]) -> _Calendar:
    annual = sorted(
        (f for f in filings if f.form in ANNUAL_FORMS and f.current_end),
        key=lambda f: (f.filed, f.accn),
    )
    if annual:
        ends = [_ordinal(f.current_end) for f in annual if f.current_end]
        labelled = [(f.fy, _ordinal(f.current_end)) for f in annual if f.fy and f.current_end]
        return _Calendar(ends, _offset(labelled))
    return _calendar_from_quarters(filings)


def _calendar_from_quarters(filings: Iterable[_Filing]) -> _Calendar:
    """No annual report yet (a new registrant): project year-ends from 10-Q quarter numbers."""
    projected: list[tuple[int | None, int]] = []
    for f in sorted(filings, key=lambda f: f.filed):
        if f.form in QUARTERLY_FORMS and f.current_end and f.fp in ("Q1", "Q2", "Q3"):
            quarters_left = 4 - int(f.fp[1])
            projected.append((f.fy, _ordinal(f.current_end) + round(quarters_left * QUARTER_DAYS)))
    ends: list[int] = []
    for _, day in sorted(projected, key=lambda item: item[1]):
        if not ends or day - ends[-1] > 180:  # one per fiscal year
            ends.append(day)
    return _Calendar(ends, _offset(projected))


def _offset(labelled: Sequence[tuple[int | None, int]]) -> int:
    """Most common `fy − nominal year` among the latest three reports (ties: the latest), so a
    few mislabelled old filings cannot relabel a company's history."""
    recent = [fy - _nominal_year(day) for fy, day in labelled if fy is not None][-3:]
    if not recent:
        return 0
    counts = Counter(recent)
    top = max(counts.values())
    return next(o for o in reversed(recent) if counts[o] == top)


# --------------------------------------------------------------------------------------------
# Values with provenance


@dataclass(frozen=True, slots=True)
class _Value:
    value: Number
    point: _Point  # the filed fact this figure rests on
    note: str | None = None  # "derived Q4", "TTM: sum of 4 quarters"
    computed: str | None = None  # "computed: revenue − cost_of_revenue"
    # Share-basis changes applied to any input besides `point` (a derived quarter's prior YTD).
    inputs_restated: frozenset[Split] = frozenset()

    @property
    def restated(self) -> frozenset[Split]:
        """Every share-basis change this figure was restated for, through any of its inputs."""
        if not self.point.restated:
            return self.inputs_restated
        return self.inputs_restated.union(self.point.restated)

    def with_points(self, points: Iterable[_Point]) -> _Value:
        return self._with({split for p in points for split in p.restated})

    def with_inputs(self, values: Iterable[_Value]) -> _Value:
        return self._with({split for v in values for split in v.restated})

    def _with(self, splits: set[Split]) -> _Value:
        if splits <= self.inputs_restated:
            return self
        return replace(self, inputs_restated=self.inputs_restated.union(splits))


def _clean(value: float | int, spec: FieldSpec | None = None) -> Number:
    """Arithmetic on 2-decimal EPS leaves float noise; share counts stay whole."""
    if isinstance(value, int):
        return value
    if spec is not None and spec.unit == "shares":
        return round(value)
    return round(value, 6)


_INCOME_SPECS = {spec.name: spec for spec in FIELDS["income"]}
# EPS field -> (net income fields in preference order, weighted shares field).
_EPS_INPUTS: dict[str, tuple[tuple[str, ...], str]] = {
    "earnings_per_share": (("net_income_common_stock", "net_income"), "weighted_average_shares"),
    "earnings_per_share_diluted": (
        ("net_income_common_stock", "net_income"),
        "weighted_average_shares_diluted",
    ),
}


# --------------------------------------------------------------------------------------------
# Stock splits: see share_basis.py for how they are read from the data.


def _is_share_unit(unit: str) -> bool:
    return unit == "shares" or unit.endswith("/shares")


# --------------------------------------------------------------------------------------------
# The index


class FactsIndex:
    """One pass over a companyfacts document, shared by every statement and series built from it.

    Build it once per document (`index_facts` memoises); statements then cost dictionary lookups.
    """

    def __init__(self, facts: Mapping[str, Any]) -> None:
        taxonomies = facts.get("facts") if isinstance(facts, Mapping) else None
        if not isinstance(taxonomies, Mapping):
            raise UpstreamError(
                "SEC companyfacts JSON is malformed: it has no 'facts' object.",
                hint="The response may be truncated; fetch it again.",
            )
        cik = facts.get("cik")
        self.cik: int | None = (
            int(cik) if isinstance(cik, int | str) and str(cik).isdigit() else None
        )
        self.name = str(facts.get("entityName") or (f"CIK {self.cik}" if self.cik else "company"))
        self._raw: dict[str, Mapping[str, Any]] = {}
        for taxonomy, concepts in taxonomies.items():
            if isinstance(concepts, Mapping):
                for concept, body in concepts.items():
                    if isinstance(body, Mapping) and isinstance(body.get("units"), Mapping):
                        self._raw[f"{taxonomy}:{concept}"] = body
        self._lower = {key.lower(): key for key in self._raw}
        self._series: dict[tuple[str, str], _Series | None] = {}
        self._adjusted: dict[tuple[str, str], _Series | None] = {}
        self._splits: list[Split] | None = None
        self._memo: dict[tuple[object, ...], _Value | None] = {}
        self._debt_memo: dict[str, dict[str, _Value]] = {}
        self.has_financials = any(key.split(":", 1)[0] in FINANCIAL_TAXONOMIES for key in self._raw)
        self._scan()

    # -- the single pass ------------------------------------------------------------------

    def _scan(self) -> None:
        """Filings, their current periods and candidate period ends, in one cheap pass. Facts
        are only tallied here, by (filing, end) and (start, end, form), and the tallies, far fewer
        than the facts, are interpreted afterwards; series are parsed lazily, per concept used."""
        meta: dict[str, tuple[str, str, int | None, str | None]] = {}
        filing_ends: Counter[tuple[str, str]] = Counter()
        durations: Counter[tuple[str, str, Any]] = Counter()
        currencies: Counter[str] = Counter()
        for key, body in self._raw.items():
            counted = not key.startswith("dei:")
            for unit, raw_points in body["units"].items():
                if not isinstance(raw_points, list):
                    continue
                if len(unit) == 3 and unit.isalpha() and unit.isupper():
                    currencies[unit] += len(raw_points)
                for raw in raw_points:
                    if not isinstance(raw, dict):
                        continue
                    accn, end = raw.get("accn"), raw.get("end")
                    if not isinstance(accn, str) or not isinstance(end, str):
                        continue
                    if accn not in meta:
                        meta[accn] = _filing_meta(raw)
                    if counted:
                        filing_ends[accn, end] += 1
                        start = raw.get("start")
                        if isinstance(start, str):
                            durations[start, end, raw.get("form")] += 1
        self.currency = currencies.most_common(1)[0][0] if currencies else "USD"
        self._count_periods(durations)
        ends_by_filing: dict[str, Counter[str]] = {accn: Counter() for accn in meta}
        for (accn, end), count in filing_ends.items():
            if _valid_period(None, end):
                ends_by_filing[accn][end] = count
        self.filings = {
            accn: _Filing(accn, form, filed, fy, fp, _current_end(ends_by_filing[accn]))
            for accn, (form, filed, fy, fp) in meta.items()
        }
        self.calendar = _build_calendar(self.filings.values())
        self._annual_slots = self._pick_annual_slots()
        self._quarter_slots = self._pick_quarter_slots()
        self._quarter_ends = {(s.fiscal_year, s.quarter): s.end for s in self._quarter_slots}
        self._year_end_dates = frozenset(s.end for s in self._annual_slots)

    def _count_periods(self, durations: Counter[tuple[str, str, Any]]) -> None:
        """How many facts end on each date with a year's (annual report) or a quarter's span."""
        self._annual_counts: Counter[str] = Counter()
        self._quarter_counts: Counter[str] = Counter()
        for (start, end, form), count in durations.items():
            if not _valid_period(start, end):
                continue
            days = _ordinal(end) - _ordinal(start)
            if form in ANNUAL_FORMS and ANNUAL_RANGE[0] <= days <= ANNUAL_RANGE[1]:
                self._annual_counts[end] += count
            elif form in PERIODIC_FORMS and QUARTER_RANGE[0] <= days <= QUARTER_RANGE[1]:
                self._quarter_counts[end] += count

    def _current_ends(self, forms: frozenset[str]) -> set[str]:
        return {f.current_end for f in self.filings.values() if f.form in forms and f.current_end}

    def _pick_annual_slots(self) -> list[_Slot]:
        known = self._current_ends(ANNUAL_FORMS)
        # A year seen only as a comparative counts too; the fit to the fiscal calendar, not the
        # number of facts, is what keeps a stray twelve-month disclosure from becoming a year.
        candidates = known | set(self._annual_counts)
        slots = [self.calendar.locate(e) for e in candidates]
        fitting = [s for s in slots if s.quarter == 4 and s.deviation <= TOLERANCE_DAYS]
        return self._one_per_label(fitting, known, self._annual_counts)

    def _pick_quarter_slots(self) -> list[_Slot]:
        known = self._current_ends(PERIODIC_FORMS)
        candidates = known | {s.end for s in self._annual_slots}
        candidates |= set(self._quarter_counts)
        slots = [self.calendar.locate(e) for e in candidates]
        fitting = [s for s in slots if s.deviation <= TOLERANCE_DAYS]
        return self._one_per_label(fitting, known, self._quarter_counts)

    @staticmethod
    def _one_per_label(slots: list[_Slot], known: set[str], counts: Counter[str]) -> list[_Slot]:
        """Stray facts can put two end dates on one fiscal period; keep the one a filing reported
        as its current period, else the one most facts agree on. Newest first."""
        chosen: dict[tuple[int, int], _Slot] = {}
        for slot in slots:
            key = (slot.fiscal_year, slot.quarter)
            rank = (slot.end in known, counts[slot.end], slot.end)
            held = chosen.get(key)
            if held is None or rank > (held.end in known, counts[held.end], held.end):
                chosen[key] = slot
        return sorted(chosen.values(), key=lambda s: s.end, reverse=True)

    # -- concepts and series ----------------------------------------------------------------

    def series(self, concept: str, unit: str) -> _Series | None:
        """One concept's facts for statements: share counts and per-share amounts restated to
        the latest filing's split basis, so every figure in a series compares."""
        if not _is_share_unit(unit) or not self.splits:
            return self.raw_series(concept, unit)
        key = (concept, unit)
        if key not in self._adjusted:
            raw = self.raw_series(concept, unit)
            self._adjusted[key] = raw.adjusted(self._split_adjuster(unit)) if raw else None
        return self._adjusted[key]

    def raw_series(self, concept: str, unit: str) -> _Series | None:
        """One concept's facts exactly as filed."""
        key = (concept, unit)
        if key not in self._series:
            self._series[key] = self._build_series(concept, unit, None)
        return self._series[key]

    def _build_series(
        self, concept: str, unit: str, adjust: Callable[[_Point], _Point] | None
    ) -> _Series | None:
        body = self._raw.get(concept)
        raw_points = body["units"].get(unit) if body else None
        if isinstance(raw_points, list):
            return _Series(concept, unit, raw_points, adjust)
        return None

    @property
    def splits(self) -> list[Split]:
        if self._splits is None:
            self._splits = self._detect_splits()
        return self._splits

    def _detect_splits(self) -> list[Split]:
        """Changes of share basis, read from the data (see share_basis.py): the same period's
        share count or EPS filed again later at another basis."""

        def groups(
            concepts: Sequence[str], per_share: bool
        ) -> Iterator[tuple[Figure, list[Observation]]]:
            for concept in concepts:
                units = self._raw[concept]["units"] if concept in self._raw else {}
                for unit in units:
                    if (unit == "shares") == per_share or not _is_share_unit(unit):
                        continue
                    series = self.raw_series(concept, unit)
                    # Unchanged EPS repeats would only confirm what share counts already say.
                    for key, raws in series.repeats(changed_only=per_share) if series else ():
                        observed = [
                            Observation(value, filed, accn)
                            for raw in raws
                            if type(value := raw.get("val")) in (int, float)
                            and type(filed := raw.get("filed")) is str
                            and type(accn := raw.get("accn")) is str
                        ]
                        if len(observed) > 1:
                            yield (concept, *key), observed

        declared = self.raw_series(DECLARED_RATIO_CONCEPT, "pure")
        ratios = [
            Declared(p.value, p.end, p.filed)
            for p in (declared.all_points() if declared else ())
            if p.value > 0 and p.form in PERIODIC_FORMS
        ]
        return detect_basis_changes(
            groups(SHARE_COUNT_CONCEPTS, per_share=False),
            groups(PER_SHARE_CONCEPTS, per_share=True),
            ratios,
        )

    def _split_adjuster(self, unit: str) -> Callable[[_Point], _Point]:
        splits = self.splits
        per_share = unit != "shares"

        def adjust(point: _Point) -> _Point:
            ratio, applied = basis_factor(splits, point.filed)
            if not applied:
                return point
            value = point.value / ratio if per_share else point.value * ratio
            value = round(value, 6) if per_share else round(value)
            return point._replace(value=value, restated=applied)

        return adjust

    def resolve_concept(self, name: str) -> str:
        """ "Revenues", "us-gaap:Revenues", "us-gaap/Revenues" or any case of them -> the key."""
        text = name.strip().replace("/", ":", 1)
        if ":" in text:
            candidates = [text]
        else:
            taxonomies = sorted({k.split(":", 1)[0] for k in self._raw}, key=_taxonomy_rank)
            candidates = [f"{t}:{text}" for t in taxonomies]
        for candidate in candidates:
            if candidate in self._raw:
                return candidate
        for candidate in candidates:
            if candidate.lower() in self._lower:
                return self._lower[candidate.lower()]
        raise self._unknown_concept(name)

    def _unknown_concept(self, name: str) -> NotFound:
        query = name.strip().replace("/", ":", 1).split(":")[-1].lower()
        by_name: dict[str, str] = {}
        for key in sorted(self._raw, key=lambda k: _taxonomy_rank(k.split(":", 1)[0])):
            by_name.setdefault(key.split(":", 1)[1].lower(), key)
        close = difflib.get_close_matches(query, list(by_name), n=5, cutoff=0.6)
        containing = [n for n in sorted(by_name, key=len) if query and query in n]
        suggestions = list(dict.fromkeys([*close, *containing]))[:6]
        hint = (
            "Close matches: " + ", ".join(by_name[s] for s in suggestions) + "."
            if suggestions
            else "Concepts are XBRL names such as us-gaap:Revenues or us-gaap:NetIncomeLoss."
        )
        return NotFound(f"{self.name} has no XBRL concept {name!r}.", hint=hint)

    def unit_for(self, spec: FieldSpec) -> str:
        if spec.unit == "shares":
            return "shares"
        if spec.unit == "per_share":
            return f"{self.currency}/shares"
        return self.currency

    # -- provenance -------------------------------------------------------------------------

    def filing_url(self, accn: str) -> str:
        if self.cik is None:
            return ""
        return urls.filing_index_page(self.cik, accn)

    def source(self, value: _Value) -> Source:
        point = value.point
        notes = [value.note] if value.note else []
        if value.inputs_restated or point.restated:
            # The cited filing shows the old basis; say why the figure differs from it.
            notes += [f"restated for {s.describe()}" for s in _by_date(value.restated)]
        form = f"{point.form} ({'; '.join(notes)})" if notes else point.form
        return Source(
            provider=PROVIDER,
            url=self.filing_url(point.accn) or self.companyfacts_url(),
            form=form or None,
            accession_number=point.accn,
            filing_date=point.filed or None,
            concept=value.computed or point.concept,
            unit=point.unit,
        )

    def companyfacts_url(self) -> str:
        return urls.companyfacts(self.cik) if self.cik is not None else urls.DEFAULT_DATA_URL

    def current_filing(self, end: str, annual: bool) -> _Filing | None:
        forms = ANNUAL_FORMS if annual else QUARTERLY_FORMS
        matches = [f for f in self.filings.values() if f.current_end == end and f.form in forms]
        return max(matches, key=lambda f: (f.filed, f.accn), default=None)

    # -- statements -------------------------------------------------------------------------

    def statements(
        self,
        *,
        ticker: str,
        statement: Statement,
        period: StatementPeriod,
        limit: int = 4,
        report_period_gte: str | None = None,
        report_period_lte: str | None = None,
    ) -> list[AnyStatement]:
        if statement not in FIELDS:
            raise ValueError(f"statement must be income, balance or cashflow, not {statement!r}")
        if period not in ("annual", "quarterly", "ttm"):
            raise ValueError(f"period must be annual, quarterly or ttm, not {period!r}")
        if not self.has_financials:
            raise NotFound(
                f"{self.name} has no XBRL financial data.",
                hint="Its filings carry only cover-page (dei) facts, so there are no statements "
                "to build; read its filed documents instead.",
            )
        slots = self._annual_slots if period == "annual" else self._quarter_slots
        records: list[AnyStatement] = []
        for slot in slots:
            if len(records) >= limit:
                break
            if report_period_gte and slot.end < report_period_gte:
                continue
            if report_period_lte and slot.end > report_period_lte:
                continue
            record = self._record(ticker, statement, period, slot)
            if record is not None:
                records.append(record)
        return records

    def _record(
        self, ticker: str, statement: Statement, period: StatementPeriod, slot: _Slot
    ) -> AnyStatement | None:
        values: dict[str, _Value] = {}
        for spec in FIELDS[statement]:
            value = self._field(spec, slot, period)
            if value is not None:
                values[spec.name] = value
        if statement == "balance":
            values.update(self._debt(slot.end))
        for rule in COMPUTED[statement]:
            if rule.name not in values:
                computed = _compute(rule, values)
                if computed is not None:
                    values[rule.name] = computed
        public = {name: v for name, v in values.items() if not name.startswith("_")}
        if not public:
            return None
        accn = self._record_accession(slot, period, public.values())
        restated = {
            split
            for v in public.values()
            if v.inputs_restated or v.point.restated
            for split in v.restated
        }
        return _MODELS[statement](
            ticker=ticker,
            report_period=slot.end,
            fiscal_period=slot.label(period),
            period=period,
            currency=self.currency,
            accession_number=accn,
            filing_url=(self.filing_url(accn) or None) if accn else None,
            sources={name: self.source(v) for name, v in public.items()},
            notes=[_restated_note(split) for split in _by_date(restated)] or None,
            **{name: v.value for name, v in public.items()},
        )

    def _record_accession(
        self, slot: _Slot, period: StatementPeriod, values: Iterable[_Value]
    ) -> str | None:
        filing = self.current_filing(slot.end, annual=period == "annual" or slot.quarter == 4)
        if filing is not None:
            return filing.accn
        # A period only ever filed as a comparative: cite the filing most of its figures came from.
        counts = Counter(v.point.accn for v in values)
        return counts.most_common(1)[0][0] if counts else None

    # -- debt -------------------------------------------------------------------------------

    def _debt(self, end: str) -> dict[str, _Value]:
        """current_debt, non_current_debt and total_debt for one date, read from one filing
        (see debt.py for the rules)."""
        if end not in self._debt_memo:
            self._debt_memo[end] = self._compute_debt(end)
        return self._debt_memo[end]

    def _compute_debt(self, end: str) -> dict[str, _Value]:
        notes = self._debt_facts(end, debt.NOTES_CONCEPTS)
        chosen = self._debt_filing(end, self._debt_facts(end, debt.LINE_CONCEPTS))
        if chosen is None:  # no debt line tagged for the date: a notes total, if any
            chosen = self._debt_filing(end, notes)
        if chosen is None:
            return {}
        accn = next(iter(chosen.values())).accn
        chosen = {**notes.get(accn, {}), **chosen}  # the same filing's notes total, if any
        leases: dict[str, _Point] = {}
        if any(c in debt.LEASE_INCLUSIVE for c in chosen):
            # A lease amount for a date is the same in any filing; the latest periodic one.
            for facts in self._debt_facts(end, debt.LEASE_CONCEPTS).values():
                for concept, point in facts.items():
                    held = leases.get(concept)
                    if point.form in PERIODIC_FORMS and (held is None or point.filed > held.filed):
                        leases[concept] = point
        figures = debt.resolve(
            {c: p.value for c, p in chosen.items()}, {c: p.value for c, p in leases.items()}
        )
        values: dict[str, _Value] = {}
        for name, amount in (
            ("current_debt", figures.current),
            ("non_current_debt", figures.non_current),
            ("total_debt", figures.total),
        ):
            if amount is not None:
                point = chosen[amount.added[0]]
                computed = None if amount.concept == point.concept else amount.concept
                values[name] = _Value(_clean(amount.value), point, computed=computed)
        return values

    def _debt_facts(self, end: str, concepts: Sequence[str]) -> dict[str, dict[str, _Point]]:
        """Filing -> concept -> fact, for these debt concepts on this date."""
        by_filing: dict[str, dict[str, _Point]] = {}
        for concept in concepts:
            if concept not in self._raw:
                continue
            series = self.raw_series(concept, self.currency)
            for point in series.points(None, end) if series else ():
                by_filing.setdefault(point.accn, {})[concept] = point
        return by_filing

    def _debt_filing(
        self, end: str, by_filing: Mapping[str, Mapping[str, _Point]]
    ) -> Mapping[str, _Point] | None:
        """The filing a date's debt is read from: the first tier (annual reports first at a
        year-end, as every balance) with a filing tagging it, the latest filed."""
        tiers = _ANNUAL_TIERS if end in self._year_end_dates else _PERIODIC_TIERS
        first = {accn: next(iter(facts.values())) for accn, facts in by_filing.items() if facts}
        for forms in tiers:
            eligible = [
                (point.filed, accn)
                for accn, point in first.items()
                if forms is None or point.form in forms
            ]
            if eligible:
                return by_filing[max(eligible)[1]]
        return None

    # -- one field for one period -------------------------------------------------------------

    def _field(self, spec: FieldSpec, slot: _Slot, period: StatementPeriod) -> _Value | None:
        if spec.kind == "cover":
            return self._cover(spec, slot, annual=period == "annual")
        if spec.kind == "instant":
            return self._instant(spec, slot.end)
        if period == "annual":
            return self._direct(spec, lambda s: s.duration_ending(slot.end, 4, _ANNUAL_TIERS))
        if period == "quarterly":
            return self._quarter(spec, slot.fiscal_year, slot.quarter)
        return self._ttm(spec, slot)

    def _instant(self, spec: FieldSpec, end: str) -> _Value | None:
        """A balance on one date, whichever record asks (annual, quarterly, TTM): at a fiscal
        year-end the latest annual report's figure, a 10-Q's comparative only where no annual
        report tagged the concept; at a quarter-end the latest periodic report's."""
        key = (spec, end)
        if key not in self._memo:
            tiers = _ANNUAL_TIERS if end in self._year_end_dates else _PERIODIC_TIERS
            self._memo[key] = self._direct(spec, lambda s: s.instant(end, tiers))
        return self._memo[key]

    def _direct(
        self, spec: FieldSpec, find: Finder, concepts: Sequence[str] | None = None
    ) -> _Value | None:
        """The first candidate concept that reports this period, as filed."""
        unit = self.unit_for(spec)
        for concept in spec.concepts if concepts is None else concepts:
            series = self.series(concept, unit)
            point = find(series) if series is not None else None
            if point is not None:
                chosen = self._prefer_total(spec, concept, point, find, unit)
                return _Value(_clean(chosen.value * spec.sign, spec), chosen)
        return None

    def _prefer_total(
        self, spec: FieldSpec, concept: str, point: _Point, find: Finder, unit: str
    ) -> _Point:
        if spec.total_concept is None or concept == spec.total_concept:
            return point
        series = self.series(spec.total_concept, unit)
        total = find(series) if series is not None else None
        return total if total is not None and abs(total.value) > abs(point.value) else point

    def _cover(self, spec: FieldSpec, slot: _Slot, annual: bool) -> _Value | None:
        filing = self.current_filing(slot.end, annual=annual or slot.quarter == 4)
        if filing is None:
            return None
        for concept in spec.concepts:
            series = self.series(concept, self.unit_for(spec))
            if series is None:
                continue
            mine = [p for p in series.all_points() if p.accn == filing.accn]
            if mine:
                point = max(mine, key=lambda p: p.end)
                return _Value(_clean(point.value * spec.sign, spec), point, note="cover page")
        return None

    def _quarter(self, spec: FieldSpec, fiscal_year: int, quarter: int) -> _Value | None:
        key = (spec, fiscal_year, quarter)
        if key not in self._memo:
            self._memo[key] = self._compute_quarter(spec, fiscal_year, quarter)
        return self._memo[key]

    def _compute_quarter(self, spec: FieldSpec, fiscal_year: int, quarter: int) -> _Value | None:
        """A quarter's figure: the field's concepts in priority order, each as filed for three
        months or derived from its own year-to-date figures, before any lower-ranked concept.

        Concept before derivation: a 10-Q's cash-flow statement is year-to-date only while its
        notes tag three months of a narrower concept (share-based compensation expense in the
        notes, `AllocatedShareBasedCompensationExpense`, next to the cash-flow add-back
        `ShareBasedCompensation`); the statement line, derived, is the figure.
        """
        end = self._quarter_ends.get((fiscal_year, quarter))
        if end is None:
            return None
        if spec.kind == "instant":
            return self._instant(spec, end)
        if spec.name in _EPS_INPUTS:
            # Per-share amounts do not subtract (FY EPS − nine-month EPS is not Q4 EPS).
            direct = self._direct(spec, lambda s: s.duration_ending(end, 1, _PERIODIC_TIERS))
            return direct or (
                self._eps_from_quarter(spec, fiscal_year, quarter) if quarter > 1 else None
            )
        for concept in spec.concepts:
            value = self._concept_quarter(spec, concept, fiscal_year, quarter)
            if value is not None:
                return self._prefer_total_quarter(spec, concept, value, fiscal_year, quarter)
        # Last resort, a concept switched mid-year: the year less quarters filed under another.
        return (
            self._from_ytd_less_quarters(spec, end, fiscal_year, quarter) if quarter > 1 else None
        )

    def _prefer_total_quarter(
        self, spec: FieldSpec, concept: str, value: _Value, fiscal_year: int, quarter: int
    ) -> _Value:
        """As `_prefer_total`, for a quarter derived from year-to-date figures."""
        if spec.total_concept is None or concept == spec.total_concept:
            return value
        total = self._concept_quarter(spec, spec.total_concept, fiscal_year, quarter)
        return total if total is not None and abs(total.value) > abs(value.value) else value

    def _concept_quarter(
        self, spec: FieldSpec, concept: str, fiscal_year: int, quarter: int
    ) -> _Value | None:
        key = (spec, concept, fiscal_year, quarter)
        if key not in self._memo:
            self._memo[key] = self._compute_concept_quarter(spec, concept, fiscal_year, quarter)
        return self._memo[key]

    def _compute_concept_quarter(
        self, spec: FieldSpec, concept: str, fiscal_year: int, quarter: int
    ) -> _Value | None:
        end = self._quarter_ends.get((fiscal_year, quarter))
        series = self.series(concept, self.unit_for(spec))
        if end is None or series is None:
            return None
        direct = self._direct(
            spec, lambda s: s.duration_ending(end, 1, _PERIODIC_TIERS), concepts=(concept,)
        )
        if direct is not None or quarter == 1:
            return direct
        ytd = series.duration_ending(end, quarter, _PERIODIC_TIERS)
        if ytd is None or ytd.start is None:
            return None
        prior = series.duration_from(ytd.start, quarter - 1, _PERIODIC_TIERS)
        if prior is not None:
            return self._derived(spec, ytd, quarter, [prior], prior_quarters=quarter - 1)
        earlier = [self._concept_quarter(spec, concept, fiscal_year, q) for q in range(1, quarter)]
        if any(v is None for v in earlier):
            return None
        return self._derived_from_quarters(spec, ytd, quarter, [v for v in earlier if v])

    def _eps_from_quarter(self, spec: FieldSpec, fiscal_year: int, quarter: int) -> _Value | None:
        """A quarter's EPS nobody filed: the quarter's net income over its weighted shares."""
        income_name, shares_name = _EPS_INPUTS[spec.name]
        income = next(
            (
                v
                for name in income_name
                if (v := self._quarter(_INCOME_SPECS[name], fiscal_year, quarter)) is not None
            ),
            None,
        )
        shares = self._quarter(_INCOME_SPECS[shares_name], fiscal_year, quarter)
        if income is None or shares is None or not shares.value:
            return None
        eps = round(income.value / shares.value, 2)  # as companies report it, to the cent
        return _Value(
            eps,
            shares.point,
            note=f"derived Q{quarter}",
            computed=f"computed: {income.point.concept} ÷ {shares.point.concept}",
        ).with_inputs([income, shares])

    def _from_ytd_less_quarters(
        self, spec: FieldSpec, end: str, fiscal_year: int, quarter: int
    ) -> _Value | None:
        """Q = YTD − the earlier quarters of the year, whichever concept filled them."""
        earlier = [self._quarter(spec, fiscal_year, q) for q in range(1, quarter)]
        if any(v is None for v in earlier):
            return None
        for concept in spec.concepts:
            series = self.series(concept, self.unit_for(spec))
            ytd = series.duration_ending(end, quarter, _PERIODIC_TIERS) if series else None
            if ytd is not None:
                return self._derived_from_quarters(spec, ytd, quarter, [v for v in earlier if v])
        return None

    def _derived_from_quarters(
        self, spec: FieldSpec, ytd: _Point, quarter: int, earlier: list[_Value]
    ) -> _Value:
        # Quarters already carry the sign; undo it to work in filed terms like the YTD figure.
        raw = [v.value * spec.sign for v in earlier]
        value = self._derived(spec, ytd, quarter, [], prior_quarters=1, prior_values=raw)
        return value.with_inputs(earlier)

    def _derived(
        self,
        spec: FieldSpec,
        ytd: _Point,
        quarter: int,
        prior: list[_Point],
        prior_quarters: int,
        prior_values: list[Number] | None = None,
    ) -> _Value:
        """Subtract what came before from a year-to-date figure. For averages (share counts) a
        YTD over n quarters is n quarters' weight, so Q = n·YTD − Σ(weight·prior)."""
        values = [p.value for p in prior] if prior_values is None else prior_values
        if spec.average:
            value = quarter * ytd.value - prior_quarters * sum(values)
        else:
            value = ytd.value - sum(values)
        derived = _Value(_clean(value * spec.sign, spec), ytd, note=f"derived Q{quarter}")
        return derived.with_points(prior)

    def _ttm(self, spec: FieldSpec, slot: _Slot) -> _Value | None:
        keys = _trailing_quarters(slot.fiscal_year, slot.quarter)
        quarters = [self._quarter(spec, fy, q) for fy, q in keys]
        if any(v is None for v in quarters):
            return None
        present = [v for v in quarters if v is not None]
        total = sum(v.value for v in present)
        how = "mean" if spec.average else "sum"
        value = total / 4 if spec.average else total
        ttm = _Value(_clean(value, spec), present[0].point, note=f"TTM: {how} of 4 quarters")
        return ttm.with_inputs(present)

    # -- raw series -------------------------------------------------------------------------

    def fact_series(self, concept: str) -> list[FactPoint]:
        key = self.resolve_concept(concept)
        latest: dict[tuple[str, str | None, str, Number], _Point] = {}
        frames: dict[tuple[str, str | None, str, Number], str] = {}
        for unit in self._raw[key]["units"]:
            series = self.raw_series(key, unit)
            for point in series.all_points() if series else ():
                ident = (point.unit, point.start, point.end, point.value)
                held = latest.get(ident)
                if held is None or (point.filed, point.accn) > (held.filed, held.accn):
                    latest[ident] = point
                if point.frame:
                    frames[ident] = point.frame
        ordered = sorted(
            latest.items(),
            key=lambda item: (item[1].end, item[1].start or "", item[1].filed),
            reverse=True,
        )
        return [_fact_point(p, frames.get(ident)) for ident, p in ordered]


def _by_date(splits: Iterable[Split]) -> list[Split]:
    return sorted(splits, key=lambda s: s.last_before)


def _restated_note(split: Split) -> str:
    """The record's note when any of its share counts or per-share values was restated."""
    return (
        f"per-share values and share counts restated to the latest basis for {split.describe()} "
        "(filed before it)"
    )


def _fact_point(point: _Point, frame: str | None) -> FactPoint:
    return FactPoint(
        concept=point.concept,
        unit=point.unit,
        value=point.value,
        start=point.start,
        end=point.end,
        fiscal_year=point.fy,
        fiscal_period=point.fp,
        form=point.form or None,
        filed=point.filed or None,
        accession_number=point.accn,
        frame=frame,
    )


def _taxonomy_rank(taxonomy: str) -> tuple[int, str]:
    order = ("us-gaap", "ifrs-full", "dei", "srt")
    return (order.index(taxonomy) if taxonomy in order else len(order), taxonomy)


def _trailing_quarters(fiscal_year: int, quarter: int) -> list[tuple[int, int]]:
    keys = []
    for _ in range(4):
        keys.append((fiscal_year, quarter))
        fiscal_year, quarter = (fiscal_year, quarter - 1) if quarter > 1 else (fiscal_year - 1, 4)
    return keys


def _compute(rule: Computed, values: Mapping[str, _Value]) -> _Value | None:
    inputs = [values.get(name) for name in rule.inputs]
    present = [(name, v) for name, v in zip(rule.inputs, inputs, strict=True) if v is not None]
    if not present:
        return None
    if rule.op == "first":
        return present[0][1]
    if rule.op in ("difference", "sum") and len(present) < len(inputs):
        return None
    first = present[0][1]
    # Internal inputs ("_goodwill") mean nothing to a reader; name the concept that filled them.
    names = [v.point.concept if name.startswith("_") else name for name, v in present]
    if rule.op == "difference":
        total = first.value - present[1][1].value
        description = f"computed: {names[0]} − {names[1]}"
    else:
        total = sum(v.value for _, v in present)
        description = "computed: " + " + ".join(names)
    value = _Value(_clean(total), first.point, note=first.note, computed=description)
    return value.with_inputs(v for _, v in present)


# --------------------------------------------------------------------------------------------
# Public API

_CACHE_SIZE = 8
_cache: OrderedDict[int, tuple[Mapping[str, Any], FactsIndex]] = OrderedDict()
_cache_lock = threading.Lock()


def index_facts(facts: Mapping[str, Any] | FactsIndex) -> FactsIndex:
    """The index for this companyfacts document, built once per object and reused.

    Keyed by object identity (the entry keeps the document alive, so the id cannot be reused);
    a document mutated after indexing is not noticed, so treat parsed responses as read-only.
    """
    if isinstance(facts, FactsIndex):
        return facts
    with _cache_lock:
        hit = _cache.get(id(facts))
        if hit is not None and hit[0] is facts:
            _cache.move_to_end(id(facts))
            return hit[1]
    index = FactsIndex(facts)
    with _cache_lock:
        _cache[id(facts)] = (facts, index)
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return index


def clear_index_cache() -> None:
    with _cache_lock:
        _cache.clear()


def company_has_facts(facts: Mapping[str, Any] | FactsIndex) -> bool:
    """Whether the document holds financial statement facts (us-gaap or ifrs-full), not just
    the cover page."""
    return index_facts(facts).has_financials


@overload
def statements_from_facts(
    facts: Mapping[str, Any] | FactsIndex,
    *,
    ticker: str,
    statement: Literal["income"],
    period: StatementPeriod,
    limit: int = 4,
    report_period_gte: str | None = None,
    report_period_lte: str | None = None,
) -> list[IncomeStatement]: ...


@overload
def statements_from_facts(
    facts: Mapping[str, Any] | FactsIndex,
    *,
    ticker: str,
    statement: Literal["balance"],
    period: StatementPeriod,
    limit: int = 4,
    report_period_gte: str | None = None,
    report_period_lte: str | None = None,
) -> list[BalanceSheet]: ...


@overload
def statements_from_facts(
    facts: Mapping[str, Any] | FactsIndex,
    *,
    ticker: str,
    statement: Literal["cashflow"],
    period: StatementPeriod,
    limit: int = 4,
    report_period_gte: str | None = None,
    report_period_lte: str | None = None,
) -> list[CashFlowStatement]: ...


@overload
def statements_from_facts(
    facts: Mapping[str, Any] | FactsIndex,
    *,
    ticker: str,
    statement: Statement,
    period: StatementPeriod,
    limit: int = 4,
    report_period_gte: str | None = None,
    report_period_lte: str | None = None,
) -> Sequence[AnyStatement]: ...


def statements_from_facts(
    facts: Mapping[str, Any] | FactsIndex,
    *,
    ticker: str,
    statement: Statement,
    period: StatementPeriod,
    limit: int = 4,
    report_period_gte: str | None = None,
    report_period_lte: str | None = None,
) -> Sequence[AnyStatement]:
    """Standardized statements, newest first, labelled with the company's own fiscal periods.

    `report_period` is the period end; `fiscal_period` is "2025-FY", "2026-Q1" or "2026-Q1-TTM".
    `report_period_gte`/`_lte` bound the period end (YYYY-MM-DD, inclusive). Raises NotFound when
    the company files no financial XBRL, UpstreamError when the document is malformed.
    """
    return index_facts(facts).statements(
        ticker=ticker,
        statement=statement,
        period=period,
        limit=limit,
        report_period_gte=report_period_gte,
        report_period_lte=report_period_lte,
    )


def fact_series(facts: Mapping[str, Any] | FactsIndex, concept: str) -> list[FactPoint]:
    """Every distinct value filed for one concept, newest period first.

    `concept` may be "Revenues", "us-gaap:Revenues" or "us-gaap/Revenues", in any case. A value
    repeated in later filings (as a comparative) appears once, from the latest filing; a restated
    value appears next to the original. `fiscal_year`/`fiscal_period` are those of the filing
    (as the SEC reports them), not necessarily of the period. Unknown concept: NotFound with
    close matches.
    """
    return index_facts(facts).fact_series(concept)


__all__ = [
    "PROVIDER",
    "FactsIndex",
    "clear_index_cache",
    "company_has_facts",
    "fact_series",
    "index_facts",
    "statements_from_facts",
]
