"""The Telegram channel on its own against the fake Bot API: connections, rate limits, stop."""

from __future__ import annotations

import asyncio
from pathlib import Path

from dexter.gateway.telegram import SEND_CONNECTIONS, TelegramChannel
from dexter.gateway.types import InboundMessage
from tests.support.fake_telegram import FakeTelegram, serve_telegram


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
