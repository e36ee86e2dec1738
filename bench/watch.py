"""Watching 500 companies: requests per poll cycle, 304s, peak requests in any one second, and
the time from a new filing appearing to its alert being queued, against a local server.

The server (tests/support/sec_mirror.py's MirrorServer, which answers ETag'd 304s) serves a
ticker table of N synthetic tickers and, for each, NVIDIA's recorded submissions file trimmed
to its 40 newest rows under that ticker's CIK (trimmed so 500 copies fit in memory). Cycle 1
notes where each history stands (full bodies); cycle 2 finds nothing changed (304s); then one
company files an 8-K and cycle 3 detects it. The client runs at SEC's limit (10 requests a
second) unless --rate says otherwise, so a 500-company cycle takes about 50 s.
Prints the figures; asserts nothing.
Run: DEXTER_FIXTURES=/work/shared/fixtures uv run python bench/watch.py [--tickers 500]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.sec_mirror import Mirror, MirrorServer
from tests.support.watch_filings import advanced, eight_k_row, recorded_submissions

from dexter.data.sec.provider import SecEdgarProvider
from dexter.data.settings import DataSettings
from dexter.store.db import open_store
from dexter.watch.poller import Poller
from dexter.watch.store import WatchStore

ROWS = 40


class Stamping(httpx2.AsyncBaseTransport):
    """Notes when each request leaves the client (after the limiter let it go)."""

    def __init__(self) -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.sent: list[float] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.sent.append(time.perf_counter())
        return await self.inner.handle_async_request(request)


def peak_per_second(stamps: list[float]) -> int:
    best, start = 0, 0
    for end, moment in enumerate(stamps):
        while moment - stamps[start] >= 1.0:
            start += 1
        best = max(best, end - start + 1)
    return best


def synthetic(count: int) -> tuple[Mirror, dict[str, Any], list[str]]:
    base = recorded_submissions()
    recent = {k: v[:ROWS] for k, v in base["filings"]["recent"].items()}
    base = {**base, "filings": {"recent": recent, "files": []}}
    mirror = Mirror()
    table: dict[str, Any] = {}
    tickers = []
    for n in range(count):
        cik = 9_000_000 + n
        ticker = f"W{n:04d}"
        tickers.append(ticker)
        table[str(n)] = {"cik_str": cik, "ticker": ticker, "title": f"Watched Co {n}"}
        body = json.dumps({**base, "cik": str(cik), "tickers": [ticker]}).encode()
        mirror.extra[f"data.sec.gov/submissions/CIK{cik:010d}.json"] = body
    mirror.extra["www.sec.gov/files/company_tickers.json"] = json.dumps(table).encode()
    return mirror, base, tickers


async def cycle(poller: Poller, sec: SecEdgarProvider, stamps: Stamping, mirror: Mirror) -> None:
    stamps.sent.clear()
    before_304 = len(mirror.not_modified)
    started = time.perf_counter()
    report = await poller.poll("bench")
    took = time.perf_counter() - started
    print(
        f"  {report.requests} requests ({len(mirror.not_modified) - before_304} answered 304), "
        f"peak {peak_per_second(stamps.sent)} in any 1 s, {took:.1f} s, "
        f"{report.detected} new filing(s), {len(report.alerts)} alert(s)"
        + (f", {len(report.errors)} errors" if report.errors else "")
    )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tickers", type=int, default=500)
    parser.add_argument("--rate", type=float, default=10.0, help="requests a second (SEC: 10)")
    args = parser.parse_args()
    mirror, base, tickers = synthetic(args.tickers)
    with MirrorServer(mirror) as server, tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        stamps = Stamping()
        settings = DataSettings(
            cache_dir=home / "cache",
            sec_user_agent="Dexter Bench bench@example.com",
            sec_data_url=f"{server.url}/data.sec.gov",
            sec_www_url=f"{server.url}/www.sec.gov",
            sec_rate=args.rate,
        )
        sec = SecEdgarProvider(settings, transport=stamps)
        with open_store(home) as store:
            watches = WatchStore(store)
            now = datetime.now(UTC)
            watches.add(
                owner="operator", tickers=tickers, forms=["8-K"], items=[], target="outbox", now=now
            )
            poller = Poller(watches, sec, now=lambda: datetime.now(UTC))
            print(f"{args.tickers} companies, one watch, client limit {args.rate:g} requests/s")
            await sec.company(tickers[0])  # the ticker table: one request, cached for the day
            print("cycle 1 (first poll: full bodies, cursors set):")
            await cycle(poller, sec, stamps, mirror)
            print("cycle 2 (nothing filed):")
            await cycle(poller, sec, stamps, mirror)
            chosen = args.tickers // 2
            cik = 9_000_000 + chosen
            filed = eight_k_row("0009000000-26-000001", "8.01")
            mirror.extra[f"data.sec.gov/submissions/CIK{cik:010d}.json"] = advanced(
                {**base, "cik": str(cik), "tickers": [tickers[chosen]]}, filed
            )
            print(f"cycle 3 ({tickers[chosen]} filed an 8-K):")
            await cycle(poller, sec, stamps, mirror)
            print(
                "time to detect = the wait for the next poll (every 5 min) + the cycle above; "
                "at 10 requests/s a cycle costs one request per company"
            )
        await sec.aclose()


if __name__ == "__main__":
    asyncio.run(main())
