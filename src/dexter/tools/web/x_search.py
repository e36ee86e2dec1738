"""`x_search`: recent posts on X through the official API v2 (read-only), when
`X_BEARER_TOKEN` is set.

Three commands: `search` (the recent-search endpoint, last 7 days, X query operators allowed),
`profile` (a user's recent own posts) and `thread` (a conversation by its root post id). Results
can be sorted locally by likes, impressions or retweets, or by recency, filtered by a minimum
like count, and paged (about 100 posts a page, at most 5 pages).

A 429 waits for the reset the API names when that is at most a minute away and tries again (at
most three retries); a later reset fails at once, saying when to try again, so a run never
hangs for an hour on a rate limit.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from dexter.principal import ToolScope
from dexter.tools.base import Resources, Tool, ToolContext, ToolFailure, ToolResult
from dexter.tools.untrusted import wrap_untrusted

if TYPE_CHECKING:
    import httpx2

DEFAULT_BASE_URL = "https://api.x.com"
TOKEN_ENV = "X_BEARER_TOKEN"
MAX_WAIT_SECONDS = 60.0
MAX_RETRIES = 3
PAGE_PAUSE_SECONDS = 0.35
MAX_PAGES = 5
_TWEET_FIELDS = "created_at,public_metrics,author_id,conversation_id,entities"
_SINCE = re.compile(r"^(\d+)([mhd])$")

Sleep = Callable[[float], Awaitable[None]]


class XSearchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    command: Literal["search", "profile", "thread"] = Field(
        description="search: posts matching a query; profile: a user's recent posts; "
        "thread: the replies in a conversation"
    )
    query: str | None = Field(
        None,
        max_length=512,
        description="search: an X query (operators such as from:, $NVDA, lang:en work); "
        "thread: the id of the conversation's first post",
    )
    username: str | None = Field(None, max_length=30, description="profile: the handle, no @")
    sort: Literal["likes", "impressions", "retweets", "recent"] = Field(
        "likes", description="order of the results"
    )
    since: str | None = Field(
        None, description="only posts after this: 30m, 12h, 3d, or an ISO date/time"
    )
    min_likes: int | None = Field(None, ge=0, description="drop posts with fewer likes")
    limit: int = Field(15, ge=1, le=100, description="how many posts to return")
    pages: int = Field(1, ge=1, le=MAX_PAGES, description="search pages of ~100 posts to scan")


def parse_since(text: str | None, now: datetime) -> str | None:
    """An RFC 3339 start time for the API, or None when `text` is empty or not understood."""
    if not text or not text.strip():
        return None
    value = text.strip()
    match = _SINCE.match(value)
    if match:
        amount, unit = int(match[1]), match[2]
        delta = {"m": timedelta(minutes=amount), "h": timedelta(hours=amount)}.get(
            unit, timedelta(days=amount)
        )
        # The recent-search endpoint refuses start times older than seven days.
        start = max(now - delta, now - timedelta(days=7) + timedelta(minutes=1))
        return start.strftime("%Y-%m-%dT%H:%M:%SZ")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class XApi:
    """GETs against the X API with the bearer token and the rate-limit rule above."""

    def __init__(
        self,
        client: httpx2.AsyncClient,
        token: str,
        base_url: str,
        *,
        sleep: Sleep = asyncio.sleep,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self._token = token
        self.base = base_url.rstrip("/")
        self.sleep = sleep
        self.clock = clock

    async def get(self, path: str, params: dict[str, str]) -> dict[str, Any]:
        import httpx2

        headers = {"Authorization": f"Bearer {self._token}"}
        for attempt in range(MAX_RETRIES + 1):
            try:
                response = await self.client.get(self.base + path, params=params, headers=headers)
            except httpx2.TimeoutException:
                raise ToolFailure("[x_search] the X API timed out") from None
            except httpx2.HTTPError as exc:
                raise ToolFailure(f"[x_search] request failed ({type(exc).__name__})") from None
            if response.status_code == 429:
                wait = self._reset_wait(response.headers.get("x-rate-limit-reset"))
                if wait > MAX_WAIT_SECONDS or attempt == MAX_RETRIES:
                    raise ToolFailure(
                        f"[x_search] X API rate limited. Resets in {wait:.0f}s; try again then."
                    )
                await self.sleep(wait)
                continue
            if response.status_code == 401:
                raise ToolFailure(f"[x_search] X API refused the token (401); check {TOKEN_ENV}.")
            if response.status_code >= 400:
                body = " ".join(response.text[:300].split())
                raise ToolFailure(f"[x_search] X API {response.status_code}: {body}")
            try:
                data = response.json()
            except ValueError:
                raise ToolFailure("[x_search] the X API reply was not JSON") from None
            return data if isinstance(data, dict) else {}
        raise ToolFailure("[x_search] X API rate limited")  # not reached

    def _reset_wait(self, header: str | None) -> float:
        try:
            return max(float(header) - self.clock(), 1.0) if header else MAX_WAIT_SECONDS
        except ValueError:
            return MAX_WAIT_SECONDS


def _normalise(data: dict[str, Any], tweets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    users = {
        u.get("id"): u
        for u in (data.get("includes") or {}).get("users") or []
        if isinstance(u, dict)
    }
    out = []
    for tweet in tweets:
        user = users.get(tweet.get("author_id"), {})
        metrics = tweet.get("public_metrics") or {}
        username = str(user.get("username") or "?")
        urls = [
            str(u.get("expanded_url"))
            for u in (tweet.get("entities") or {}).get("urls") or []
            if isinstance(u, dict) and u.get("expanded_url")
        ]
        out.append(
            {
                "id": str(tweet.get("id")),
                "text": str(tweet.get("text") or ""),
                "author_id": tweet.get("author_id"),
                "username": username,
                "name": user.get("name") or "?",
                "created_at": tweet.get("created_at"),
                "metrics": {
                    "likes": int(metrics.get("like_count") or 0),
                    "retweets": int(metrics.get("retweet_count") or 0),
                    "replies": int(metrics.get("reply_count") or 0),
                    "impressions": int(metrics.get("impression_count") or 0),
                },
                "urls": urls,
                "tweet_url": f"https://x.com/{username}/status/{tweet.get('id')}",
            }
        )
    return out


async def search_posts(
    api: XApi,
    query: str,
    *,
    recency: bool,
    max_results: int,
    pages: int,
    start_time: str | None,
) -> list[dict[str, Any]]:
    params = {
        "query": query,
        "max_results": str(min(max(max_results, 10), 100)),
        "tweet.fields": _TWEET_FIELDS,
        "expansions": "author_id",
        "user.fields": "username,name,public_metrics",
        "sort_order": "recency" if recency else "relevancy",
    }
    if start_time:
        params["start_time"] = start_time
    found: list[dict[str, Any]] = []
    seen: set[str] = set()
    for page in range(min(pages, MAX_PAGES)):
        if page:
            await api.sleep(PAGE_PAUSE_SECONDS)
        data = await api.get("/2/tweets/search/recent", params)
        for tweet in _normalise(data, [t for t in data.get("data") or [] if isinstance(t, dict)]):
            if tweet["id"] not in seen:
                seen.add(tweet["id"])
                found.append(tweet)
        token = (data.get("meta") or {}).get("next_token")
        if not token:
            break
        params["pagination_token"] = str(token)
    return found


class XSearchTool(Tool[XSearchArgs]):
    name: ClassVar[str] = "x_search"
    scope: ClassVar[ToolScope] = "public"
    description: ClassVar[str] = (
        "Search recent posts on X (Twitter) for market chatter, sentiment and breaking news: "
        "command search (X query operators allowed, e.g. '$NVDA earnings lang:en'), profile "
        "(a user's recent posts) or thread (replies to a post id). Covers the last 7 days only; "
        "each page of ~100 posts costs API credit, so keep pages at 1 unless you need more. "
        "Posts are opinions, not facts: cite them as what people said."
    )
    Args: ClassVar[type[BaseModel]] = XSearchArgs
    concurrency_safe: ClassVar[bool] = True

    def __init__(
        self,
        token: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        transport: httpx2.AsyncBaseTransport | None = None,
        sleep: Sleep = asyncio.sleep,
        clock: Callable[[], float] = time.time,
        timeout: float = 20.0,
    ) -> None:
        self._token = token
        self.base_url = base_url
        self._transport = transport
        self._sleep = sleep
        self._clock = clock
        self._timeout = timeout

    def resources(self, args: XSearchArgs) -> Resources:
        return Resources.of(reads=["network"])

    async def run(self, args: XSearchArgs, ctx: ToolContext) -> ToolResult:

        from dexter.httpclient import async_client

        async with async_client(transport=self._transport, timeout=self._timeout) as client:
            api = XApi(client, self._token, self.base_url, sleep=self._sleep, clock=self._clock)
            now = datetime.fromtimestamp(self._clock(), UTC)
            if args.command == "search":
                return await self._search(api, args, now, ctx)
            if args.command == "profile":
                return await self._profile(api, args, ctx)
            return await self._thread(api, args, ctx)

    async def _search(
        self, api: XApi, args: XSearchArgs, now: datetime, ctx: ToolContext
    ) -> ToolResult:
        query = (args.query or "").strip()
        if not query:
            raise ToolFailure("[x_search] search needs a query")
        if "is:retweet" not in query:
            query += " -is:retweet"
        ctx.progress(f"Searching X: {query}")
        tweets = await search_posts(
            api,
            query,
            recency=args.sort == "recent",
            max_results=args.limit,
            pages=args.pages,
            start_time=parse_since(args.since, now),
        )
        if args.min_likes is not None:
            tweets = [t for t in tweets if t["metrics"]["likes"] >= args.min_likes]
        if args.sort != "recent":
            tweets.sort(key=lambda t: t["metrics"][args.sort], reverse=True)
        return self._render(f'X search "{query}"', tweets[: args.limit], len(tweets), ctx)

    async def _profile(self, api: XApi, args: XSearchArgs, ctx: ToolContext) -> ToolResult:
        username = (args.username or "").strip().lstrip("@")
        if not username:
            raise ToolFailure("[x_search] profile needs a username")
        ctx.progress(f"Reading @{username} on X")
        data = await api.get(
            f"/2/users/by/username/{username}",
            {"user.fields": "public_metrics,description,created_at"},
        )
        user = data.get("data")
        if not isinstance(user, dict):
            raise ToolFailure(f"[x_search] User @{username} not found")
        await api.sleep(PAGE_PAUSE_SECONDS)
        tweets = await search_posts(
            api,
            f"from:{username} -is:retweet -is:reply",
            recency=True,
            max_results=min(args.limit, 100),
            pages=1,
            start_time=None,
        )
        metrics = user.get("public_metrics") or {}
        header = (
            f"X profile @{username} ({user.get('name', '?')}; "
            f"{int(metrics.get('followers_count') or 0):,} followers): "
            f"{' '.join(str(user.get('description') or '').split())}"
        )
        return self._render(header, tweets[: args.limit], len(tweets), ctx)

    async def _thread(self, api: XApi, args: XSearchArgs, ctx: ToolContext) -> ToolResult:
        root = (args.query or "").strip()
        if not root.isdigit():
            raise ToolFailure("[x_search] thread needs the numeric id of the first post as query")
        ctx.progress(f"Reading X thread {root}")
        tweets = await search_posts(
            api,
            f"conversation_id:{root}",
            recency=True,
            max_results=100,
            pages=2,
            start_time=None,
        )
        return self._render(f"X thread {root}", tweets[: args.limit], len(tweets), ctx)

    def _render(
        self, header: str, tweets: list[dict[str, Any]], total: int, ctx: ToolContext
    ) -> ToolResult:
        lines = []
        for number, tweet in enumerate(tweets, 1):
            source = ctx.sources.add(
                f"X: @{tweet['username']} {tweet['created_at'] or ''}".strip(), tweet["tweet_url"]
            )
            m = tweet["metrics"]
            lines.append(
                f"{number}. [{source}] @{tweet['username']} ({tweet['created_at'] or 'undated'}; "
                f"{m['likes']:,} likes, {m['retweets']:,} reposts, {m['impressions']:,} views)"
            )
            lines.append("   " + " ".join(tweet["text"].split()))
            lines.append(f"   {tweet['tweet_url']}")
            if tweet["urls"]:
                lines.append("   links: " + ", ".join(tweet["urls"]))
        body = "\n".join(lines) if lines else "(no posts)"
        content = f"{header}: {len(tweets)} of {total} post(s)\n" + wrap_untrusted("x_search", body)
        return ToolResult(content, data={"tweets": tweets, "total_fetched": total})


__all__ = ["TOKEN_ENV", "XSearchArgs", "XSearchTool", "parse_since"]
