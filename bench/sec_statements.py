"""Apple's statements from its 3.7 MB companyfacts JSON: cold and with the in-process index.

Prints the figures; asserts nothing.
Run: uv run python bench/sec_statements.py
Fixtures: $DEXTER_FIXTURES, else ../shared/fixtures next to the repository (as the tests).
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dexter.data.sec.concepts import Statement
from dexter.data.sec.facts import clear_index_cache, index_facts, statements_from_facts

RUNS = 15
STATEMENTS: tuple[Statement, ...] = ("income", "balance", "cashflow")
RELATIVE = "sec-mirror/data.sec.gov/api/xbrl/companyfacts/CIK0000320193.json"


def fixture() -> Path | None:
    configured = os.environ.get("DEXTER_FIXTURES")
    root = (
        Path(configured)
        if configured
        else Path(__file__).resolve().parents[1].parent / "shared" / "fixtures"
    )
    path = root / RELATIVE
    return path if path.is_file() else None


def three_annual_statements(facts: Any) -> None:
    for statement in STATEMENTS:
        statements_from_facts(facts, ticker="AAPL", statement=statement, period="annual", limit=4)


def timed(action: Callable[[], object]) -> list[float]:
    action()  # warm imports and the OS file cache
    samples = []
    for _ in range(RUNS):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return samples


def show(label: str, samples: list[float], baseline: float | None = None) -> float:
    median = statistics.median(samples)
    ratio = f"  ({median / baseline:.2f}x cold)" if baseline else ""
    print(f"{label:<44} median {median * 1000:8.2f} ms, min {min(samples) * 1000:8.2f} ms{ratio}")
    return median


def main() -> None:
    path = fixture()
    if path is None:
        print(
            f"Apple companyfacts not found ({RELATIVE}); set DEXTER_FIXTURES or run "
            "`uv run python scripts/fetch_fixtures.py`."
        )
        return
    raw = path.read_bytes()
    facts = json.loads(raw)
    print(f"{path.name}: {len(raw) / 1e6:.1f} MB, {RUNS} runs each")

    show("json.loads", timed(lambda: json.loads(raw)))

    def index_cold() -> None:
        clear_index_cache()
        index_facts(facts)

    show("index build (one pass over every fact)", timed(index_cold))

    def statements_cold() -> None:
        clear_index_cache()
        three_annual_statements(facts)

    cold = show("3 annual statements, cold (index + build)", timed(statements_cold))

    def end_to_end_cold() -> None:
        clear_index_cache()
        three_annual_statements(json.loads(raw))

    show("json.loads + 3 annual statements, cold", timed(end_to_end_cold))

    three_annual_statements(facts)
    show("3 annual statements, cached index", timed(lambda: three_annual_statements(facts)), cold)

    def quarterly_ttm() -> None:
        for statement in STATEMENTS:
            statements_from_facts(facts, ticker="AAPL", statement=statement, period="quarterly")
            statements_from_facts(facts, ticker="AAPL", statement=statement, period="ttm")

    show("quarterly + TTM (all 3), cached index", timed(quarterly_ttm), cold)


if __name__ == "__main__":
    main()
