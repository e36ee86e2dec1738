"""One async HTTP client for every data source: headers, rate limit, retries, disk cache.

Each source (SEC EDGAR, Financial Datasets) gets its own `HttpClient` with its own headers,
limiter and cache folder. Failures become `DataError`s that say what happened and what to do;
response bodies are kept in the error so nothing the server said is lost.

Two guards keep bad replies out: redirects are followed only within the host that was asked
(a data source cannot bounce Dexter to an internal address), and a 2xx reply that is really an
error page (SEC's "Request Rate Threshold Exceeded" / "Undeclared Automated Tool" pages, or an
HTML page where JSON was expected) is an error, retried, and never written to the cache.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from dexter.backoff import backoff
from dexter.data.cache import CachedBody, DiskCache
from dexter.data.errors import NotFound, RateLimited, UpstreamError
from dexter.data.ratelimit import Limiter, RateLimiter
from dexter.models.errors import parse_retry_after

if TYPE_CHECKING:
    import httpx2

    from dexter.data.shared_cache import SharedBodyCache

Params = Mapping[str, str | int | float | Sequence[str] | None]
Sleep = Callable[[float], Awaitable[None]]
ErrorHint = Callable[[int], str | None]

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_BACKOFF = 30.0
BODY_KEPT = 500
MAX_REDIRECTS = 5
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
# Phrases of SEC's block and error pages, which it may serve with HTTP 200.
_SEC_ERROR_MARKERS = (
    b"request rate threshold exceeded",
    b"undeclared automated tool",
    b"your request originates from an undeclared",
    b"<title>sec.gov | page not found",
    b"<title>sec.gov | file not found",
    b"<title>access denied",
)
# Real filings are long; block pages are short. Only bodies under this are checked.
_ERROR_PAGE_MAX_BYTES = 64 * 1024


def error_page_reason(body: bytes, content_type: str, *, expect_json: bool = False) -> str | None:
    """Why a successful-looking reply is really an error page, or None."""
    lowered_type = content_type.lower()
    head = body[:_ERROR_PAGE_MAX_BYTES].lstrip()[:_ERROR_PAGE_MAX_BYTES].lower()
    is_html = "html" in lowered_type or head.startswith((b"<!doctype html", b"<html"))
    if expect_json and is_html:
        return "an HTML page where JSON was expected"
    if is_html and len(body) <= _ERROR_PAGE_MAX_BYTES:
        for marker in _SEC_ERROR_MARKERS:
            if marker in head:
                return f"an error page ({marker.decode().strip('<>').split('|')[-1].strip()})"
    return None


def build_url(url: str, params: Params | None) -> str:
    """The full URL with query parameters; lists repeat the key (`item=1A&item=7`)."""
    if not params:
        return url
    pairs: list[tuple[str, str]] = []
    for key in sorted(params):
        value = params[key]
        if value is None:
            continue
        if isinstance(value, list | tuple):
            pairs.extend((key, str(v)) for v in value)
        else:
            pairs.append((key, str(value)))
    if not pairs:
        return url
    return f"{url}{'&' if '?' in url else '?'}{urlencode(pairs)}"


@dataclass(frozen=True, slots=True)
class Conditional:
    """A conditional GET's answer: `changed` False means the server said 304 (body empty)."""

    changed: bool
    body: bytes
    etag: str | None
    last_modified: str | None


