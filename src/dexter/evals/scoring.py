"""Scores with 95% intervals: bootstrap for mean rubric scores, Wilson for exact-pass rates.

Two means are always reported, labelled: over all questions with failures (agent error,
timeout, judge failure) counted as 0, and over the scored questions only. The first is the
honest headline; the second says how good answers were when the run worked.

With several epochs a question's score is its mean over the epochs, and intervals resample
questions (the epochs of one question are not independent draws); the spread of the epochs'
own means is reported as run-to-run variance. Two runs are compared on the questions both ran,
by a paired bootstrap of the per-question differences.
"""

from __future__ import annotations

import math
import random
import statistics
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
    exact: float  # questions scoring 1.0 (with epochs: summed share of epochs that did)
    exact_rate_ci: Interval
    contradictions: int
    epochs: int = 1
    # Each epoch's mean over all questions (failures as 0), and their sample standard deviation.
    epoch_means: tuple[float, ...] = ()
    epoch_sd: float | None = None


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


def summarise_epochs(
    per_question: Sequence[Sequence[float | None]], contradictions: int = 0
) -> Summary:
    """`per_question`: each question's scores, one per epoch in epoch order (None: failed)."""
    epochs = max((len(scores) for scores in per_question), default=1)
    if epochs <= 1:
        return summarise([scores[0] if scores else None for scores in per_question], contradictions)
    n = len(per_question)
    all_means = [sum(s or 0.0 for s in scores) / len(scores) for scores in per_question]
    scored_means = [
        sum(ok) / len(ok) for scores in per_question if (ok := [s for s in scores if s is not None])
    ]
    exact_shares = [
        sum(1 for s in scores if s is not None and s >= 1.0) / len(scores)
        for scores in per_question
    ]
    failures = sum(1 for scores in per_question for s in scores if s is None)
    epoch_means = tuple(
        sum((scores[e] or 0.0) if e < len(scores) else 0.0 for scores in per_question) / n
        for e in range(epochs)
    )
    return Summary(
        questions=n,
        scored=sum(1 for scores in per_question for s in scores if s is not None),
        failures=failures,
        mean_all=sum(all_means) / n if n else 0.0,
        mean_all_ci=bootstrap_mean(all_means),
        mean_scored=sum(scored_means) / len(scored_means) if scored_means else None,
        mean_scored_ci=bootstrap_mean(scored_means) if scored_means else None,
        exact=sum(exact_shares),
        exact_rate_ci=bootstrap_mean(exact_shares),
        contradictions=contradictions,
        epochs=epochs,
        epoch_means=epoch_means,
        epoch_sd=statistics.stdev(epoch_means) if len(epoch_means) > 1 else None,
    )


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


@dataclass(frozen=True, slots=True)
class Comparison:
    """Run A against run B on the questions both ran (each question's score: its mean over
    the run's epochs, failures as 0)."""

    shared: int
    only_a: int
    only_b: int
    mean_a: float
    mean_b: float
    difference: float  # mean of A - B
    difference_ci: Interval
    a_better: int
    b_better: int
    ties: int
    # Share of bootstrap resamples in which A's mean is not above B's: small means A's lead is
    # unlikely to be resampling luck.
    share_not_better: float


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> tuple[Interval, float]:
    """95% percentile interval of mean(a - b), resampling questions (pairs stay together), and
    the share of resamples whose mean difference is <= 0. Seeded: the same runs always compare
    the same way."""
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    if not diffs:
        return Interval(0.0, 0.0), 1.0
    if len(set(diffs)) == 1:
        return Interval(diffs[0], diffs[0]), 1.0 if diffs[0] <= 0 else 0.0
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(sum(rng.choices(diffs, k=n)) / n for _ in range(resamples))
    not_better = sum(1 for m in means if m <= 0) / resamples
    return Interval(means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1]), not_better


def compare_scores(a: dict[str, float], b: dict[str, float]) -> Comparison:
    """`a`, `b`: question key -> score. Only keys in both are compared."""
    shared = [key for key in a if key in b]
    xs, ys = [a[k] for k in shared], [b[k] for k in shared]
    ci, not_better = paired_bootstrap(xs, ys)
    n = len(shared)
    return Comparison(
        shared=n,
        only_a=len(a) - n,
        only_b=len(b) - n,
        mean_a=sum(xs) / n if n else 0.0,
        mean_b=sum(ys) / n if n else 0.0,
        difference=(sum(xs) - sum(ys)) / n if n else 0.0,
        difference_ci=ci,
        a_better=sum(1 for x, y in zip(xs, ys, strict=True) if x > y),
        b_better=sum(1 for x, y in zip(xs, ys, strict=True) if x < y),
        ties=sum(1 for x, y in zip(xs, ys, strict=True) if x == y),
        share_not_better=not_better,
    )
