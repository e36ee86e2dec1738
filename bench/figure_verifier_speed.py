"""Time the figure verifier on a typical answer over a run's worth of real tool results.

A typical research run reads about ten tool results, some of them long (a 10-K section of up to
30 KB), and answers with about fifteen figures. The evidence here is produced offline by
Dexter's own data calls and formatters over the recorded fixtures (as the figure answer set
does, tests/support/figure_set.py); only `verify_answer` is timed, wall clock and CPU, so a busy
machine shows in the gap between the two. Prints figures; asserts nothing.
Run: uv run python bench/figure_verifier_speed.py [--repeat N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CALLS = [
    ("income_statements", {"company": "AAPL", "period": "annual", "limit": 5}),
    ("income_statements", {"company": "AAPL", "period": "quarterly", "limit": 5}),
    ("income_statements", {"company": "AAPL", "period": "ttm", "limit": 2}),
    ("balance_sheets", {"company": "AAPL", "period": "annual", "limit": 3}),
    ("cash_flow_statements", {"company": "AAPL", "period": "annual", "limit": 3}),
    ("financial_metrics", {"company": "AAPL", "period": "annual", "limit": 3}),
    (
        "xbrl_facts",
        {
            "company": "AAPL",
            "concept": "RevenueFromContractWithCustomerExcludingAssessedTax",
            "limit": 20,
        },
    ),
    (
        "filing_section",
        {"company": "AAPL", "form": "10-K", "item": "7", "year": 2024, "max_chars": 30000},
    ),
    (
        "filing_section",
        {"company": "AAPL", "form": "10-K", "item": "5", "year": 2024, "max_chars": 12000},
    ),
    (
        "filing_section",
        {"company": "AAPL", "form": "10-K", "item": "1A", "year": 2024, "max_chars": 30000},
    ),
    ("calculate", {"operation": "percent_change", "start": "391035000000", "end": "416161000000"}),
]
QUESTION = "How did Apple do in fiscal 2025, and how do its margins and cash returns compare?"
ANSWER = """Apple's FY2025 revenue rose 6.4% to $416.2 billion from $391.0 billion in FY2024 [S1].
Gross profit was $195.2 billion, a 46.9% gross margin, up from 46.2%, and operating income
reached $133.1 billion (32.0% of revenue). Net income was $112.0 billion, or $7.46 per diluted
share, up 22.7% from $6.08.

| Metric (USD millions) | FY2025 | FY2024 |
|---|---|---|
| Revenue | 416,161 | 391,035 |
| Net income | 112,010 | 93,736 |
| Free cash flow | 98,767 | 108,807 |

Free cash flow fell 9.2% to $98.8 billion; Apple returned $106.1 billion through buybacks of
$90.7 billion and dividends of $15.4 billion. In the December 2025 quarter revenue was $143.8
billion. In fiscal 2024 the effective tax rate was 24.1%, and Services net sales were $96.2
billion.
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50, help="timed runs")
    options = parser.parse_args()
    os.environ.setdefault("DEXTER_FIXTURES", str(ROOT.parent / "shared" / "fixtures"))
    fixtures = Path(os.environ["DEXTER_FIXTURES"])
    if not (fixtures / "sec-mirror").is_dir():
        print("fixtures not found; run scripts/fetch_fixtures.py and set DEXTER_FIXTURES")
        return

    from tests.support.figure_set import QUESTION_LABEL, Call, EvidenceMaker

    from dexter.figures import Evidence, verify_answer

    async def produce() -> list[Evidence]:
        with tempfile.TemporaryDirectory(prefix="dexter-figures-speed-") as cache:
            maker = EvidenceMaker(fixtures, Path(cache))
            try:
                return [await maker.call(Call(name, args)) for name, args in CALLS]
            finally:
                await maker.aclose()

    evidence = [*asyncio.run(produce()), Evidence(QUESTION_LABEL, QUESTION)]
    sizes = sorted(len(e.text) for e in evidence)
    first = verify_answer(ANSWER, evidence)
    summary = first.summary()
    for figure in first.unsupported:
        print(f"unsupported: {figure.text!r} {figure.source or ''}")

    # Row labels and column headers are read through small caches: clear them before each
    # run, so every run reads the evidence as new (the first answer of a run).
    from dexter.figures import evidence as evidence_module
    from dexter.figures import periods as periods_module

    caches = [
        evidence_module._unit_flags,
        evidence_module.declared_scale,
        evidence_module._span_words,
        periods_module.header_period,
    ]
    walls: list[float] = []
    cpus: list[float] = []
    for _ in range(max(1, options.repeat)):
        for cache in caches:
            cache.cache_clear()
        wall, cpu = time.perf_counter(), time.process_time()
        verify_answer(ANSWER, evidence)
        cpus.append((time.process_time() - cpu) * 1000)
        walls.append((time.perf_counter() - wall) * 1000)

    print(
        f"evidence: {len(evidence)} pieces, {sum(sizes) / 1000:.1f} KB in all, "
        f"largest {sizes[-1] / 1000:.1f} KB"
    )
    print(
        f"answer: {summary['checked']} figures ({summary['verified']} verified, "
        f"{summary['derived']} derived, {summary['unsupported']} unsupported)"
    )
    print(
        f"verify_answer: median {statistics.median(walls):.2f} ms wall, "
        f"{statistics.median(cpus):.2f} ms CPU; min {min(walls):.2f} ms wall "
        f"(n={len(walls)})"
    )


if __name__ == "__main__":
    main()
