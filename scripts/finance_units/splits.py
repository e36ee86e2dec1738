"""Check the declared stock splits against the share counts the filer filed.

The splits come from the public record (see `build_finance_units.FILERS`); the data must agree:
every share count filed again later at a different size must differ by exactly the product of
the splits that took effect between the two filings, and every declared split must show in at
least one such pair. A table that misses a split, or names one the data does not show, stops
the generator.
"""

from __future__ import annotations

from itertools import pairwise

from finance_units.raw import Fact, Filer, Split

EVIDENCE_CONCEPTS = (
    "WeightedAverageNumberOfSharesOutstandingBasic",
    "WeightedAverageNumberOfDilutedSharesOutstanding",
    "CommonStockSharesOutstanding",
)
# Later filings round share counts differently (thousands, millions), restate them slightly, or
# fix a count first tagged in thousands; none of those is a split.
ROUNDING = 0.02
SCALE_ERRORS = (1000.0, 0.001)


def verify_splits(filer: Filer) -> dict[Split, int]:
    """How many re-filed share counts show each split; raises when the data disagree."""
    shown = dict.fromkeys(filer.splits, 0)
    problems: list[str] = []
    for concept in EVIDENCE_CONCEPTS:
        by_period: dict[tuple[str | None, str], list[Fact]] = {}
        for fact in filer.facts(concept, "shares"):
            by_period.setdefault((fact.start, fact.end), []).append(fact)
        for facts in by_period.values():
            ordered = sorted(facts, key=lambda f: (f.filed, f.accn))
            for older, newer in pairwise(ordered):
                if older.filed == newer.filed or older.val <= 0 or newer.val <= 0:
                    continue
                between = [s for s in filer.splits if older.filed < s.effective <= newer.filed]
                expected = 1
                for split in between:
                    expected *= split.ratio
                ratio = newer.val / older.val
                if any(abs(ratio / (expected * e) - 1) < ROUNDING for e in SCALE_ERRORS):
                    continue
                if abs(ratio / expected - 1) > ROUNDING:
                    problems.append(
                        f"{concept} {older.start}..{older.end}: {older.val:,} ({older.filed}) "
                        f"then {newer.val:,} ({newer.filed}), ratio {ratio:.4f}, splits "
                        f"between them give {expected}"
                    )
                    continue
                for split in between:
                    shown[split] += 1
    missing = [s for s, count in shown.items() if count == 0]
    if problems or missing:
        raise AssertionError(
            f"{filer.ticker}: the declared splits do not match the filed share counts:\n"
            + "\n".join(problems[:20])
            + (f"\nnever seen in the data: {missing}" if missing else "")
        )
    return shown