class HttpClient:
    def __init__(
        self,
        name: str,
        *,
        headers: Mapping[str, str] | None = None,
        rate_per_second: float | None = None,
        limiter: Limiter | None = None,
        cache: DiskCache | None = None,
        shared_cache: SharedBodyCache | None = None,
        transport: httpx2.AsyncBaseTransport | None = None,
        timeout: float = 30.0,
        max_attempts: int = 4,
        base_delay: float = 0.5,
        sleep: Sleep = asyncio.sleep,
        error_hint: ErrorHint | None = None,
    ) -> None:
        self.name = name
        self._headers = dict(headers or {})
        # A limiter given (one shared by a team's processes) wins over a per-process one.
        self._limiter: Limiter | None = limiter or (
            RateLimiter(rate_per_second) if rate_per_second else None
        )
        self.cache = cache
        # Team mode: behind the disk cache, bodies other machines already fetched.
        self.shared_cache = shared_cache if cache is not None else None
        self._transport = transport
        self._timeout = timeout
        self._max_attempts = max_attempts
        self._base_delay = base_delay
        self._sleep = sleep
        self._error_hint = error_hint
        self._client: httpx2.AsyncClient | None = None
        self.requests_sent = 0

    def _http(self) -> httpx2.AsyncClient:
        if self._client is None:
            from dexter.httpclient import async_client

            self._client = async_client(
                headers=self._headers,
                timeout=self._timeout,
                transport=self._transport,
                # Followed by hand, only within the host that was asked (see _request).
                follow_redirects=False,
            )
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        close = getattr(self._limiter, "aclose", None)
        if close is not None:
            await close()
        if self.shared_cache is not None:
            await self.shared_cache.aclose()

    async def _cached(self, key: str, ttl: float | None) -> CachedBody | None:
        if self.cache is None or ttl is None:
            return None
        cached = self.cache.get(key, ttl)
        if cached is None and self.shared_cache is not None:
            cached = await self.shared_cache.get(key, ttl)
            if cached is not None:
                # Copied with its own fetch time: it goes stale here when it does everywhere.
                self.cache.put(key, cached.url, cached.body, fetched_at=cached.fetched_at)
        return cached

    async def _keep(self, key: str, ttl: float | None, body: bytes) -> None:
        if self.cache is None or ttl is None:
            return
        self.cache.put(key, key, body)
        if self.shared_cache is not None:
            await self.shared_cache.put(key, key, body)

    async def get_bytes(
        self, url: str, *, params: Params | None = None, ttl: float | None = None
    ) -> bytes:
        """GET a body, from the cache when a fresh copy exists (`ttl` seconds; None = no cache)."""
        full = build_url(url, params)
        cached = await self._cached(full, ttl)
        # An error page cached by an older version is refetched, not served forever.
        if cached is not None and error_page_reason(cached.body, "") is None:
            return cached.body
        body = await self._request("GET", full)
        await self._keep(full, ttl, body)
        return body

    async def get_text(
        self, url: str, *, params: Params | None = None, ttl: float | None = None
    ) -> str:
        body = await self.get_bytes(url, params=params, ttl=ttl)
        return body.decode("utf-8", errors="replace")

    async def get_json(
        self, url: str, *, params: Params | None = None, ttl: float | None = None
    ) -> Any:
        full = build_url(url, params)
        cached = await self._cached(full, ttl)
        if cached is not None:
            try:
                return json.loads(cached.body)
            except ValueError:
                pass  # fall through and refetch; the bad entry is overwritten below
        body = await self._request("GET", full, expect_json=True)
        data = self._decode_json(body, full)
        # Only a body that parsed is cached, so a truncated reply is never served again.
        await self._keep(full, ttl, body)
        return data

    async def get_if_changed(
        self, url: str, *, etag: str | None = None, last_modified: str | None = None
    ) -> Conditional:
        """GET with `If-None-Match` / `If-Modified-Since` from an earlier answer, so an unchanged
        document costs the server (and SEC's fair-access budget) a 304 and no body. Never cached
        on disk: the validators are the caller's to keep."""
        headers: dict[str, str] = {}
        if etag:
            headers["If-None-Match"] = etag
        if last_modified:
            headers["If-Modified-Since"] = last_modified
        response = await self._exchange("GET", url, headers=headers)
        changed = response.status_code != 304
        return Conditional(
            changed=changed,
            body=response.content if changed else b"",
            etag=response.headers.get("etag") or (None if changed else etag),
            last_modified=response.headers.get("last-modified")
            or (None if changed else last_modified),
        )

    async def post_json(self, url: str, payload: Any) -> Any:
        body = await self._request("POST", url, json_body=payload, expect_json=True)
        return self._decode_json(body, url)

    def _decode_json(self, body: bytes, url: str) -> Any:
        try:
            return json.loads(body)
        except ValueError as exc:
            raise UpstreamError(
                f"{self.name} sent a reply that is not valid JSON ({exc}).",
                url=url,
                body=body[:BODY_KEPT].decode("utf-8", errors="replace"),
                hint="The response may have been cut off; try again.",
            ) from None

    async def _send(
        self, method: str, url: str, json_body: Any, headers: Mapping[str, str] | None = None
    ) -> httpx2.Response:
        """One request, following redirects only to the same scheme and host."""
        import httpx2

        target = url
        for _ in range(MAX_REDIRECTS + 1):
            response = await self._http().request(method, target, json=json_body, headers=headers)
            if response.status_code not in REDIRECT_STATUSES:
                return response
            location = response.headers.get("location")
            if not location:
                return response
            following = httpx2.URL(target).join(location)
            asked = httpx2.URL(url)
            if (following.scheme, following.host, following.port) != (
                asked.scheme,
                asked.host,
                asked.port,
            ):
                raise UpstreamError(
                    f"{self.name} redirected {url} to another host ({following.host}); "
                    "Dexter only follows redirects within the host it asked.",
                    status=response.status_code,
                    url=url,
                    hint="If the source moved, update its base URL setting.",
                )
            if response.status_code == 303:
                method, json_body = "GET", None
            target = str(following)
        raise UpstreamError(f"{self.name} redirected {url} too many times.", url=url)

    async def _request(
        self, method: str, url: str, *, json_body: Any = None, expect_json: bool = False
    ) -> bytes:
        response = await self._exchange(method, url, json_body=json_body, expect_json=expect_json)
        return response.content

    async def _exchange(
        self,
        method: str,
        url: str,
        *,
        json_body: Any = None,
        expect_json: bool = False,
        headers: Mapping[str, str] | None = None,
    ) -> httpx2.Response:
        """The request with retries: a good 2xx reply, or a 304 when `headers` made it
        conditional."""
        import httpx2

        # Built before the first start is taken: building it (TLS context, imports) can take
        # longer than the limiter's margin, and a start that reaches the server that late lands
        # in the next second beside a full set of later ones.
        self._http()
        attempt = 1
        while True:
            ticket = await self._limiter.acquire() if self._limiter is not None else None
            self.requests_sent += 1
            try:
                try:
                    response = await self._send(method, url, json_body, headers)
                finally:
                    if self._limiter is not None:
                        await self._limiter.answered(ticket)
            except httpx2.TimeoutException:
                failure: UpstreamError = UpstreamError(
                    f"{self.name} did not answer in time.", url=url, hint="Try again later."
                )
                retry_after = None
            except httpx2.TransportError as exc:
                failure = UpstreamError(
                    f"Could not reach {self.name} ({type(exc).__name__}: {exc}).",
                    url=url,
                    hint="Check the network connection and the base URL setting.",
                )
                retry_after = None
            except httpx2.DecodingError as exc:
                # A damaged compressed body (not a TransportError): still a DataError, retried.
                failure = UpstreamError(
                    f"{self.name} sent a reply that could not be decoded ({exc}).",
                    url=url,
                    hint="The response may have been cut off; try again.",
                )
                retry_after = None
            else:
                if response.status_code == 304 and headers:
                    return response
                if response.status_code < 300:
                    problem = error_page_reason(
                        response.content,
                        response.headers.get("content-type", ""),
                        expect_json=expect_json,
                    )
                    if problem is None:
                        return response
                    failure = RateLimited(
                        f"{self.name} answered with {problem} instead of data.",
                        status=response.status_code,
                        url=url,
                        body=response.content[:BODY_KEPT].decode("utf-8", errors="replace"),
                        hint=(self._error_hint(response.status_code) if self._error_hint else None)
                        or "Check DEXTER_SEC_USER_AGENT (SEC blocks undeclared tools) and "
                        "try again in a few minutes.",
                    )
                    retry_after = parse_retry_after(response.headers)
                else:
                    failure = self._status_error(response, url)
                    if response.status_code not in RETRY_STATUSES:
                        raise failure
                    retry_after = parse_retry_after(response.headers)
            if attempt >= self._max_attempts:
                raise failure
            delay = retry_after if retry_after is not None else self._backoff(attempt)
            await self._sleep(min(delay, MAX_BACKOFF))
            attempt += 1

    def _backoff(self, attempt: int) -> float:
        return backoff(attempt, self._base_delay, MAX_BACKOFF)

    def _status_error(self, response: httpx2.Response, url: str) -> UpstreamError:
        status = response.status_code
        body = response.content[:BODY_KEPT].decode("utf-8", errors="replace")
        hint = self._error_hint(status) if self._error_hint else None
        if status == 404:
            raise NotFound(f"{self.name} has nothing at {url} (HTTP 404).", hint=hint)
        if status == 429:
            return RateLimited(
                f"{self.name} is rate limiting requests (HTTP 429).",
                status=status,
                url=url,
                body=body,
                hint=hint or "Wait a minute and try again.",
            )
        return UpstreamError(
            f"{self.name} answered HTTP {status}.", status=status, url=url, body=body, hint=hint
        )
