"""Share-basis changes (stock splits, reverse splits, recapitalisations) read from companyfacts.

A split changes every share count and per-share amount a company files afterwards, and its later
filings restate the comparatives they repeat; periods no later filing repeats stay on the old
basis. To put every period shown on one basis, the latest, we need each change's ratio and when
it happened, and we read both from the data itself:

* **Evidence.** The same period's figure filed in two filings on different bases. For every share
  count (weighted average basic and diluted, shares outstanding; us-gaap and ifrs-full) and every
  EPS figure (basic, diluted) of one period, consecutive filings of it (by filing date) give a
  ratio: later ÷ earlier for counts, earlier ÷ later for per-share amounts. Each ratio is an
  interval, not a number: filed values are rounded (to thousands or millions of shares, to the
  cent), so 2,535 M → 25,350 M is exactly 10 while 1.74 → 0.17 is anywhere in [9.9, 10.6].
* **A change, not a restatement.** A ratio within 3% of 1 is no change. Ratios beyond 100 (or
  below 1/100) are a filer's scale error (thousands tagged as units), not a split. When a pair of
  filings repeats some share facts unchanged and others changed, the majority decides: a split
  moves every share figure, a restatement (diluted shares under a new accounting rule) only some;
  a filing pair needs more changed share counts than unchanged ones to count (EPS moves with
  any restated count, so it votes only for a filer that tags no counts).
* **One change per run of agreeing evidence.** Pairs whose ratio intervals intersect and whose
  (earlier filed, later filed] windows overlap are one change; the windows narrow down when it
  happened: `last_before` is the latest filing still on the old basis, `first_after` the
  earliest on the new one. A change needs two agreeing pairs, or one confirmed by the ratio the
  filer tagged (`StockholdersEquityNoteStockSplitConversionRatio1`). A run overlapping a better
  supported change in time (a period filed before one split and next after another carries
  their product) is not a third change.
* **The ratio.** The simplest fraction p/q (q ≤ 4) inside the intersected interval, else the
  ratio the filer tagged if it fits, else the measured ratio, accepted only when it is tight
  (within 1%) and seen for at least two periods and two concepts: a recapitalisation or a bonus
  element need not be a clean split.

Applying it (see `factor`): a fact filed before a change's `first_after` is multiplied by the
ratio (counts) or divided by it (per-share amounts), for every later change; a fact filed then or
after is already on the new basis and is left alone, so no period is restated twice. The boundary
is the first filing seen on the new basis, not the last one seen on the old: filings in between
(a 10-K and a 10-Q filed after the last re-filed period but before the split, as in a view of the
data as of a date soon after it) repeat nothing on the new basis and are still on the old one, as
every periodic report is: a 10-Q after a split restates its comparatives, so it would be evidence.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import pairwise
from typing import NamedTuple

# Concepts whose repeats reveal a change. Shares outstanding move with the count too.
SHARE_COUNT_CONCEPTS = (
    "us-gaap:WeightedAverageNumberOfSharesOutstandingBasic",
    "us-gaap:WeightedAverageNumberOfDilutedSharesOutstanding",
    "us-gaap:CommonStockSharesOutstanding",
    "ifrs-full:WeightedAverageShares",
    "ifrs-full:AdjustedWeightedAverageShares",
    "ifrs-full:NumberOfSharesOutstanding",
)
PER_SHARE_CONCEPTS = (
    "us-gaap:EarningsPerShareBasic",
    "us-gaap:EarningsPerShareDiluted",
    "us-gaap:EarningsPerShareBasicAndDiluted",
    "ifrs-full:BasicEarningsLossPerShare",
    "ifrs-full:DilutedEarningsLossPerShare",
)
DECLARED_RATIO_CONCEPT = "us-gaap:StockholdersEquityNoteStockSplitConversionRatio1"

NO_CHANGE = 0.03  # ratios within 3% of 1 are restatements or rounding, not a basis change
MAX_RATIO = 100.0  # beyond this, a scale error
SLACK = 0.002  # restated share counts drift a little beyond rounding when re-computed
MIN_PER_SHARE = 0.10  # smaller EPS figures round too coarsely to tell a ratio
MAX_PER_SHARE_SPREAD = 0.10  # an EPS pair whose ratio interval is wider than this says little
MAX_DENOMINATOR = 4  # 3-for-2, 5-for-4, 4-for-3 are splits; 47-for-8 is a measured ratio
TIGHT = 0.01  # a ratio that is not a simple fraction must be measured this precisely


# Which figure a group of repeats is: (concept, period start or None for an instant, end).
Figure = tuple[str, str | None, str]


class Observation(NamedTuple):
    """One filed value of one period's figure."""

    value: float
    filed: str
    accn: str


class Declared(NamedTuple):
    """A split ratio the filer tagged, the date its fact is about, and when it was filed."""

    ratio: float
    date: str  # the fact's period end: the split's date, or roughly (filers vary)
    filed: str


