"""Meta-tool overhead for a 4-call request: everything but model latency.

A zero-latency scripted router model plans four data calls (income statements for Apple and
NVIDIA, Apple's balance sheet, NVIDIA's cash flow); they run against the SEC provider over the
recorded mirror with a warm in-process cache, so the figure is planning + validation + parallel
execution + formatting + merging. Prints figures; asserts nothing.
Run: uv run python bench/router_overhead.py
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RUNS = 30
PLAN = (
    ("income_statements", {"company": "Apple", "period": "annual", "limit": 4}),
    ("income_statements", {"company": "nvidia corp", "period": "annual", "limit": 4}),
    ("balance_sheets", {"company": "AAPL", "period": "quarterly", "limit": 4}),
    ("cash_flow_statements", {"company": "NVDA", "period": "annual", "limit": 4}),
)


async def main() -> None:
    from tests.support.sec_mirror import Mirror, mirror_transport

    from dexter.data.router import DataRouter
    from dexter.data.sec.provider import SecEdgarProvider
    from dexter.data.settings import DataSettings
    from dexter.models.scripted import ScriptedModel, calls
    from dexter.tools.base import ToolContext
    from dexter.tools.finance.datacalls import available_data_calls
    from dexter.tools.finance.routed import GetFinancials, RoutedArgs

    with tempfile.TemporaryDirectory() as cache:
        settings = DataSettings(cache_dir=Path(cache), sec_user_agent="Bench bench@example.com")
        router = DataRouter([SecEdgarProvider(settings, transport=mirror_transport(Mirror()))])
        model = ScriptedModel([calls(*PLAN) for _ in range(RUNS + 1)], chunk_size=100_000)
        meta = GetFinancials(available_data_calls(router), lambda: model)
        args = RoutedArgs(query="Apple and NVIDIA fundamentals")
        started = time.perf_counter()
        await meta.run(args, ToolContext())  # cold: fetch + parse companyfacts
        cold = time.perf_counter() - started
        samples = []
        for _ in range(RUNS):
            started = time.perf_counter()
            result = await meta.run(args, ToolContext())
            samples.append((time.perf_counter() - started) * 1000)
        await router.aclose()
    print(f"cold (mirror fetch + parse of two companyfacts): {cold * 1000:.0f} ms")
    print(
        f"router overhead, 4 data calls, warm: median {statistics.median(samples):.1f} ms, "
        f"min {min(samples):.1f} ms over {RUNS} runs ({len(result.content):,} chars merged)"
    )


if __name__ == "__main__":
    os.environ.setdefault("DEXTER_FIXTURES", str(ROOT.parent / "shared" / "fixtures"))
    if Path(os.environ["DEXTER_FIXTURES"]).is_dir():
        asyncio.run(main())
    else:
        print("fixtures not found; run scripts/fetch_fixtures.py and set DEXTER_FIXTURES")
