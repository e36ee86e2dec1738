"""The `web_fetch` tool: read one web page as clean markdown.

Every hop is checked by the SSRF guard (redirects are followed by hand, at most five), the
download stops at a size cap, the whole fetch has a time limit, and results are cached by URL
for 15 minutes under `<home>/cache/web-fetch`. HTML goes through readability + markdownify;
plain text and JSON are shown as they are; PDFs are not read yet.

SEC hosts (`*.sec.gov`) go through the SEC data client instead when one is given: it sends the
contact user agent the SEC requires, shares the 10-requests-per-second limiter with every other
SEC call, retries, and caches `/Archives/` documents for good (a filing never changes). Their
HTML is converted like filing sections (tables as `cell | cell` rows, hidden XBRL dropped).
Long pages are read in parts with `offset`.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol
from urllib.parse import urljoin, urlsplit

from pydantic import BaseModel, ConfigDict, Field

from dexter.config import Settings
from dexter.data.cache import DiskCache
from dexter.data.errors import DataError
from dexter.data.sec.urls import is_sec_host
from dexter.principal import ToolScope
from dexter.tools.base import Resources, Tool, ToolContext, ToolFailure, ToolResult
from dexter.tools.untrusted import wrap_untrusted
from dexter.tools.web.extract import html_to_markdown
from dexter.tools.web.ssrf import (
    MAX_URL_LENGTH,
    Resolver,
    check_url,
    normalise_hosts,
    pinned_request,
)

if TYPE_CHECKING:
    import httpx2

MAX_REDIRECTS = 5
MAX_DOWNLOAD_BYTES = 5 * 1024 * 1024
DEFAULT_TIMEOUT = 30.0
CACHE_TTL = 15 * 60.0
DEFAULT_MAX_CHARS = 20_000
MAX_MAX_CHARS = 60_000
USER_AGENT = "Dexter/0.1 (financial research agent; +https://github.com/virattt/dexter)"
ACCEPT = "text/html, application/xhtml+xml, text/plain, application/json;q=0.9, */*;q=0.5"
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_HTML_TYPES = ("text/html", "application/xhtml+xml")
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/ld+json")
_CACHE_FORMAT = 1
_TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


class SecFetcher(Protocol):
    """The SEC data client's way to GET any sec.gov URL (user agent, limiter, retries, cache)."""

    async def fetch_sec_url(self, url: str) -> bytes: ...


def allowed_hosts_from_settings(settings: Settings) -> frozenset[str]:
    """The hosts in `webFetch.allowedHosts` (settings file), exempt from the internal-address
    check."""
    from dexter.settings_model import WebFetchSettings

    return normalise_hosts(settings.section(WebFetchSettings).allowed_hosts)


class WebFetchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=1, max_length=MAX_URL_LENGTH)
    max_chars: int = Field(DEFAULT_MAX_CHARS, ge=500, le=MAX_MAX_CHARS)
    offset: int = Field(
        0, ge=0, description="Where to continue a long page, as the last part said."
    )


class _Page:
    def __init__(self, final_url: str, content_type: str, body: bytes, cut: bool) -> None:
        self.final_url = final_url
        self.content_type = content_type
        self.body = body
        self.cut = cut  # the download stopped at the size cap


