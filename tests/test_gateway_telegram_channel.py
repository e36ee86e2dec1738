"""The Telegram channel on its own against the fake Bot API: connections, rate limits, stop; and
its update parser on its own."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from dexter.gateway.records import MalformedRecord
from dexter.gateway.telegram import SEND_CONNECTIONS, TelegramChannel
from dexter.gateway.telegram_updates import BotIdentity, parse_update
from dexter.gateway.types import InboundMessage
from tests.support.fake_telegram import BOT_ID, BOT_USERNAME, FakeTelegram, serve_telegram
from tests.test_gateway_telegram_e2e import MALFORMED, OTHER_KINDS


class Hooks:
    def __init__(self) -> None:
        self.up = asyncio.Event()

    def connected(self, identity: str = "") -> None:
        self.up.set()

    async def message(self, message: InboundMessage) -> None:
        pass


def channel(fake: FakeTelegram, tmp_path: Path, **kwargs: object) -> TelegramChannel:
    return TelegramChannel(
        "default",
        fake.token,
        offset_path=tmp_path / "default.offset",
        api_base=fake.url,
        **kwargs,  # type: ignore[arg-type]
    )


async def test_a_burst_of_sends_shares_a_few_kept_alive_connections(tmp_path: Path) -> None:
    """One new connection per call would make a burst of chats (100 "typing…" at once) open
    100 connections together, the connects past the server's accept queue waiting a second."""
    with serve_telegram() as fake:
        tg = channel(fake, tmp_path)
        try:
            await asyncio.gather(*(tg.send_typing(str(chat)) for chat in range(40)))
            await asyncio.gather(*(tg.send_text(str(chat), "hi") for chat in range(40)))
        finally:
            await tg.stop()
        assert sorted(int(a["chat_id"]) for a in fake.actions) == list(range(40))
        assert len(fake.texts()) == 40
        assert len(fake.peers) <= SEND_CONNECTIONS


async def test_429_waits_as_long_as_telegram_says_then_sends_once(tmp_path: Path) -> None:
    slept: list[float] = []

    async def sleep(delay: float) -> None:
        slept.append(delay)

    with serve_telegram() as fake:
        fake.fail_next("sendMessage", 429, "Too Many Requests: retry after 3", retry_after=3)
        tg = channel(fake, tmp_path, sleep=sleep)
        try:
            await tg.send_text("42", "the answer")
        finally:
            await tg.stop()
        assert slept == [3.0]
        assert fake.texts(42) == ["the answer"]
        assert fake.count("sendMessage") == 2


async def test_stop_closes_a_pending_long_poll(tmp_path: Path) -> None:
    with serve_telegram(FakeTelegram(max_poll_wait=120.0)) as fake:
        tg = channel(fake, tmp_path, poll_timeout=100)
        hooks = Hooks()
        task = asyncio.create_task(tg.start(hooks))
        await hooks.up.wait()
        await asyncio.to_thread(fake.wait_for, lambda: fake.count("getUpdates") >= 1)
        await tg.stop()
        # The server would hold this poll for two minutes; closing the connection ends it now.
        # (The bound only keeps a regression from hanging the suite.)
        await asyncio.wait_for(task, 30.0)
        assert task.result() is None


async def test_a_stop_that_lands_before_start_is_kept(tmp_path: Path) -> None:
    """The gateway may be stopped while an account's task is still being scheduled: that
    account must not connect afterwards."""
    with serve_telegram() as fake:
        tg = channel(fake, tmp_path)
        await tg.stop()
        hooks = Hooks()
        await asyncio.wait_for(tg.start(hooks), 5)
        assert not hooks.up.is_set() and fake.calls == []


BOT = BotIdentity("default", str(BOT_ID), BOT_USERNAME)


@pytest.mark.parametrize("shape", sorted(MALFORMED))
def test_each_malformed_shape_is_refused_by_name_not_by_a_crash(shape: str) -> None:
    update = {"update_id": 5, **MALFORMED[shape]}
    with pytest.raises(MalformedRecord, match=r"^update\.message") as refused:
        parse_update(update, BOT)
    assert "SECRET" not in str(refused.value)


@pytest.mark.parametrize("kind", sorted(OTHER_KINDS))
def test_update_kinds_other_than_message_are_passed_over(kind: str) -> None:
    """Inline-button presses (`callback_query`) and kinds added to the Bot API later are not
    questions: they are neither answered nor an error."""
    assert parse_update({"update_id": 5, **OTHER_KINDS[kind]}, BOT) is None


def test_a_well_formed_topic_message_with_a_mention_and_a_caption_is_read() -> None:
    raw: dict[str, object] = {
        "message_id": 31,
        "from": {"id": 6, "is_bot": False, "first_name": "Bo", "last_name": "Li"},
        "chat": {"id": -1001, "type": "supergroup", "title": "Research"},
        "date": 1764600000,
        "is_topic_message": True,
        "message_thread_id": 12,
        "photo": [{"file_id": "p1", "width": 90, "height": 90}],
        "caption": "what is this chart?",
        "caption_entities": [
            {"type": "text_mention", "offset": 0, "length": 4, "user": {"id": BOT_ID}}
        ],
    }
    message = parse_update({"update_id": 9, "message": raw}, BOT)
    assert message is not None
    assert (message.chat_id, message.chat_type, message.chat_title) == (
        "-1001",
        "group",
        "Research",
    )
    assert (message.sender_id, message.sender_name, message.message_id) == ("6", "Bo Li", "31")
    assert (message.text, message.kind, message.thread_id) == ("what is this chart?", "image", "12")
    assert message.mentioned
    assert message.timestamp.year == 2025
    # The bot's own message is never a question to itself.
    own = {**raw, "from": {"id": BOT_ID, "is_bot": True}}
    assert parse_update({"update_id": 10, "message": own}, BOT) is None
