"""Key-less web search: DuckDuckGo's HTML results page, parsed here.

DuckDuckGo serves a plain HTML version of its results at `html.duckduckgo.com/html/` for
browsers without JavaScript. It needs no key, but it is meant for people, not bulk automation:
it rate-limits bursts (answering 202 with a bot check instead of results), offers no dates for
most results and no guarantee that the markup stays the same. So it is the last link of the
search chain, used first only when no keyed provider is configured, and a refusal is reported as
such rather than as "no results".
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import TYPE_CHECKING, ClassVar
from urllib.parse import parse_qs, urljoin, urlparse

from dexter.tools.web.search import SearchAnswer, SearchError, SearchProvider, SearchResult

if TYPE_CHECKING:
    import httpx2

# DuckDuckGo's `df` filter: past day, week, month, year.
_DATE_FILTERS = ((1, "d"), (7, "w"), (31, "m"), (366, "y"))
_BOT_CHECK_MARKERS = ("anomaly-modal", "challenge-form", "Unfortunately, bots use DuckDuckGo too")


def _date_filter(days: int | None) -> str:
    if not days:
        return ""
    return next((code for limit, code in _DATE_FILTERS if days <= limit), "")


def _range(days: int | None, until: date) -> str:
    """DuckDuckGo's custom range, `start..end`, ending at the as-of date."""
    start = until - timedelta(days=days) if days else date(1990, 1, 1)
    return f"{start.isoformat()}..{until.isoformat()}"


def _target(href: str, base: str) -> str:
    """Result links go through DuckDuckGo's redirector (`/l/?uddg=<url>`); return the real URL."""
    absolute = urljoin(base + "/", href)
    parsed = urlparse(absolute)
    if parsed.path.startswith("/l/"):
        wrapped = parse_qs(parsed.query).get("uddg")
        if wrapped:
            return wrapped[0]
    return absolute


def parse_results(html: str, *, base: str = "https://duckduckgo.com") -> list[SearchResult]:
    """The organic results of a DuckDuckGo HTML results page, in page order (ads skipped)."""
    import lxml.html  # type: ignore[import-untyped]

    if not html.strip():
        return []
    try:
        document = lxml.html.document_fromstring(html.encode("utf-8", "surrogatepass"))
    except (ValueError, lxml.etree.ParserError):
        raise SearchError("the results page could not be parsed") from None
    results: list[SearchResult] = []
    seen: set[str] = set()
    for block in document.find_class("result"):
        classes = (block.get("class") or "").split()
        if "result--ad" in classes or "result--no-result" in classes:
            continue
        links = [a for a in block.find_class("result__a") if a.get("href")]
        if not links:
            continue
        link = links[0]
        url = _target(str(link.get("href")), base)
        if not url.startswith(("http://", "https://")) or url in seen:
            continue
        seen.add(url)
        snippets = block.find_class("result__snippet")
        snippet = " ".join(snippets[0].text_content().split()) if snippets else ""
        results.append(
            SearchResult(
                title=" ".join(link.text_content().split()),
                url=url,
                snippet=snippet,
            )
        )
    return results


@dataclass
class DuckDuckGoProvider(SearchProvider):
    """No key: `api_key` stays empty."""

    api_key: str = ""
    key: ClassVar[str] = "duckduckgo"
    label: ClassVar[str] = "DuckDuckGo (no key)"
    env_key: ClassVar[str] = ""
    default_base_url: ClassVar[str] = "https://html.duckduckgo.com"

    async def search(
        self, client: httpx2.AsyncClient, query: str, max_results: int, days: int | None
    ) -> SearchAnswer:
        form = {"q": query, "b": "", "kl": "wt-wt"}
        date_filter = _date_filter(days) if self.until is None else _range(days, self.until)
        if date_filter:
            form["df"] = date_filter
        headers = {
            "User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Dexter research agent",
            "Accept": "text/html",
            "Referer": f"{self.root}/",
        }
        response = await self._send(client, f"{self.root}/html/", data=form, headers=headers)
        text = response.text
        if response.status_code == 202 or any(m in text for m in _BOT_CHECK_MARKERS):
            raise SearchError(
                "DuckDuckGo asked for a bot check (too many searches in a short time); wait a "
                "few minutes, or set a search key (EXASEARCH_API_KEY, TAVILY_API_KEY, ...)"
            )
        if response.status_code >= 400:
            raise SearchError(f"HTTP {response.status_code}")
        return SearchAnswer(parse_results(text, base=self.root)[:max_results])


__all__ = ["DuckDuckGoProvider", "parse_results"]
