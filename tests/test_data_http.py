"""The data-layer HTTP client over real HTTP to 127.0.0.1: headers, caching, retries, failures."""

from __future__ import annotations

import gzip
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from dexter.data.cache import FOREVER, DiskCache
from dexter.data.errors import DataError, NotFound, RateLimited, UpstreamError
from dexter.data.http import HttpClient, build_url
from tests.support.wire_server import Reply, WireServer, json_reply

UA = "Dexter Tests tests@example.com"
SEC_HINT = (
    "The SEC refuses requests without a declared user agent: set DEXTER_SEC_USER_AGENT to "
    "'Your Name your@email.com'."
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


class Harness:
    def __init__(self, server: WireServer, tmp_path: Path) -> None:
        self.server = server
        self.clock = Clock()
        self.cache = DiskCache(tmp_path / "cache", now=self.clock)
        self.sleeps: list[float] = []
        self.clients: list[HttpClient] = []

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)

    def client(self, name: str = "SEC EDGAR", **kwargs: Any) -> HttpClient:
        kwargs.setdefault("headers", {"User-Agent": UA})
        kwargs.setdefault("cache", self.cache)
        kwargs.setdefault("sleep", self.sleep)
        client = HttpClient(name, **kwargs)
        self.clients.append(client)
        return client

    def url(self, path: str) -> str:
        return f"{self.server.url}{path}"


@pytest.fixture
async def h(wire_server: WireServer, tmp_path: Path) -> AsyncIterator[Harness]:
    harness = Harness(wire_server, tmp_path)
    yield harness
    for client in harness.clients:
        await client.aclose()


# --- build_url ----------------------------------------------------------------------------------


def test_build_url_repeats_list_keys_drops_none_and_sorts() -> None:
    url = build_url(
        "https://x.test/api",
        {"ticker": "AAPL", "item": ["1A", "7"], "cik": None, "limit": 5, "period": "annual"},
    )
    assert url == "https://x.test/api?item=1A&item=7&limit=5&period=annual&ticker=AAPL"


def test_build_url_order_does_not_depend_on_the_order_given() -> None:
    a = build_url("https://x.test/a", {"b": "2", "a": "1", "c": ("x", "y")})
    b = build_url("https://x.test/a", {"c": ["x", "y"], "a": "1", "b": "2"})
    assert a == b == "https://x.test/a?a=1&b=2&c=x&c=y"


def test_build_url_edge_cases() -> None:
    assert build_url("https://x.test/a", None) == "https://x.test/a"
    assert build_url("https://x.test/a", {}) == "https://x.test/a"
    assert build_url("https://x.test/a", {"a": None}) == "https://x.test/a"
    assert build_url("https://x.test/a?x=1", {"a": "b"}) == "https://x.test/a?x=1&a=b"
    assert build_url("https://x.test/a", {"q": "a b&c=d/é"}) == (
        "https://x.test/a?q=a+b%26c%3Dd%2F%C3%A9"
    )
    assert build_url("https://x.test/a", {"item": []}) == "https://x.test/a"


async def test_query_parameters_reach_the_server(h: Harness) -> None:
    h.server.push(json_reply({"ok": True}))
    await h.client().get_json(h.url("/api"), params={"item": ["1A", "7"], "form": "10-K"})
    assert h.server.requests[0].path == "/api?form=10-K&item=1A&item=7"


# --- headers ------------------------------------------------------------------------------------


async def test_headers_are_sent_on_every_request_including_retries(h: Harness) -> None:
    h.server.push(
        Reply(status=503, body=b"busy"),
        json_reply({"a": 1}),
        json_reply({"b": 2}),
    )
    client = h.client(headers={"User-Agent": UA, "Accept-Encoding": "gzip, deflate"})
    assert await client.get_json(h.url("/a")) == {"a": 1}
    assert await client.get_json(h.url("/b")) == {"b": 2}

    assert len(h.server.requests) == 3
    for request in h.server.requests:
        assert request.headers["user-agent"] == UA
        assert request.headers["accept-encoding"] == "gzip, deflate"


# --- cache --------------------------------------------------------------------------------------


async def test_cache_hit_makes_no_request(h: Harness) -> None:
    h.server.push(json_reply({"cik": 320193}))
    client = h.client()
    first = await client.get_json(h.url("/tickers"), ttl=86400)
    second = await client.get_json(h.url("/tickers"), ttl=86400)
    assert first == second == {"cik": 320193}
    assert len(h.server.requests) == 1
    assert client.requests_sent == 1
    assert (h.cache.hits, h.cache.misses) == (1, 1)


