"""What the team-wide SEC limit costs per request, and what the team cache saves.

1. Overhead: acquire + answered on the shared (Postgres) limiter vs the per-process limiter, with
   a rate high enough that nobody waits, so the figure is the bookkeeping alone (two short
   transactions on a local Postgres, each through a worker thread).
2. Time for 40 requests at the SEC's 10/s with places held until answered, to a local server
   answering after 0, 50 and 200 ms (the in-flight time a place is held for).
Uses the test suite's Postgres (pgserver, or DEXTER_TEST_DATABASE_URL). Prints; asserts nothing.
Run: uv run python bench/sec_shared_limit.py
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.postgres import create_database, drop_database

from dexter.data.http import HttpClient
from dexter.data.ratelimit import RateLimiter
from dexter.data.shared_ratelimit import SharedRateLimiter

ROUNDS = 500


async def overhead(make: Any) -> list[float]:
    """acquire + answered, ten at a time on a fresh limit of 10/s: the SEC's real row counts,
    and nobody waits."""
    samples = []
    for batch in range(ROUNDS // 10):
        limiter = make(f"bench-{batch}")
        if isinstance(limiter, SharedRateLimiter):
            await asyncio.to_thread(limiter._connection)  # connecting is not per request
        for _ in range(10):
            started = time.perf_counter()
            ticket = await limiter.acquire()
            await limiter.answered(ticket)
            samples.append((time.perf_counter() - started) * 1000)
        if isinstance(limiter, SharedRateLimiter):
            await limiter.aclose()
    return samples


def describe(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[int(len(ordered) * 0.95)]
    return f"median {statistics.median(samples):.3f} ms, p95 {p95:.3f} ms"


def slow_server(delay: float) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            time.sleep(delay)
            self.send_response(200)
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


async def elapsed(url: str, delay: float) -> float:
    server = slow_server(delay)
    port = server.server_address[1]
    client = HttpClient("bench", limiter=SharedRateLimiter(url, f"bench-{delay}", 10))
    started = time.perf_counter()
    await asyncio.gather(*(client.get_bytes(f"http://127.0.0.1:{port}/") for _ in range(40)))
    took = time.perf_counter() - started
    await client.aclose()
    server.shutdown()
    return took


async def main() -> None:
    url = create_database()
    try:
        local = await overhead(lambda name: RateLimiter(10))
        shared = await overhead(lambda name: SharedRateLimiter(url, name, 10))
        print(f"per-process limiter, acquire+answered: {describe(local)}")
        print(f"shared (Postgres) limiter, acquire+answered: {describe(shared)}")
        # Ten go at once, then ten per window (1.02 s) after the answers: ~3.1 s at best.
        for delay in (0.0, 0.05, 0.2):
            took = await elapsed(url, delay)
            print(
                f"40 requests at 10/s, server answering after {delay * 1000:.0f} ms: {took:.2f} s"
            )
    finally:
        drop_database(url)


if __name__ == "__main__":
    asyncio.run(main())
