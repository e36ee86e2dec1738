"""Approvals from a chat on Slack (Block Kit buttons over Socket Mode) and WhatsApp (numbered
replies, Web and Cloud): only the asker answers, in their own chat; a timeout denies."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest

from dexter.agent.events import ApprovalRequest
from dexter.agent.queue import MessageQueue
from dexter.cli.open_runtime import open_runtime
from dexter.config import load_settings
from dexter.gateway.approvals import ChatApprover, PendingApprovals
from dexter.gateway.config import ConfigSource, config_path
from dexter.gateway.dispatch import ChatTurn, RunOutcome
from dexter.gateway.service import GatewayService, build_service
from dexter.gateway.types import ApprovalOption, InboundMessage
from dexter.gateway.whatsapp_cloud import WhatsAppCloudChannel
from dexter.httpclient import async_client
from dexter.permissions.gate import ApprovalAnswer
from tests.support.fake_neonize import JID, text_message
from tests.support.fake_slack import BOT_USER_ID, TEAM_ID, serve_slack, until
from tests.test_gateway_principals_e2e import MAIN, ROUTER, Gullible
from tests.test_gateway_principals_e2e import home as home
from tests.test_gateway_principals_e2e import places as places  # the same isolated home
from tests.test_gateway_slack import write_config
from tests.test_gateway_whatsapp_web import GROUP as WA_GROUP
from tests.test_gateway_whatsapp_web import OWNER, start
from tests.test_gateway_whatsapp_web import until as wa_until

ANN, BOB = "UANN00001", "UBOB00002"
CHANNEL = "C0CHAN001"
MEMORY_WRITE = ApprovalRequest(
    "call-1",
    "memory_update",
    {"action": "add", "content": "the desk prefers dividend growers"},
    "this run has read outside text",
    proposed_rule="memory_update",
)


# ---------------------------------------------------------------------- Slack, end to end


@asynccontextmanager
async def slack_deployment(places: tuple[Path, Path]) -> AsyncIterator[tuple[Any, Gullible]]:
    home = places[0]
    model = Gullible()
    async with serve_slack() as fake:
        write_config(home, fake)
        rt = open_runtime(load_settings())
        rt._clients[rt.resolve(MAIN).spec] = model
        rt._clients[rt.resolve(ROUTER).spec] = Gullible()
        async with rt:
            service = build_service(
                rt, ConfigSource(config_path(home), interval=0), schedules=False
            )
            await service.start()
            try:
                await until(fake, lambda: fake.sockets)
                yield fake, model
            finally:
                await service.stop()


async def test_slack_buttons_answer_only_for_the_asker_and_the_write_lands_in_the_channels_memory(
    places: tuple[Path, Path],
) -> None:
    from dexter.principal import principal_slug

    home = places[0]
    channel_memory = home / "principals" / principal_slug(f"slack:{TEAM_ID}/{CHANNEL}")
    async with slack_deployment(places) as (fake, model):
        model.plans["NOTE-DESK"] = [
            [("memory_update", {"action": "add", "content": "the desk prefers dividend growers"})]
        ]
        fake.names.update({ANN: "Ann", BOB: "Bob"})
        await fake.push_event(fake.message("NVDA looks cheap", user=BOB, channel=CHANNEL))
        mention = fake.message(f"<@{BOT_USER_ID}> NOTE-DESK", user=ANN, channel=CHANNEL)
        await fake.push_event(mention)
        await until(fake, lambda: fake.has_buttons(CHANNEL))
        ts, buttons = fake.buttons(CHANNEL)
        question = fake.posts(CHANNEL)[-1]
        assert question["thread_ts"] == mention["ts"]  # asked in the thread it answers
        assert set(buttons) == {"Allow once", "Allow for this conversation", "Deny"}
        assert "memory_update" in question["text"] and "Only Ann, who asked" in question["text"]

        # Bob's click is acknowledged, told (to him alone) that it is not his to answer.
        envelope = await fake.press(
            buttons["Allow once"], user=BOB, channel=CHANNEL, message_ts=ts, thread_ts=ts
        )
        await until(fake, lambda: fake.calls_of("chat.postEphemeral") and envelope in fake.acks)
        note = fake.calls_of("chat.postEphemeral")[0]
        assert (note["user"], note["channel"]) == (BOB, CHANNEL)
        assert "Only Ann can answer this" in note["text"]
        assert fake.calls_of("chat.update") == []

        await fake.press(
            buttons["Allow for this conversation"],
            user=ANN,
            channel=CHANNEL,
            message_ts=ts,
            thread_ts=mention["ts"],
        )
        await until(fake, lambda: fake.calls_of("chat.update"))
        update = fake.calls_of("chat.update")[0]
        assert update["ts"] == ts and "Allowed for this conversation by Ann" in update["text"]
        assert [b["type"] for b in update["blocks"]] == ["section"]  # the buttons are gone
        await until(fake, lambda: (channel_memory / "memory" / "MEMORY.md").exists())
        assert "dividend growers" in (channel_memory / "memory" / "MEMORY.md").read_text()
        assert not (home / "memory" / "MEMORY.md").read_text().count("dividend")


# ---------------------------------------------------------------------- WhatsApp Web, numbered


@dataclass
class Asking:
    """Each run puts `request` to the turn's approver and answers with what came back."""

    request: ApprovalRequest = MEMORY_WRITE
    turns: list[ChatTurn] = field(default_factory=list)

    async def run(self, turn: ChatTurn, queue: MessageQueue) -> RunOutcome:
        self.turns.append(turn)
        assert turn.approver is not None
        answer = await turn.approver(self.request)
        return RunOutcome(f"answer: {answer.value}")