@dataclass(frozen=True, slots=True)
class Split:
    """A change of share basis: facts filed before `first_after` count `ratio` times too
    few shares (per-share amounts are `ratio` times too large) for the basis of later filings.
    `ratio` 3 is a 3-for-1 split, 0.1 a 1-for-10 reverse split."""

    ratio: float
    last_before: str  # the latest filing date still on the old basis
    first_after: str  # the earliest filing date seen on the new basis
    evidence: int  # how many pairs of repeated facts agree
    effective: str | None = None  # the date the filer tagged with its ratio, when in the window

    @property
    def year(self) -> str:
        """When it happened, as closely as the data says: "2022", or "2023-2024" when the last
        filing on the old basis and the first on the new straddle a year-end."""
        if self.effective:
            return self.effective[:4]
        before, after = self.last_before[:4], self.first_after[:4]
        return after if before == after else f"{before}-{after}"

    @property
    def name(self) -> str:
        """ "3-for-1 stock split", "1-for-10 reverse stock split", "3-for-2 stock split", or
        "change of share basis (1 old share = 1.588 new)"."""
        fraction = _simple_fraction(self.ratio)
        if fraction is None:
            return f"change of share basis (1 old share = {self.ratio:.4g} new)"
        if fraction >= 1:
            return f"{fraction.numerator}-for-{fraction.denominator} stock split"
        return f"{fraction.numerator}-for-{fraction.denominator} reverse stock split"

    def describe(self) -> str:
        return f"the {self.name} of {self.year}"


class _Evidence(NamedTuple):
    lo: float  # the ratio lies in [lo, hi]
    hi: float
    older: Observation
    newer: Observation
    figure: Figure  # the figure whose repeats it came from
    per_share: bool


class _Same(NamedTuple):
    """A pair of filings that repeated a figure unchanged."""

    older_accn: str
    newer_accn: str


def factor(splits: Sequence[Split], filed: str) -> tuple[float, tuple[Split, ...]]:
    """How many of today's shares one share counted in a filing of this date is, and the
    changes that makes up (those the filing predates)."""
    applied = tuple(s for s in splits if filed < s.first_after)
    return math.prod(s.ratio for s in applied), applied


def detect(
    share_counts: Iterable[tuple[Figure, Sequence[Observation]]],
    per_share: Iterable[tuple[Figure, Sequence[Observation]]],
    declared: Iterable[Declared] = (),
) -> list[Split]:
    """Changes of share basis, oldest first. Each group is one figure's repeats (one concept,
    one period), in any order; `declared` are the ratios the filer tagged."""
    evidence: list[_Evidence] = []
    unchanged: Counter[tuple[str, str]] = Counter()
    groups = [(*g, False) for g in share_counts] + [(*g, True) for g in per_share]
    for figure, group, is_per_share in groups:
        for item in _pairs(group, is_per_share, figure):
            if isinstance(item, _Same):
                unchanged[item.older_accn, item.newer_accn] += 1
            else:
                evidence.append(item)
    # Share counts vote (EPS moves with any restated count): a filing pair that repeats as many
    # counts unchanged as changed restated some of them (diluted shares under a new accounting
    # rule), where a split changes them all. A filer with no counts lets its EPS speak.
    moved = Counter((e.older.accn, e.newer.accn) for e in evidence if not e.per_share)
    evidence = [
        e
        for e in evidence
        if moved[pair := (e.older.accn, e.newer.accn)] > unchanged[pair]
        or moved[pair] == unchanged[pair] == 0
    ]
    return _accept(_cluster(evidence), list(declared))


def _pairs(
    group: Sequence[Observation], is_per_share: bool, figure: Figure
) -> Iterable[_Evidence | _Same]:
    ordered = sorted(group, key=lambda o: (o.filed, o.accn))
    for older, newer in pairwise(ordered):
        if older.value == newer.value:
            if older.filed != newer.filed:
                yield _Same(older.accn, newer.accn)  # the common case: a plain repeat
            continue
        if older.filed == newer.filed or older.value == 0 or newer.value == 0:
            continue
        if (older.value > 0) != (newer.value > 0):
            continue
        a, b = abs(older.value), abs(newer.value)
        ea, eb = _half_unit(a, is_per_share), _half_unit(b, is_per_share)
        if is_per_share:
            if min(a, b) < MIN_PER_SHARE:
                continue
            lo, hi = (a - ea) / (b + eb), (a + ea) / (b - eb)  # shares scale inversely
            if hi / lo - 1 > MAX_PER_SHARE_SPREAD:
                continue
        else:
            if a <= ea or b <= eb:
                continue
            lo, hi = (b - eb) / (a + ea) * (1 - SLACK), (b + eb) / (a - ea) * (1 + SLACK)
        if lo <= 1 + NO_CHANGE and hi >= 1 / (1 + NO_CHANGE):
            yield _Same(older.accn, newer.accn)
        elif 1 / MAX_RATIO <= lo and hi <= MAX_RATIO:
            yield _Evidence(lo, hi, older, newer, figure, is_per_share)


