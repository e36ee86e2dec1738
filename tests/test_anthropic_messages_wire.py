"""AnthropicMessagesModel against a real local HTTP server speaking the Messages wire format.

The model speaks HTTP and parses the SSE stream itself, exactly as it would against
api.anthropic.com; every request it sent is recorded by the server, so the tests check both
directions of the wire.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest

from dexter.models.anthropic_messages import AnthropicMessagesModel, parse_retry_after
from dexter.models.base import Model
from dexter.models.errors import ErrorKind, ModelError
from dexter.models.types import (
    AssistantMessage,
    ModelRequest,
    ModelResponse,
    ReasoningChunk,
    StreamChunk,
    SystemMessage,
    TextChunk,
    ToolCall,
    ToolCallChunk,
    ToolMessage,
    ToolSpec,
    UserMessage,
)
from tests.support.wire_server import Reply, WireServer, json_reply, sse

MODEL = "claude-sonnet-4-6"

PRICE_TOOL = ToolSpec(
    name="get_price",
    description="Latest share price for a ticker.",
    parameters={
        "type": "object",
        "properties": {"ticker": {"type": "string"}},
        "required": ["ticker"],
    },
)


# ---- wire helpers ----------------------------------------------------------------------------


def anthropic_sse(*events: dict[str, Any], chunk_delay: float = 0.0) -> Reply:
    """Anthropic SSE: every event is named after its `type`; there is no [DONE] sentinel."""
    reply = sse(list(events), event_names=[e["type"] for e in events], done=False)
    reply.chunk_delay = chunk_delay
    return reply


def message_start(
    input_tokens: int = 12, cache_read: int = 0, cache_write: int = 0
) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": input_tokens,
                "output_tokens": 1,
                "cache_read_input_tokens": cache_read,
                "cache_creation_input_tokens": cache_write,
            },
        },
    }


def block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def delta(index: int, body: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": body}


def text_delta(index: int, text: str) -> dict[str, Any]:
    return delta(index, {"type": "text_delta", "text": text})


def json_delta(index: int, fragment: str) -> dict[str, Any]:
    return delta(index, {"type": "input_json_delta", "partial_json": fragment})


def block_stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def message_end(stop_reason: str, output_tokens: int = 20) -> list[dict[str, Any]]:
    return [
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        },
        {"type": "message_stop"},
    ]


def text_reply(*pieces: str) -> Reply:
    return anthropic_sse(
        message_start(),
        block_start(0, {"type": "text", "text": ""}),
        {"type": "ping"},
        *[text_delta(0, piece) for piece in pieces],
        block_stop(0),
        *message_end("end_turn"),
    )


def error_reply(
    status: int, error_type: str, message: str, headers: dict[str, str] | None = None
) -> Reply:
    body = {"type": "error", "error": {"type": error_type, "message": message}}
    return json_reply(body, status=status, headers={"request-id": "req_abc", **(headers or {})})


def make_model(server: WireServer, **kwargs: Any) -> AnthropicMessagesModel:
    return AnthropicMessagesModel(MODEL, api_key="sk-ant-test", base_url=server.url, **kwargs)


def ask(text: str = "What is AAPL trading at?", **kwargs: Any) -> ModelRequest:
    return ModelRequest(
        messages=[SystemMessage("You are Dexter, a financial research agent."), UserMessage(text)],
        **kwargs,
    )


async def collect(model: Model, request: ModelRequest) -> list[StreamChunk]:
    return [chunk async for chunk in model.stream(request)]


def final(chunks: Sequence[StreamChunk]) -> ModelResponse:
    assert isinstance(chunks[-1], ModelResponse)
    return chunks[-1]


# ---- streaming: text, tools, thinking --------------------------------------------------------


async def test_text_arrives_in_deltas_and_assembles(wire_server: WireServer) -> None:
    wire_server.push(text_reply("AAPL closed ", "at $231.40", " on Friday."))
    model = make_model(wire_server)

    chunks = await collect(model, ask())

    assert isinstance(model, Model)
    assert [c.text for c in chunks if isinstance(c, TextChunk)] == [
        "AAPL closed ",
        "at $231.40",
        " on Friday.",
    ]
    response = final(chunks)
    assert response.message.content == "AAPL closed at $231.40 on Friday."
    assert response.message.tool_calls == ()
    assert response.stop_reason == "stop"

    sent = wire_server.requests[-1]
    assert sent.path == "/v1/messages"
    # SDK 2.x sends the API key as a bearer token (1.x used x-api-key); either way it must go out.
    assert sent.headers["authorization"] == "Bearer sk-ant-test"
    assert "anthropic-version" in sent.headers
    body = sent.json()
    assert body["model"] == MODEL
    assert body["stream"] is True
    assert body["max_tokens"] == 16000
    assert body["messages"][0]["role"] == "user"
    assert body["messages"][0]["content"][0]["text"] == "What is AAPL trading at?"


async def test_system_prompt_is_cached_and_usage_counts_cache_reads(
    wire_server: WireServer,
) -> None:
    wire_server.push(
        anthropic_sse(
            message_start(input_tokens=40, cache_read=9000, cache_write=500),
            block_start(0, {"type": "text", "text": ""}),
            text_delta(0, "Done."),
            block_stop(0),
            *message_end("end_turn", output_tokens=7),
        )
    )
    model = make_model(wire_server)

    response = final(await collect(model, ask()))

    body = wire_server.requests[-1].json()
    assert body["system"] == [
        {
            "type": "text",
            "text": "You are Dexter, a financial research agent.",
            "cache_control": {"type": "ephemeral"},
        }
    ]
    # The system text never leaks into the conversation as a message.
    assert [m["role"] for m in body["messages"]] == ["user"]
    usage = response.usage
    assert usage.input_tokens == 40 + 9000 + 500
    assert usage.output_tokens == 7
    assert usage.cached_tokens == 9000


async def test_two_parallel_tool_calls_assemble_from_json_fragments(
    wire_server: WireServer,
) -> None:
    wire_server.push(
        anthropic_sse(
            message_start(),
            block_start(0, {"type": "text", "text": ""}),
            text_delta(0, "Checking both."),
            block_stop(0),
            block_start(1, {"type": "tool_use", "id": "toolu_a", "name": "get_price", "input": {}}),
            json_delta(1, ""),
            json_delta(1, '{"tick'),
            json_delta(1, 'er": "AA'),
            json_delta(1, 'PL"}'),
            block_stop(1),
            block_start(2, {"type": "tool_use", "id": "toolu_b", "name": "get_price", "input": {}}),
            json_delta(2, '{"ticker":'),
            json_delta(2, ' "NVDA"}'),
            block_stop(2),
            *message_end("tool_use"),
        )
    )
    model = make_model(wire_server)

    chunks = await collect(model, ask("AAPL and NVDA prices?", tools=[PRICE_TOOL]))

    tool_chunks = [c for c in chunks if isinstance(c, ToolCallChunk)]
    assert tool_chunks[0] == ToolCallChunk(index=0, id="toolu_a", name="get_price")
    assert [c.index for c in tool_chunks if c.id] == [0, 1]
    by_index: dict[int, str] = {}
    for c in tool_chunks:
        by_index[c.index] = by_index.get(c.index, "") + c.arguments
    assert json.loads(by_index[0]) == {"ticker": "AAPL"}
    assert json.loads(by_index[1]) == {"ticker": "NVDA"}

    response = final(chunks)
    assert response.stop_reason == "tool_calls"
    assert response.message.content == "Checking both."
    calls = response.message.tool_calls
    assert [(c.id, c.name) for c in calls] == [("toolu_a", "get_price"), ("toolu_b", "get_price")]
    assert [json.loads(c.arguments) for c in calls] == [{"ticker": "AAPL"}, {"ticker": "NVDA"}]

    body = wire_server.requests[-1].json()
    assert body["tools"] == [
        {
            "name": "get_price",
            "description": "Latest share price for a ticker.",
            "input_schema": PRICE_TOOL.parameters,
        }
    ]
    assert "tool_choice" not in body


async def test_tool_call_without_arguments_gets_empty_object(wire_server: WireServer) -> None:
    wire_server.push(
        anthropic_sse(
            message_start(),
            block_start(
                0, {"type": "tool_use", "id": "toolu_x", "name": "list_watchlist", "input": {}}
            ),
            block_stop(0),
            *message_end("tool_use"),
        )
    )
    response = final(await collect(make_model(wire_server), ask()))
    assert response.message.tool_calls == (ToolCall("toolu_x", "list_watchlist", "{}"),)


async def test_thinking_streams_and_is_echoed_with_signature(wire_server: WireServer) -> None:
    wire_server.push(
        anthropic_sse(
            message_start(),
            block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
            delta(0, {"type": "thinking_delta", "thinking": "Need the latest price, "}),
            delta(0, {"type": "thinking_delta", "thinking": "so call the tool."}),
            delta(0, {"type": "signature_delta", "signature": "EqQBCkYIARgCKkD"}),
            delta(0, {"type": "signature_delta", "signature": "sig-tail=="}),
            block_stop(0),
            block_start(1, {"type": "redacted_thinking", "data": "opaque-redacted"}),
            block_stop(1),
            block_start(2, {"type": "tool_use", "id": "toolu_1", "name": "get_price", "input": {}}),
            json_delta(2, '{"ticker": "AAPL"}'),
            block_stop(2),
            *message_end("tool_use"),
        ),
        text_reply("AAPL is at $231.40."),
    )
    model = make_model(wire_server, thinking_budget=4000)
    first = ask(tools=[PRICE_TOOL])

    chunks = await collect(model, first)

    reasoning = [c.text for c in chunks if isinstance(c, ReasoningChunk)]
    assert reasoning == ["Need the latest price, ", "so call the tool."]
    turn = final(chunks).message
    assert turn.reasoning == "Need the latest price, so call the tool."
    assert turn.tool_calls == (ToolCall("toolu_1", "get_price", '{"ticker": "AAPL"}'),)
    body = wire_server.requests[-1].json()
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4000}

    follow_up = ModelRequest(
        messages=[
            *first.messages,
            turn,
            ToolMessage("toolu_1", "get_price", '{"price": 231.4}'),
        ],
        tools=[PRICE_TOOL],
    )
    await collect(model, follow_up)

    assistant = wire_server.requests[-1].json()["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"] == [
        {
            "type": "thinking",
            "thinking": "Need the latest price, so call the tool.",
            "signature": "EqQBCkYIARgCKkDsig-tail==",
        },
        {"type": "redacted_thinking", "data": "opaque-redacted"},
        {"type": "tool_use", "id": "toolu_1", "name": "get_price", "input": {"ticker": "AAPL"}},
    ]


async def test_two_thinking_blocks_are_separated_in_stream_and_result(
    wire_server: WireServer,
) -> None:
    wire_server.push(
        anthropic_sse(
            message_start(),
            block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
            delta(0, {"type": "thinking_delta", "thinking": "First."}),
            delta(0, {"type": "signature_delta", "signature": "s1"}),
            block_stop(0),
            block_start(1, {"type": "thinking", "thinking": "", "signature": ""}),
            delta(1, {"type": "thinking_delta", "thinking": "Second."}),
            delta(1, {"type": "signature_delta", "signature": "s2"}),
            block_stop(1),
            block_start(2, {"type": "text", "text": ""}),
            text_delta(2, "Answer."),
            block_stop(2),
            *message_end("end_turn"),
        )
    )
    chunks = await collect(make_model(wire_server), ask())
    streamed = "".join(c.text for c in chunks if isinstance(c, ReasoningChunk))
    turn = final(chunks).message
    assert streamed == turn.reasoning == "First.\n\nSecond."
    assert [b["thinking"] for b in turn.provider_data["anthropic_thinking"]] == [
        "First.",
        "Second.",
    ]


# ---- request mapping -------------------------------------------------------------------------


async def test_tool_results_and_follow_up_merge_into_one_user_turn(
    wire_server: WireServer,
) -> None:
    wire_server.push(text_reply("ok"))
    history = [
        SystemMessage("You are Dexter."),
        UserMessage("Compare AAPL and NVDA."),
        AssistantMessage(
            content="Fetching both.",
            tool_calls=(
                ToolCall("toolu_a", "get_price", '{"ticker": "AAPL"}'),
                ToolCall("toolu_b", "get_price", '{"ticker": "NVD'),  # truncated JSON
            ),
        ),
        ToolMessage("toolu_a", "get_price", '{"price": 231.4}'),
        ToolMessage("toolu_b", "get_price", "upstream timeout", is_error=True),
        UserMessage("Also include AMD."),
    ]

    await collect(make_model(wire_server), ModelRequest(messages=history, tools=[PRICE_TOOL]))

    messages = wire_server.requests[-1].json()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == [
        {"type": "text", "text": "Fetching both."},
        {"type": "tool_use", "id": "toolu_a", "name": "get_price", "input": {"ticker": "AAPL"}},
        {"type": "tool_use", "id": "toolu_b", "name": "get_price", "input": {}},
    ]
    results = messages[2]["content"]
    assert [(b["type"], b.get("tool_use_id")) for b in results] == [
        ("tool_result", "toolu_a"),
        ("tool_result", "toolu_b"),
        ("text", None),
    ]
    assert results[0]["content"] == '{"price": 231.4}'
    assert results[0]["is_error"] is False
    assert results[1]["is_error"] is True
    assert results[2]["text"] == "Also include AMD."
    # The newest turn carries a cache breakpoint so the next iteration reads history from cache.
    assert results[2]["cache_control"] == {"type": "ephemeral"}


async def test_a_turn_of_calls_alone_says_which_calls_to_a_third_party_server(
    wire_server: WireServer,
) -> None:
    """LiteLLM turns a tool-call turn's text into the OpenAI `content` it sends on, and leaves
    `content` out when there is no text, which llama-cpp-python cannot render; Anthropic's own
    API gets the turn as its tool_use blocks alone."""
    from dexter.models.profile import profile_for_kind

    call = ToolCall(id="call_0", name="get_price", arguments='{"ticker": "AAPL"}')
    history = [
        UserMessage("AAPL?"),
        AssistantMessage(content="", tool_calls=(call,)),
        ToolMessage(tool_call_id="call_0", name="get_price", content='{"price": 231.4}'),
    ]
    request = ModelRequest(messages=history, tools=[PRICE_TOOL])
    wire_server.push(text_reply("ok"), text_reply("ok"))

    await collect(make_model(wire_server, profile=profile_for_kind("litellm")), request)
    await collect(make_model(wire_server), request)

    proxied, anthropic = (r.json()["messages"][1]["content"] for r in wire_server.requests)
    assert [b["type"] for b in proxied] == ["text", "tool_use"]
    assert proxied[0]["text"] == "Calling get_price."
    assert [b["type"] for b in anthropic] == ["tool_use"]


async def test_blocks_repeating_a_tool_calls_id_continue_that_call(
    wire_server: WireServer,
) -> None:
    """LiteLLM in front of llama-cpp-python: each streamed chunk of one tool call (all carrying
    the call's id) arrives as a tool_use block of its own, with one piece of the arguments."""
    pieces = ['{"tick', 'er": "AA', 'PL"}']
    same_call = {"type": "tool_use", "id": "call_0", "name": "get_price", "input": {}}
    events: list[dict[str, Any]] = [message_start()]
    for index, piece in enumerate(pieces):
        events += [block_start(index, same_call), json_delta(index, piece), block_stop(index)]
    events += [block_start(3, {**same_call, "id": "call_1"}), json_delta(3, '{"ticker": "AMD"}')]
    wire_server.push(anthropic_sse(*events, block_stop(3), *message_end("tool_use")))

    chunks = await collect(make_model(wire_server), ask(tools=[PRICE_TOOL]))

    calls = final(chunks).message.tool_calls
    assert [(c.id, c.arguments) for c in calls] == [
        ("call_0", '{"ticker": "AAPL"}'),
        ("call_1", '{"ticker": "AMD"}'),
    ]
    streamed = [c for c in chunks if isinstance(c, ToolCallChunk)]
    assert {c.index for c in streamed} == {0, 1}


async def test_tool_choice_none_and_max_tokens_override(wire_server: WireServer) -> None:
    wire_server.push(text_reply("Final answer."))
    request = ask(tools=[PRICE_TOOL], tool_choice="none", max_output_tokens=2048)

    await collect(make_model(wire_server), request)

    body = wire_server.requests[-1].json()
    assert body["tool_choice"] == {"type": "none"}
    assert body["max_tokens"] == 2048
    assert len(body["tools"]) == 1
    assert "thinking" not in body


async def test_small_max_tokens_still_leaves_room_beyond_thinking_budget(
    wire_server: WireServer,
) -> None:
    wire_server.push(text_reply("Summary."))
    model = make_model(wire_server, thinking_budget=8000)

    await collect(model, ask(max_output_tokens=2000))

    body = wire_server.requests[-1].json()
    assert body["thinking"]["budget_tokens"] == 8000
    assert body["max_tokens"] > 8000


# ---- non-streaming ---------------------------------------------------------------------------


async def test_complete_maps_a_whole_message(wire_server: WireServer) -> None:
    wire_server.push(
        json_reply(
            {
                "id": "msg_02",
                "type": "message",
                "role": "assistant",
                "model": MODEL,
                "content": [
                    {"type": "thinking", "thinking": "Look it up.", "signature": "sig=="},
                    {"type": "text", "text": "Let me check."},
                    {
                        "type": "tool_use",
                        "id": "toolu_9",
                        "name": "get_price",
                        "input": {"ticker": "MSFT"},
                    },
                ],
                "stop_reason": "tool_use",
                "stop_sequence": None,
                "usage": {
                    "input_tokens": 30,
                    "output_tokens": 12,
                    "cache_read_input_tokens": 100,
                    "cache_creation_input_tokens": 0,
                },
            }
        )
    )

    response = await make_model(wire_server).complete(ask(tools=[PRICE_TOOL]))

    assert "stream" not in wire_server.requests[-1].json()
    message = response.message
    assert message.content == "Let me check."
    assert message.reasoning == "Look it up."
    assert message.provider_data["anthropic_thinking"] == [
        {"type": "thinking", "thinking": "Look it up.", "signature": "sig=="}
    ]
    assert len(message.tool_calls) == 1
    assert message.tool_calls[0].id == "toolu_9"
    assert json.loads(message.tool_calls[0].arguments) == {"ticker": "MSFT"}
    assert response.stop_reason == "tool_calls"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (130, 12)
    assert response.usage.cached_tokens == 100


async def test_complete_classifies_errors_too(wire_server: WireServer) -> None:
    wire_server.push(error_reply(401, "authentication_error", "invalid x-api-key"))
    with pytest.raises(ModelError) as info:
        await make_model(wire_server).complete(ask())
    assert info.value.kind is ErrorKind.AUTH


# ---- errors ----------------------------------------------------------------------------------


async def _stream_error(server: WireServer, reply: Reply) -> ModelError:
    server.push(reply)
    with pytest.raises(ModelError) as info:
        await collect(make_model(server), ask())
    return info.value


async def test_rate_limit_carries_retry_after_and_request_id(wire_server: WireServer) -> None:
    error = await _stream_error(
        wire_server,
        error_reply(
            429,
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit",
            {"retry-after": "3"},
        ),
    )
    assert error.kind is ErrorKind.RATE_LIMIT
    assert error.retryable
    assert error.retry_after == 3.0
    assert error.status_code == 429
    assert error.request_id == "req_abc"
    assert error.provider == "Anthropic"
    assert "req_abc" in error.user_message()


@pytest.mark.parametrize(
    ("status", "error_type", "message", "kind", "retryable"),
    [
        (500, "api_error", "Internal server error", ErrorKind.SERVER, True),
        (529, "overloaded_error", "Overloaded", ErrorKind.OVERLOADED, True),
        (503, "api_error", "unavailable", ErrorKind.SERVER, True),
        (401, "authentication_error", "invalid x-api-key", ErrorKind.AUTH, False),
        (403, "permission_error", "no access to this model", ErrorKind.AUTH, False),
        (402, "billing_error", "payment required", ErrorKind.BILLING, False),
        (404, "not_found_error", "model: claude-nope", ErrorKind.NOT_FOUND, False),
        (
            400,
            "invalid_request_error",
            "prompt is too long: 212345 tokens > 200000 maximum",
            ErrorKind.CONTEXT_OVERFLOW,
            False,
        ),
        (
            413,
            "request_too_large",
            "Request exceeds the maximum size",
            ErrorKind.CONTEXT_OVERFLOW,
            False,
        ),
        (
            400,
            "invalid_request_error",
            "messages.1: tool_use ids were found without tool_result blocks",
            ErrorKind.BAD_REQUEST,
            False,
        ),
        # The word "rate limit" in a 400 does not make it a rate limit: status and type decide.
        (400, "invalid_request_error", "rate limit field is invalid", ErrorKind.BAD_REQUEST, False),
    ],
)
async def test_http_errors_are_classified(
    wire_server: WireServer,
    status: int,
    error_type: str,
    message: str,
    kind: ErrorKind,
    retryable: bool,
) -> None:
    error = await _stream_error(wire_server, error_reply(status, error_type, message))
    assert error.kind is kind
    assert error.retryable is retryable
    assert error.status_code == status
    assert message in error.message


async def test_spend_cap_429_is_billing_not_a_retryable_rate_limit(wire_server: WireServer) -> None:
    body = {
        "type": "error",
        "error": {
            "type": "rate_limit_error",
            "message": "spend limit reached",
            "details": {"error_code": "enforced_spend_limit_reached"},
        },
    }
    error = await _stream_error(wire_server, json_reply(body, status=429))
    assert error.kind is ErrorKind.BILLING
    assert not error.retryable


async def test_error_without_json_body_falls_back_to_status(wire_server: WireServer) -> None:
    reply = Reply(status=502, headers={"content-type": "text/html"}, body=b"<h1>Bad gateway</h1>")
    error = await _stream_error(wire_server, reply)
    assert error.kind is ErrorKind.SERVER
    assert error.retryable


async def test_overloaded_event_mid_stream(wire_server: WireServer) -> None:
    wire_server.push(
        anthropic_sse(
            message_start(),
            block_start(0, {"type": "text", "text": ""}),
            text_delta(0, "Revenue grew "),
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        )
    )
    seen: list[StreamChunk] = []
    with pytest.raises(ModelError) as info:
        async for chunk in make_model(wire_server).stream(ask()):
            seen.append(chunk)
    assert seen == [TextChunk("Revenue grew ")]
    assert info.value.kind is ErrorKind.OVERLOADED
    assert info.value.retryable
    assert info.value.status_code is None  # the HTTP status was 200; the failure came later


async def test_unknown_error_event_mid_stream_is_a_stream_error(wire_server: WireServer) -> None:
    error = await _stream_error(
        wire_server,
        anthropic_sse(
            message_start(), {"type": "error", "error": {"type": "mystery", "message": "?"}}
        ),
    )
    assert error.kind is ErrorKind.STREAM
    assert error.retryable


async def test_stream_cut_before_message_stop_is_a_stream_error(wire_server: WireServer) -> None:
    seen: list[StreamChunk] = []
    wire_server.push(
        anthropic_sse(
            message_start(),
            block_start(0, {"type": "tool_use", "id": "toolu_1", "name": "get_price", "input": {}}),
            json_delta(0, '{"ticker": "AA'),
        )
    )
    with pytest.raises(ModelError) as info:
        async for chunk in make_model(wire_server).stream(ask()):
            seen.append(chunk)
    assert info.value.kind is ErrorKind.STREAM
    assert info.value.retryable
    # The half-built tool call was never presented as a finished turn.
    assert not any(isinstance(c, ModelResponse) for c in seen)


async def test_garbled_event_data_is_a_stream_error(wire_server: WireServer) -> None:
    reply = anthropic_sse(message_start())
    reply.chunks = [*reply.chunks, b"event: content_block_delta\ndata: {not json\n\n"]
    error = await _stream_error(wire_server, reply)
    assert error.kind is ErrorKind.STREAM


async def test_silent_server_times_out(wire_server: WireServer) -> None:
    # The server sends message_start and then goes quiet for good.
    reply = anthropic_sse(message_start())
    reply.stall = True
    wire_server.push(reply)
    model = make_model(wire_server, timeout=0.3)
    with pytest.raises(ModelError) as info:
        await collect(model, ask())
    assert info.value.kind is ErrorKind.TIMEOUT
    assert info.value.retryable


async def test_unreachable_server_is_a_connection_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Nothing listens on the port now.
    model = AnthropicMessagesModel(MODEL, api_key="k", base_url=f"http://127.0.0.1:{port}")
    with pytest.raises(ModelError) as info:
        await collect(model, ask())
    assert info.value.kind is ErrorKind.CONNECTION
    assert info.value.retryable


def _no_credentials_anywhere(monkeypatch: pytest.MonkeyPatch, home: Any) -> None:
    for var in (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_PROFILE",
        "ANTHROPIC_CONFIG_DIR",
        "ANTHROPIC_FEDERATION_RULE_ID",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))


