"""WhatsApp Cloud API: the webhook (verification, signatures, recorded payload shapes) over real
HTTP on 127.0.0.1, and replies to the Graph API."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from typing import Any

import httpx2

from dexter.gateway.types import InboundMessage
from dexter.gateway.whatsapp_cloud import WhatsAppCloudChannel

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

    def connected(self, identity: str = "") -> None:
        self.up.set()

    async def message(self, message: InboundMessage) -> None:
        self.messages.append(message)


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

    channel = WhatsAppCloudChannel(
        "default",
        access_token="EAAG-token",
        phone_number_id="106540352242922",
        app_secret=SECRET,
        verify_token="verify-me",
        listen="127.0.0.1:0",
        transport=httpx2.MockTransport(handler),
    )
    hooks = Hooks()
    task = asyncio.create_task(channel.start(hooks))
    await hooks.up.wait()
    url = f"http://127.0.0.1:{channel.bound_port}/webhook"
    try:
        async with httpx2.AsyncClient() as client:
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
    channel = WhatsAppCloudChannel(
        "default",
        access_token="EAAG-token",
        phone_number_id="106540352242922",
        app_secret=SECRET,
        verify_token="verify-me",
        listen="127.0.0.1:0",
    )
    await channel.stop()
    hooks = Hooks()
    await asyncio.wait_for(channel.start(hooks), 5)  # returns: no webhook server is opened
    assert not hooks.up.is_set()
