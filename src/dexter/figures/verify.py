"""verify_answer: every figure of an answer, verified, derived or unsupported.

Pure and synchronous: the evidence is read and indexed once per call, each figure is one window
query against that index, and derivations only pair operands that belong together (see
`derive`), so an answer of a dozen figures over a run's tool results takes milliseconds.
"""

from __future__ import annotations

from collections.abc import Sequence

from dexter.figures.derive import Derived, Deriver, Operand
from dexter.figures.evidence import NUMBER, PERCENT, EvidenceIndex, Sieve, company_names
from dexter.figures.extract import Claim, extract, paragraph_starts
from dexter.figures.match import (
    DirectResult,
    Match,
    describe,
    describe_other_company,
    describe_other_field,
    describe_other_period,
    match_direct,
    window,
)
from dexter.figures.types import Evidence, Figure, FigureStatus, Verification


def verify_answer(answer: str, evidence: Sequence[Evidence]) -> Verification:
    """Check each figure the answer states against what the run's tools returned."""
    claims = extract(answer, company_names(evidence))
    if not claims:
        return Verification(())
    sieve = Sieve(window(claim, scale) for claim in claims for scale in claim.scales)
    index = EvidenceIndex(evidence, sieve)
    direct = [match_direct(claim, index) for claim in claims]
    deriver = Deriver(index, paragraph_starts(answer))
    for claim, result in zip(claims, direct, strict=True):
        if result.match is not None:
            deriver.add(claim, _stated(claim, result.match))
    derived: dict[int, Derived] = {}
    # Two rounds: a figure derived in the first may be an operand of another in the second
    # ("gross margin 46.9%, up 70 basis points").
    for _ in range(2):
        progress = False
        for i, (claim, result) in enumerate(zip(claims, direct, strict=True)):
            if result.match is not None or i in derived:
                continue
            found = deriver.derive(claim)
            if found is not None:
                derived[i] = found
                deriver.add(claim, _derived_operand(claim, found))
                progress = True
        if not progress:
            break
    figures = [
        _figure(claim, result, derived.get(i), index)
        for i, (claim, result) in enumerate(zip(claims, direct, strict=True))
    ]
    return Verification(tuple(figures))


def _shown(claim: Claim, scale: float) -> float:
    """The value as the answer shows it, with the sign it writes ("-7%", "(355.3)")."""
    return claim.mantissa * (1.0 if claim.kind == PERCENT else scale)


def _stated(claim: Claim, match: Match) -> Operand:
    found = match.found
    operand = Operand(
        exact=found.value,
        shown=_shown(claim, match.scale),
        kind=found.kind if found.kind != NUMBER else claim.kind,
        name=claim.text,
        period=found.period,
        field_family=found.field_family,
        period_family=found.period_family,
        from_answer=True,
    )
    return operand


def _derived_operand(claim: Claim, derived: Derived) -> Operand:
    return Operand(
        exact=derived.value,
        shown=_shown(claim, claim.scales[0]),
        kind=claim.kind,
        name=claim.text,
        period=derived.period,
        field_family=derived.field_family,
        period_family=derived.period_family,
        from_answer=True,
    )


def _figure(
    claim: Claim, result: DirectResult, derived: Derived | None, index: EvidenceIndex
) -> Figure:
    status: FigureStatus
    source = formula = None
    if result.match is not None:
        status, source = "verified", describe(result.match.found, index)
    elif derived is not None:
        status, formula = "derived", derived.formula
    else:
        status = "unsupported"
        if result.other_period:
            source = describe_other_period(result.other_period, index, claim)
        elif result.other_company:
            source = describe_other_company(result.other_company, index, claim)
        elif result.other_field:
            source = describe_other_field(result.other_field, index)
    return Figure(
        text=claim.text,
        value=claim.value,
        unit=claim.unit,
        status=status,
        source=source,
        formula=formula,
        start=claim.start,
        end=claim.end,
    )
