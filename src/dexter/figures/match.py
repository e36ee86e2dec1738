"""Finding a stated figure among the evidence numbers, allowing the rounding both display.

Two written numbers agree when the ranges their last digits allow overlap: "$391.0 billion"
(391.0 +/- 0.05 billion) and a table's "391,035" in USD millions (+/- 0.5 million) do, "$391.3
billion" does not. Signs are compared as magnitudes, because prose states them with words ("a
loss of $2.8 billion", "down 3.4%") that the evidence writes as -2.8e9 and -3.4. A match for a
period the answer clearly does not state is set aside; when every match is such, the figure is
wrong for its period.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from dexter.figures.evidence import PERCENT, EvidenceIndex, Found
from dexter.figures.extract import Claim
from dexter.figures.fields import clause_words, field_words
from dexter.figures.periods import compatible

# Relative slack for binary floating point, far below any display rounding.
_EPSILON = 1e-12


@dataclass(frozen=True, slots=True)
class Match:
    found: Found
    scale: float


@dataclass(frozen=True, slots=True)
class DirectResult:
    match: Match | None
    # Matches set aside because they are for another period, or another company, than the
    # answer states.
    other_period: tuple[Match, ...] = ()
    other_company: tuple[Match, ...] = ()
    other_field: tuple[Match, ...] = ()


def window(claim: Claim, scale: float) -> tuple[float, float]:
    """The magnitudes the claim's display allows at a scale."""
    centre = abs(claim.mantissa) * (1.0 if claim.kind == PERCENT else scale)
    tolerance = claim.tolerance(scale)
    return centre - tolerance, centre + tolerance


def candidates(claim: Claim, index: EvidenceIndex) -> Iterable[Match]:
    for scale in claim.scales:
        low, high = window(claim, scale)
        # Evidence rounding widens the window: look a little wider, then check exactly.
        slack = max(abs(high), 1.0) * _EPSILON
        for found in index.window(low - high * 0.01 - slack, high * 1.01 + slack):
            if found.kind not in claim.kinds or (found.from_ratio and claim.kind != PERCENT):
                continue
            # The two displays agree when the ranges their last digits allow overlap; ranges
            # that only touch are two different roundings ("8.3" against "8.2").
            size = abs(found.value)
            centre, reach = (low + high) / 2, (high - low) / 2 + found.half
            if abs(size - centre) < reach - slack or (reach == 0 and size == centre):
                yield Match(found, scale)


def _rank(claim: Claim, match: Match) -> tuple[int, int, int, float]:
    found = match.found
    relevance = len(field_words(found.field) & claim.words)
    exact_kind = 1 if found.kind == claim.kind else 0
    centre = abs(claim.mantissa) * (1.0 if claim.kind == PERCENT else match.scale)
    error = abs(abs(found.value) - centre) / max(centre, 1e-12)
    return (relevance, exact_kind, 0 if found.from_ratio else 1, -error)


def match_direct(claim: Claim, index: EvidenceIndex) -> DirectResult:
    found = list(candidates(claim, index))
    if not found:
        return DirectResult(None)
    if claim.company is not None:
        # A number of another company's results is not this company's figure.
        theirs = [m for m in found if index.company(m.found) not in (None, claim.company)]
        if theirs:
            found = [m for m in found if m not in theirs]
            if not found:
                return DirectResult(None, other_company=tuple(theirs))
    stated = claim.period
    if stated is not None and claim.period_strength >= 1:
        dated = [m for m in found if m.found.period is not None and m.found.period.known]
        fits = [
            m
            for m in dated
            if m.found.period is not None
            and compatible(
                stated,
                m.found.period,
                index.latest_ends(m.found),
                index.newest_of_its_quarter(m.found),
            )
        ]
        if dated and not fits:
            # Evidence that dates the number says it is another period's; the same number
            # without a date (a calculation's input, the question) is that number again.
            return DirectResult(None, tuple(dated))
        exact = [m for m in dated if m.found.period is not None and m.found.period.end]
        if exact and not [m for m in fits if m in exact]:
            # A table's dated column outweighs a sentence that names several years.
            return DirectResult(None, tuple(exact))
        if fits:
            found = fits + [m for m in found if m not in dated]
    if _coarse(claim):
        named = index.named_families(clause_words(claim.words, claim.sentence_text), claim)
        if named:
            # A figure of one or two digits is easily some other line's: when its clause names
            # lines the evidence has, it must be one of them ("iPad fell 6%" is not Greater
            # China's 6%).
            fitting = [m for m in found if not m.found.field or m.found.field_family in named]
            if not fitting:
                return DirectResult(None, other_field=tuple(found))
            found = fitting
    return DirectResult(max(found, key=lambda m: _rank(claim, m)))


def _coarse(claim: Claim) -> bool:
    digits = f"{abs(claim.mantissa):.{claim.decimals}f}".replace(".", "").lstrip("0")
    return len(digits) <= 2


def describe(found: Found, index: EvidenceIndex) -> str:
    """Where a number was found, for a person: "label: field period = raw"."""
    where = index.label(found)
    if found.section and found.section not in where:
        where = f"{where} › {found.section}"
    parts = [p for p in (found.field, found.period.describe() if found.period else "") if p]
    detail = " ".join(parts)
    return f"{where}: {detail} = {found.raw}" if detail else f"{where}: {found.raw}"


def describe_other_period(matches: Sequence[Match], index: EvidenceIndex, claim: Claim) -> str:
    first = matches[0].found
    stated = claim.period.text if claim.period is not None else "the stated period"
    return f"not for {stated}: found as {describe(first, index)}"


def describe_other_field(matches: Sequence[Match], index: EvidenceIndex) -> str:
    return f"found only as another line: {describe(matches[0].found, index)}"


def describe_other_company(matches: Sequence[Match], index: EvidenceIndex, claim: Claim) -> str:
    first = matches[0].found
    return f"not {claim.company}'s: found as {describe(first, index)}"