def _half_unit(value: float, is_per_share: bool) -> float:
    """Half the rounding unit a filed value shows: 2,466,000,000 shares were rounded to millions,
    1.74 per share to cents (or finer, 0.385), 7.0 per share to cents all the same."""
    if is_per_share:
        text = f"{value:.10f}".rstrip("0")
        decimals = max(2, len(text.split(".")[1]))
        return 0.5 * 10.0**-decimals
    number = round(value)
    unit = 1
    # No filer rounds share counts beyond millions; 25,000,000,000 is not ±500 million.
    while number and number % (unit * 10) == 0 and unit < 10**6:
        unit *= 10
    return 0.5 * unit


@dataclass
class _Run:
    lo: float
    hi: float
    last_before: str
    first_after: str
    items: list[_Evidence]


def _cluster(evidence: Sequence[_Evidence]) -> list[_Run]:
    runs: list[_Run] = []
    for e in sorted(evidence, key=lambda e: (e.newer.filed, e.older.filed)):
        for run in runs:
            overlaps = e.older.filed < run.first_after and run.last_before < e.newer.filed
            if overlaps and e.lo <= run.hi and run.lo <= e.hi:
                run.lo, run.hi = max(run.lo, e.lo), min(run.hi, e.hi)
                run.last_before = max(run.last_before, e.older.filed)
                run.first_after = min(run.first_after, e.newer.filed)
                run.items.append(e)
                break
        else:
            runs.append(_Run(e.lo, e.hi, e.older.filed, e.newer.filed, [e]))
    return runs


def _accept(runs: Sequence[_Run], declared: Sequence[Declared]) -> list[Split]:
    accepted: list[Split] = []
    for run in sorted(runs, key=lambda r: -len(r.items)):
        ratio = _ratio(run, declared)
        if ratio is None:
            continue
        if any(
            run.last_before < a.first_after and a.last_before < run.first_after for a in accepted
        ):
            continue  # overlaps a better-supported change: a compound of it, or noise
        dated = sorted(
            d.date
            for d in declared
            if run.last_before < d.date <= run.first_after and _same_ratio(d.ratio, ratio)
        )
        split = Split(
            ratio, run.last_before, run.first_after, len(run.items), dated[0] if dated else None
        )
        accepted.append(split)
    return sorted(accepted, key=lambda s: s.last_before)


def _same_ratio(tagged: float, ratio: float) -> bool:
    """Filers tag a reverse split's ratio either way round (10 or 0.1 for 1-for-10)."""
    return any(abs(r / ratio - 1) <= TIGHT for r in (tagged, 1 / tagged) if r > 0)


def _ratio(run: _Run, declared: Sequence[Declared]) -> float | None:
    """The run's ratio, or None when the run is not evidence enough."""
    confirmed = [
        r
        for d in declared
        if run.last_before < d.filed
        for r in (d.ratio, 1 / d.ratio if d.ratio else 0.0)
        if r and run.lo * (1 - TIGHT) <= r <= run.hi * (1 + TIGHT)
    ]
    if len(run.items) < 2 and not confirmed:
        return None
    simple = _fraction_within(run.lo, run.hi)
    if simple is not None:
        return float(simple)
    if confirmed:
        return confirmed[0]
    # Not a split's ratio: it must be seen for two periods and two concepts (basic and diluted,
    # counts and EPS), measured within 1%.
    periods = {e.figure[1:] for e in run.items}
    concepts = {e.figure[0] for e in run.items}
    if len(periods) < 2 or len(concepts) < 2 or run.hi / run.lo - 1 > TIGHT:
        return None
    return float(f"{math.sqrt(run.lo * run.hi):.4g}")


def _fraction_within(lo: float, hi: float) -> Fraction | None:
    """The simplest p/q (q ≤ MAX_DENOMINATOR) in [lo, hi], for a ratio or its inverse."""
    for q in range(1, MAX_DENOMINATOR + 1):
        for candidate in (Fraction(round(lo * q), q), Fraction(round(hi * q), q)):
            if candidate > 0 and lo <= candidate <= hi:
                return candidate
        inverse_lo, inverse_hi = 1 / hi, 1 / lo
        for candidate in (Fraction(round(inverse_lo * q), q), Fraction(round(inverse_hi * q), q)):
            if candidate > 0 and inverse_lo <= candidate <= inverse_hi:
                return 1 / candidate
    return None


def _simple_fraction(ratio: float) -> Fraction | None:
    return _fraction_within(ratio * (1 - 1e-9), ratio * (1 + 1e-9))


__all__ = [
    "DECLARED_RATIO_CONCEPT",
    "PER_SHARE_CONCEPTS",
    "SHARE_COUNT_CONCEPTS",
    "Declared",
    "Observation",
    "Split",
    "detect",
    "factor",
]