class WebFetchTool(Tool[WebFetchArgs]):
    name: ClassVar[str] = "web_fetch"
    scope: ClassVar[ToolScope] = "public"
    description: ClassVar[str] = (
        "Fetch a web page and return its main text as markdown (title, final URL, content). "
        "Public http(s) pages and SEC EDGAR documents (tables as rows); no PDFs yet."
    )
    Args: ClassVar[type[BaseModel]] = WebFetchArgs
    concurrency_safe: ClassVar[bool] = True

    def __init__(
        self,
        allowed_hosts: Iterable[str] = frozenset(),
        cache_dir: Path | None = None,
        transport: httpx2.AsyncBaseTransport | None = None,
        resolver: Resolver | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_bytes: int = MAX_DOWNLOAD_BYTES,
        cache_ttl: float = CACHE_TTL,
        sec: SecFetcher | None = None,
    ) -> None:
        self.allowed_hosts = normalise_hosts(allowed_hosts)
        self._cache_dir = cache_dir
        self._transport = transport
        self._resolver = resolver
        self._timeout = timeout
        self._max_bytes = max_bytes
        self._cache_ttl = cache_ttl
        self._sec = sec
        self.requests_sent = 0

    def _cache(self, ctx: ToolContext) -> DiskCache:
        return DiskCache(self._cache_dir or ctx.home / "cache" / "web-fetch")

    def resources(self, args: WebFetchArgs) -> Resources:
        return Resources.of(reads=["network"])

    async def run(self, args: WebFetchArgs, ctx: ToolContext) -> ToolResult:
        url = args.url.strip()
        if self._sec is not None and _is_sec_url(url):
            return await self._run_sec(url, args, ctx)
        await check_url(url, allowed_hosts=self.allowed_hosts, resolver=self._resolver)
        cache = self._cache(ctx)
        entry = _load_entry(cache, url, self._cache_ttl)
        cached = entry is not None
        if entry is None:
            ctx.progress(f"Fetching {url}")
            try:
                async with asyncio.timeout(self._timeout):
                    page = await self._download(url)
            except TimeoutError:
                raise ToolFailure(
                    f"Fetching {url} took longer than {self._timeout:.0f} seconds."
                ) from None
            entry = self._render(page)
            try:
                cache.put(url, page.final_url, json.dumps(entry).encode())
            except OSError:
                pass  # a read-only home only costs the cache
        return self._result(url, entry, args, cached, ctx)

    async def _run_sec(self, url: str, args: WebFetchArgs, ctx: ToolContext) -> ToolResult:
        assert self._sec is not None
        ctx.progress(f"Fetching {url} (SEC EDGAR)")
        try:
            async with asyncio.timeout(self._timeout * 4):  # the limiter and retries need room
                body = await self._sec.fetch_sec_url(url)
        except TimeoutError:
            raise ToolFailure(f"Fetching {url} took too long.") from None
        except DataError as error:
            raise ToolFailure(str(error)) from None
        entry = await asyncio.to_thread(_render_sec, url, body)
        # The SEC client caches what is worth caching (Archives for good); no second cache here.
        return self._result(url, entry, args, False, ctx)

    async def _download(self, url: str) -> _Page:
        import httpx2

        from dexter.httpclient import async_client

        current = url
        async with async_client(
            transport=self._transport,
            timeout=self._timeout,
            follow_redirects=False,
            headers={"User-Agent": USER_AGENT, "Accept": ACCEPT},
        ) as client:
            for _ in range(MAX_REDIRECTS + 1):
                vetted = await check_url(
                    current, allowed_hosts=self.allowed_hosts, resolver=self._resolver
                )
                target, headers, extensions = pinned_request(current, vetted)
                self.requests_sent += 1
                try:
                    async with client.stream(
                        "GET", target, headers=headers, extensions=extensions
                    ) as response:
                        status = response.status_code
                        if status in _REDIRECTS:
                            location = response.headers.get("location")
                            if not location:
                                raise ToolFailure(
                                    f"{current} redirected (HTTP {status}) without a Location."
                                )
                            current = urljoin(current, location.strip())
                            continue
                        if status >= 400:
                            raise ToolFailure(
                                f"{current} answered HTTP {status} {response.reason_phrase}."
                            )
                        content_type = response.headers.get("content-type", "")
                        body, cut = await self._read_capped(response)
                        return _Page(current, content_type, body, cut)
                except httpx2.TimeoutException:
                    raise ToolFailure(f"{current} did not answer in time.") from None
                except httpx2.HTTPError as exc:
                    raise ToolFailure(
                        f"Could not fetch {current} ({type(exc).__name__}: {exc})."
                    ) from None
        raise ToolFailure(f"Too many redirects (more than {MAX_REDIRECTS}) starting at {url}.")

    async def _read_capped(self, response: httpx2.Response) -> tuple[bytes, bool]:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self._max_bytes * 4:
            # Far beyond the cap: don't even start (the first part is rarely worth it).
            raise ToolFailure(
                f"The page is {int(declared) / 1_048_576:.1f} MB, over the "
                f"{self._max_bytes / 1_048_576:.0f} MB download limit."
            )
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if size >= self._max_bytes:
                return b"".join(chunks)[: self._max_bytes], True
        return b"".join(chunks), False

    def _render(self, page: _Page) -> dict[str, Any]:
        media = page.content_type.split(";", 1)[0].strip().lower()
        charset = _charset(page.content_type)
        head = page.body[:1024].lstrip().lower()
        if media == "application/pdf" or page.body.startswith(b"%PDF"):
            raise ToolFailure(
                f"{page.final_url} is a PDF; reading PDFs is not supported yet. Look for an "
                "HTML version of the document (for SEC filings, use the filing tools)."
            )
        if media in _HTML_TYPES or (
            not media and head.startswith((b"<!doctype html", b"<html", b"<?xml"))
        ):
            if _is_sec_url(page.final_url):
                return _render_sec(page.final_url, page.body)
            html = page.body.decode(charset or "utf-8", errors="replace")
            extracted = html_to_markdown(html, page.final_url)
            title, text = extracted.title, extracted.markdown
        elif media.startswith(_TEXT_TYPES) or media.endswith(("+json", "+xml")) or not media:
            title, text = "", page.body.decode(charset or "utf-8", errors="replace").strip()
        else:
            raise ToolFailure(
                f"{page.final_url} is {media}, which web_fetch cannot read (only HTML, text "
                "and JSON)."
            )
        return {
            "format": _CACHE_FORMAT,
            "title": title,
            "final_url": page.final_url,
            "content_type": media,
            "text": text,
            "cut": page.cut,
        }

    def _result(
        self, url: str, entry: dict[str, Any], args: WebFetchArgs, cached: bool, ctx: ToolContext
    ) -> ToolResult:
        final_url = str(entry["final_url"])
        title = str(entry["title"]) or urlsplit(final_url).netloc
        text = str(entry["text"])
        kind = "SEC EDGAR document" if entry.get("sec") else "Web page"
        source_id = ctx.sources.add(f"{kind}: {title}", final_url)
        total = len(text)
        start = min(args.offset, total)
        end = min(start + args.max_chars, total)
        truncated = end < total
        shown = text[start:end]
        lines = [f"[{source_id}] {title}", f"URL: {final_url}"]
        if final_url != url:
            lines.append(f"(redirected from {url})")
        if cached:
            lines.append("(from cache, fetched within the last 15 minutes)")
        notes: list[str] = []
        if entry.get("cut"):
            notes.append(
                f"[The download stopped at the {self._max_bytes / 1_048_576:.0f} MB limit; "
                "the page is longer than what was read.]"
            )
        if start or truncated:
            lines.append(f"(characters {start:,} to {end:,} of {total:,})")
        if truncated:
            notes.append(
                f"[More follows: showing characters {start:,} to {end:,} of {total:,}. Call "
                f"web_fetch again with offset={end} to continue (max_chars up to "
                f"{MAX_MAX_CHARS:,}).]"
            )
        if start >= total and total:
            body = f"(offset {args.offset:,} is past the end: the page has {total:,} characters)"
        else:
            body = shown if shown.strip() else "(the page has no readable text)"
        content = "\n".join([*lines, wrap_untrusted(final_url, body), *notes])
        return ToolResult(
            content,
            data={
                "id": source_id,
                "url": url,
                "final_url": final_url,
                "title": title,
                "chars": total,
                "offset": start,
                "next_offset": end if truncated else None,
                "truncated": truncated,
                "cached": cached,
            },
        )


