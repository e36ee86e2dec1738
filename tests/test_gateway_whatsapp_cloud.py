"""WhatsApp Cloud API: the webhook (verification, signatures, recorded payload shapes) over real
HTTP on 127.0.0.1, and replies to the Graph API."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx2

from dexter.gateway.types import InboundMessage
from dexter.gateway.whatsapp_cloud import WhatsAppCloudChannel
from dexter.httpclient import async_client
from tests.support.gateway_console import gateway_console

SECRET = "app-secret-123"


def change(value: dict[str, Any]) -> dict[str, Any]:
    value = {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "15550001111", "phone_number_id": "106540352242922"},
        **value,
    }
    return {
        "object": "whatsapp_business_account",
        "entry": [{"id": "102290129340398", "changes": [{"value": value, "field": "messages"}]}],
    }


TEXT = change(
    {
        "contacts": [{"profile": {"name": "Ann Lee"}, "wa_id": "15551234567"}],
        "messages": [
            {
                "from": "15551234567",
                "id": "wamid.HBgLMTU1NTEyMzQ1NjcVAgASGBQzQTdGNkU",
                "timestamp": "1764600000",
                "text": {"body": "What did NVDA earn last quarter?"},
                "type": "text",
            }
        ],
    }
)
IMAGE = change(
    {
        "contacts": [{"profile": {"name": "Ann Lee"}, "wa_id": "15551234567"}],
        "messages": [
            {
                "from": "15551234567",
                "id": "wamid.IMAGE1",
                "timestamp": "1764600060",
                "type": "image",
                "image": {"mime_type": "image/jpeg", "sha256": "abc=", "id": "1479537139650973"},
            }
        ],
    }
)
STATUS = change(
    {
        "statuses": [
            {
                "id": "wamid.OUT1",
                "status": "delivered",
                "timestamp": "1764600100",
                "recipient_id": "15551234567",
            }
        ]
    }
)


class Hooks:
    def __init__(self) -> None:
        self.messages: list[InboundMessage] = []
        self.up = asyncio.Event()
        self.arrived = asyncio.Event()

    def connected(self, identity: str = "") -> None:
        self.up.set()

    async def message(self, message: InboundMessage) -> None:
        self.messages.append(message)
        self.arrived.set()

    async def received(self, count: int) -> list[InboundMessage]:
        """The messages once `count` have arrived (they are handled after Meta is answered)."""
        async with asyncio.timeout(10):  # only keeps a regression from hanging the suite
            while len(self.messages) < count:
                self.arrived.clear()
                await self.arrived.wait()
        return self.messages


def webhook_channel(
    graph: Callable[[httpx2.Request], httpx2.Response] | None = None,
) -> WhatsAppCloudChannel:
    """A channel on a free port; `graph` answers its Graph API calls (replies, read receipts)."""
    return WhatsAppCloudChannel(
        "default",
        access_token="EAAG-token",
        phone_number_id="106540352242922",
        app_secret=SECRET,
        verify_token="verify-me",
        listen="127.0.0.1:0",
        transport=httpx2.MockTransport(graph or (lambda request: httpx2.Response(200, json={}))),
    )


def signed(body: bytes, secret: str = SECRET) -> dict[str, str]:
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {"x-hub-signature-256": f"sha256={digest}", "content-type": "application/json"}


async def test_webhook_verifies_signs_and_normalises() -> None:
    graph: list[dict[str, Any]] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        assert request.headers["authorization"] == "Bearer EAAG-token"
        assert request.url.path == "/v21.0/106540352242922/messages"
        graph.append(json.loads(request.content))
        return httpx2.Response(200, json={"messages": [{"id": "wamid.OUT"}]})

    channel = webhook_channel(handler)
    hooks = Hooks()
    task = asyncio.create_task(channel.start(hooks))
    await hooks.up.wait()
    url = f"http://127.0.0.1:{channel.bound_port}/webhook"
    try:
        async with async_client() as client:
            ok = await client.get(
                url,
                params={
                    "hub.mode": "subscribe",
                    "hub.verify_token": "verify-me",
                    "hub.challenge": "1158201444",
                },
            )
            assert (ok.status_code, ok.text) == (200, "1158201444")
            bad = await client.get(
                url,
                params={"hub.mode": "subscribe", "hub.verify_token": "nope", "hub.challenge": "x"},
            )
            assert bad.status_code == 403

            for payload in (TEXT, IMAGE, STATUS):
                body = json.dumps(payload).encode()
                response = await client.post(url, content=body, headers=signed(body))
                assert response.status_code == 200

            forged = json.dumps(TEXT).replace("NVDA", "EVIL").encode()
            refused = await client.post(url, content=forged, headers=signed(forged, "guess"))
            assert refused.status_code == 401
            unsigned = await client.post(url, content=forged)
            assert unsigned.status_code == 401
    finally:
        await channel.stop()
        await task

    assert [(m.kind, m.text) for m in hooks.messages] == [
        ("text", "What did NVDA earn last quarter?"),
        ("image", ""),
    ]
    first = hooks.messages[0]
    assert (first.sender_id, first.chat_id, first.sender_name, first.chat_type) == (
        "+15551234567",
        "+15551234567",
        "Ann Lee",
        "direct",
    )

    await channel.send_text("+15551234567", "**NVDA** earned $1.2B")
    await channel.mark_read(first)
    await channel.send_typing("+15551234567")
    await channel.stop()
    assert graph[0] == {
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": "15551234567",
        "type": "text",
        "text": {"body": "*NVDA* earned $1.2B", "preview_url": False},
    }
    assert graph[1] == {
        "messaging_product": "whatsapp",
        "status": "read",
        "message_id": "wamid.HBgLMTU1NTEyMzQ1NjcVAgASGBQzQTdGNkU",
    }
    assert graph[2]["typing_indicator"] == {"type": "text"}
    assert graph[2]["message_id"] == "wamid.IMAGE1"


async def test_a_stop_that_lands_before_start_is_kept() -> None:
    channel = webhook_channel()
    await channel.stop()
    hooks = Hooks()
    await asyncio.wait_for(channel.start(hooks), 5)  # returns: no webhook server is opened
    assert not hooks.up.is_set()


@asynccontextmanager
async def serving(channel: WhatsAppCloudChannel) -> AsyncIterator[Hooks]:
    hooks = Hooks()
    task = asyncio.create_task(channel.start(hooks))
    await hooks.up.wait()
    try:
        yield hooks
    finally:
        await channel.stop()
        await task


def message_from(number: str, body: str, **fields: object) -> dict[str, object]:
    raw: dict[str, object] = {
        "from": number,
        "id": f"wamid.{number}.{len(body)}",
        "timestamp": "1764600000",
        "text": {"body": body},
        "type": "text",
    }
    raw.update(fields)
    return {k: v for k, v in raw.items() if v is not None}


# Messages whose fields do not have the types Meta documents: each is skipped with one log line.
MALFORMED_MESSAGES: dict[str, object] = {
    "a message that is a string": "SECRET",
    "from as a number": message_from("15551234567", "SECRET", **{"from": 15551234567}),
    "from that is not a number": message_from("15551234567", "SECRET", **{"from": "ann"}),
    "text body as a number": message_from("15551234567", "SECRET", text={"body": 42}),
    "text as a string": message_from("15551234567", "SECRET", text="SECRET"),
    "id missing": message_from("15551234567", "SECRET", id=None),
    "timestamp in words": message_from("15551234567", "SECRET", timestamp="yesterday"),
    "timestamp past any clock": message_from("15551234567", "SECRET", timestamp="9" * 20),
    "a caption that is a list": message_from(
        "15551234567", "SECRET", type="image", image={"id": "1", "caption": ["SECRET"]}
    ),
}
MALFORMED_PAYLOADS: list[object] = [
    ["SECRET"],
    {"object": "whatsapp_business_account", "entry": "SECRET"},
    {"entry": [{"id": "1", "changes": [{"field": "messages", "value": ["SECRET"]}]}]},
]


async def test_a_malformed_message_is_skipped_in_one_line_and_its_neighbours_are_read() -> None:
    """A bad message used to raise out of the request handler: the good messages in the same
    payload were lost, and asyncio printed the traceback on the console."""
    channel = webhook_channel()
    with gateway_console() as console:
        async with serving(channel) as hooks:
            url = f"http://127.0.0.1:{channel.bound_port}/webhook"
            first = change({"messages": [*MALFORMED_MESSAGES.values(), message_from("1555", "a")]})
            second = change({"messages": [message_from("1666", "b")]})
            async with async_client() as client:
                for payload in (first, *MALFORMED_PAYLOADS, second):
                    body = json.dumps(payload).encode()
                    response = await client.post(url, content=body, headers=signed(body))
                    assert response.status_code == 200
            received = await hooks.received(2)
            assert [(m.sender_id, m.text) for m in received] == [("+1555", "a"), ("+1666", "b")]
    skipped = console.lines("skipped")
    assert len(skipped) == len(MALFORMED_MESSAGES) + len(MALFORMED_PAYLOADS), skipped
    assert all("whatsapp_cloud/default: skipped malformed" in line for line in skipped)
    assert "Traceback" not in console.text and "SECRET" not in console.text


Idle = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def idle_connection(port: int, sent: bytes = b"") -> Idle:
    """A client that connects, sends `sent` (maybe part of a request) and then nothing. The
    writer is kept: dropping it would close the socket from this side."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    if sent:
        writer.write(sent)
        await writer.drain()
    return reader, writer


