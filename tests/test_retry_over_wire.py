"""The whole loop over each real wire protocol: transient HTTP failures are retried by streaming
again (honouring Retry-After), authentication failures are not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dexter.agent.events import Done, Event, Retrying, TextDelta
from dexter.agent.loop import Agent, AgentConfig
from dexter.models.anthropic_messages import AnthropicMessagesModel
from dexter.models.base import Model
from dexter.models.openai_chat import OpenAIChatModel
from dexter.models.retry import RetryPolicy, with_retry
from dexter.tools.registry import ToolRegistry
from tests.support.wire_server import Reply, WireServer, json_reply, sse


def openai_text(text: str) -> Reply:
    base = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    return sse(
        [
            {**base, "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
            {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {**base, "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 3}},
        ]
    )


def anthropic_text(text: str) -> Reply:
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "m",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 9, "output_tokens": 1},
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 3},
        },
        {"type": "message_stop"},
    ]
    return sse(events, event_names=[e["type"] for e in events], done=False)


def openai_error(status: int, code: str, headers: dict[str, str] | None = None) -> Reply:
    body = {"error": {"message": f"error {status}", "type": code, "code": code}}
    return json_reply(body, status=status, headers=headers)


def anthropic_error(status: int, kind: str, headers: dict[str, str] | None = None) -> Reply:
    body = {"type": "error", "error": {"type": kind, "message": f"error {status}"}}
    return json_reply(body, status=status, headers=headers)


PROTOCOLS: dict[str, Any] = {
    "openai": (
        lambda url: OpenAIChatModel("m", api_key="sk-test", base_url=url + "/v1"),
        openai_text,
        lambda: openai_error(429, "rate_limit_exceeded", {"retry-after": "1"}),
        lambda: openai_error(500, "server_error"),
        lambda: openai_error(401, "invalid_api_key"),
    ),
    "anthropic": (
        lambda url: AnthropicMessagesModel("m", api_key="sk-ant-test", base_url=url),
        anthropic_text,
        lambda: anthropic_error(429, "rate_limit_error", {"retry-after": "1"}),
        lambda: anthropic_error(500, "api_error"),
        lambda: anthropic_error(401, "authentication_error"),
    ),
}


async def run_agent(model: Model, tmp_path: Path, delays: list[float]) -> list[Event]:
    async def record(seconds: float) -> None:
        delays.append(seconds)

    retried = with_retry(model, RetryPolicy(sleep=record))
    agent = Agent(retried, ToolRegistry(), config=AgentConfig(home=tmp_path))
    return [event async for event in agent.run("What is AAPL's P/E?")]


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_429_then_500_then_success(
    protocol: str, wire_server: WireServer, tmp_path: Path
) -> None:
    build, text_reply, rate_limited, server_error, _ = PROTOCOLS[protocol]
    wire_server.push(rate_limited(), server_error(), text_reply("P/E is 35.2."))
    delays: list[float] = []
    events = await run_agent(build(wire_server.url), tmp_path, delays)
    done = events[-1]
    assert isinstance(done, Done) and done.status == "answered"
    assert done.answer == "P/E is 35.2."
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "P/E is 35.2."
    assert len([e for e in events if isinstance(e, Retrying)]) == 2
    assert delays[0] == 1.0, "Retry-After: 1 is honoured"
    assert 0.8 <= delays[1] <= 1.2, "then exponential backoff"
    assert len(wire_server.requests) == 3


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_401_is_not_retried(protocol: str, wire_server: WireServer, tmp_path: Path) -> None:
    build, _, _, _, unauthorised = PROTOCOLS[protocol]
    wire_server.push(unauthorised())
    delays: list[float] = []
    events = await run_agent(build(wire_server.url), tmp_path, delays)
    done = events[-1]
    assert isinstance(done, Done) and done.status == "error"
    assert done.error is not None and "API key" in done.error
    assert delays == [] and len(wire_server.requests) == 1
