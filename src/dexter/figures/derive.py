"""Figures that follow from found ones: growth, margin, ratio, difference, sum, per share, CAGR.

A search over every pair of every evidence number would "derive" almost any wrong figure, so
operands must belong together before they are combined:
- figures the answer states near the derived one (same paragraph, or the table or paragraph
  just before) that were verified or derived themselves;
- such a figure with the numbers of its own statement row (the same field in other periods:
  growth, CAGR, difference, share of) or column (the same period: margin, ratio, difference);
- the numbers of one row, or of one column, whose fields the derived figure's sentence names
  ("gross margin" names gross profit and revenue; "tax rate" names the tax lines);
- consecutive figures the answer lists before a total ("$35.9 billion, $18.8 billion and $77.7
  billion, $132.4 billion in all"), and runs of consecutive periods of a named row (a TTM,
  year-to-date or multi-year total).
A result is accepted when the figure's display rounding allows it, computed either from the
exact evidence values or from the rounded figures the answer shows, and when its period is not
clearly another than the answer states.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date
from itertools import permutations

from dexter.figures.evidence import (
    MONEY,
    MULTIPLE,
    NUMBER,
    PER_SHARE,
    PERCENT,
    SHARES,
    EvidenceIndex,
    Found,
)
from dexter.figures.extract import Claim
from dexter.figures.fields import GENERIC_STEMS, PHRASES, expanded, named, stems
from dexter.figures.match import window
from dexter.figures.periods import EvidencePeriod, compatible, mentions

_EPSILON = 1e-9
_YEARS_SAID = re.compile(
    r"\b(?P<n>[2-9]|1[0-9]|two|three|four|five|six|seven|eight|nine|ten)[- ](?:year|yr)s?\b"
    r"|\bover (?:the (?:past|last|same) )?(?P<m>[2-9]|1[0-9]|two|three|four|five|six|seven|"
    r"eight|nine|ten) (?:fiscal )?years\b",
    re.IGNORECASE,
)
_NUMBER_WORDS = {
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}
# Most operands a run sum may have: a year of quarters, or a handful of listed parts.
_MAX_RUN = 6


@dataclass(frozen=True, slots=True)
class Operand:
    # The exact value and the value the answer shows (the same when not in the answer).
    exact: float
    shown: float
    kind: str
    name: str
    period: EvidencePeriod | None
    field_family: int
    period_family: int
    from_answer: bool
    # No later year's same quarter (or year to date) is in the evidence.
    newest: bool = True


@dataclass(frozen=True, slots=True)
class Derived:
    formula: str
    value: float
    period: EvidencePeriod | None
    field_family: int
    period_family: int


def _operand(found: Found, shown: float | None, from_answer: bool, newest: bool = True) -> Operand:
    name = found.raw
    if found.field:
        period = found.period.describe() if found.period else ""
        name = f"{found.field}{' ' + period if period else ''} {found.raw}"
    return Operand(
        exact=found.value,
        shown=found.value if shown is None else shown,
        kind=found.kind,
        name=name,
        period=found.period,
        field_family=found.field_family,
        period_family=found.period_family,
        from_answer=from_answer,
        newest=newest,
    )


class Deriver:
    """Derivations for one answer: operands are built once and shared by every figure."""

    def __init__(self, index: EvidenceIndex, paragraphs: Sequence[int]) -> None:
        self.index = index
        self.paragraphs = paragraphs
        # Figures of the answer that were found or derived, with what they stand for.
        self.stated: list[tuple[Claim, Operand]] = []
        self._operands: dict[int, Operand] = {}
        self._named_cache: dict[tuple[int, frozenset[str]], bool] = {}
        self._ends: dict[int, list[tuple[str, date]]] = {}

    def add(self, claim: Claim, operand: Operand) -> None:
        self.stated.append((claim, operand))

    def evidence_operand(self, found: Found) -> Operand:
        key = id(found)
        known = self._operands.get(key)
        if known is None:
            newest = self.index.newest_of_its_quarter(found)
            known = self._operands[key] = _operand(found, None, False, newest)
        return known

    def _paragraph(self, pos: int) -> int:
        return max(i for i, p in enumerate(self.paragraphs) if p <= pos)

    def _near(self, claim: Claim, target: Claim) -> bool:
        if claim is target:
            return False
        if target.in_table and claim.in_table:
            if claim.row == target.row or claim.column == target.column:
                return True
        gap = self._paragraph(target.start) - self._paragraph(claim.start)
        return 0 <= gap <= 1 or (gap == -1 and target.in_table)

    def _family_named(self, family: int, field: str, words: frozenset[str]) -> bool:
        key = (family, words)
        known = self._named_cache.get(key)
        if known is None:
            known = self._named_cache[key] = named(field, words)
        return known

    def _words(self, target: Claim) -> frozenset[str]:
        text = target.sentence_text
        words = target.words
        if _REFERS_BACK.search(text) or _PRONOUN.search(text):
            # "In FY2023 it was 26.0%": what "it" is, the sentences before say.
            text = target.context_text or text
            words = words | frozenset(_WORDS.findall(text.lower()))
        extra = [w for pattern, found in PHRASES if pattern.search(text) for w in found]
        return stems(expanded(words) | frozenset(extra))

    def derive(self, target: Claim) -> Derived | None:
        for found in self._search(target):
            return found
        return None

    def _search(self, target: Claim) -> Iterator[Derived]:
        words = self._words(target)
        named_years, named_days = _named_periods(target.context_text or target.sentence_text)
        near_claims = [(claim, op) for claim, op in self.stated if self._near(claim, target)]
        # "Those values imply about $281 per share": a sentence that points back may draw on
        # two figures of the sentence before.
        referred = bool(_REFERS_BACK.search(target.sentence_text))
        near = [op for _, op in near_claims]
        index = self.index
        # 1. Figures the answer states near it, and runs of them just before it. Figures of
        # one row compare across periods; any two may be compared when one of them stands in
        # the derived figure's own sentence ("a high of $137.98 and a low of $103.10, a 25.3%
        # drop"; "the December quarter's $143.8 billion was 32.0% above that average").
        if _TOTAL.search(target.sentence_text):
            yield from self._runs(target, near)
        if target.kind == PERCENT:
            yield from self._run_shares(target, near_claims)
        for (ca, a), (cb, b) in permutations(near_claims, 2):
            beside = target.sentence in (ca.sentence, cb.sentence) or (
                ca.sentence == cb.sentence and referred
            )
            # Two periods of one row, when the sentence names the row ("Sequential growth
            # slowed from 8.4% ..." after the quarters' revenue).
            row = a.field_family == b.field_family != 0 and self._family_named(
                a.field_family, _field_of(index, a), words
            )
            if not (beside or row or _table_related(ca, cb, words)):
                continue
            yield from _pair(target, a, b, same_field=True, stated=True)
        if target.kind == PERCENT and target.decimals == 0 and target.half_unit >= 0.5:
            # A whole percent is too coarse to tell a derivation from a coincidence unless
            # both operands are the answer's own.
            return
        # An annualised rate: a quarterly figure of the sentence times four.
        if _ANNUALISED.search(target.sentence_text):
            for claim, op in near_claims:
                if claim.sentence == target.sentence and _fits_value(target, op.exact * 4):
                    yield Derived(f"{op.name} × 4 (annualised)", op.exact * 4, None, 0, 0)
        # 2. A stated figure with its own row (the periods analysts compare it with) or column
        # (other fields the sentence names).
        for op in near:
            for found in index.by_field_family.get(op.field_family, ()):
                other = self.evidence_operand(found)
                if other.period_family == op.period_family or other.exact == op.exact:
                    continue
                if not self._compared_periods(op, other, named_years, named_days):
                    continue
                yield from _pair(target, op, other, same_field=True)
                yield from _pair(target, other, op, same_field=True)
            for found in index.by_period_family.get(op.period_family, ()):
                other = self.evidence_operand(found)
                if other.field_family == op.field_family:
                    continue
                # A per-share figure divides by the share count beside its amount.
                per_share = target.kind == PER_SHARE and found.kind == SHARES
                if not per_share and not self._family_named(found.field_family, found.field, words):
                    continue
                yield from _pair(target, op, other, same_field=False)
                yield from _pair(target, other, op, same_field=False)
        # 3. Rows the sentence names: across the periods analysts compare, and totals of
        # consecutive periods when the sentence speaks of a total (also of the rows the
        # figures near it came from: "that is $119.1 billion over four quarters").
        named_families = [
            family
            for family, members in index.by_field_family.items()
            if members and members[0].field and self._family_named(family, members[0].field, words)
        ]
        named = [index.by_field_family[family] for family in named_families]
        # 2b. A stated figure as a share of a row the sentence names, in a period it may be
        # of ("online sales were $46.6 million, 15.9% of net sales").
        if target.kind in (PERCENT, MULTIPLE):
            for op in near:
                for family in named_families:
                    for found in index.by_field_family[family]:
                        if found.field_family == op.field_family or found.from_ratio:
                            continue
                        if op.period is not None and op.period.end is not None:
                            if found.period is None or found.period.end != op.period.end:
                                continue
                        other = self.evidence_operand(found)
                        yield from _pair(target, op, other, same_field=False)
                        yield from _pair(target, other, op, same_field=False)
        totals = bool(_TOTAL.search(target.sentence_text))
        if totals:
            for family in {op.field_family for op in near} - set(named_families):
                yield from self._row_sums(target, index.by_field_family.get(family, []))
        if _TOP.search(target.sentence_text):
            for family in {op.field_family for op in near} | set(named_families):
                yield from self._top_sums(target, index.by_field_family.get(family, []))
        for members in named:
            ops = [self.evidence_operand(f) for f in members]
            for a, b in permutations(ops, 2):
                if a.period_family != b.period_family and self._compared_periods(
                    a, b, named_years, named_days
                ):
                    yield from _pair(target, a, b, same_field=True)
            if totals:
                yield from self._row_sums(target, members)
        # 4. Columns: one period across the fields the sentence names.
        by_period: dict[int, list[Operand]] = {}
        for members in named:
            for f in members:
                by_period.setdefault(f.period_family, []).append(self.evidence_operand(f))
        for ops in by_period.values():
            for a, b in permutations(ops, 2):
                if a.field_family != b.field_family:
                    yield from _pair(target, a, b, same_field=False)

    def _compared_periods(
        self,
        a: Operand,
        b: Operand,
        named_years: frozenset[int],
        named_days: frozenset[tuple[int, int]],
    ) -> bool:
        """Periods analysts compare: a year apart (year over year), next to each other
        (sequential), or both named by the text ("from FY2021 to FY2025", "from October 13
        to October 30")."""
        pa, pb = a.period, b.period
        if pa is None or pb is None or pa.end is None or pb.end is None:
            # Rows of a record table (holdings, trades) are other records, not other periods.
            return False
        ya, yb = _year(pa), _year(pb)
        if pa.span == pb.span == "annual" and ya is not None and yb is not None:
            if {ya, yb} <= named_years:
                return True
        if pa.span == pb.span == "instant":
            days_named = {(pa.end.month, pa.end.day), (pb.end.month, pb.end.day)}
            if days_named <= named_days:
                return True
        if pa.span != pb.span:
            return False
        days = abs((pa.end - pb.end).days)
        if 345 <= days <= 385:
            return True
        # Next to each other: quarters, years; not two days of a price series.
        return pa.span != "instant" and self._adjacent(a, b)

    def _adjacent(self, a: Operand, b: Operand) -> bool:
        ends = self._ends.get(a.field_family)
        if ends is None:
            ends = sorted(
                {
                    (f.period.span or "", f.period.end)
                    for f in self.index.by_field_family.get(a.field_family, ())
                    if f.period is not None and f.period.end is not None
                }
            )
            self._ends[a.field_family] = ends
        if a.period is None or b.period is None or a.period.end is None or b.period.end is None:
            return False
        try:
            i = ends.index((a.period.span or "", a.period.end))
            j = ends.index((b.period.span or "", b.period.end))
        except ValueError:
            return False
        return abs(i - j) == 1

    def _run_shares(
        self, target: Claim, near_claims: Sequence[tuple[Claim, Operand]]
    ) -> Iterator[Derived]:
        """Two or three figures listed together as a share of another in the target's
        sentence ("the Growth ETF ($26.7 million) and Value ETF ($24.5 million) alone are
        14.6% of the report's $350.2 million")."""
        mine = sorted(
            (pair for pair in near_claims if pair[0].sentence == target.sentence),
            key=lambda pair: pair[0].start,
        )
        for size in (2, 3):
            for start in range(0, len(mine) - size + 1):
                run = [op for _, op in mine[start : start + size]]
                if PERCENT in (op.kind for op in run) or not all(
                    _comparable(run[0], op) for op in run
                ):
                    continue
                total = sum(op.exact for op in run)
                for _, whole in mine:
                    if whole in run or not _comparable(run[0], whole) or whole.exact == 0:
                        continue
                    share = abs(total / whole.exact) * 100
                    if _fits_value(target, share):
                        names = " + ".join(op.name for op in run)
                        yield Derived(f"({names}) / {whole.name} (share)", share, None, 0, 0)

    def _runs(self, target: Claim, near: Sequence[Operand]) -> Iterator[Derived]:
        """A total of the figures listed just before it, of its own kind."""
        before = [
            (claim, op)
            for claim, op in self.stated
            if claim.end <= target.start
            and claim.kind == target.kind
            and op in near
            and self._paragraph(claim.start) == self._paragraph(target.start)
        ]
        before.sort(key=lambda pair: pair[0].start)
        for size in range(2, min(len(before), _MAX_RUN) + 1):
            run = [op for _, op in before[-size:]]
            yield from _total(target, run)

    def _top_sums(self, target: Claim, members: Sequence[Found]) -> Iterator[Derived]:
        """Totals of the first rows of a ranked list ("the top two", "the five largest")."""
        ranked: dict[int, Found] = {}
        for f in members:
            if f.rank >= 0 and not f.from_ratio:
                ranked.setdefault(f.rank, f)
        ordered = [ranked[r] for r in sorted(ranked)]
        if len(ordered) < 2 or any(f.rank != i for i, f in enumerate(ordered)):
            return
        ops = [self.evidence_operand(f) for f in ordered]
        for size in range(2, min(len(ops), _MAX_TOP) + 1):
            yield from _total(target, ops[:size])

    def _row_sums(self, target: Claim, members: Sequence[Found]) -> Iterator[Derived]:
        """Totals of consecutive periods of one row (a TTM, a year to date, a multi-year
        total), each period once however many tool results showed it."""
        by_end: dict[tuple[str | None, date], Found] = {}
        for f in members:
            if f.period is not None and f.period.end is not None:
                by_end.setdefault((f.period.span, f.period.end), f)
        spans: dict[str | None, list[tuple[date, Found]]] = {}
        for (span, end), f in by_end.items():
            spans.setdefault(span, []).append((end, f))
        for dated in spans.values():
            dated.sort(key=lambda pair: pair[0])
            ops = [self.evidence_operand(f) for _, f in dated]
            for size in range(2, min(len(ops), _MAX_RUN) + 1):
                for start in range(0, len(ops) - size + 1):
                    yield from _total(target, ops[start : start + size])


_POINTS = re.compile(r"\bpoints?\b|\bpp\b|\bppts?\b|\bbps\b|\bbp\b|basis", re.IGNORECASE)
_PRONOUN = re.compile(r"\b(?:it|its)\b", re.IGNORECASE)
_WORDS = re.compile(r"[a-z][a-z&]+")
_ANNUALISED = re.compile(r"\bannuali[sz]ed|\bannual(?:ized)? rate|\brun[- ]rate", re.IGNORECASE)
_REFERS_BACK = re.compile(
    r"\b(?:this|that|these|those|which|implies|imply|implying|means|works out|gives|giving)\b",
    re.IGNORECASE,
)
# Words that say a figure is a total of a ranked list's first rows.
_TOP = re.compile(r"\b(?:top|largest|biggest|together|combined)\b", re.IGNORECASE)
_MAX_TOP = 10
# Words that say a figure is a total of several periods or parts.
_TOTAL = re.compile(
    r"\b(?:total(?:l?ed|l?ing|s)?|combined|together|cumulative(?:ly)?|in all|sum|altogether|"
    r"over (?:the )?(?:last |past |same )?(?:[0-9]+|two|three|four|five|six|seven|eight|nine|"
    r"ten|several) (?:fiscal )?(?:years|quarters|months)|trailing|TTM|LTM|year[- ]to[- ]date|"
    r"YTD|first half|first[- ]nine[- ]months|nine months|six months|(?:three|four) quarters)\b",
    re.IGNORECASE,
)


def _named_periods(text: str) -> tuple[frozenset[int], frozenset[tuple[int, int]]]:
    """The years a text names (a range by its two ends: "FY2021-FY2025"), and the days."""
    years: set[int] = set()
    days: set[tuple[int, int]] = set()
    for m in mentions(text):
        period = m.period
        if period.month is not None and period.day is not None:
            days.add((period.month, period.day))
        if period.start is not None:
            days.add((period.start.month, period.start.day))
        if period.year is None:
            continue
        years.add(period.year)
        if period.first_year is not None:
            years.add(period.first_year)
    return frozenset(years), frozenset(days)


def _table_related(a: Claim, b: Claim, words: frozenset[str]) -> bool:
    """Two cells of one row or column of the answer's table, whose heading the derived
    figure's sentence names ("gross margin expanded by 70 basis points")."""
    if not (a.in_table and b.in_table) or not (a.row == b.row or a.column == b.column):
        return False
    shared = stems(a.words & b.words) - GENERIC_STEMS - stems(_STOP)
    return bool(shared & words)


_STOP = frozenset({"the", "and", "of", "in", "fy", "fiscal", "year", "total", "usd", "millions"})


def _field_of(index: EvidenceIndex, operand: Operand) -> str:
    members = index.by_field_family.get(operand.field_family)
    return members[0].field if members else ""


def _total(target: Claim, run: Sequence[Operand], *, average: bool = False) -> Iterator[Derived]:
    if target.kind == PERCENT or any(op.kind == PERCENT for op in run):
        return
    exact = sum(op.exact for op in run)
    shown = sum(op.shown for op in run)
    names = " + ".join(op.name for op in run)
    if _fits_value(target, exact) or _fits_value(target, shown):
        yield Derived(f"{names} (sum)", exact, None, 0, run[0].period_family)
    elif average and (
        _fits_value(target, exact / len(run)) or _fits_value(target, shown / len(run))
    ):
        yield Derived(f"({names}) / {len(run)} (average)", exact / len(run), None, 0, 0)


def _pair(
    target: Claim, a: Operand, b: Operand, *, same_field: bool, stated: bool = False
) -> Iterator[Derived]:
    """What the target may be of a and b. `same_field`: a and b measure one thing (a row
    across periods), or are stated side by side; `stated`: both are the answer's figures."""
    kind = target.kind
    same_period = a.period_family == b.period_family or (
        a.period is not None
        and b.period is not None
        and a.period.end is not None
        and a.period.end == b.period.end
    )
    across = same_field and not same_period
    period = _later(a.period, b.period) if across else a.period or b.period
    # The answer's own figures were held to their periods already; a figure derived from
    # them (a ratio of two years, of two companies) has no single period of its own.
    if not stated and target.period is not None and target.period_strength >= 1:
        if period is not None and not compatible(
            target.period, period, None, a.newest and b.newest
        ):
            return
    family = a.period_family if same_period else 0

    def made(formula: str, value: float) -> Derived:
        return Derived(formula, value, period, 0, family)

    if kind == PERCENT:
        if a.kind == PERCENT and b.kind == PERCENT:
            # Percentage points between two percents: a rate's change (one row across
            # periods), or when the figure says it is in points.
            points = _POINTS.search(target.text) or _POINTS.search(target.sentence_text)
            one_row = a.field_family == b.field_family != 0
            if a.exact >= b.exact and (points or one_row):
                value = _fits(target, lambda x, y: x - y, a, b, magnitude=False)
                if value is not None:
                    yield made(f"{a.name} - {b.name} (percentage points)", value)
            return
        if PERCENT in (a.kind, b.kind) or not _comparable(a, b, relative=True):
            return
        if across:
            value = _fits(target, lambda x, y: (y - x) / abs(x) * 100, a, b)
            if value is not None:
                yield made(f"({b.name} - {a.name}) / {a.name} (growth)", value)
                return
            for n in _years_between(a.period, b.period, target, stated):

                def cagr(x: float, y: float, n: int = n) -> float:
                    return _cagr(x, y, n)

                value = _fits(target, cagr, a, b)
                if value is not None:
                    yield made(f"({b.name} / {a.name})^(1/{n}) - 1 (CAGR over {n} years)", value)
                    return
        if same_period or same_field or (a.from_answer and b.from_answer):
            value = _fits(target, lambda x, y: x / y * 100, a, b)
            if value is not None:
                yield made(f"{a.name} / {b.name} (in percent)", value)
        return
    if kind == MULTIPLE:
        # A multiple divides like by like: price by earnings, debt by equity.
        if PERCENT in (a.kind, b.kind) or MULTIPLE in (a.kind, b.kind):
            return
        if not _comparable(a, b, relative=True):
            return
        if same_period or (a.from_answer and b.from_answer):
            value = _fits(target, lambda x, y: x / y, a, b)
            if value is not None:
                yield made(f"{a.name} / {b.name} (multiple)", value)
        return
    # Amounts, per-share values, share counts, bare numbers.
    if PERCENT in (a.kind, b.kind):
        return
    per_unit = PER_SHARE in target.kinds or bool(_PER_UNIT.search(target.sentence_text))
    if per_unit and b.kind in (SHARES, NUMBER) and a.kind in (MONEY, NUMBER):
        if same_period or (a.from_answer and b.from_answer):
            value = _fits(target, lambda x, y: x / y, a, b)
            if value is not None:
                yield made(f"{a.name} / {b.name} (per share)", value)
                return
    if kind in (MONEY, NUMBER) and a.kind == PER_SHARE and b.kind == SHARES and same_period:
        value = _fits(target, lambda x, y: x * y, a, b)
        if value is not None:
            yield made(f"{a.name} × {b.name}", value)
            return
    if not _comparable(a, b):
        return
    if abs(a.exact) >= abs(b.exact):
        value = _fits(target, lambda x, y: x - y, a, b)
        if value is not None:
            yield made(f"{a.name} - {b.name} (difference)", value)
            return
        if a.exact * b.exact < 0:
            # A flow written with its sign (capex -12,715) taken from another.
            value = _fits(target, lambda x, y: x + y, a, b, magnitude=False)
            if value is not None:
                yield made(f"{a.name} + {b.name} (difference)", value)
                return
    if (same_period or (a.from_answer and b.from_answer)) and a.exact >= b.exact:
        value = _fits(target, lambda x, y: x + y, a, b)
        if value is not None:
            yield made(f"{a.name} + {b.name} (sum)", value)


# "$2.38 million of revenue per employee": an amount divided by a count.
_PER_UNIT = re.compile(r"\bper[ \u00a0](?!cent\b)[a-z]+|\bapiece\b|\beach\b", re.IGNORECASE)


def _comparable(a: Operand, b: Operand, *, relative: bool = False) -> bool:
    """Whether a and b measure the same kind of thing. For a relative change or share, a
    price and an amount are both currency ("$276.05, 21.1% below the $349.67 peak")."""
    if a.kind == b.kind or NUMBER in (a.kind, b.kind):
        return True
    return relative and {a.kind, b.kind} == {MONEY, PER_SHARE}


def _cagr(start: float, end: float, years: int) -> float:
    if start <= 0 or end <= 0:
        return math.nan
    growth: float = ((end / start) ** (1 / years) - 1) * 100
    return growth


def _years_between(
    a: EvidencePeriod | None, b: EvidencePeriod | None, target: Claim, stated: bool = False
) -> list[int]:
    """The spans a CAGR may be over: the years the sentence says ("over four years"), and the
    gap between the two periods. For the answer's own figures, the periods must be the ones
    the text names, when it names any."""
    said = []
    for m in _YEARS_SAID.finditer(target.sentence_text):
        word = (m.group("n") or m.group("m")).lower()
        said.append(int(word) if word.isdigit() else _NUMBER_WORDS[word])
    if target.period is not None and target.period.first_year is not None:
        if target.period.year is not None:
            said.append(target.period.year - target.period.first_year)
    if a is not None and b is not None:
        ya, yb = _year(a), _year(b)
        if ya is not None and yb is not None and abs(yb - ya) >= 2:
            named, _ = _named_periods(target.context_text or target.sentence_text)
            if stated and named and not {ya, yb} <= named:
                return []
            said.append(abs(yb - ya))
    return [n for n in dict.fromkeys(said) if n >= 2]


def _year(period: EvidencePeriod) -> int | None:
    if len(period.fiscal_years) == 1:
        return min(period.fiscal_years)
    return period.end.year if period.end else None


def _later(a: EvidencePeriod | None, b: EvidencePeriod | None) -> EvidencePeriod | None:
    if a is None or b is None:
        return a or b
    if a.end is not None and b.end is not None:
        return a if a.end > b.end else b
    ya, yb = _year(a), _year(b)
    if ya is None or yb is None:
        return None
    return a if ya > yb else b


def _fits_value(target: Claim, value: float) -> bool:
    if math.isnan(value) or math.isinf(value):
        return False
    size = abs(value)
    for scale in target.scales:
        low, high = window(target, scale)
        slack = max(high, 1.0) * _EPSILON
        if low - slack <= size <= high + slack:
            return True
    return False


def _fits(
    target: Claim,
    op: Callable[[float, float], float],
    a: Operand,
    b: Operand,
    *,
    magnitude: bool = True,
) -> float | None:
    """op(a, b), from exact or from shown values, if it rounds to the target as displayed."""
    for x, y in ((a.exact, b.exact), (a.shown, b.shown)):
        try:
            value = op(abs(x), abs(y)) if magnitude else op(x, y)
        except (ZeroDivisionError, OverflowError, ValueError):
            continue
        if _fits_value(target, value):
            return value
    return None
