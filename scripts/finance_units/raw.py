"""Filed facts as companyfacts holds them, and the fiscal calendar read from the annual reports.

Rules (written here, not borrowed from Dexter):

* Only periodic reports count: 10-K, 10-K/A, 10-Q, 10-Q/A. Proxy statements and registration
  statements repeat figures later and are not financial reports.
* When one concept is filed more than once for the same period, the most recently filed value is
  the figure (a restatement or a later comparative column replaces the original); except that a
  balance at a fiscal year-end is the latest annual report's (audited; a later 10-Q's comparative
  counts only where no annual report tagged it), the rule Dexter's README states, so a year-end
  has one value whether the record asked for is annual or quarterly.
* A fiscal year is what a 10-K reports as its own year: the latest twelve-month period (350-380
  days) among its facts that ended before it was filed. Its label is that 10-K's `fy`.
* Quarters 1-3 of a fiscal year end where the 10-Qs' year-to-date periods from the fiscal year's
  first day end (three, six and nine months); quarter 4 ends with the year.
* "As of" a day means only facts filed on or before that day.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, timedelta
from fractions import Fraction
from functools import cached_property
from pathlib import Path
from typing import Any

PERIODIC_FORMS = frozenset({"10-K", "10-K/A", "10-Q", "10-Q/A"})
ANNUAL_FORMS = frozenset({"10-K", "10-K/A"})
FACTS_DIR = "sec-mirror/data.sec.gov/api/xbrl/companyfacts"
# Spans, in days, of a quarter and of year-to-date periods of one to four quarters.
SPANS = {1: (80, 100), 2: (170, 195), 3: (260, 290), 4: (350, 380)}
START_SLACK_DAYS = 3


def days_between(start: str, end: str) -> int:
    return (date.fromisoformat(end) - date.fromisoformat(start)).days


def day_after(day: str) -> str:
    return (date.fromisoformat(day) + timedelta(days=1)).isoformat()


def day_before(day: str) -> str:
    return (date.fromisoformat(day) - timedelta(days=1)).isoformat()


def fmt(value: int | float | Fraction) -> str:
    if isinstance(value, Fraction):
        return str(value) if value.denominator != 1 else f"{value.numerator:,}"
    if isinstance(value, int):
        return f"{value:,}"
    return repr(value)


@dataclass(frozen=True, slots=True)
class Fact:
    concept: str  # "us-gaap:Revenues"
    unit: str
    val: int | float
    start: str | None
    end: str
    accn: str
    form: str
    filed: str
    fy: int | None
    fp: str | None

    @property
    def days(self) -> int | None:
        return days_between(self.start, self.end) if self.start else None

    def cite(self) -> str:
        return f"{self.concept} {fmt(self.val)} ({self.form} {self.accn}, filed {self.filed})"


def latest(facts: Iterable[Fact]) -> Fact | None:
    return max(facts, key=lambda f: (f.filed, f.accn), default=None)


def earliest(facts: Iterable[Fact]) -> Fact | None:
    return min(facts, key=lambda f: (f.filed, f.accn), default=None)


@dataclass(frozen=True, slots=True)
class Split:
    """A stock split from the public record: filings made before `effective` report share counts
    `ratio` times too small (and per-share amounts `ratio` times too large) for later bases."""

    ratio: int
    effective: str  # first trading day on the split-adjusted basis
    what: str


@dataclass(frozen=True, slots=True)
class FiscalYear:
    """A fiscal year; the current one, with no 10-K yet, has `end` None and only the quarters
    its 10-Qs reported."""

    label: int
    start: str
    end: str | None
    accn: str | None  # the 10-K that reported it as its own year
    filed: str | None
    # Quarter ends, Q1 first (Q4 is the year end). A finished year without all three 10-Qs has
    # none, so no quarter of it is guessed.
    quarter_ends: tuple[str, ...]

    @property
    def complete(self) -> bool:
        return self.end is not None

    @property
    def year_end(self) -> str:
        assert self.end is not None, f"fiscal {self.label} has no 10-K yet"
        return self.end

    def quarter_start(self, n: int) -> str:
        return self.start if n == 1 else day_after(self.quarter_ends[n - 2])

    def quarters(self) -> list[int]:
        return list(range(1, len(self.quarter_ends) + 1))


class Filer:
    """One companyfacts document, optionally as it stood on a past day."""

    def __init__(
        self,
        ticker: str,
        cik: str,
        splits: tuple[Split, ...],
        document: dict[str, Any],
        as_of: str | None = None,
    ) -> None:
        self.ticker, self.cik, self.splits, self.as_of = ticker, cik, splits, as_of
        self.name = str(document.get("entityName") or ticker)
        self.source = f"{FACTS_DIR}/CIK{cik}.json"
        self._document = document
        self._facts: dict[tuple[str, str], list[Fact]] = {}
        for taxonomy, concepts in document["facts"].items():
            for name, body in concepts.items():
                for unit, rows in body["units"].items():
                    kept = [
                        _fact(f"{taxonomy}:{name}", unit, row)
                        for row in rows
                        if row.get("form") in PERIODIC_FORMS
                        and (as_of is None or row["filed"] <= as_of)
                    ]
                    if kept:
                        self._facts[f"{taxonomy}:{name}", unit] = kept

    @classmethod
    def load(cls, root: Path, ticker: str, cik: str, splits: tuple[Split, ...]) -> Filer:
        document = json.loads((root / FACTS_DIR / f"CIK{cik}.json").read_text(encoding="utf-8"))
        return cls(ticker, cik, splits, document)

    def on(self, day: str) -> Filer:
        """The same filer as an analyst saw it on `day`."""
        return Filer(self.ticker, self.cik, self.splits, self._document, as_of=day)

    # -- facts ------------------------------------------------------------------------------

    def facts(self, concept: str, unit: str = "USD") -> list[Fact]:
        return self._facts.get((_qualified(concept), unit), [])

    def instant(self, concept: str, end: str, unit: str = "USD") -> Fact | None:
        at_end = [f for f in self.facts(concept, unit) if f.start is None and f.end == end]
        if end in self.year_ends:
            annual = [f for f in at_end if f.form in ANNUAL_FORMS]
            return latest(annual or at_end)
        return latest(at_end)

    @cached_property
    def year_ends(self) -> frozenset[str]:
        return frozenset(y.end for y in self.years if y.end is not None)

    def duration(self, concept: str, start: str, end: str, unit: str = "USD") -> Fact | None:
        """The figure for the period from `start` to `end` (start within a few days: filers date
        52/53-week periods by their weeks)."""
        return latest(
            f
            for f in self.facts(concept, unit)
            if f.end == end
            and f.start is not None
            and abs(days_between(start, f.start)) <= START_SLACK_DAYS
        )

    def history(self, concept: str, start: str | None, end: str, unit: str = "USD") -> list[Fact]:
        """Every filing of one period, oldest first."""
        found = [
            f
            for f in self.facts(concept, unit)
            if f.end == end
            and (
                f.start is None
                if start is None
                else f.start is not None and abs(days_between(start, f.start)) <= START_SLACK_DAYS
            )
        ]
        return sorted(found, key=lambda f: (f.filed, f.accn))

    def all_facts(self) -> Iterable[Fact]:
        for facts in self._facts.values():
            yield from facts

    @cached_property
    def newest_filing_day(self) -> str:
        return max(f.filed for f in self.all_facts())

    # -- splits -----------------------------------------------------------------------------

    @cached_property
    def splits_in_view(self) -> tuple[Split, ...]:
        """Splits the latest basis reflects: those with a periodic report filed on or after the
        split day among the facts in view (before that, no filing shows the new basis)."""
        return tuple(s for s in self.splits if s.effective <= self.newest_filing_day)

    def split_factor(self, fact: Fact) -> int:
        """How many of today's shares one share had when `fact` was filed."""
        factor = 1
        for split in self.splits_in_view:
            if fact.filed < split.effective:
                factor *= split.ratio
        return factor

    # -- the fiscal calendar ----------------------------------------------------------------

    @cached_property
    def years(self) -> list[FiscalYear]:
        """Fiscal years, oldest first."""
        by_filing: dict[str, list[Fact]] = {}
        for fact in self.all_facts():
            if fact.form == "10-K" and fact.concept.startswith("us-gaap:"):
                by_filing.setdefault(fact.accn, []).append(fact)
        years: dict[str, FiscalYear] = {}
        for accn, facts in by_filing.items():
            filed = facts[0].filed
            annual = [
                f
                for f in facts
                if f.days is not None and SPANS[4][0] <= f.days <= SPANS[4][1] and f.end < filed
            ]
            if not annual or facts[0].fy is None:
                continue
            end = max(f.end for f in annual)
            start = Counter(f.start for f in annual if f.end == end).most_common(1)[0][0]
            assert start is not None
            held = years.get(end)
            if held is None or (filed, accn) < (held.filed or "", held.accn or ""):
                years[end] = FiscalYear(facts[0].fy, start, end, accn, filed, ())
        ordered = sorted(years.values(), key=lambda y: y.year_end)
        found = []
        for y in ordered:
            ends = self._quarter_ends(y.start)
            quarter_ends = (*ends, y.year_end) if len(ends) == 3 else ()
            found.append(FiscalYear(y.label, y.start, y.end, y.accn, y.filed, quarter_ends))
        if found:
            last = found[-1]
            start = day_after(last.year_end)
            ends = self._quarter_ends(start)
            if ends:
                found.append(FiscalYear(last.label + 1, start, None, None, None, tuple(ends)))
        return found

    def _quarter_ends(self, start: str) -> list[str]:
        """Where the 10-Qs' three-, six- and nine-month periods from `start` end."""
        ends: list[str] = []
        for n in (1, 2, 3):
            low, high = SPANS[n]
            counts = Counter(
                f.end
                for f in self._ytd_facts
                if abs(days_between(start, f.start or "")) <= START_SLACK_DAYS
                and low <= (f.days or 0) <= high
            )
            if not counts:
                break
            ends.append(counts.most_common(1)[0][0])
        return ends

    @cached_property
    def _ytd_facts(self) -> list[Fact]:
        return [f for f in self.all_facts() if f.form.startswith("10-Q") and f.start is not None]

    def year(self, end: str) -> FiscalYear:
        for year in self.years:
            if end in (year.end, *year.quarter_ends):
                return year
        raise KeyError(f"{self.ticker} has no fiscal year or quarter ending {end}")

    def previous(self, year: FiscalYear) -> FiscalYear | None:
        i = self.years.index(year)
        if i == 0:
            return None
        before = self.years[i - 1]
        return before if before.end and day_after(before.end) == year.start else None

    def complete_years(self, count: int) -> list[FiscalYear]:
        """The latest `count` fiscal years with a 10-K, oldest first."""
        return [y for y in self.years if y.complete][-count:]


def _qualified(concept: str) -> str:
    return concept if ":" in concept else f"us-gaap:{concept}"


def _fact(concept: str, unit: str, row: dict[str, Any]) -> Fact:
    return Fact(
        concept=concept,
        unit=unit,
        val=row["val"],
        start=row.get("start"),
        end=row["end"],
        accn=row["accn"],
        form=row["form"],
        filed=row["filed"],
        fy=row.get("fy"),
        fp=row.get("fp"),
    )
