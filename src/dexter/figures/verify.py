"""verify_answer: every figure of an answer, verified, derived or unsupported.

Pure and synchronous: the evidence is read and indexed once per call, each figure is one window
query against that index, and derivations only pair operands that belong together (see
`derive`), so an answer of a dozen figures over a run's tool results takes milliseconds.
"""

from __future__ import annotations

from collections.abc import Sequence

from dexter.figures.derive import derive
from dexter.figures.evidence import EvidenceIndex
from dexter.figures.extract import Claim, extract
from dexter.figures.match import (
    DirectResult,
    Match,
    describe,
    describe_other_period,
    match_direct,
)
from dexter.figures.types import Evidence, Figure, FigureStatus, Verification


def verify_answer(answer: str, evidence: Sequence[Evidence]) -> Verification:
    """Check each figure the answer states against what the run's tools returned."""
    claims = extract(answer)
    if not claims:
        return Verification(())
    index = EvidenceIndex(evidence)
    direct = [match_direct(claim, index) for claim in claims]
    verified = [
        (claim, result.match)
        for claim, result in zip(claims, direct, strict=True)
        if result.match is not None
    ]
    figures = [
        _figure(claim, result, index, verified)
        for claim, result in zip(claims, direct, strict=True)
    ]
    return Verification(tuple(figures))


def _figure(
    claim: Claim,
    result: DirectResult,
    index: EvidenceIndex,
    verified: Sequence[tuple[Claim, Match]],
) -> Figure:
    status: FigureStatus
    source = formula = None
    if result.match is not None:
        status, source = "verified", describe(result.match.found, index)
    elif (formula := derive(claim, index, verified)) is not None:
        status = "derived"
    else:
        status = "unsupported"
        if result.other_period:
            source = describe_other_period(result.other_period, index, claim)
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