async def test_cache_is_shared_by_a_new_client_over_the_same_folder(h: Harness) -> None:
    h.server.push(Reply(body=b"<html>filing</html>"))
    assert await h.client().get_text(h.url("/doc.htm"), ttl=FOREVER) == "<html>filing</html>"
    later = h.client()  # a later run of the CLI
    assert await later.get_bytes(h.url("/doc.htm"), ttl=FOREVER) == b"<html>filing</html>"
    assert len(h.server.requests) == 1


async def test_different_params_are_different_entries(h: Harness) -> None:
    h.server.push(json_reply({"page": 1}), json_reply({"page": 2}))
    client = h.client()
    assert await client.get_json(h.url("/p"), params={"page": 1}, ttl=60) == {"page": 1}
    assert await client.get_json(h.url("/p"), params={"page": 2}, ttl=60) == {"page": 2}
    assert await client.get_json(h.url("/p"), params={"page": 1}, ttl=60) == {"page": 1}
    assert len(h.server.requests) == 2


async def test_expired_entry_is_refetched(h: Harness) -> None:
    h.server.push(json_reply({"v": "old"}), json_reply({"v": "new"}))
    client = h.client()
    assert await client.get_json(h.url("/submissions"), ttl=3600) == {"v": "old"}
    h.clock.now += 3599
    assert await client.get_json(h.url("/submissions"), ttl=3600) == {"v": "old"}
    h.clock.now += 2
    assert await client.get_json(h.url("/submissions"), ttl=3600) == {"v": "new"}
    assert len(h.server.requests) == 2
    # the refetched copy is what is cached now
    assert await client.get_json(h.url("/submissions"), ttl=3600) == {"v": "new"}
    assert len(h.server.requests) == 2


async def test_ttl_none_never_caches(h: Harness) -> None:
    h.server.push(json_reply({"n": 1}), json_reply({"n": 2}), Reply(body=b"a"), Reply(body=b"b"))
    client = h.client()
    assert await client.get_json(h.url("/live")) == {"n": 1}
    assert await client.get_json(h.url("/live")) == {"n": 2}
    assert await client.get_bytes(h.url("/raw")) == b"a"
    assert await client.get_bytes(h.url("/raw")) == b"b"
    assert len(h.server.requests) == 4
    assert not (h.cache.directory.exists() and any(h.cache.directory.rglob("*.body")))


async def test_forever_never_expires(h: Harness) -> None:
    h.server.push(Reply(body=b"10-K text"))
    client = h.client()
    assert await client.get_bytes(h.url("/Archives/x.txt"), ttl=FOREVER) == b"10-K text"
    h.clock.now += 100 * 365 * 86400
    assert await client.get_bytes(h.url("/Archives/x.txt"), ttl=FOREVER) == b"10-K text"
    assert len(h.server.requests) == 1


def _only(root: Path, suffix: str) -> Path:
    (path,) = list(root.rglob(f"*{suffix}"))
    return path


@pytest.mark.parametrize("damage", ["truncated body", "size mismatch", "garbage metadata"])
async def test_damaged_cache_entry_is_refetched(h: Harness, damage: str) -> None:
    payload = {"facts": {"us-gaap": {"Revenues": [1, 2, 3]}}}
    h.server.push(json_reply(payload), json_reply(payload))
    client = h.client()
    await client.get_json(h.url("/companyfacts"), ttl=FOREVER)

    root = h.cache.directory
    if damage == "truncated body":
        body = _only(root, ".body")
        body.write_bytes(body.read_bytes()[:10])
    elif damage == "size mismatch":
        meta = _only(root, ".json")
        meta.write_text(meta.read_text().replace('"size": ', '"size": 9'))
    else:
        _only(root, ".json").write_bytes(b"\xff\xfe garbage")

    assert await client.get_json(h.url("/companyfacts"), ttl=FOREVER) == payload
    assert len(h.server.requests) == 2
    # repaired: the next call is a hit again
    assert await client.get_json(h.url("/companyfacts"), ttl=FOREVER) == payload
    assert len(h.server.requests) == 2


async def test_cached_body_that_is_not_json_is_refetched(h: Harness) -> None:
    client = h.client()
    url = h.url("/x.json")
    h.cache.put(url, url, b'{"cut off')  # an entry written by an older version, say
    h.server.push(json_reply({"whole": True}))
    assert await client.get_json(url, ttl=FOREVER) == {"whole": True}
    assert await client.get_json(url, ttl=FOREVER) == {"whole": True}
    assert len(h.server.requests) == 1


async def test_malformed_json_is_not_cached(h: Harness) -> None:
    h.server.push(
        Reply(headers={"content-type": "application/json"}, body=b'{"facts": {"us-gaap": '),
        json_reply({"facts": {}}),
    )
    client = h.client()
    with pytest.raises(UpstreamError) as caught:
        await client.get_json(h.url("/facts"), ttl=FOREVER)
    assert "not valid JSON" in str(caught.value)
    assert caught.value.body == '{"facts": {"us-gaap": '
    assert not list(h.cache.directory.rglob("*.body"))

    assert await client.get_json(h.url("/facts"), ttl=FOREVER) == {"facts": {}}
    assert await client.get_json(h.url("/facts"), ttl=FOREVER) == {"facts": {}}
    assert len(h.server.requests) == 2