async def test_whatsapp_web_numbered_reply_from_the_asker_answers_in_a_group(
    tmp_path: Path,
) -> None:
    runner = Asking()
    rig = await start(tmp_path / "home", runner, group_policy="open")
    bob, eve = JID("15552223333"), JID("15554445555")
    world, client = rig.world, rig.world.client

    def said() -> list[str]:
        return [text for _, text in world.sent()]

    try:
        asked = text_message(
            "@Owner NOTE-DESK",
            chat=WA_GROUP,
            sender=bob,
            group=True,
            push_name="Bob",
            mentioned=[f"{OWNER}@s.whatsapp.net"],
        )
        await client.emit(asked)
        await wa_until(lambda: any("Reply 1" in t for t in said()), "the question")
        question = said()[-1]
        assert "memory_update" in question and "Only Bob, who asked, can answer." in question
        assert question.endswith("Reply 1 to allow once, 2 for this conversation, 4 to deny.")

        # Another member's "1" is group chatter, not an answer; the question stays open.
        await client.emit(text_message("1", chat=WA_GROUP, sender=eve, group=True))
        assert not any(t.startswith("answer:") for t in said())
        # The asker's "2" answers it, and is not taken as a new question.
        await client.emit(text_message("2", chat=WA_GROUP, sender=bob, group=True))
        await wa_until(lambda: any(t.startswith("answer:") for t in said()), "the answer")
        await rig.service.dispatcher.join()
        assert [t for t in said() if t.startswith("answer:")] == ["answer: allow_session"]
        assert len(runner.turns) == 1
        assert runner.turns[0].principal is not None
        assert runner.turns[0].principal.id == f"whatsapp:group:{WA_GROUP.User}@g.us"
    finally:
        await rig.service.stop()


# ---------------------------------------------------------------------- WhatsApp Cloud, numbered


def _signed(body: bytes) -> dict[str, str]:
    digest = hmac.new(b"app-secret-123", body, hashlib.sha256).hexdigest()
    return {"x-hub-signature-256": f"sha256={digest}", "content-type": "application/json"}


def _webhook(text: str, number: str, message_id: str) -> bytes:
    value = {
        "messaging_product": "whatsapp",
        "contacts": [{"profile": {"name": "Ann Lee"}, "wa_id": number}],
        "messages": [
            {
                "from": number,
                "id": message_id,
                "timestamp": "1764600000",
                "text": {"body": text},
                "type": "text",
            }
        ],
    }
    payload = {"object": "whatsapp_business_account", "entry": [{"changes": [{"value": value}]}]}
    return json.dumps(payload).encode()