async def test_missing_api_key_is_an_auth_error(
    wire_server: WireServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    _no_credentials_anywhere(monkeypatch, tmp_path)
    model = AnthropicMessagesModel(MODEL, api_key=None, base_url=wire_server.url)
    with pytest.raises(ModelError) as info:
        await collect(model, ask())
    assert info.value.kind is ErrorKind.AUTH
    assert not info.value.retryable
    assert "ANTHROPIC_API_KEY" in info.value.user_message()
    assert wire_server.requests == []


async def test_broken_credentials_profile_is_an_auth_error(
    wire_server: WireServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    _no_credentials_anywhere(monkeypatch, tmp_path)
    # Pointing the SDK at a config directory says "use the profile there"; it has none.
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path / "anthropic"))
    model = AnthropicMessagesModel(MODEL, api_key=None, base_url=wire_server.url)
    with pytest.raises(ModelError) as info:
        await model.complete(ask())
    assert info.value.kind is ErrorKind.AUTH
    assert wire_server.requests == []


async def test_api_key_from_environment_is_used(
    wire_server: WireServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    _no_credentials_anywhere(monkeypatch, tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    wire_server.push(text_reply("ok"))
    model = AnthropicMessagesModel(MODEL, api_key=None, base_url=wire_server.url)
    await collect(model, ask())
    assert wire_server.requests[-1].headers["authorization"] == "Bearer sk-ant-from-env"


async def test_cancellation_propagates_untouched(wire_server: WireServer) -> None:
    wire_server.push(
        anthropic_sse(
            message_start(),
            block_start(0, {"type": "text", "text": ""}),
            text_delta(0, "one"),
            # The server then stays silent (without a message_stop) until the consumer gives up.
            chunk_delay=0.5,
        )
    )
    first = asyncio.Event()

    async def consume() -> None:
        async for chunk in make_model(wire_server).stream(ask()):
            if isinstance(chunk, TextChunk):
                first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), timeout=5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


# ---- small pieces ----------------------------------------------------------------------------


def test_retry_after_accepts_seconds_milliseconds_and_dates() -> None:
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    seconds = parse_retry_after({"retry-after": when})
    assert seconds is not None and 25 <= seconds <= 30
    past = format_datetime(datetime.now(UTC) - timedelta(seconds=30), usegmt=True)
    assert parse_retry_after({"retry-after": past}) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_importing_the_module_does_not_import_the_sdk() -> None:
    # `dexter --help` must stay fast; the SDK costs about a second to import.
    code = (
        "import sys, dexter.models.anthropic_messages as m; "
        "m.AnthropicMessagesModel('x', api_key='k'); "
        "print('anthropic' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "False"
