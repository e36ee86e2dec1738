"""The judge-free finance unit set: how long the whole set takes, and which areas cost most.

Prints wall and CPU seconds for loading the cases and running them all (as the pytest run does:
one checker, each companyfacts file parsed once), then CPU seconds per area. Asserts nothing;
failing cases are counted, not explained (`dexter eval finance-units -v` does that).
Run: uv run python bench/finance_units.py
Fixtures: $DEXTER_FIXTURES, else ../shared/fixtures next to the repository (as the tests).
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections import Counter
from pathlib import Path

from dexter.evals.units import FixturesMissing, find_fixtures, load_cases
from dexter.evals.units.checks import Checker


async def run(fixtures: Path) -> None:
    wall, cpu = time.perf_counter(), time.process_time()
    cases = load_cases()
    print(f"load {len(cases)} cases: {time.perf_counter() - wall:.3f} s wall")
    per_area: Counter[str] = Counter()
    failed = 0
    with tempfile.TemporaryDirectory(prefix="dexter-units-bench-") as cache:
        checker = Checker(fixtures, Path(cache))
        try:
            for case in cases:
                started = time.process_time()
                result = await checker.check(case)
                per_area[case.area] += time.process_time() - started
                failed += not result.ok
        finally:
            await checker.aclose()
    print(
        f"all cases: {time.perf_counter() - wall:.2f} s wall, "
        f"{time.process_time() - cpu:.2f} s CPU, {failed} failed"
    )
    counts = Counter(case.area for case in cases)
    for area, seconds in per_area.most_common():
        print(f"  {area:18} {counts[area]:5} cases {seconds:6.3f} s CPU")


def main() -> None:
    try:
        fixtures = find_fixtures()
    except FixturesMissing as missing:
        print(missing)
        return
    asyncio.run(run(fixtures))


if __name__ == "__main__":
    main()
