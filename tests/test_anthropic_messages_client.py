"""What our own Messages client does on the wire beyond the SDK-era tests: the headers it sends,
the environment it honours like the SDK did, closing the connection when the consumer stops, and
the malformed or error-shaped replies some gateways send."""

from __future__ import annotations

import asyncio

import pytest

from dexter.models.anthropic_messages import API_VERSION, AnthropicMessagesModel
from dexter.models.errors import ErrorKind, ModelError
from dexter.models.types import TextChunk
from tests.support.wire_server import Reply, WireServer, json_reply
from tests.test_anthropic_messages_wire import (
    MODEL,
    anthropic_sse,
    ask,
    block_start,
    collect,
    final,
    make_model,
    message_start,
    text_delta,
    text_reply,
)


async def test_key_version_and_provider_headers_go_out(wire_server: WireServer) -> None:
    wire_server.push(text_reply("ok"))
    model = make_model(
        wire_server,
        default_headers={"anthropic-beta": "context-1m", "USER-AGENT": "my-gateway-client"},
    )

    await collect(model, ask())
    await model.aclose()

    headers = wire_server.requests[-1].headers
    assert headers["x-api-key"] == "sk-ant-test"
    assert headers["anthropic-version"] == API_VERSION == "2023-06-01"
    assert headers["anthropic-beta"] == "context-1m"
    # A provider header replaces ours whatever its case.
    assert headers["user-agent"] == "my-gateway-client"
    assert headers["content-type"] == "application/json"


async def test_base_url_and_custom_headers_come_from_the_environment(
    wire_server: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", wire_server.url + "/")
    monkeypatch.setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Gateway-Team: research\nmalformed line")
    wire_server.push(text_reply("ok"))
    model = AnthropicMessagesModel(MODEL, api_key="sk-ant-test")

    assert final(await collect(model, ask())).message.content == "ok"
    await model.aclose()

    sent = wire_server.requests[-1]
    assert sent.path == "/v1/messages"
    assert sent.headers["x-gateway-team"] == "research"


async def test_consumer_stopping_early_hangs_up(wire_server: WireServer) -> None:
    wire_server.push(
        anthropic_sse(
            message_start(),
            block_start(0, {"type": "text", "text": ""}),
            *[text_delta(0, f"piece {i} ") for i in range(6)],
            chunk_delay=0.1,
        )
    )
    model = make_model(wire_server)

    async for chunk in model.stream(ask()):
        if isinstance(chunk, TextChunk):
            break

    # The generator is closed when the loop breaks; the server sees the connection go away.
    assert await asyncio.to_thread(wire_server.hung_up.wait, 5)
    await model.aclose()


async def test_stream_error_event_names_the_request(wire_server: WireServer) -> None:
    reply = anthropic_sse(
        message_start(),
        {
            "type": "error",
            "error": {"type": "api_error", "message": "Internal server error"},
            "request_id": "req_in_body",
        },
    )
    wire_server.push(reply)
    with pytest.raises(ModelError) as info:
        await collect(make_model(wire_server), ask())
    assert info.value.kind is ErrorKind.SERVER
    assert info.value.request_id == "req_in_body"
    assert "Internal server error" in info.value.user_message()


async def test_delta_without_a_block_index_is_a_stream_error(wire_server: WireServer) -> None:
    reply = anthropic_sse(
        message_start(),
        block_start(0, {"type": "text", "text": ""}),
        {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "lost"}},
    )
    wire_server.push(reply)
    with pytest.raises(ModelError) as info:
        await collect(make_model(wire_server), ask())
    assert info.value.kind is ErrorKind.STREAM
    assert info.value.retryable


async def test_complete_with_an_error_body_on_200_is_classified(wire_server: WireServer) -> None:
    body = {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
        "request_id": "req_gw",
    }
    wire_server.push(json_reply(body))
    with pytest.raises(ModelError) as info:
        await make_model(wire_server).complete(ask())
    assert info.value.kind is ErrorKind.OVERLOADED
    assert info.value.request_id == "req_gw"


async def test_complete_with_a_non_json_body_is_a_server_error(wire_server: WireServer) -> None:
    wire_server.push(Reply(headers={"content-type": "text/html"}, body=b"<html>gateway</html>"))
    with pytest.raises(ModelError) as info:
        await make_model(wire_server).complete(ask())
    assert info.value.kind is ErrorKind.SERVER
    assert info.value.retryable


async def test_model_works_again_after_aclose(wire_server: WireServer) -> None:
    wire_server.push(text_reply("one"), text_reply("two"))
    model = make_model(wire_server)

    assert final(await collect(model, ask())).message.content == "one"
    await model.aclose()
    assert final(await collect(model, ask())).message.content == "two"
    await model.aclose()
