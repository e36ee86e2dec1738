"""The `web_search` tool: Exa, Tavily, Perplexity and LangSearch, tried in order until one answers.

Each provider is one POST over httpx2. A provider that fails (HTTP error, timeout, unreadable or
empty reply) hands over to the next; the output names the provider that answered and the ones
that failed before it. Base URLs can be pointed elsewhere (constructor argument, or the
`DEXTER_<NAME>_BASE_URL` environment variable via `search_providers_from_settings`).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from dexter.config import Settings, get_secret
from dexter.errors import DexterError
from dexter.principal import ToolScope
from dexter.tools.base import Resources, Tool, ToolContext, ToolFailure, ToolResult
from dexter.tools.untrusted import wrap_untrusted

if TYPE_CHECKING:
    import httpx2

DEFAULT_TIMEOUT = 20.0
MAX_SNIPPET_CHARS = 700
ERROR_BODY_CHARS = 200
PREFERRED_SETTING = "webSearchPreferredProvider"


@dataclass(frozen=True)
class SearchResult:
    title: str
    url: str
    date: str | None = None
    snippet: str = ""


@dataclass(frozen=True)
class SearchAnswer:
    results: list[SearchResult]
    # A synthesised answer some providers return alongside the links (Perplexity, Tavily).
    answer: str | None = None


class SearchError(DexterError):
    """One provider's failure; the message is shown to the model next to the provider's name."""


@dataclass
class SearchProvider(ABC):
    api_key: str = field(repr=False)
    base_url: str | None = None
    # Research as of this date: nothing published after it (the run's as-of date).
    until: date | None = None

    key: ClassVar[str]  # "exa": the value `webSearchPreferredProvider` uses
    label: ClassVar[str]  # "Exa"
    env_key: ClassVar[str]  # "EXASEARCH_API_KEY"
    default_base_url: ClassVar[str]

    @property
    def root(self) -> str:
        return (self.base_url or self.default_base_url).rstrip("/")

    @abstractmethod
    async def search(
        self, client: httpx2.AsyncClient, query: str, max_results: int, days: int | None
    ) -> SearchAnswer: ...

    async def _send(self, client: httpx2.AsyncClient, url: str, **request: Any) -> httpx2.Response:
        """POST to `url`; a timeout or transport failure becomes this provider's SearchError."""
        import httpx2

        try:
            return await client.post(url, **request)
        except httpx2.TimeoutException:
            raise SearchError("timed out") from None
        except httpx2.HTTPError as exc:
            raise SearchError(f"request failed ({type(exc).__name__}: {exc})") from None

    async def _post(
        self, client: httpx2.AsyncClient, url: str, body: dict[str, Any], headers: dict[str, str]
    ) -> Any:
        response = await self._send(client, url, json=body, headers=headers)
        if response.status_code >= 400:
            text = " ".join(response.text[:ERROR_BODY_CHARS].split())
            raise SearchError(f"HTTP {response.status_code}: {text}".rstrip(": "))
        try:
            return json.loads(response.content)
        except ValueError:
            raise SearchError("reply was not valid JSON") from None


def _not_after(result: SearchResult, until: date | None) -> bool:
    """Results dated after the as-of date are dropped (undated ones cannot be told apart)."""
    return until is None or result.date is None or result.date[:10] <= until.isoformat()


