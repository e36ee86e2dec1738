"""Key-less prices and valuation, measured against local servers (no network).

1. Prices for 50 tickers through `YahooPriceProvider`: uncached at the product's polite rate
   (2 requests/second: what a user waits), uncached with the limiter lifted (Dexter's own cost:
   HTTP to 127.0.0.1, JSON, parsing 252 bars each), and from the disk cache. The 50 symbols are
   served the real recorded MSFT reply (a year of daily bars), one distinct URL each.
2. `dexter data metrics TSLA --on 2012-10-01..2022-09-30 --csv`: Tesla's valuation at 120
   month-ends, a whole process each time, cold (SEC mirror + Yahoo recording over HTTP) and warm
   (disk cache).

Prints figures; asserts nothing. Run: uv run python bench/prices.py
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TICKERS = [f"SYM{i:02d}" for i in range(1, 51)]
WARM_RUNS = 5


async def fetch_all(base_url: str, cache: Path | None, rate: float) -> float:
    from dexter.data.yahoo import YahooPriceProvider

    provider = YahooPriceProvider(base_url=base_url, cache_dir=cache, rate_per_second=rate)
    started = time.perf_counter()
    results = await asyncio.gather(
        *(provider.prices(t, start_date="2021-02-01", end_date="2022-01-31") for t in TICKERS)
    )
    elapsed = time.perf_counter() - started
    await provider.aclose()
    assert all(len(bars) == 252 for bars in results)
    return elapsed


def prices_bench() -> None:
    from tests.support.yahoo_fixtures import SERVED, YahooReplies, YahooServer, body

    msft = json.dumps(body(SERVED["MSFT"])).encode()
    replies = YahooReplies({t: (200, "application/json", msft) for t in TICKERS})
    with YahooServer(replies) as server, tempfile.TemporaryDirectory() as folder:
        polite = asyncio.run(fetch_all(server.url, Path(folder) / "a", 2.0))
        unlimited = asyncio.run(fetch_all(server.url, Path(folder) / "b", 1e6))
        sent = len(replies.requests)
        cached = [asyncio.run(fetch_all(server.url, Path(folder) / "b", 2.0)) for _ in range(5)]
        extra = len(replies.requests) - sent
    print("prices, 50 tickers x 252 daily bars (local server):")
    print(f"  uncached, 2 requests/s (as shipped): {polite:.2f} s")
    print(f"  uncached, limiter lifted (Dexter's own cost): {unlimited * 1000:.0f} ms")
    print(
        f"  cached: median {statistics.median(cached) * 1000:.0f} ms, "
        f"min {min(cached) * 1000:.0f} ms over 5 runs, {extra} requests"
    )


def valuation_bench() -> None:
    from tests.support.sec_mirror import Mirror, MirrorServer
    from tests.support.yahoo_fixtures import YahooServer

    from dexter.data.valuation import month_ends

    days = month_ends(date(2012, 10, 1), date(2022, 9, 30))
    command = [sys.executable, "-m", "dexter", "data", "metrics", "TSLA", "--csv"]
    command += ["--on", "2012-10-01..2022-09-30"]
    with (
        tempfile.TemporaryDirectory() as home,
        MirrorServer(Mirror()) as sec,
        YahooServer() as yahoo,
    ):
        env = {**os.environ, **sec.env(), "DEXTER_HOME": home, "DEXTER_YAHOO_URL": yahoo.url}
        env.pop("FINANCIAL_DATASETS_API_KEY", None)
        env.pop("PYTHONDONTWRITEBYTECODE", None)

        def run() -> tuple[float, int]:
            started = time.perf_counter()
            done = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
            rows = len(done.stdout.strip().splitlines()) - 1
            return time.perf_counter() - started, rows

        cold, rows = run()
        warm = [run()[0] for _ in range(WARM_RUNS)]
    print(f"valuation, Tesla at {len(days)} month-ends, whole process ({rows} rows):")
    print(f"  cold (SEC mirror + Yahoo recording over HTTP): {cold * 1000:.0f} ms")
    print(
        f"  warm (disk cache): median {statistics.median(warm) * 1000:.0f} ms, "
        f"min {min(warm) * 1000:.0f} ms over {WARM_RUNS} runs"
    )


def main() -> None:
    os.environ.setdefault("DEXTER_FIXTURES", str(ROOT.parent / "shared" / "fixtures"))
    if not (Path(os.environ["DEXTER_FIXTURES"]) / "prices" / "yahoo").is_dir():
        print("fixtures not found; run scripts/fetch_fixtures.py and set DEXTER_FIXTURES")
        return
    prices_bench()
    valuation_bench()


if __name__ == "__main__":
    main()
