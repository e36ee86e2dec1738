"""Figures that follow from found ones: growth, margin, ratio, difference, sum, per share, CAGR.

A search over every pair of every evidence number would "derive" almost any wrong figure, so
operands must belong together before they are combined:
- figures the answer states and that were verified, when they stand in the same paragraph or
  table as the derived one;
- evidence numbers of one statement row (the same field across periods: growth, CAGR,
  difference) or one column (one period across fields: margin, ratio, difference, sum), when
  the row is one a verified figure near it came from, or its field is named where the derived
  figure stands ("gross margin" names gross profit and revenue).
A result is accepted when the figure's display rounding allows it, computed either from the
exact evidence values or from the rounded figures the answer shows, and when its period is not
clearly another than the answer states.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
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
from dexter.figures.match import Match, field_words, window
from dexter.figures.periods import EvidencePeriod, compatible

_EPSILON = 1e-9
# What a sentence's words imply about the fields it draws on.
_SYNONYMS: dict[str, tuple[str, ...]] = {
    "margin": ("revenue", "sales", "profit", "income"),
    "margins": ("revenue", "sales", "profit", "income"),
    "sales": ("revenue",),
    "revenue": ("sales",),
    "revenues": ("revenue", "sales"),
    "earnings": ("income", "net", "eps"),
    "profit": ("income",),
    "eps": ("eps", "earnings"),
    "fcf": ("free", "cash", "flow", "fcf"),
    "capex": ("capital", "expenditure"),
    "r&d": ("research", "development", "r&d"),
    "opex": ("operating", "expense"),
    "cogs": ("cost", "revenue"),
    "debt": ("debt",),
    "leverage": ("debt", "equity"),
    "payout": ("dividends", "income"),
    "per": ("shares",),
}
_YEARS_SAID = re.compile(
    r"\b(?P<n>[2-9]|1[0-9]|two|three|four|five|six|seven|eight|nine|ten)[- ](?:year|yr)s?\b"
    r"|\bover (?:the (?:past|last) )?(?P<m>[2-9]|1[0-9]|two|three|four|five|six|seven|eight|nine|"
    r"ten) (?:fiscal )?years\b",
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


@dataclass(frozen=True, slots=True)
class Operand:
    # The exact evidence value and the value the answer shows (same when not in the answer).
    exact: float
    shown: float
    kind: str
    name: str
    period: EvidencePeriod | None
    field_family: int
    period_family: int
    from_answer: bool


def _expanded(words: frozenset[str]) -> frozenset[str]:
    extra = [s for w in words for s in _SYNONYMS.get(w, ())]
    return words | frozenset(extra)


def _named(field: str, words: frozenset[str]) -> bool:
    """Whether the sentence names the field: all its distinctive words appear."""
    needed = field_words(field)
    return bool(needed) and needed <= words


def _operand(found: Found, shown: float | None, from_answer: bool) -> Operand:
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
    )


def _paragraph(claim: Claim) -> int:
    return claim.sentence


def derive(
    target: Claim, index: EvidenceIndex, verified: Sequence[tuple[Claim, Match]]
) -> str | None:
    """A readable formula the target follows from, or None."""
    words = _expanded(target.words)
    near = [
        (claim, match) for claim, match in verified if claim is not target and _near(claim, target)
    ]
    stated: list[Operand] = []
    for claim, match in near:
        shown = abs(claim.mantissa) * (1.0 if claim.kind == PERCENT else match.scale)
        stated.append(_operand(match.found, shown, True))
    families: dict[int, list[Found]] = {}
    periods: dict[int, list[Found]] = {}
    for _, match in near:
        families.setdefault(match.found.field_family, [])
        periods.setdefault(match.found.period_family, [])
    # Rows whose field the sentence names.
    for family, members in index.by_field_family.items():
        if family in families:
            continue
        if members and members[0].field and _named(members[0].field, words):
            families[family] = []
    for family in families:
        families[family] = index.by_field_family.get(family, [])
    for family in periods:
        periods[family] = [
            f for f in index.by_period_family.get(family, []) if _named(f.field, words)
        ]
    for result in _search(target, stated, families, periods, words):
        return result
    return None


def _near(claim: Claim, target: Claim) -> bool:
    if target.in_table and claim.in_table:
        return claim.row == target.row or claim.column == target.column
    return abs(claim.sentence - target.sentence) <= 1


def _search(
    target: Claim,
    stated: Sequence[Operand],
    families: dict[int, list[Found]],
    periods: dict[int, list[Found]],
    words: frozenset[str],
) -> Iterator[str]:
    # 1. Figures the answer states next to it.
    for a, b in permutations(stated, 2):
        yield from _pair(target, a, b, across_periods=True, same_period=True)
    # 2. A statement row: the same field across periods.
    for members in families.values():
        ops = [
            _operand(f, None, False) for f in members if f.kind != PERCENT or target.kind == PERCENT
        ]
        for a, b in permutations(ops, 2):
            if a.period_family != b.period_family and not a.exact == 0:
                yield from _pair(target, a, b, across_periods=True, same_period=False)
    # 3. A statement column: one period across fields the sentence names.
    for members in periods.values():
        ops = [_operand(f, None, False) for f in members]
        for a, b in permutations(ops, 2):
            if a.field_family != b.field_family:
                yield from _pair(target, a, b, across_periods=False, same_period=True)
    # 4. A verified figure with a row or column it did not come from.
    for op in stated:
        for members in list(families.values()) + list(periods.values()):
            for f in members:
                other = _operand(f, None, False)
                if (
                    other.field_family == op.field_family
                    and other.period_family == op.period_family
                ):
                    continue
                same_field = other.field_family == op.field_family
                same_period = other.period_family == op.period_family
                if not (same_field or same_period):
                    continue
                yield from _pair(
                    target, op, other, across_periods=same_field, same_period=same_period
                )
                yield from _pair(
                    target, other, op, across_periods=same_field, same_period=same_period
                )


def _pair(
    target: Claim, a: Operand, b: Operand, *, across_periods: bool, same_period: bool
) -> Iterator[str]:
    kind = target.kind
    result_period = _later(a.period, b.period) if across_periods else a.period or b.period
    if target.period is not None and target.period_strength >= 2 and result_period is not None:
        if not compatible(target.period, result_period):
            return
    if kind == PERCENT:
        if a.kind == PERCENT and b.kind == PERCENT:
            # Percentage points between two percents (a margin's change).
            if a.exact >= b.exact and _fits(target, lambda x, y: x - y, a, b, scale_pct=False):
                yield f"{a.name} - {b.name} (percentage points)"
            return
        if a.kind != b.kind and NUMBER not in (a.kind, b.kind):
            return
        if across_periods and _fits(target, lambda x, y: (y - x) / abs(x) * 100, a, b):
            yield f"({b.name} - {a.name}) / {a.name} (growth)"
            return
        if across_periods:
            years = _years_between(a.period, b.period, target)
            for n in years:
                if _fits(target, lambda x, y, n=n: _cagr(x, y, n), a, b):
                    yield f"({b.name} / {a.name})^(1/{n}) - 1 (CAGR over {n} years)"
                    return
        if (same_period or (a.from_answer and b.from_answer)) and abs(a.exact) <= abs(b.exact):
            if _fits(target, lambda x, y: x / y * 100, a, b):
                yield f"{a.name} / {b.name} (ratio, in percent)"
        return
    if kind == MULTIPLE:
        if _fits(target, lambda x, y: x / y, a, b):
            yield f"{a.name} / {b.name} (multiple)"
        return
    # Amounts, per-share values, share counts, bare numbers.
    if a.kind == PERCENT or b.kind == PERCENT:
        return
    if kind == PER_SHARE or kind == NUMBER:
        if b.kind in (SHARES, NUMBER) and a.kind in (MONEY, NUMBER) and same_period:
            if _fits(target, lambda x, y: x / y, a, b):
                yield f"{a.name} / {b.name} (per share)"
                return
    if kind in (MONEY, NUMBER) and a.kind == PER_SHARE and b.kind == SHARES and same_period:
        if _fits(target, lambda x, y: x * y, a, b):
            yield f"{a.name} × {b.name}"
            return
    if not _same_kind(a, b):
        return
    if a.exact >= b.exact and _fits(target, lambda x, y: x - y, a, b):
        yield f"{a.name} - {b.name} (difference)"
        return
    if same_period or (a.from_answer and b.from_answer):
        if _fits(target, lambda x, y: x + y, a, b):
            yield f"{a.name} + {b.name} (sum)"


def _same_kind(a: Operand, b: Operand) -> bool:
    return a.kind == b.kind or NUMBER in (a.kind, b.kind)


def _cagr(start: float, end: float, years: int) -> float:
    if start <= 0 or end <= 0:
        return math.nan
    growth: float = ((end / start) ** (1 / years) - 1) * 100
    return growth


def _years_between(a: EvidencePeriod | None, b: EvidencePeriod | None, target: Claim) -> list[int]:
    said = [
        int(m.group("n") or m.group("m"))
        if (m.group("n") or m.group("m") or "").isdigit()
        else _NUMBER_WORDS[(m.group("n") or m.group("m")).lower()]
        for m in _YEARS_SAID.finditer(target.sentence_text)
    ]
    gaps: list[int] = []
    if a is not None and b is not None:
        ya = _year(a)
        yb = _year(b)
        if ya is not None and yb is not None and abs(yb - ya) >= 2:
            gaps.append(abs(yb - ya))
    return [n for n in dict.fromkeys(said + gaps) if n >= 2]


def _year(period: EvidencePeriod) -> int | None:
    if period.fiscal_years:
        return min(period.fiscal_years) if len(period.fiscal_years) == 1 else None
    return period.end.year if period.end else None


def _later(a: EvidencePeriod | None, b: EvidencePeriod | None) -> EvidencePeriod | None:
    if a is None or b is None:
        return a or b
    ya, yb = _year(a), _year(b)
    if ya is None or yb is None:
        return None
    return a if ya > yb else b


def _fits(
    target: Claim,
    op: object,
    a: Operand,
    b: Operand,
    *,
    scale_pct: bool = True,
) -> bool:
    """Whether op(a, b), from exact or from shown values, rounds to the target as displayed."""
    assert callable(op)
    for x, y in ((a.exact, b.exact), (a.shown, b.shown)):
        try:
            value = op(abs(x), abs(y)) if scale_pct else op(x, y)
        except (ZeroDivisionError, OverflowError, ValueError):
            continue
        if not isinstance(value, float) or math.isnan(value):
            continue
        for scale in target.scales:
            low, high = window(target, scale)
            size = abs(value)
            slack = max(high, 1.0) * _EPSILON
            if low - slack <= size <= high + slack:
                return True
    return False