def _str(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _date(value: Any) -> str | None:
    text = _str(value)
    return text[:10] if text else None


def _recency(days: int) -> str:
    if days <= 1:
        return "day"
    if days <= 7:
        return "week"
    if days <= 31:
        return "month"
    return "year"


def _items(data: Any, *path: str) -> list[dict[str, Any]]:
    node = data
    for key in path:
        if not isinstance(node, dict):
            raise SearchError(f"unexpected reply shape (no {key!r})")
        node = node.get(key)
    if not isinstance(node, list):
        raise SearchError(f"unexpected reply shape ({'.'.join(path)} is not a list)")
    return [item for item in node if isinstance(item, dict)]


@dataclass
class ExaProvider(SearchProvider):
    key: ClassVar[str] = "exa"
    label: ClassVar[str] = "Exa"
    env_key: ClassVar[str] = "EXASEARCH_API_KEY"
    default_base_url: ClassVar[str] = "https://api.exa.ai"

    async def search(
        self, client: httpx2.AsyncClient, query: str, max_results: int, days: int | None
    ) -> SearchAnswer:
        body: dict[str, Any] = {
            "query": query,
            "numResults": max_results,
            "type": "auto",
            "contents": {"highlights": True},
        }
        if days:
            start = datetime.now(UTC) - timedelta(days=days)
            body["startPublishedDate"] = start.strftime("%Y-%m-%dT%H:%M:%S.000Z")
        data = await self._post(client, f"{self.root}/search", body, {"x-api-key": self.api_key})
        results = []
        for item in _items(data, "results"):
            highlights = item.get("highlights")
            snippet = (
                " … ".join(h for h in highlights if isinstance(h, str))
                if isinstance(highlights, list)
                else ""
            )
            results.append(
                SearchResult(
                    title=_str(item.get("title")),
                    url=_str(item.get("url")),
                    date=_date(item.get("publishedDate")),
                    snippet=snippet or _str(item.get("summary")) or _str(item.get("text")),
                )
            )
        return SearchAnswer(results)


@dataclass
class TavilyProvider(SearchProvider):
    key: ClassVar[str] = "tavily"
    label: ClassVar[str] = "Tavily"
    env_key: ClassVar[str] = "TAVILY_API_KEY"
    default_base_url: ClassVar[str] = "https://api.tavily.com"

    async def search(
        self, client: httpx2.AsyncClient, query: str, max_results: int, days: int | None
    ) -> SearchAnswer:
        body: dict[str, Any] = {
            "query": query,
            "max_results": max_results,
            "search_depth": "basic",
            "topic": "general",
        }
        if days:
            body["time_range"] = _recency(days)
        headers = {"Authorization": f"Bearer {self.api_key}"}
        data = await self._post(client, f"{self.root}/search", body, headers)
        results = [
            SearchResult(
                title=_str(item.get("title")),
                url=_str(item.get("url")),
                date=_date(item.get("published_date")),
                snippet=_str(item.get("content")),
            )
            for item in _items(data, "results")
        ]
        return SearchAnswer(results, _str(data.get("answer")) or None)


@dataclass
class PerplexityProvider(SearchProvider):
    key: ClassVar[str] = "perplexity"
    label: ClassVar[str] = "Perplexity"
    env_key: ClassVar[str] = "PERPLEXITY_API_KEY"
    default_base_url: ClassVar[str] = "https://api.perplexity.ai"
    model: str = "sonar"

    async def search(
        self, client: httpx2.AsyncClient, query: str, max_results: int, days: int | None
    ) -> SearchAnswer:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "user", "content": query}],
            "max_tokens": 4096,
        }
        if days:
            body["search_recency_filter"] = _recency(days)
        headers = {"Authorization": f"Bearer {self.api_key}"}
        data = await self._post(client, f"{self.root}/chat/completions", body, headers)
        try:
            answer = _str(data["choices"][0]["message"]["content"])
        except (KeyError, IndexError, TypeError):
            raise SearchError("unexpected reply shape (no choices[0].message.content)") from None
        results: list[SearchResult] = []
        seen: set[str] = set()
        raw = data.get("search_results")
        for item in raw if isinstance(raw, list) else []:
            if isinstance(item, dict) and _str(item.get("url")) not in seen:
                seen.add(_str(item.get("url")))
                results.append(
                    SearchResult(
                        title=_str(item.get("title")),
                        url=_str(item.get("url")),
                        date=_date(item.get("date")),
                        snippet=_str(item.get("snippet")),
                    )
                )
        citations = data.get("citations")
        for url in citations if isinstance(citations, list) else []:
            if isinstance(url, str) and url.strip() and url.strip() not in seen:
                seen.add(url.strip())
                results.append(SearchResult(title=url.strip(), url=url.strip()))
        return SearchAnswer(results[:max_results], answer or None)


@dataclass
class LangSearchProvider(SearchProvider):
    key: ClassVar[str] = "langsearch"
    label: ClassVar[str] = "LangSearch"
    env_key: ClassVar[str] = "LANGSEARCH_API_KEY"
    default_base_url: ClassVar[str] = "https://api.langsearch.com"

    async def search(
        self, client: httpx2.AsyncClient, query: str, max_results: int, days: int | None
    ) -> SearchAnswer:
        body: dict[str, Any] = {"query": query, "summary": True, "count": max_results}
        if days:
            body["freshness"] = {
                "day": "oneDay",
                "week": "oneWeek",
                "month": "oneMonth",
                "year": "oneYear",
            }[_recency(days)]
        headers = {"Authorization": f"Bearer {self.api_key}"}
        data = await self._post(client, f"{self.root}/v1/web-search", body, headers)
        if isinstance(data, dict) and data.get("code") not in (None, 200):
            raise SearchError(f"error code {data.get('code')}: {_str(data.get('msg'))}")
        results: list[SearchResult] = []
        seen: set[str] = set()
        for item in _items(data, "data", "webPages", "value"):
            url = _str(item.get("url"))
            if url in seen:
                continue
            seen.add(url)
            results.append(
                SearchResult(
                    title=_str(item.get("name")),
                    url=url,
                    date=_date(item.get("datePublished")),
                    snippet=_str(item.get("summary")) or _str(item.get("snippet")),
                )
            )
        return SearchAnswer(results)


# Preference order when several keys are set.
PROVIDER_CLASSES: tuple[type[SearchProvider], ...] = (
    ExaProvider,
    TavilyProvider,
    PerplexityProvider,
    LangSearchProvider,
)


KEYLESS_ENV = "DEXTER_KEYLESS_SEARCH"
KEYLESS_SETTING = "webSearchKeyless"