async def closed_by_server(connection: Idle) -> bool:
    reader, writer = connection
    try:
        return await reader.read() == b"" and not writer.is_closing()
    finally:
        writer.close()


async def post_signed(url: str, payload: dict[str, object]) -> httpx2.Response:
    body = json.dumps(payload).encode()
    async with async_client() as client:
        return await client.post(url, content=body, headers=signed(body))


SLOW_STARTS = [
    b"",
    b"PO",
    b"POST /webhook HTTP/1.1\r\nHost: x\r\n",
    b'POST /webhook HTTP/1.1\r\ncontent-length: 100\r\n\r\n{"entry":',
]


async def test_idle_connections_past_the_cap_are_closed_and_a_signed_post_gets_through() -> None:
    """1,100 idle connections used to hold 1,100 sockets open (past a 1,024 file limit, so
    Meta's signed posts could not even be accepted). Past the cap, the connection that has
    waited longest for its request is closed to make room."""
    channel = webhook_channel()
    channel.max_connections = 8
    channel.read_timeout = 600.0  # only the cap is at work here
    async with serving(channel) as hooks:
        port = channel.bound_port
        idle = [await idle_connection(port, SLOW_STARTS[i % 4]) for i in range(30)]
        response = await post_signed(f"http://127.0.0.1:{port}/webhook", TEXT)
        assert response.status_code == 200
        assert [m.text for m in await hooks.received(1)] == ["What did NVDA earn last quarter?"]
        # The oldest idle connections were closed by the server as newer ones came: all but the
        # newest few (the cap less the signed post).
        closes = [asyncio.ensure_future(closed_by_server(connection)) for connection in idle]
        done, waiting = await asyncio.wait(closes[:-7], timeout=10)
        assert not waiting and all(task.result() for task in done)
        for task in closes:
            task.cancel()


async def test_a_connection_that_sends_no_whole_request_in_time_is_closed() -> None:
    channel = webhook_channel()
    channel.read_timeout = 0.2
    async with serving(channel) as hooks:
        port = channel.bound_port
        idle = [await idle_connection(port, start) for start in SLOW_STARTS]
        async with asyncio.timeout(10):  # generous: the server closes them after 0.2 s
            assert all(await asyncio.gather(*(closed_by_server(c) for c in idle)))
        response = await post_signed(f"http://127.0.0.1:{port}/webhook", TEXT)
        assert response.status_code == 200
        assert len(await hooks.received(1)) == 1
