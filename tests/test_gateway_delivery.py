"""Alerts through chats: strict recipients, reply-only personal WhatsApp, clear failures."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from dexter.gateway.config import GatewayConfig
from dexter.gateway.delivery import DeliveryError, deliverers
from dexter.gateway.pairing import PairingStore
from dexter.gateway.types import InboundMessage


@dataclass(frozen=True)
class Alert:
    job_id: str
    job_name: str
    text: str
    created_at: datetime
    target: str


class Sink:
    def __init__(self, name: str) -> None:
        self._name = name
        self.sent: list[tuple[str, str]] = []

    @property
    def name(self) -> str:
        return self._name

    @property
    def account_id(self) -> str:
        return "default"

    async def start(self, hooks: object) -> None:
        pass

    async def stop(self) -> None:
        pass

    async def send_text(self, chat_id: str, text: str, *, thread_id: str | None = None) -> None:
        self.sent.append((chat_id, text))

    async def send_typing(self, chat_id: str, *, thread_id: str | None = None) -> None:
        pass

    async def mark_read(self, message: InboundMessage) -> None:
        pass


def alert(target: str) -> Alert:
    return Alert("j1", "NVDA watch", "NVDA fell 6%", datetime.now(UTC), target)


async def test_alerts_need_an_explicit_recipient(tmp_path: Path) -> None:
    config = GatewayConfig.model_validate(
        {
            "channels": {
                "telegram": {
                    "allow_from": ["*", "42"],
                    "group_policy": "allowlist",
                    "group_allow_from": ["*"],
                    "accounts": {"default": {}},
                },
                "whatsapp_web": {"allow_from": ["+15551234567"], "accounts": {"default": {}}},
            }
        }
    )
    pairing = PairingStore(tmp_path / "pairing.json")
    telegram, whatsapp = Sink("telegram"), Sink("whatsapp_web")
    found = deliverers([telegram, whatsapp], lambda: config, pairing)
    assert set(found) == {"telegram", "whatsapp"}

    await found["telegram"].deliver(alert("telegram:42"))
    assert telegram.sent == [("42", "NVDA fell 6%")]
    with pytest.raises(DeliveryError, match="not listed"):
        await found["telegram"].deliver(alert("telegram:77"))
    with pytest.raises(DeliveryError, match="does not count"):
        await found["telegram"].deliver(alert("telegram:-1001"))
    # Approving a pairing request is explicit enough.
    request, _ = pairing.request("telegram", "default", "77")
    pairing.approve(request.code)
    await found["telegram"].deliver(alert("telegram:77"))
    with pytest.raises(DeliveryError, match="reply-only"):
        await found["whatsapp"].deliver(alert("whatsapp:+15551234567"))
    assert whatsapp.sent == []
    with pytest.raises(DeliveryError, match="not a telegram target"):
        await found["telegram"].deliver(alert("slack:C1"))