def keyless_search_enabled(settings: Settings) -> bool:
    raw = settings.env.get(KEYLESS_ENV)
    if raw is None:
        from dexter.settings_model import TopLevel

        return settings.section(TopLevel).web_search_keyless
    return raw.strip().lower() not in {"0", "false", "off", "no"}


def search_providers_from_settings(settings: Settings) -> list[SearchProvider]:
    """A provider for each key that is set, in preference order (Exa, Tavily, Perplexity,
    LangSearch), then the key-less DuckDuckGo provider (unless `DEXTER_KEYLESS_SEARCH=off` or
    `"webSearchKeyless": false`); the `webSearchPreferredProvider` setting moves the one it
    names to the front."""
    from dexter.tools.web.duckduckgo import DuckDuckGoProvider

    providers: list[SearchProvider] = []
    for cls in PROVIDER_CLASSES:
        api_key = get_secret(settings, cls.env_key)
        if api_key:
            base = settings.env.get(f"DEXTER_{cls.key.upper()}_BASE_URL", "").strip() or None
            providers.append(cls(api_key=api_key, base_url=base))
    if keyless_search_enabled(settings):
        base = settings.env.get("DEXTER_DUCKDUCKGO_BASE_URL", "").strip() or None
        providers.append(DuckDuckGoProvider(base_url=base))
    from dexter.settings_model import TopLevel

    preferred = settings.section(TopLevel).web_search_preferred_provider
    if preferred and preferred.strip():
        wanted = preferred.strip().lower()
        providers.sort(key=lambda p: p.key != wanted)  # stable: the rest keep their order
    return providers


class WebSearchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=400)
    max_results: int = Field(5, ge=1, le=10)
    days: int | None = Field(None, ge=1, le=3650, description="Only the last N days (news).")


class WebSearchTool(Tool[WebSearchArgs]):
    name: ClassVar[str] = "web_search"
    scope: ClassVar[ToolScope] = "public"
    description: ClassVar[str] = (
        "Search the web and get results with titles, URLs, dates and snippets. For news, "
        "commentary, events and anything the data tools lack; read a page with web_fetch."
    )
    Args: ClassVar[type[BaseModel]] = WebSearchArgs
    concurrency_safe: ClassVar[bool] = True

    def __init__(
        self,
        providers: list[SearchProvider],
        *,
        transport: httpx2.AsyncBaseTransport | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.providers = list(providers)
        self._transport = transport
        self._timeout = timeout

    def resources(self, args: WebSearchArgs) -> Resources:
        return Resources.of(reads=["network"])

    async def run(self, args: WebSearchArgs, ctx: ToolContext) -> ToolResult:

        if not self.providers:
            keys = ", ".join(cls.env_key for cls in PROVIDER_CLASSES)
            raise ToolFailure(f"No web search provider is configured; set one of {keys}.")
        query = args.query.strip()
        failures: list[str] = []
        from dexter.httpclient import async_client

        async with async_client(transport=self._transport, timeout=self._timeout) as client:
            for provider in self.providers:
                ctx.progress(f"Searching the web with {provider.label}: {query}")
                try:
                    answer = await provider.search(client, query, args.max_results, args.days)
                except SearchError as exc:
                    failures.append(f"{provider.label}: {exc}")
                    continue
                results = [r for r in answer.results if r.url and _not_after(r, provider.until)]
                results = results[: args.max_results]
                if not results and not answer.answer:
                    failures.append(f"{provider.label}: no results")
                    continue
                return self._render(query, provider, answer.answer, results, failures, ctx)
        raise ToolFailure("[Web Search] All providers failed: " + " | ".join(failures))

    def _render(
        self,
        query: str,
        provider: SearchProvider,
        answer: str | None,
        results: list[SearchResult],
        failures: list[str],
        ctx: ToolContext,
    ) -> ToolResult:
        lines: list[str] = []
        if answer:
            lines += [f"Summary from {provider.label}:", answer, ""]
        data: list[dict[str, Any]] = []
        for number, result in enumerate(results, 1):
            title = " ".join(result.title.split()) or result.url
            source_id = ctx.sources.add(f"Web: {title}", result.url)
            dated = f" ({result.date})" if result.date else ""
            lines.append(f"{number}. [{source_id}] {title}{dated}")
            lines.append(f"   {result.url}")
            snippet = " ".join(result.snippet.split())
            if snippet:
                if len(snippet) > MAX_SNIPPET_CHARS:
                    snippet = snippet[:MAX_SNIPPET_CHARS].rstrip() + " …"
                lines.append(f"   {snippet}")
            data.append(
                {
                    "id": source_id,
                    "title": title,
                    "url": result.url,
                    "date": result.date,
                    "snippet": snippet,
                }
            )
        if not results:
            lines.append("(no result links)")
        header = f'Web search for "{query}" (answered by {provider.label}'
        if failures:
            header += "; earlier providers failed: " + " | ".join(failures)
        header += f"). {len(results)} result(s):"
        content = header + "\n" + wrap_untrusted(f"web_search:{provider.key}", "\n".join(lines))
        return ToolResult(
            content,
            data={"provider": provider.key, "results": data, "answer": answer, "failed": failures},
        )
