"""Scores with 95% intervals: bootstrap for mean rubric scores, Wilson for exact-pass rates.

Two means are always reported, labelled: over all questions with failures (agent error,
timeout, judge failure) counted as 0, and over the scored questions only. The first is the
honest headline; the second says how good answers were when the run worked.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054
BOOTSTRAP_RESAMPLES = 2000


@dataclass(frozen=True, slots=True)
class Interval:
    low: float
    high: float


@dataclass(frozen=True, slots=True)
class Summary:
    questions: int
    scored: int
    failures: int
    mean_all: float  # failures count as 0
    mean_all_ci: Interval
    mean_scored: float | None
    mean_scored_ci: Interval | None
    exact: int  # questions scoring 1.0
    exact_rate_ci: Interval
    contradictions: int


def wilson(successes: int, n: int, z: float = Z95) -> Interval:
    if n == 0:
        return Interval(0.0, 1.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return Interval(max(0.0, centre - half), min(1.0, centre + half))


def bootstrap_mean(
    values: Sequence[float], *, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0
) -> Interval:
    """Percentile bootstrap of the mean, seeded so a stored run always shows the same interval."""
    if not values:
        return Interval(0.0, 1.0)
    if len(set(values)) == 1:
        return Interval(values[0], values[0])
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(rng.choices(values, k=n)) / n for _ in range(resamples))
    return Interval(means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1])


def summarise(scores: Sequence[float | None], contradictions: int = 0) -> Summary:
    """`scores`: one per question, None for a failure."""
    all_scores = [s if s is not None else 0.0 for s in scores]
    scored = [s for s in scores if s is not None]
    exact = sum(1 for s in scored if s >= 1.0)
    n = len(scores)
    return Summary(
        questions=n,
        scored=len(scored),
        failures=n - len(scored),
        mean_all=sum(all_scores) / n if n else 0.0,
        mean_all_ci=bootstrap_mean(all_scores),
        mean_scored=sum(scored) / len(scored) if scored else None,
        mean_scored_ci=bootstrap_mean(scored) if scored else None,
        exact=exact,
        exact_rate_ci=wilson(exact, n),
        contradictions=contradictions,
    )
