"""`x_search` against a local server that speaks the X API v2: search, profile, thread, and
rate limits that reset within a minute (waited for) or later (refused at once)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from dexter.config import Settings
from dexter.tools.base import ToolContext, ToolFailure
from dexter.tools.web import web_tools
from dexter.tools.web.x_search import XSearchArgs, XSearchTool, parse_since
from tests.support.wire_server import WireServer, json_reply

NOW = 1_764_600_000.0  # a fixed clock: 2025-12-01T14:40:00Z


def page(ids: list[int], next_token: str | None = None) -> dict[str, Any]:
    return {
        "data": [
            {
                "id": str(i),
                "text": f"post {i} about $NVDA",
                "author_id": "u1" if i % 2 else "u2",
                "created_at": "2025-11-30T10:00:00.000Z",
                "public_metrics": {
                    "like_count": i * 10,
                    "retweet_count": i,
                    "impression_count": 1000 - i,
                },
                "entities": {"urls": [{"expanded_url": f"https://example.com/{i}"}]},
            }
            for i in ids
        ],
        "includes": {
            "users": [
                {"id": "u1", "username": "alice", "name": "Alice"},
                {"id": "u2", "username": "bob", "name": "Bob"},
            ]
        },
        "meta": {"next_token": next_token} if next_token else {"result_count": len(ids)},
    }


def query_of(path: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(path).query).items()}


class Sleeps:
    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def tool(server: WireServer, sleeps: Sleeps) -> XSearchTool:
    return XSearchTool("x-token-secret", base_url=server.url, sleep=sleeps, clock=lambda: NOW)


async def test_search_pages_sorts_by_likes_and_cites_each_post(wire_server: WireServer) -> None:
    wire_server.push(json_reply(page([1, 2, 3], "t2")), json_reply(page([3, 4])))
    sleeps = Sleeps()
    ctx = ToolContext()
    args = XSearchArgs(command="search", query="$NVDA earnings", pages=2, limit=3, since="1d")
    result = await tool(wire_server, sleeps).run(args, ctx)
    first, second = wire_server.requests
    assert first.headers["authorization"] == "Bearer x-token-secret"
    params = query_of(first.path)
    assert params["query"] == "$NVDA earnings -is:retweet"
    assert params["sort_order"] == "relevancy" and params["max_results"] == "10"
    assert params["start_time"] == "2025-11-30T14:40:00Z"
    assert query_of(second.path)["pagination_token"] == "t2"
    assert [t["id"] for t in result.data["tweets"]] == ["4", "3", "2"]  # deduped, by likes
    assert result.data["total_fetched"] == 4
    assert "https://x.com/bob/status/4" in result.content and "<untrusted_content" in result.content
    assert len(ctx.sources) == 3
    assert "x-token-secret" not in result.content


async def test_profile_and_thread(wire_server: WireServer) -> None:
    wire_server.push(
        json_reply(
            {
                "data": {
                    "id": "u1",
                    "username": "alice",
                    "name": "Alice",
                    "description": "GPU fan",
                    "public_metrics": {"followers_count": 1200},
                }
            }
        ),
        json_reply(page([1])),
        json_reply(page([5, 6])),
    )
    sleeps = Sleeps()
    x = tool(wire_server, sleeps)
    profile = await x.run(
        XSearchArgs(command="profile", username="@alice", sort="recent"), ToolContext()
    )
    assert "1,200 followers" in profile.content
    assert query_of(wire_server.requests[1].path)["query"] == "from:alice -is:retweet -is:reply"
    thread = await x.run(XSearchArgs(command="thread", query="555"), ToolContext())
    assert query_of(wire_server.requests[2].path)["query"] == "conversation_id:555"
    assert len(thread.data["tweets"]) == 2


async def test_unknown_user_and_missing_arguments(wire_server: WireServer) -> None:
    wire_server.push(json_reply({"errors": [{"detail": "not found"}]}))
    x = tool(wire_server, Sleeps())
    with pytest.raises(ToolFailure, match="User @nobody not found"):
        await x.run(XSearchArgs(command="profile", username="nobody"), ToolContext())
    with pytest.raises(ToolFailure, match="needs a query"):
        await x.run(XSearchArgs(command="search"), ToolContext())


async def test_a_rate_limit_that_resets_within_a_minute_is_waited_for(
    wire_server: WireServer,
) -> None:
    reset = {"x-rate-limit-reset": str(int(NOW + 3))}
    wire_server.push(json_reply({"title": "Too Many Requests"}, 429, reset), json_reply(page([1])))
    sleeps = Sleeps()
    result = await tool(wire_server, sleeps).run(
        XSearchArgs(command="search", query="q"), ToolContext()
    )
    assert sleeps.calls == [3.0]
    assert len(result.data["tweets"]) == 1


async def test_repeated_rate_limits_give_up_after_three_retries(wire_server: WireServer) -> None:
    reset = {"x-rate-limit-reset": str(int(NOW + 2))}
    wire_server.push(*[json_reply({}, 429, reset) for _ in range(4)])
    sleeps = Sleeps()
    with pytest.raises(ToolFailure, match="rate limited"):
        await tool(wire_server, sleeps).run(XSearchArgs(command="search", query="q"), ToolContext())
    assert len(wire_server.requests) == 4 and sleeps.calls == [2.0, 2.0, 2.0]


async def test_a_rate_limit_that_resets_in_an_hour_fails_at_once(wire_server: WireServer) -> None:
    wire_server.push(json_reply({}, 429, {"x-rate-limit-reset": str(int(NOW + 3600))}))
    sleeps = Sleeps()
    with pytest.raises(ToolFailure, match="Resets in 3600s"):
        await tool(wire_server, sleeps).run(XSearchArgs(command="search", query="q"), ToolContext())
    assert sleeps.calls == []


def test_since_shorthand_and_iso() -> None:
    from datetime import UTC, datetime

    now = datetime(2025, 12, 1, 12, 0, tzinfo=UTC)
    assert parse_since("2h", now) == "2025-12-01T10:00:00Z"
    assert parse_since("30d", now) == "2025-11-24T12:01:00Z"  # capped at the API's 7 days
    assert parse_since("2025-11-28", now) == "2025-11-28T00:00:00Z"
    assert parse_since("soon", now) is None


def test_bound_only_with_a_token(tmp_path: Path) -> None:
    without = [t.name for t in web_tools(Settings(home=tmp_path, env={}))]
    assert "x_search" not in without
    settings = Settings(home=tmp_path, env={"X_BEARER_TOKEN": "tok-123456789"})
    assert "x_search" in [t.name for t in web_tools(settings)]
    assert json.dumps(XSearchArgs.model_json_schema())  # a schema providers accept
