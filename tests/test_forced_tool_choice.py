"""A forced tool choice (`ForcedTool`) in each wire protocol's own spelling.

Small models on some servers call a tool only when told which one: llama-cpp-python's
`chatml-function-calling` format shows the model the tools only then
(tests/test_real_servers.py)."""

from __future__ import annotations

from dexter.models.types import ForcedTool
from tests import test_anthropic_messages_wire as anthropic_wire
from tests import test_openai_chat_wire as openai_wire
from tests.support.wire_server import WireServer, sse


async def test_openai_wire_names_the_function(wire_server: WireServer) -> None:
    wire_server.push(sse([openai_wire.chunk({"content": "ok"}), openai_wire.chunk(finish="stop")]))
    model = openai_wire.make_model(wire_server)
    request = openai_wire.ask(tools=[openai_wire.PRICE_TOOL], tool_choice=ForcedTool("get_price"))

    await openai_wire.collect(model.stream(request))

    body = wire_server.requests[-1].json()
    assert body["tool_choice"] == {"type": "function", "function": {"name": "get_price"}}
    await model.aclose()


async def test_anthropic_wire_names_the_tool(wire_server: WireServer) -> None:
    wire_server.push(anthropic_wire.text_reply("ok"))
    request = anthropic_wire.ask(
        tools=[anthropic_wire.PRICE_TOOL], tool_choice=ForcedTool("get_price")
    )

    await anthropic_wire.collect(anthropic_wire.make_model(wire_server), request)

    body = wire_server.requests[-1].json()
    assert body["tool_choice"] == {"type": "tool", "name": "get_price"}
