"""The pipeline between a channel and the dispatcher, with a recording channel."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dexter.gateway.config import ConfigSource
from dexter.gateway.dispatch import ChatTurn, Replier
from dexter.gateway.pairing import MAX_PENDING_PER_ACCOUNT, PairingStore
from dexter.gateway.pipeline import Gateway
from dexter.gateway.types import InboundMessage
from tests.support.gateway_console import gateway_console


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


def pairing_gateway(tmp_path: Path) -> tuple[Gateway, Accepting]:
    path = tmp_path / "gateway.json"
    path.write_text(
        json.dumps(
            {"channels": {"whatsapp_cloud": {"accounts": {"default": {"dm_policy": "pairing"}}}}}
        )
    )
    dispatcher = Accepting()
    return Gateway(
        ConfigSource(path), PairingStore(tmp_path / "pairing.json"), dispatcher
    ), dispatcher


def dm(number: int, text: str) -> InboundMessage:
    sender = f"+1555{number:07d}"
    return InboundMessage(
        "whatsapp_cloud", "default", f"m{number}-{text}", sender, "direct", sender, text=text
    )


async def test_600_strangers_cannot_push_out_the_first_real_pairing_request(
    tmp_path: Path,
) -> None:
    """Pending requests used to be trimmed to the newest 500: a flood of strangers evicted the
    request the operator was about to approve. Now a full queue refuses newcomers instead."""
    gateway, dispatcher = pairing_gateway(tmp_path)
    channel = Recording()
    with gateway_console() as console:
        assert await gateway.handle(channel, dm(1, "hi, it's Ann")) == "pairing:sent"  # type: ignore[arg-type]
        code = re.search(r"Pairing code: (\d{6})", channel.sent[0])
        assert code is not None
        outcomes = [
            await gateway.handle(channel, dm(1000 + n, "let me in"))  # type: ignore[arg-type]
            for n in range(600)
        ]
    # Codes went out until the account's queue was full; the rest got nothing (no amplification).
    assert len(channel.sent) == MAX_PENDING_PER_ACCOUNT
    assert outcomes.count("pairing:full") == 600 - (MAX_PENDING_PER_ACCOUNT - 1)
    assert len(console.lines("pairing requests are waiting")) == 1  # once, not per stranger
    # The first real request is still there and approvable; Ann is answered from then on.
    gateway.pairing.approve(code.group(1))
    assert await gateway.handle(channel, dm(1, "what did NVDA earn?")) == "dispatched"  # type: ignore[arg-type]
    assert [t.text for t in dispatcher.turns] == ["what did NVDA earn?"]


async def test_a_new_pairing_request_is_one_line_on_the_gateways_terminal(tmp_path: Path) -> None:
    gateway, _ = pairing_gateway(tmp_path)
    channel = Recording()
    stranger = InboundMessage(
        "whatsapp_cloud",
        "default",
        "m1",
        "+15550000001",
        "direct",
        "+15550000001",
        text="hi",
        sender_name="Ann\x1b[2J\nSmith",
    )
    with gateway_console() as console:
        assert await gateway.handle(channel, stranger) == "pairing:sent"  # type: ignore[arg-type]
        follow_up = InboundMessage(
            "whatsapp_cloud", "default", "m2", "+15550000001", "direct", "+15550000001", text="?"
        )
        assert await gateway.handle(channel, follow_up) == "pairing:known"  # type: ignore[arg-type]
    [request] = gateway.pairing.pending()
    [line] = console.lines("pairing request")
    # Who asked and the exact command to let them in; once per request, not per message.
    assert "whatsapp_cloud/default: new pairing request from Ann [2J Smith (+15550000001)" in line
    assert f"`dexter gateway pair approve {request.code}`" in line
    assert "\x1b" not in console.text