async def test_whatsapp_cloud_asks_with_numbers_and_takes_the_asker_s_reply(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    graph: list[dict[str, Any]] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        graph.append(json.loads(request.content))
        return httpx2.Response(200, json={"messages": [{"id": "wamid.OUT"}]})

    channel = WhatsAppCloudChannel(
        "default",
        access_token="EAAG-token",
        phone_number_id="106540352242922",
        app_secret="app-secret-123",
        verify_token="verify-me",
        listen="127.0.0.1:0",
        transport=httpx2.MockTransport(handler),
    )
    config = {"channels": {"whatsapp_cloud": {"dm_policy": "open", "accounts": {"default": {}}}}}
    config_path(home).write_text(json.dumps(config))
    runner = Asking()
    service = GatewayService(home, ConfigSource(config_path(home), interval=0), runner, [channel])
    await service.start()
    try:
        for _ in range(3000):  # up to 30 s on a loaded machine; ends as soon as it connects
            if service.manager.snapshot()[0].connected:
                break
            await asyncio.sleep(0.01)
        url = f"http://127.0.0.1:{channel.bound_port}/webhook"

        def texts() -> list[str]:
            return [str(g["text"]["body"]) for g in graph if g.get("type") == "text"]

        async with async_client() as http:
            body = _webhook("remember my broker", "15551234567", "wamid.Q1")
            await http.post(url, content=body, headers=_signed(body))
            await wa_until(lambda: any("Reply 1" in t for t in texts()), "the question")
            assert texts()[-1].endswith(
                "Reply 1 to allow once, 2 for this conversation, 3 always, 4 to deny."
            )
            # A number that is not offered is answered with the ones that are.
            body = _webhook("7", "15551234567", "wamid.Q2")
            await http.post(url, content=body, headers=_signed(body))
            await wa_until(lambda: "Please reply with one of 1, 2, 3, 4." in texts(), "note")
            body = _webhook("3", "15551234567", "wamid.Q3")
            await http.post(url, content=body, headers=_signed(body))
            await wa_until(lambda: "answer: allow_always" in texts(), "the answer")
        assert len(runner.turns) == 1
        assert runner.turns[0].principal is not None
        assert runner.turns[0].principal.id == "whatsapp:+15551234567"
    finally:
        await service.stop()


# ---------------------------------------------------------------------- the approver itself


@dataclass
class Recording:
    name: str = "telegram"
    account_id: str = "default"
    asked: list[tuple[str, str, tuple[ApprovalOption, ...]]] = field(default_factory=list)
    settled: list[tuple[str, str]] = field(default_factory=list)
    fail: bool = False

    async def send_approval(
        self,
        chat_id: str,
        text: str,
        approval_id: str,
        options: Sequence[ApprovalOption],
        *,
        thread_id: str | None = None,
    ) -> str:
        if self.fail:
            raise ConnectionError("offline")
        self.asked.append((chat_id, approval_id, tuple(options)))
        return "m1"

    async def settle_approval(
        self, chat_id: str, ref: str, text: str, *, thread_id: str | None = None
    ) -> None:
        self.settled.append((ref, text))


def _asker(chat_type: str = "direct") -> InboundMessage:
    chat = "-100" if chat_type == "group" else "222"
    return InboundMessage(
        "telegram",
        "default",
        "5",
        chat,
        chat_type,
        "222",
        text="q",
        sender_name="Ana",  # type: ignore[arg-type]
    )


async def test_no_answer_in_time_is_a_denial_and_the_question_says_so() -> None:
    channel = Recording()
    pending = PendingApprovals()
    approver = ChatApprover(
        channel,  # type: ignore[arg-type]
        _asker(),
        pending,
        may_send=lambda: True,
        timeout=0.01,
    )
    assert await approver(MEMORY_WRITE) is ApprovalAnswer.DENY
    assert channel.settled and "No answer within 0.01 seconds: denied" in channel.settled[0][1]
    assert len(pending) == 0  # nothing is left waiting


@pytest.mark.parametrize(("fail", "allowed"), [(True, True), (False, False)])
async def test_a_question_that_cannot_be_asked_is_a_denial(fail: bool, allowed: bool) -> None:
    channel = Recording(fail=fail)
    approver = ChatApprover(
        channel,  # type: ignore[arg-type]
        _asker(),
        PendingApprovals(),
        may_send=lambda: allowed,
    )
    assert await approver(MEMORY_WRITE) is ApprovalAnswer.DENY
    assert channel.asked == []


async def test_always_is_offered_in_a_direct_chat_only_and_only_with_a_rule_to_save() -> None:
    offered: dict[str, tuple[str, ...]] = {}
    for label, asker, request in (
        ("direct", _asker(), MEMORY_WRITE),
        ("group", _asker("group"), MEMORY_WRITE),
        ("no rule", _asker(), ApprovalRequest("c", "cron", {"action": "add"})),
    ):
        channel = Recording()
        pending = PendingApprovals()
        approver = ChatApprover(
            channel,  # type: ignore[arg-type]
            asker,
            pending,
            may_send=lambda: True,
        )
        task = asyncio.create_task(approver(request))
        await _wait(lambda channel=channel: channel.asked)
        offered[label] = tuple(o.answer for o in channel.asked[0][2])
        waiting = pending.waiting_in(asker)
        assert waiting is not None
        waiting.settle(ApprovalAnswer.ALLOW_ONCE)
        assert await task is ApprovalAnswer.ALLOW_ONCE
    assert offered == {
        "direct": ("once", "session", "always", "deny"),
        "group": ("once", "session", "deny"),
        "no rule": ("once", "session", "deny"),
    }


async def _wait(condition: Callable[[], object]) -> None:
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition not reached")
