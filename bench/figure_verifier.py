"""The figure verifier over its hand-labelled answer set: accuracy, misses and time per answer.

Each case's evidence is produced first, offline, by Dexter's own data calls and formatters over
the recorded fixtures (tests/support/figure_set.py); only `verify_answer` is timed.
Prints figures; asserts nothing (tests/test_figure_answers.py asserts the thresholds).
Run: uv run python bench/figure_verifier.py [--repeat N] [--all-misses]
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SHOWN_MISSES = 40


def _percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of each answer")
    parser.add_argument("--all-misses", action="store_true", help="list every miss")
    options = parser.parse_args()

    os.environ.setdefault("DEXTER_FIXTURES", str(ROOT.parent / "shared" / "fixtures"))
    if not (Path(os.environ["DEXTER_FIXTURES"]) / "sec-mirror").is_dir():
        print("fixtures not found; run scripts/fetch_fixtures.py and set DEXTER_FIXTURES")
        return
    from tests.support.figure_set import (
        DERIVABLE,
        LABELS,
        RIGHT,
        WRONG_LABELS,
        load_cases,
        prepare_evidence_sync,
        score_case,
        total,
    )

    verify_answer = getattr(importlib.import_module("dexter.figures"), "verify_answer", None)
    if verify_answer is None:
        print("dexter.figures.verify_answer does not exist on this branch yet (see `figures`).")
        return

    cases = load_cases()
    started = time.perf_counter()
    evidence = prepare_evidence_sync(cases, Path(os.environ["DEXTER_FIXTURES"]))
    prepared = time.perf_counter() - started

    scores = []
    latencies: list[float] = []
    failures: list[tuple[str, str]] = []
    for case in cases:
        samples = []
        result: Any = None
        try:
            for _ in range(max(1, options.repeat)):
                t0 = time.perf_counter()
                result = verify_answer(case.answer, evidence[case.id])
                samples.append(time.perf_counter() - t0)
        except Exception as error:  # the bench reports a crashing verifier, it does not stop
            failures.append((case.id, f"{type(error).__name__}: {error}"))
            continue
        latencies.append(statistics.median(samples) * 1000)
        scores.append(score_case(case, result))
    totals = total(scores)

    labels = Counter(s.figure.label for s in totals.scored)
    print(f"cases: {len(cases)} ({len(scores)} verified, {len(failures)} raised)")
    print(f"evidence prepared in {prepared:.2f} s (not timed below)")
    print(f"figures labelled: {sum(labels.values())}")
    for label in LABELS:
        print(f"  {label:<13} {labels[label]:>4}")

    print(f"\nrecall on wrong figures: {totals.recall():.3f} ({len(totals.wrong)} figures)")
    for label in WRONG_LABELS:
        pool = [s for s in totals.wrong if s.figure.label == label]
        caught = sum(1 for s in pool if s.flagged)
        print(f"  {label:<13} {totals.recall(label):.3f} ({caught}/{len(pool)})")
    good = totals.good
    print(
        f"false-alarm rate on right+derivable: {totals.false_alarm_rate():.3f} "
        f"({len(totals.false_alarms)}/{len(good)})"
    )
    for label in (RIGHT, DERIVABLE):
        pool = [s for s in good if s.figure.label == label]
        flagged = sum(1 for s in pool if s.flagged)
        print(f"  {label:<13} {flagged}/{len(pool)} flagged")

    print("\nstatus by label (verified / derived / unsupported / not extracted):")
    for label in LABELS:
        pool = [s for s in totals.scored if s.figure.label == label]
        count = Counter(s.status for s in pool)
        print(
            f"  {label:<13} {count['verified']:>4} / {count['derived']:>4} / "
            f"{count['unsupported']:>4} / {count[None]:>4}"
        )

    print(
        f"\nextraction mismatches: {len(totals.not_extracted)} labelled but not found, "
        f"{len(totals.unlabelled)} found but not labelled"
    )
    for s in totals.not_extracted[: None if options.all_misses else SHOWN_MISSES]:
        print(f"  not found  {s.case.id}: {s.figure.text!r} ({s.figure.label})")
    for u in totals.unlabelled[: None if options.all_misses else SHOWN_MISSES]:
        print(f"  unlabelled {u.case.id}: {u.text!r} -> {u.status}")

    misses = totals.missed + totals.false_alarms
    print(f"\nmisses: {len(totals.missed)} wrong let through, {len(totals.false_alarms)} false")
    for s in misses[: None if options.all_misses else SHOWN_MISSES]:
        kind = "let through" if s.wrong else "false alarm"
        print(
            f"  {kind:<11} {s.case.id}: {s.figure.text!r} ({s.figure.label}) -> "
            f"{s.status or 'not extracted'}" + (f" [{s.detail}]" if s.detail else "")
        )
    if len(misses) > SHOWN_MISSES and not options.all_misses:
        print(f"  … {len(misses) - SHOWN_MISSES} more (--all-misses)")
    for ident, error in failures:
        print(f"  raised      {ident}: {error}")

    if latencies:
        print(
            f"\nlatency per answer: median {statistics.median(latencies):.2f} ms, "
            f"p95 {_percentile(latencies, 0.95):.2f} ms, max {max(latencies):.2f} ms "
            f"(n={len(latencies)}, median of {max(1, options.repeat)} runs each)"
        )


if __name__ == "__main__":
    main()