def _is_sec_url(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and is_sec_host(parts.hostname)


def _render_sec(url: str, body: bytes) -> dict[str, Any]:
    head = body[:2048].lstrip().lower()
    if body.startswith(b"%PDF"):
        raise ToolFailure(f"{url} is a PDF; reading PDFs is not supported yet.")
    path = urlsplit(url).path.lower()
    markup = path.endswith((".htm", ".html", ".txt")) or head.startswith(
        (b"<?xml", b"<!doctype html", b"<html", b"<document>", b"<sec-document>")
    )
    if path.endswith((".json", ".xml", ".xsd")) and not head.startswith((b"<html", b"<!doc")):
        markup = False
    if markup:
        found = _TITLE.search(body[:200_000])
        title = " ".join(found.group(1).decode("utf-8", "replace").split()) if found else ""
        from dexter.data.sec.documents import html_to_text  # html.parser and the 10-K items

        text = html_to_text(body)
    else:
        title, text = "", body.decode("utf-8", errors="replace").strip()
    return {
        "format": _CACHE_FORMAT,
        "title": title,
        "final_url": url,
        "content_type": "text/html" if markup else "text/plain",
        "text": text.strip(),
        "cut": False,
        "sec": True,
    }


def _load_entry(cache: DiskCache, url: str, ttl: float) -> dict[str, Any] | None:
    hit = cache.get(url, ttl)
    if hit is None:
        return None
    try:
        entry = json.loads(hit.body)
    except ValueError:
        return None
    if not isinstance(entry, dict) or entry.get("format") != _CACHE_FORMAT:
        return None
    return entry


def _charset(content_type: str) -> str | None:
    for part in content_type.split(";")[1:]:
        key, _, value = part.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            name = value.strip().strip("\"'")
            try:
                "".encode(name)
            except LookupError:
                return None
            return name
    return None
