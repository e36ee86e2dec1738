"""The pipeline between a channel and the dispatcher, with a recording channel."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dexter.gateway.config import ConfigSource
from dexter.gateway.dispatch import ChatTurn, Replier
from dexter.gateway.pairing import PairingStore
from dexter.gateway.pipeline import Gateway
from dexter.gateway.types import InboundMessage


class Recording:
    name = "whatsapp_cloud"
    account_id = "default"

    def __init__(self) -> None:
        self.read: list[str] = []
        self.sent: list[str] = []

    async def start(self, hooks: object) -> None:
        pass

    async def stop(self) -> None:
        pass

    async def send_text(self, chat_id: str, text: str, *, thread_id: str | None = None) -> None:
        self.sent.append(text)

    async def send_typing(self, chat_id: str, *, thread_id: str | None = None) -> None:
        pass

    async def mark_read(self, message: InboundMessage) -> None:
        self.read.append(message.message_id)


class Accepting:
    def __init__(self) -> None:
        self.turns: list[ChatTurn] = []

    async def submit(self, turn: ChatTurn, reply: Replier) -> None:
        self.turns.append(turn)

    def busy(self, session_key: str) -> bool:
        return False

    async def join(self) -> None:
        pass

    async def close(self) -> None:
        pass


@pytest.mark.parametrize(("mark_read", "receipts"), [(None, ["m1"]), (False, [])])
async def test_read_receipts_follow_mark_read(
    tmp_path: Path, mark_read: bool | None, receipts: list[str]
) -> None:
    account: dict[str, object] = {"dm_policy": "open"}
    if mark_read is not None:
        account["mark_read"] = mark_read
    path = tmp_path / "gateway.json"
    path.write_text(
        json.dumps({"channels": {"whatsapp_cloud": {"accounts": {"default": account}}}})
    )
    dispatcher = Accepting()
    gateway = Gateway(ConfigSource(path), PairingStore(tmp_path / "pairing.json"), dispatcher)
    channel = Recording()
    message = InboundMessage(
        "whatsapp_cloud", "default", "m1", "+15551234567", "direct", "+15551234567", text="hi"
    )
    assert await gateway.handle(channel, message) == "dispatched"  # type: ignore[arg-type]
    assert channel.read == receipts
    assert [t.text for t in dispatcher.turns] == ["hi"]
