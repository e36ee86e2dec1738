"""OpenAIChatModel against a real local HTTP server speaking the Chat Completions wire format."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from email.utils import formatdate
from typing import Any

import pytest

from dexter.models.base import Model
from dexter.models.errors import ErrorKind, ModelError
from dexter.models.openai_chat import OpenAIChatModel, parse_retry_after
from dexter.models.types import (
    AssistantMessage,
    ModelRequest,
    ModelResponse,
    ReasoningChunk,
    StreamChunk,
    SystemMessage,
    TextChunk,
    ToolCallChunk,
    ToolMessage,
    ToolSpec,
    UserMessage,
)
from tests.support.wire_server import Reply, WireServer, json_reply, sse

API_KEY = "sk-test-123"

PRICE_TOOL = ToolSpec(
    name="get_price",
    description="Latest price for a ticker.",
    parameters={
        "type": "object",
        "properties": {"ticker": {"type": "string"}},
        "required": ["ticker"],
    },
)
NEWS_TOOL = ToolSpec(
    name="get_news",
    description="Recent news for a ticker.",
    parameters={"type": "object", "properties": {"ticker": {"type": "string"}}},
)


def chunk(
    delta: dict[str, Any] | None = None,
    *,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    choices: bool = True,
) -> dict[str, Any]:
    """One `chat.completion.chunk`, shaped as OpenAI sends it with include_usage on."""
    return {
        "id": "chatcmpl-abc",
        "object": "chat.completion.chunk",
        "created": 1_760_000_000,
        "model": "gpt-test",
        "system_fingerprint": "fp_test",
        "choices": [{"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}]
        if choices
        else [],
        "usage": usage,
    }


def usage_chunk(**usage: Any) -> dict[str, Any]:
    return chunk(choices=False, usage=usage)


def tool_delta(
    index: int, *, id: str | None = None, name: str | None = None, args: str = ""
) -> dict:
    call: dict[str, Any] = {"index": index, "function": {"arguments": args}}
    if id is not None:
        call["id"] = id
        call["type"] = "function"
    if name is not None:
        call["function"]["name"] = name
    return {"tool_calls": [call]}


def error_body(message: str, *, type: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type, "param": None, "code": code}}


def make_model(server: WireServer, **kwargs: Any) -> OpenAIChatModel:
    return OpenAIChatModel("gpt-test", api_key=API_KEY, base_url=server.url + "/v1", **kwargs)


def ask(question: str = "What is AAPL trading at?", **kwargs: Any) -> ModelRequest:
    return ModelRequest(
        messages=[SystemMessage("You are a financial analyst."), UserMessage(question)], **kwargs
    )


async def collect(stream: AsyncIterator[StreamChunk]) -> tuple[list[StreamChunk], ModelResponse]:
    chunks = [c async for c in stream]
    final = chunks[-1]
    assert isinstance(final, ModelResponse)
    return chunks[:-1], final


async def failure(model: OpenAIChatModel, request: ModelRequest | None = None) -> ModelError:
    with pytest.raises(ModelError) as info:
        await collect(model.stream(request or ask()))
    return info.value


def of_type(chunks: Sequence[StreamChunk], kind: type) -> list[Any]:
    return [c for c in chunks if isinstance(c, kind)]


# ---- streaming ---------------------------------------------------------------------------


async def test_streamed_text_arrives_in_pieces_and_the_final_message_is_complete(
    wire_server: WireServer,
) -> None:
    wire_server.push(
        sse(
            [
                chunk({"role": "assistant", "content": ""}),
                chunk({"content": "Apple closed "}),
                chunk({"content": "at $227.52, "}),
                chunk({"content": "up 1.3%."}),
                chunk(finish="stop"),
                usage_chunk(prompt_tokens=42, completion_tokens=11, total_tokens=53),
            ]
        )
    )
    model = make_model(wire_server)
    assert isinstance(model, Model)

    pieces, final = await collect(model.stream(ask()))

    texts = [c.text for c in of_type(pieces, TextChunk)]
    assert texts == ["Apple closed ", "at $227.52, ", "up 1.3%."]
    assert final.message.content == "Apple closed at $227.52, up 1.3%."
    assert final.message.tool_calls == ()
    assert final.message.provider_data == {}
    assert final.stop_reason == "stop"
    assert (final.usage.input_tokens, final.usage.output_tokens) == (42, 11)

    sent = wire_server.requests[-1]
    assert sent.method == "POST"
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {API_KEY}"
    body = sent.json()
    assert body["model"] == "gpt-test"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [
        {"role": "system", "content": "You are a financial analyst."},
        {"role": "user", "content": "What is AAPL trading at?"},
    ]
    # No tools bound: the request must not advertise any (some hosts reject an empty list).
    assert "tools" not in body
    assert "tool_choice" not in body
    await model.aclose()


async def test_parallel_tool_calls_streamed_interleaved_assemble_in_index_order(
    wire_server: WireServer,
) -> None:
    wire_server.push(
        sse(
            [
                chunk({"role": "assistant", "content": None}),
                chunk(tool_delta(0, id="call_price", name="get_price")),
                chunk(tool_delta(1, id="call_news", name="get_news")),
                chunk(tool_delta(0, args='{"tic')),
                chunk(tool_delta(1, args='{"ticker"')),
                chunk(tool_delta(0, args='ker": "AAPL"}')),
                chunk(tool_delta(1, args=': "NVDA"}')),
                chunk(finish="tool_calls"),
                usage_chunk(prompt_tokens=80, completion_tokens=30, total_tokens=110),
            ]
        )
    )
    model = make_model(wire_server)

    pieces, final = await collect(model.stream(ask(tools=[PRICE_TOOL, NEWS_TOOL])))

    fragments = of_type(pieces, ToolCallChunk)
    assert [(f.index, f.id, f.name) for f in fragments[:2]] == [
        (0, "call_price", "get_price"),
        (1, "call_news", "get_news"),
    ]
    assert "".join(f.arguments for f in fragments if f.index == 0) == '{"ticker": "AAPL"}'
    assert [(c.id, c.name, c.arguments) for c in final.message.tool_calls] == [
        ("call_price", "get_price", '{"ticker": "AAPL"}'),
        ("call_news", "get_news", '{"ticker": "NVDA"}'),
    ]
    assert final.message.content == ""
    assert final.stop_reason == "tool_calls"
    await model.aclose()


async def test_tool_call_without_id_keeps_an_empty_id_and_stop_becomes_tool_calls(
    wire_server: WireServer,
) -> None:
    # Ollama-style: whole call in one fragment, no id, and finish_reason "stop".
    wire_server.push(
        sse(
            [
                chunk(tool_delta(0, name="get_price", args='{"ticker": "MSFT"}')),
                chunk(finish="stop"),
            ]
        )
    )
    model = make_model(wire_server)

    _, final = await collect(model.stream(ask(tools=[PRICE_TOOL])))

    [call] = final.message.tool_calls
    assert (call.id, call.name, call.arguments) == ("", "get_price", '{"ticker": "MSFT"}')
    assert final.stop_reason == "tool_calls"
    await model.aclose()


async def test_deepseek_reasoning_content_streams_and_is_echoed_on_the_next_tool_turn(
    wire_server: WireServer,
) -> None:
    wire_server.push(
        sse(
            [
                chunk({"role": "assistant", "content": None, "reasoning_content": ""}),
                chunk({"content": None, "reasoning_content": "Need the latest "}),
                chunk({"content": None, "reasoning_content": "price first."}),
                chunk(tool_delta(0, id="call_0", name="get_price", args='{"ticker": "AAPL"}')),
                chunk(finish="tool_calls"),
                usage_chunk(
                    prompt_tokens=100,
                    completion_tokens=40,
                    total_tokens=140,
                    prompt_cache_hit_tokens=64,
                    prompt_cache_miss_tokens=36,
                    completion_tokens_details={"reasoning_tokens": 25},
                ),
            ]
        ),
        sse([chunk({"content": "AAPL is at $227.52."}), chunk(finish="stop")]),
    )
    model = make_model(wire_server, provider="DeepSeek")
    first = ask(tools=[PRICE_TOOL])

    pieces, turn = await collect(model.stream(first))

    assert [c.text for c in of_type(pieces, ReasoningChunk)] == ["Need the latest ", "price first."]
    assert of_type(pieces, TextChunk) == []
    assert turn.message.reasoning == "Need the latest price first."
    assert turn.message.provider_data["reasoning_field"] == "reasoning_content"
    # DeepSeek reports cache hits outside prompt_tokens_details.
    assert turn.usage.cached_tokens == 64
    assert turn.usage.reasoning_tokens == 25

    follow_up = ModelRequest(
        messages=[
            *first.messages,
            turn.message,
            ToolMessage(tool_call_id="call_0", name="get_price", content='{"price": 227.52}'),
        ],
        tools=[PRICE_TOOL],
    )
    _, answer = await collect(model.stream(follow_up))

    assert answer.message.content == "AAPL is at $227.52."
    messages = wire_server.requests[-1].json()["messages"]
    assert messages[2] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_0",
                "type": "function",
                "function": {"name": "get_price", "arguments": '{"ticker": "AAPL"}'},
            }
        ],
        "reasoning_content": "Need the latest price first.",
    }
    assert messages[3] == {"role": "tool", "tool_call_id": "call_0", "content": '{"price": 227.52}'}
    await model.aclose()


async def test_openrouter_reasoning_field_becomes_reasoning_chunks(wire_server: WireServer) -> None:
    wire_server.push(
        sse(
            [
                chunk({"role": "assistant", "content": "", "reasoning": "Compare margins. "}),
                chunk({"content": "", "reasoning": "NVDA leads."}),
                chunk({"content": "NVDA's gross margin is higher.", "reasoning": None}),
                chunk(finish="stop"),
            ]
        )
    )
    model = make_model(wire_server, provider="OpenRouter")

    pieces, final = await collect(model.stream(ask("NVDA vs AMD margins?")))

    assert [c.text for c in of_type(pieces, ReasoningChunk)] == ["Compare margins. ", "NVDA leads."]
    assert final.message.reasoning == "Compare margins. NVDA leads."
    assert final.message.content == "NVDA's gross margin is higher."
    assert final.message.provider_data["reasoning_field"] == "reasoning"
    await model.aclose()


async def test_configured_reasoning_field_ignores_the_other_key(wire_server: WireServer) -> None:
    wire_server.push(
        sse(
            [
                chunk({"content": "ok", "reasoning": "stray", "reasoning_content": "real"}),
                chunk(finish="stop"),
            ]
        )
    )
    model = make_model(wire_server, reasoning_field="reasoning_content")

    _, final = await collect(model.stream(ask()))

    assert final.message.reasoning == "real"
    await model.aclose()


async def test_reasoning_is_not_echoed_to_a_different_provider(wire_server: WireServer) -> None:
    wire_server.push(sse([chunk({"content": "ok"}), chunk(finish="stop")]))
    earlier = AssistantMessage(
        content="Thinking done.",
        reasoning="secret chain",
        provider_data={"reasoning_field": "reasoning_content", "provider": "DeepSeek"},
    )
    model = make_model(wire_server, provider="OpenAI")

    await collect(
        model.stream(ModelRequest(messages=[UserMessage("hi"), earlier, UserMessage("and?")]))
    )

    assert wire_server.requests[-1].json()["messages"][1] == {
        "role": "assistant",
        "content": "Thinking done.",
    }
    await model.aclose()


async def test_usage_reports_cached_and_reasoning_tokens(wire_server: WireServer) -> None:
    wire_server.push(
        sse(
            [
                chunk({"content": "Done."}),
                chunk(finish="stop"),
                usage_chunk(
                    prompt_tokens=1200,
                    completion_tokens=300,
                    total_tokens=1500,
                    prompt_tokens_details={"cached_tokens": 1024, "audio_tokens": 0},
                    completion_tokens_details={"reasoning_tokens": 256, "audio_tokens": 0},
                ),
            ]
        )
    )
    model = make_model(wire_server)

    _, final = await collect(model.stream(ask()))

    usage = final.usage
    assert (usage.input_tokens, usage.output_tokens) == (1200, 300)
    assert (usage.cached_tokens, usage.reasoning_tokens) == (1024, 256)
    await model.aclose()


async def test_request_carries_tools_tool_choice_none_limits_and_extra_body(
    wire_server: WireServer,
) -> None:
    wire_server.push(sse([chunk({"content": "Final answer."}), chunk(finish="stop")]))
    model = make_model(
        wire_server,
        extra_body={"thinking": {"type": "enabled"}},
        default_headers={"X-Title": "Dexter"},
    )

    await collect(model.stream(ask(tools=[PRICE_TOOL], tool_choice="none", max_output_tokens=2048)))

    sent = wire_server.requests[-1]
    body = sent.json()
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_price",
                "description": "Latest price for a ticker.",
                "parameters": {
                    "type": "object",
                    "properties": {"ticker": {"type": "string"}},
                    "required": ["ticker"],
                },
            },
        }
    ]
    assert body["tool_choice"] == "none"
    assert body["max_completion_tokens"] == 2048
    assert body["thinking"] == {"type": "enabled"}
    assert body["stream_options"] == {"include_usage": True}
    assert sent.headers["x-title"] == "Dexter"
    await model.aclose()


async def test_keyless_local_server_gets_a_placeholder_key(
    wire_server: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-key-for-openai-only")
    wire_server.push(sse([chunk({"content": "hi"}), chunk(finish="stop")]))
    model = OpenAIChatModel(
        "llama3.2", api_key=None, base_url=wire_server.url + "/v1", provider="Ollama"
    )

    _, final = await collect(model.stream(ask()))

    assert final.message.content == "hi"
    assert wire_server.requests[-1].headers["authorization"] == "Bearer unused"
    await model.aclose()


# ---- stream failures ---------------------------------------------------------------------


async def test_stream_with_no_choices_at_all_is_a_stream_error(wire_server: WireServer) -> None:
    wire_server.push(sse([usage_chunk(prompt_tokens=5, completion_tokens=0, total_tokens=5)]))
    model = make_model(wire_server)

    error = await failure(model)

    assert error.kind is ErrorKind.STREAM
    assert error.retryable
    await model.aclose()


async def test_stream_cut_off_before_finish_is_a_stream_error(wire_server: WireServer) -> None:
    # The connection closes mid tool call: half an argument object must never reach a tool.
    wire_server.push(
        sse(
            [chunk(tool_delta(0, id="call_0", name="get_price", args='{"tick'))],
            done=False,
        )
    )
    model = make_model(wire_server)

    with pytest.raises(ModelError) as info:
        async for _ in model.stream(ask(tools=[PRICE_TOOL])):
            pass

    assert info.value.kind is ErrorKind.STREAM
    await model.aclose()


async def test_error_event_inside_a_stream_is_classified(wire_server: WireServer) -> None:
    wire_server.push(
        sse(
            [
                chunk({"content": "Partial "}),
                {"error": {"message": "Upstream provider crashed", "code": 502}},
            ],
            done=False,
        )
    )
    model = make_model(wire_server, provider="OpenRouter")

    seen: list[str] = []
    with pytest.raises(ModelError) as info:
        async for piece in model.stream(ask()):
            if isinstance(piece, TextChunk):
                seen.append(piece.text)

    assert seen == ["Partial "]
    assert info.value.kind is ErrorKind.SERVER
    assert info.value.retryable
    assert "Upstream provider crashed" in info.value.message
    await model.aclose()


async def test_unclassified_error_event_inside_a_stream_is_a_stream_error(
    wire_server: WireServer,
) -> None:
    wire_server.push(sse([{"error": {"message": "something odd"}}], done=False))
    model = make_model(wire_server)

    error = await failure(model)

    assert error.kind is ErrorKind.STREAM
    assert error.message == "something odd"
    await model.aclose()


async def test_malformed_chunk_is_a_stream_error(wire_server: WireServer) -> None:
    wire_server.push(sse([chunk({"content": "ok"}), "{not json"], done=False))
    model = make_model(wire_server)

    error = await failure(model)

    assert error.kind is ErrorKind.STREAM
    await model.aclose()


async def test_cancellation_propagates_untouched(wire_server: WireServer) -> None:
    slow = sse([chunk({"content": f"piece {i} "}) for i in range(5)] + [chunk(finish="stop")])
    slow.chunk_delay = 0.15
    wire_server.push(slow)
    model = make_model(wire_server)
    first_piece = asyncio.Event()

    async def consume() -> None:
        async for piece in model.stream(ask()):
            if isinstance(piece, TextChunk):
                first_piece.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first_piece.wait(), timeout=5)
    task.cancel()

    with pytest.raises(asyncio.CancelledError):
        await task
    await model.aclose()
    # Let the server thread hit the closed socket while this test's output is still captured.
    await asyncio.sleep(3 * slow.chunk_delay)


# ---- HTTP errors ---------------------------------------------------------------------------


async def test_rate_limit_with_retry_after_is_retryable(wire_server: WireServer) -> None:
    wire_server.push(
        json_reply(
            error_body(
                "Rate limit reached for gpt-test on tokens per min (TPM).",
                type="tokens",
                code="rate_limit_exceeded",
            ),
            status=429,
            headers={"Retry-After": "7", "x-request-id": "req_429abc"},
        )
    )
    model = make_model(wire_server)

    error = await failure(model)

    assert error.kind is ErrorKind.RATE_LIMIT
    assert error.retry_after == 7.0
    assert error.retryable
    assert error.status_code == 429
    assert error.request_id == "req_429abc"
    assert error.message == "Rate limit reached for gpt-test on tokens per min (TPM)."
    assert error.provider == "OpenAI"
    # Our retry layer owns retries: the SDK must have tried exactly once.
    assert len(wire_server.requests) == 1
    await model.aclose()


async def test_retry_after_ms_is_preferred(wire_server: WireServer) -> None:
    wire_server.push(
        json_reply(
            error_body("slow down", type="requests", code="rate_limit_exceeded"),
            status=429,
            headers={"retry-after-ms": "1500", "retry-after": "2"},
        )
    )
    model = make_model(wire_server)

    error = await failure(model)

    assert error.retry_after == 1.5
    await model.aclose()


async def test_server_error_is_retryable(wire_server: WireServer) -> None:
    wire_server.push(
        json_reply(
            error_body(
                "The server had an error while processing your request.", type="server_error"
            ),
            status=500,
        )
    )
    model = make_model(wire_server)

    error = await failure(model)

    assert error.kind is ErrorKind.SERVER
    assert error.retryable
    assert error.status_code == 500
    await model.aclose()


async def test_bad_key_is_auth_and_not_retryable(wire_server: WireServer) -> None:
    wire_server.push(
        json_reply(
            error_body(
                "Incorrect API key provided: sk-test-***123.",
                type="invalid_request_error",
                code="invalid_api_key",
            ),
            status=401,
        )
    )
    model = make_model(wire_server)

    error = await failure(model)

    assert error.kind is ErrorKind.AUTH
    assert not error.retryable
    assert "Incorrect API key" in error.user_message()
    await model.aclose()


async def test_context_length_exceeded_is_context_overflow(wire_server: WireServer) -> None:
    wire_server.push(
        json_reply(
            error_body(
                "This model's maximum context length is 128000 tokens. However, your messages "
                "resulted in 131072 tokens.",
                type="invalid_request_error",
                code="context_length_exceeded",
            ),
            status=400,
        )
    )
    model = make_model(wire_server)

    error = await failure(model)

    assert error.kind is ErrorKind.CONTEXT_OVERFLOW
    assert not error.retryable
    await model.aclose()


async def test_insufficient_quota_is_billing_not_rate_limit(wire_server: WireServer) -> None:
    wire_server.push(
        json_reply(
            error_body(
                "You exceeded your current quota, please check your plan and billing details.",
                type="insufficient_quota",
                code="insufficient_quota",
            ),
            status=429,
        )
    )
    model = make_model(wire_server)

    error = await failure(model)

    assert error.kind is ErrorKind.BILLING
    assert not error.retryable
    await model.aclose()


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (402, {"error": {"message": "Insufficient Balance", "code": 402}}, ErrorKind.BILLING),
        (403, error_body("Country not supported", type="forbidden"), ErrorKind.AUTH),
        (
            404,
            error_body(
                "The model `gpt-nope` does not exist",
                type="invalid_request_error",
                code="model_not_found",
            ),
            ErrorKind.NOT_FOUND,
        ),
        (413, {"error": {"message": "Request too large"}}, ErrorKind.CONTEXT_OVERFLOW),
        (422, {"error": {"message": "tools.0.function.name: invalid"}}, ErrorKind.BAD_REQUEST),
        (
            400,
            error_body("Invalid value for 'tool_choice'", type="invalid_request_error"),
            ErrorKind.BAD_REQUEST,
        ),
        # vLLM reports overflow as a code-less 400 with prose.
        (
            400,
            {
                "object": "error",
                "message": "This model's maximum context length is 8192 tokens.",
                "type": "BadRequestError",
                "code": 400,
            },
            ErrorKind.CONTEXT_OVERFLOW,
        ),
        (503, {"error": {"message": "Service Unavailable"}}, ErrorKind.OVERLOADED),
        (529, {"error": {"message": "Overloaded"}}, ErrorKind.OVERLOADED),
        (502, {"error": {"message": "Bad gateway"}}, ErrorKind.SERVER),
    ],
)
async def test_http_status_classification(
    wire_server: WireServer, status: int, body: dict[str, Any], kind: ErrorKind
) -> None:
    wire_server.push(json_reply(body, status=status))
    model = make_model(wire_server)

    error = await failure(model)

    assert error.kind is kind
    assert error.status_code == status
    await model.aclose()


async def test_non_json_error_body_still_gives_a_readable_message(wire_server: WireServer) -> None:
    wire_server.push(
        Reply(status=502, headers={"content-type": "text/html"}, body=b"<html>Bad Gateway</html>")
    )
    model = make_model(wire_server)

    error = await failure(model)

    assert error.kind is ErrorKind.SERVER
    assert "Bad Gateway" in error.message
    await model.aclose()


async def test_unreachable_server_is_a_connection_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = OpenAIChatModel(
        "gpt-test", api_key=API_KEY, base_url=f"http://127.0.0.1:{port}/v1", provider="LM Studio"
    )

    error = await failure(model)

    assert error.kind is ErrorKind.CONNECTION
    assert error.retryable
    assert "LM Studio" in error.user_message()
    await model.aclose()


async def test_slow_server_is_a_timeout(wire_server: WireServer) -> None:
    stall = sse([chunk({"content": "late"}), chunk(finish="stop")])
    stall.stall = True  # quiet for good after the first chunk
    wire_server.push(stall)
    # Long enough for the headers and first chunk to arrive on a loaded machine (at 0.2 s the
    # timeout could strike before them: a TIMEOUT, not the mid-stream error this is about).
    model = make_model(wire_server, timeout=1.0)

    error = await failure(model)

    # The headers and first chunk arrive at once, so the read timeout strikes mid-stream.
    assert error.kind is ErrorKind.STREAM
    assert "timed out" in error.message.lower()
    assert error.retryable
    await model.aclose()


def test_retry_after_parsing() -> None:
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after": "0.5"}) == 0.5
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
    in_30s = parse_retry_after(
        {"retry-after": formatdate(__import__("time").time() + 30, usegmt=True)}
    )
    assert in_30s is not None and 28 <= in_30s <= 30
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0


# ---- non-streaming -----------------------------------------------------------------------


async def test_complete_maps_a_non_streaming_reply(wire_server: WireServer) -> None:
    wire_server.push(
        json_reply(
            {
                "id": "chatcmpl-xyz",
                "object": "chat.completion",
                "created": 1_760_000_000,
                "model": "deepseek-test",
                "choices": [
                    {
                        "index": 0,
                        "message": {
                            "role": "assistant",
                            "content": None,
                            "reasoning_content": "Check both tickers.",
                            "tool_calls": [
                                {
                                    "id": "call_a",
                                    "type": "function",
                                    "function": {
                                        "name": "get_price",
                                        "arguments": '{"ticker":"AAPL"}',
                                    },
                                },
                                {
                                    "id": "call_b",
                                    "type": "function",
                                    "function": {"name": "get_news", "arguments": ""},
                                },
                            ],
                        },
                        "logprobs": None,
                        "finish_reason": "tool_calls",
                    }
                ],
                "usage": {
                    "prompt_tokens": 50,
                    "completion_tokens": 20,
                    "total_tokens": 70,
                    "prompt_tokens_details": {"cached_tokens": 32},
                    "completion_tokens_details": {"reasoning_tokens": 8},
                },
            }
        )
    )
    model = make_model(wire_server, provider="DeepSeek")

    response = await model.complete(ask(tools=[PRICE_TOOL, NEWS_TOOL]))

    message = response.message
    assert message.content == ""
    assert message.reasoning == "Check both tickers."
    assert message.provider_data["reasoning_field"] == "reasoning_content"
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        ("call_a", "get_price", '{"ticker":"AAPL"}'),
        ("call_b", "get_news", "{}"),
    ]
    assert response.stop_reason == "tool_calls"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (50, 20)
    assert (response.usage.cached_tokens, response.usage.reasoning_tokens) == (32, 8)
    body = wire_server.requests[-1].json()
    assert "stream" not in body or body["stream"] is False
    assert "stream_options" not in body
    await model.aclose()


async def test_complete_raises_classified_errors(wire_server: WireServer) -> None:
    wire_server.push(
        json_reply(error_body("Invalid key", type="invalid_request_error"), status=401)
    )
    model = make_model(wire_server)

    with pytest.raises(ModelError) as info:
        await model.complete(ask())

    assert info.value.kind is ErrorKind.AUTH
    await model.aclose()


# ---- start-up cost -----------------------------------------------------------------------


def test_importing_the_module_does_not_import_the_sdk() -> None:
    code = (
        "import sys, dexter.models.openai_chat as m; "
        "m.OpenAIChatModel('x', api_key=None); "
        "print('openai' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"