async def test_failed_request_is_not_cached(h: Harness) -> None:
    h.server.push(Reply(status=404, body=b"no such"), Reply(body=b"now it exists"))
    client = h.client()
    with pytest.raises(NotFound):
        await client.get_bytes(h.url("/later"), ttl=FOREVER)
    assert await client.get_bytes(h.url("/later"), ttl=FOREVER) == b"now it exists"


# --- retries and failures -----------------------------------------------------------------------


async def test_429_honours_retry_after_then_succeeds(h: Harness) -> None:
    h.server.push(
        Reply(status=429, headers={"Retry-After": "2"}, body=b"slow down"),
        json_reply({"ok": True}),
    )
    client = h.client()
    assert await client.get_json(h.url("/x")) == {"ok": True}
    assert h.sleeps == [2.0]
    assert client.requests_sent == 2


async def test_retry_after_is_capped(h: Harness) -> None:
    h.server.push(Reply(status=503, headers={"Retry-After": "3600"}), json_reply({}))
    await h.client().get_json(h.url("/x"))
    assert h.sleeps == [30.0]


async def test_503_twice_then_success_backs_off_exponentially(h: Harness) -> None:
    h.server.push(Reply(status=503), Reply(status=503), json_reply({"ok": 1}))
    client = h.client(base_delay=0.5)
    assert await client.get_json(h.url("/x")) == {"ok": 1}
    assert len(h.sleeps) == 2
    assert 0.4 <= h.sleeps[0] <= 0.6
    assert 0.8 <= h.sleeps[1] <= 1.2
    assert len(h.server.requests) == 3


async def test_persistent_500_gives_up_keeping_the_body(h: Harness) -> None:
    h.server.push(*(Reply(status=500, body=b'{"error": "database is down"}') for _ in range(4)))
    client = h.client(max_attempts=4)
    with pytest.raises(UpstreamError) as caught:
        await client.get_json(h.url("/x"), ttl=60)
    err = caught.value
    assert err.status == 500
    assert err.body == '{"error": "database is down"}'
    assert err.url == h.url("/x")
    assert "SEC EDGAR" in str(err) and "500" in str(err)
    assert len(h.server.requests) == 4
    assert len(h.sleeps) == 3
    assert not list(h.cache.directory.rglob("*.body"))


async def test_persistent_429_is_rate_limited(h: Harness) -> None:
    h.server.push(*(Reply(status=429, headers={"Retry-After": "1"}) for _ in range(3)))
    with pytest.raises(RateLimited) as caught:
        await h.client(max_attempts=3).get_bytes(h.url("/x"))
    assert caught.value.status == 429
    assert "rate limiting" in str(caught.value)
    assert h.sleeps == [1.0, 1.0]


async def test_long_body_is_kept_shortened(h: Harness) -> None:
    h.server.push(Reply(status=400, body=b"x" * 5000))
    with pytest.raises(UpstreamError) as caught:
        await h.client().get_bytes(h.url("/x"))
    assert caught.value.body is not None
    assert 0 < len(caught.value.body) <= 1000


async def test_404_is_not_found_without_retries(h: Harness) -> None:
    h.server.push(Reply(status=404, body=b"Not Found"), json_reply({}))
    client = h.client()
    with pytest.raises(NotFound) as caught:
        await client.get_json(h.url("/cgi-bin/browse-edgar"))
    assert "404" in str(caught.value)
    assert isinstance(caught.value, DataError)
    assert len(h.server.requests) == 1
    assert h.sleeps == []


async def test_403_uses_the_callers_hint_and_is_not_retried(h: Harness) -> None:
    h.server.push(Reply(status=403, body=b"<html>Request Rate Threshold Exceeded</html>"))
    client = h.client(error_hint=lambda status: SEC_HINT if status == 403 else None)
    with pytest.raises(UpstreamError) as caught:
        await client.get_bytes(h.url("/files/company_tickers.json"))
    err = caught.value
    assert err.status == 403
    assert err.hint == SEC_HINT
    assert "DEXTER_SEC_USER_AGENT" in str(err)
    assert "Threshold" in (err.body or "")
    assert len(h.server.requests) == 1


