"""Retry is configured once, by the runtime: the router inside a finance tool and the memory
flush before compaction each ride out a 429 from the server, as the main loop does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dexter.cli.open_runtime import open_runtime
from dexter.config import load_settings
from dexter.models.types import AssistantMessage, UserMessage
from dexter.runtime import CLI, AgentSpec, Runtime
from dexter.session import MemoryHooks
from dexter.tools.base import ToolContext
from dexter.tools.finance.routed import RoutedTool
from tests.support.wire_server import Reply, WireServer, json_reply, sse

MODEL = "openai:qwen3-local"


def rate_limited() -> Reply:
    body = {"error": {"message": "slow down", "type": "rate_limit_exceeded"}}
    return json_reply(body, status=429, headers={"retry-after": "1"})


def completion(delta: dict[str, Any], finish: str = "stop") -> Reply:
    """One streamed turn, as these phases stream their calls."""
    base = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "qwen3-local"}
    return sse(
        [
            {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
            {**base, "choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 8}},
        ]
    )


@pytest.fixture
def runtime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wire_server: WireServer
) -> tuple[Runtime, list[float]]:
    monkeypatch.chdir(tmp_path)
    for name in ("DEXTER_ROUTER_MODEL", "DEXTER_MODEL", "FINANCIAL_DATASETS_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123456")
    monkeypatch.setenv("OPENAI_BASE_URL", wire_server.url + "/v1")
    monkeypatch.setenv("DEXTER_SEC_USER_AGENT", "Test t@example.com")
    monkeypatch.setenv("DEXTER_MEMORY", "on")
    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(seconds)

    return open_runtime(load_settings(), sleep=record), waits


async def test_the_router_retries_a_429_once_and_plans(
    runtime: tuple[Runtime, list[float]], wire_server: WireServer
) -> None:
    rt, waits = runtime
    call = {
        "index": 0,
        "id": "r1",
        "type": "function",
        "function": {"name": "income_statements", "arguments": json.dumps({"ticker": "AAPL"})},
    }
    wire_server.push(rate_limited(), completion({"tool_calls": [call]}, "tool_calls"))
    session = rt.agent(AgentSpec(model=MODEL, channel=CLI))
    router = session.tools.get("get_financials")
    assert isinstance(router, RoutedTool)
    planned = await router._plan("Apple revenue, last 3 years", ToolContext())
    assert [(c.name, json.loads(c.arguments)) for c in planned] == [
        ("income_statements", {"ticker": "AAPL"})
    ]
    assert waits == [1.0]  # Retry-After honoured, through the runtime's one sleep seam
    assert len(wire_server.requests) == 2
    await rt.aclose()


async def test_the_memory_flush_retries_a_429_once_and_writes(
    runtime: tuple[Runtime, list[float]], wire_server: WireServer
) -> None:
    rt, waits = runtime
    fact = "Holds 200 NVDA shares at a $410 average cost."
    wire_server.push(rate_limited(), completion({"content": json.dumps([fact])}))
    session = rt.agent(AgentSpec(model=MODEL, channel=CLI))
    [memory] = [hook for hook in session.agent.hooks if isinstance(hook, MemoryHooks)]
    said = [UserMessage("I hold 200 NVDA at $410."), AssistantMessage(content="Noted.")]
    await session.hooks.on_run_start(session.agent, "q")  # labels calls with the session
    await memory.before_compaction(session.agent, said)
    daily = memory.memory.files.daily_name(None)
    assert fact in memory.memory.files.read(daily)
    assert waits == [1.0]
    assert len(wire_server.requests) == 2
    # Both attempts are on the books: the 429 as a failed memory call.
    assert await rt.writer.drain(5)
    totals = rt.ledger.totals(session_id=session.session_id)
    assert (totals.calls, totals.failed_calls) == (2, 1)
    await rt.aclose()
