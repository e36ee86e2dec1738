"""The rate limiter: never more than `rate` request starts in any one-second window.

The heavy cases run on a virtual clock (no real waiting); one short real-time case sends requests
through `HttpClient` to a local server and checks the start times it actually produced.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Iterator, Sequence
from http.server import ThreadingHTTPServer

import httpx2
import pytest

from dexter.data.http import HttpClient
from dexter.data.ratelimit import WINDOW_MARGIN, RateLimiter
from tests.support.wire_server import WireServer, json_reply, running_server


class VirtualTime:
    """A clock that only moves when someone sleeps on it."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        # Always move forward, even by less than a float can add: a waiter that keeps finding
        # itself a hair early would otherwise spin forever on a frozen clock.
        self.now = max(self.now + max(0.0, seconds), math.nextafter(self.now, math.inf))
        await asyncio.sleep(0)


def most_in_any_window(starts: Sequence[float], window: float = 1.0) -> int:
    """The largest number of starts inside any half-open window [t, t + window)."""
    ordered = sorted(starts)
    best, left = 0, 0
    for right, start in enumerate(ordered):
        while start - ordered[left] >= window:
            left += 1
        best = max(best, right - left + 1)
    return best


async def run_virtual(rate: float, count: int) -> tuple[list[float], VirtualTime]:
    vt = VirtualTime()
    limiter = RateLimiter(rate, clock=vt.clock, sleep=vt.sleep)
    starts: list[float] = []

    async def one() -> None:
        await limiter.acquire()
        starts.append(vt.clock())

    await asyncio.gather(*(one() for _ in range(count)))
    return starts, vt


async def test_ten_per_second_under_a_hundred_concurrent_requests() -> None:
    starts, _ = await run_virtual(10, 100)

    assert len(starts) == 100
    assert most_in_any_window(starts) == 10
    # A sliding window lets ten start at once, then ten more each second (plus the limiter's
    # few-millisecond safety margin): the hundredth starts just after 9.0 s, about the earliest
    # any schedule obeying "at most 10 in any closed one-second window" can manage.
    assert max(starts) == pytest.approx(9 * (1 + WINDOW_MARGIN))
    # No second is wasted either: every whole second sees exactly ten starts.
    per_second = [sum(1 for s in starts if k <= s < k + 1) for k in range(10)]
    assert per_second == [10] * 10


async def test_starts_are_first_come_first_served() -> None:
    vt = VirtualTime()
    limiter = RateLimiter(2, clock=vt.clock, sleep=vt.sleep)
    order: list[int] = []

    async def one(i: int) -> None:
        await limiter.acquire()
        order.append(i)

    await asyncio.gather(*(one(i) for i in range(7)))
    assert order == list(range(7))


@pytest.mark.parametrize("rate", [9.5, 8.5, 2.5, 1.5])
async def test_fractional_rate_never_exceeds_the_rate_in_any_second(rate: float) -> None:
    starts, _ = await run_virtual(rate, 40)
    assert most_in_any_window(starts) <= rate


async def test_rate_below_one_spaces_single_starts() -> None:
    starts, _ = await run_virtual(0.5, 4)
    step = 2.0 + WINDOW_MARGIN
    assert sorted(starts) == pytest.approx([0.0, step, 2 * step, 3 * step])


async def test_sleeps_only_as_long_as_needed() -> None:
    vt = VirtualTime()
    limiter = RateLimiter(2, clock=vt.clock, sleep=vt.sleep)
    await limiter.acquire()
    vt.now = 0.25
    await limiter.acquire()
    vt.now = 0.5
    await limiter.acquire()  # must wait for the first start to leave the window at 1.0
    assert vt.sleeps == [pytest.approx(0.5 + WINDOW_MARGIN)]
    assert vt.now == pytest.approx(1.0 + WINDOW_MARGIN)


@pytest.mark.parametrize("rate", [0, -1])
def test_rate_must_be_positive(rate: float) -> None:
    with pytest.raises(ValueError):
        RateLimiter(rate)


# --- real time, through HttpClient ---------------------------------------------------------------


class TimedRequests(list):  # type: ignore[type-arg]
    """Stands in for `WireServer.requests`: notes when the server received each request."""

    def __init__(self) -> None:
        super().__init__()
        self.arrivals: list[float] = []

    def append(self, item: object) -> None:
        self.arrivals.append(time.monotonic())
        super().append(item)


class RecordingTransport(httpx2.AsyncBaseTransport):
    """Notes when the client hands each request to the network, after the limiter let it go."""

    def __init__(self) -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.sent: list[float] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.sent.append(time.monotonic())
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.fixture
def roomy_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[WireServer]:
    # The stdlib default listen backlog (5) drops connects from a burst of 50 and the kernel then
    # retries them a second later; a deeper backlog keeps the test about limiter timing only.
    monkeypatch.setattr(ThreadingHTTPServer, "request_queue_size", 128)
    yield from running_server()


def min_span(times: Sequence[float], capacity: int) -> float:
    """The shortest time in which `capacity + 1` starts happened."""
    ordered = sorted(times)
    return min(ordered[i + capacity] - ordered[i] for i in range(len(ordered) - capacity))


async def test_real_requests_never_exceed_the_rate(roomy_server: WireServer) -> None:
    rate, count = 50, 60
    timed = TimedRequests()
    roomy_server.requests = timed
    roomy_server.push(*(json_reply({"n": i}) for i in range(count)))
    transport = RecordingTransport()
    client = HttpClient("local", rate_per_second=rate, transport=transport)
    try:
        results = await asyncio.gather(
            *(client.get_json(f"{roomy_server.url}/r/{i}") for i in range(count))
        )
    finally:
        await client.aclose()

    assert sorted(r["n"] for r in results) == list(range(count))
    assert client.requests_sent == count
    assert len(transport.sent) == len(timed.arrivals) == count
    # 51 starts need at least one second. The limiter's own clock is exact; the transport notes
    # the time a few statements later, so allow for scheduling jitter on a busy machine.
    assert min_span(transport.sent, rate) >= 0.9
    # The in-process server's threads wait for the GIL, so its arrival times are too noisy for a
    # window check of their own; but nothing arrives before it was sent, so the server never saw
    # more than `rate` requests within the first second of the first one leaving the client.
    first_sent = min(transport.sent)
    assert sum(1 for t in timed.arrivals if t < first_sent + 0.9) <= rate
    # And the limiter did not hold anything back longer than it had to.
    assert max(transport.sent) - first_sent < 2.0