async def test_server_slower_than_the_timeout_is_retried_then_reported(h: Harness) -> None:
    # Quiet for good after the first chunk: a delay only longer than the timeout could end
    # first on a loaded machine, and the body would then arrive whole.
    slow = Reply(chunks=[b'{"a": ', b"1}"], stall=True)
    h.server.push(slow, slow)
    client = h.client(timeout=0.15, max_attempts=2)
    with pytest.raises(UpstreamError) as caught:
        await client.get_json(h.url("/slow"), ttl=60)
    assert "SEC EDGAR did not answer in time" in str(caught.value)
    assert client.requests_sent == 2
    assert len(h.sleeps) == 1


class TimeoutThenOk(httpx2.AsyncBaseTransport):
    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.calls += 1
        if self.calls <= self.failures:
            raise httpx2.ReadTimeout("timed out", request=request)
        return httpx2.Response(200, json={"late": "but fine"})


async def test_timeout_then_success(h: Harness) -> None:
    transport = TimeoutThenOk(failures=2)
    client = h.client(transport=transport)
    assert await client.get_json("http://sec.test/x") == {"late": "but fine"}
    assert transport.calls == 3
    assert len(h.sleeps) == 2


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_connection_refused_names_the_service(h: Harness) -> None:
    client = h.client("Financial Datasets", max_attempts=2)
    url = f"http://127.0.0.1:{_closed_port()}/prices"
    with pytest.raises(UpstreamError) as caught:
        await client.get_json(url)
    message = str(caught.value)
    assert "Could not reach Financial Datasets" in message
    assert "base URL" in message
    assert caught.value.url == url
    assert len(h.sleeps) == 1


async def test_undecodable_compressed_body_is_a_clear_error(h: Harness) -> None:
    bad = Reply(headers={"content-encoding": "gzip"}, body=b"this is not gzip")
    h.server.push(bad, bad)
    client = h.client(max_attempts=2)
    with pytest.raises(UpstreamError) as caught:
        await client.get_bytes(h.url("/z"))
    assert "SEC EDGAR" in str(caught.value)
    assert len(h.server.requests) == 2


async def test_compressed_body_is_decoded(h: Harness) -> None:
    h.server.push(
        Reply(headers={"content-encoding": "gzip"}, body=gzip.compress(b'{"zipped": true}'))
    )
    assert await h.client().get_json(h.url("/z")) == {"zipped": True}


async def test_post_json_sends_the_payload(h: Harness) -> None:
    h.server.push(json_reply({"results": []}))
    client = h.client()
    assert await client.post_json(h.url("/screener"), {"filters": [1]}) == {"results": []}
    (request,) = h.server.requests
    assert (request.method, request.json()) == ("POST", {"filters": [1]})
    assert request.headers["user-agent"] == UA


# --- error pages and redirects ------------------------------------------------------------------

SEC_BLOCK_PAGE = (
    b"<!DOCTYPE html><html><head><title>SEC.gov | Request Rate Threshold Exceeded</title></head>"
    b"<body><h1>Your Request Originates from an Undeclared Automated Tool</h1></body></html>"
)


async def test_an_error_page_served_with_200_is_never_cached(h: Harness) -> None:
    html = {"content-type": "text/html; charset=utf-8"}
    h.server.push(*(Reply(headers=html, body=SEC_BLOCK_PAGE) for _ in range(4)))
    client = h.client()
    url = h.url("/Archives/edgar/data/1/x.htm")
    with pytest.raises(RateLimited, match="error page"):
        await client.get_bytes(url, ttl=FOREVER)
    assert h.cache.get(url, FOREVER) is None
    # Once the SEC serves the real document it is cached and served from there.
    h.server.push(Reply(headers=html, body=b"<html><body>10-K text</body></html>"))
    assert b"10-K text" in await client.get_bytes(url, ttl=FOREVER)
    assert b"10-K text" in await client.get_bytes(url, ttl=FOREVER)
    assert len(h.server.requests) == 5


async def test_html_where_json_was_expected_is_an_error_not_a_cache_entry(h: Harness) -> None:
    page = Reply(headers={"content-type": "text/html"}, body=b"<html>maintenance</html>")
    h.server.push(page, page, page, page)
    url = h.url("/submissions/CIK1.json")
    with pytest.raises(DataError):
        await h.client().get_json(url, ttl=3600)
    assert h.cache.get(url, 3600) is None


async def test_redirects_are_followed_only_within_the_host_asked(h: Harness) -> None:
    h.server.push(
        Reply(status=301, headers={"location": "/moved.json"}),
        json_reply({"ok": 1}),
    )
    client = h.client()
    assert await client.get_json(h.url("/old.json")) == {"ok": 1}
    assert [r.path for r in h.server.requests] == ["/old.json", "/moved.json"]

    h.server.push(Reply(status=302, headers={"location": "http://169.254.169.254/latest/"}))
    with pytest.raises(UpstreamError, match="another host"):
        await client.get_json(h.url("/bounce.json"))
    assert len(h.server.requests) == 3
