"""Requests per second through `HttpClient` against a local server, limiter at 10 req/s vs none.

60 concurrent GETs go to a threaded HTTP server on 127.0.0.1. The limiter is a sliding window
(at most 10 starts in any one second), so the first ten start at once and the run takes ~5 s;
the figure that must never exceed 10 is the peak count in any one-second window. Also shown: the
sustained rate after the opening burst, and the plain average (above 10 because of that burst).
Prints the figures; asserts nothing.
Run: uv run python bench/http_rate.py
"""

from __future__ import annotations

import asyncio
import sys
import time
from http.server import ThreadingHTTPServer
from pathlib import Path

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.wire_server import WireServer, json_reply

from dexter.data.http import HttpClient

COUNT = 60
RATE = 10


class RecordingTransport(httpx2.AsyncBaseTransport):
    """Notes when each request leaves the client (after the limiter released it)."""

    def __init__(self) -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.sent: list[float] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.sent.append(time.perf_counter())
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def peak_in_window(times: list[float], window: float = 1.0) -> int:
    ordered = sorted(times)
    best, left = 0, 0
    for right, t in enumerate(ordered):
        while t - ordered[left] >= window:
            left += 1
        best = max(best, right - left + 1)
    return best


async def run(server: WireServer, rate: float | None) -> None:
    server.push(*(json_reply({"n": i}) for i in range(COUNT)))
    transport = RecordingTransport()
    client = HttpClient("local", rate_per_second=rate, transport=transport)
    started = time.perf_counter()
    try:
        await asyncio.gather(*(client.get_json(f"{server.url}/r/{i}") for i in range(COUNT)))
    finally:
        await client.aclose()
    elapsed = time.perf_counter() - started
    sent = sorted(transport.sent)
    span = sent[-1] - sent[0]
    label = f"limiter {rate:g}/s" if rate else "no limiter"
    print(f"{label}: {COUNT} GETs in {elapsed:.3f} s")
    print(f"  peak starts in any 1 s window: {peak_in_window(sent)}")
    if rate:
        burst = int(rate)
        sustained = (COUNT - burst) / (sent[-1] - sent[0]) if span > 0 else float("inf")
        print(f"  sustained after the opening burst of {burst}: {sustained:.2f} req/s")
    print(f"  average: {COUNT / elapsed:.1f} req/s")


async def main() -> None:
    # The stdlib's listen backlog of 5 drops most of a 60-connection burst (the kernel retries
    # a second later), which would make the no-limiter reference measure the backlog instead.
    ThreadingHTTPServer.request_queue_size = 128
    server = WireServer().start()
    try:
        await run(server, RATE)
        await run(server, None)
    finally:
        server.stop()


if __name__ == "__main__":
    asyncio.run(main())
