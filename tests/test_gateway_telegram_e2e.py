"""The real Telegram channel, the gateway and runtime-built agents against a fake Bot API server
on 127.0.0.1, with a scripted model."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from dexter.cli.open_runtime import open_runtime
from dexter.config import load_settings
from dexter.gateway.config import ConfigSource, config_path
from dexter.gateway.service import build_service, pairing_store
from dexter.models.scripted import Reply, ScriptedModel, calls
from dexter.models.types import ModelRequest, StreamChunk, UserMessage
from dexter.runtime import Runtime
from dexter.store.sessions import SessionStore
from tests.support.fake_telegram import BOT_USERNAME, FakeTelegram, serve_telegram
from tests.support.gateway_console import gateway_console

MAIN = "openai:main-test"
ROUTER = "openai:router-test"


def last_user(request: ModelRequest) -> str:
    users = [m.content for m in request.messages if isinstance(m, UserMessage)]
    return users[-1] if users else ""


class ChatModel(ScriptedModel):
    """Answers by rule from the question; questions containing SLOW wait for `gate`."""

    def __init__(self) -> None:
        super().__init__([self._answer] * 200, name="main-test")
        self.gate = asyncio.Event()
        self.gate.set()
        self.waiting = asyncio.Event()

    def _answer(self, request: ModelRequest) -> Reply:
        question = last_user(request)
        if "SLOW" in question and not any(m.role == "tool" for m in request.messages):
            return calls(("calculate", {"operation": "sum", "values": [1, 2]}))
        if "LONG" in question:
            return Reply(text="\n\n".join(f"Part {i}. " + "word " * 400 for i in range(5)))
        return Reply(text=f"Answer to: {question.splitlines()[-1][-60:]}")

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        if "SLOW" in last_user(request) and not self.gate.is_set():
            self.waiting.set()
            await self.gate.wait()
        async for chunk in super().stream(request):
            yield chunk


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in ("OPENAI_BASE_URL", "DEXTER_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123456")
    monkeypatch.setenv("DEXTER_SEC_USER_AGENT", "Test t@example.com")
    monkeypatch.setenv("DEXTER_MEMORY", "off")
    monkeypatch.setenv("DEXTER_ROUTER_MODEL", ROUTER)
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def write_config(home: Path, fake: FakeTelegram) -> None:
    home.mkdir(parents=True, exist_ok=True)
    config = {
        "model": MAIN,
        "channels": {
            "telegram": {
                "dm_policy": "pairing",
                "allow_from": ["42"],
                "group_policy": "open",
                "accounts": {"default": {"token": fake.token, "api_base": fake.url}},
            }
        },
    }
    config_path(home).write_text(json.dumps(config))


async def until(fake: FakeTelegram, predicate: object) -> None:
    await asyncio.to_thread(fake.wait_for, predicate)


def runtime_with(model: ChatModel) -> Runtime:
    rt = open_runtime(load_settings())
    rt._clients[rt.resolve(MAIN).spec] = model
    rt._clients[rt.resolve(ROUTER).spec] = ScriptedModel([Reply(text="{}")] * 50)
    return rt


async def test_telegram_end_to_end(home: Path) -> None:
    model = ChatModel()
    with serve_telegram() as fake:
        write_config(home, fake)
        async with runtime_with(model) as rt:
            service = build_service(rt, ConfigSource(config_path(home), interval=0))
            await service.start()
            try:
                # A DM from an allowed user is answered, with "typing…" first.
                fake.push("What is Apple's margin?", user=42)
                await until(fake, lambda: fake.texts(42))
                assert fake.texts(42) == ["Answer to: What is Apple&#x27;s margin?"] or (
                    fake.texts(42)[0].startswith("Answer to: What is Apple")
                )
                assert fake.actions and fake.actions[0] == {"chat_id": "42", "action": "typing"}

                # A stranger gets a pairing code once, then is answered after approval.
                fake.push("hello", user=77)
                await until(fake, lambda: fake.texts(77))
                await handled(fake, fake.push("hello again?", user=77))
                assert len(fake.texts(77)) == 1
                pending = pairing_store(home).pending()
                assert len(pending) == 1 and pending[0].sender_id == "77"
                assert pending[0].code in fake.texts(77)[0]
                assert "dexter gateway pair approve" in fake.texts(77)[0]
                pairing_store(home).approve(pending[0].code)
                fake.push("now?", user=77)
                await until(fake, lambda: len(fake.texts(77)) == 2)
                assert fake.texts(77)[1] == "Answer to: now?"

                # A group message is context until the bot is mentioned.
                fake.push("AAPL is up 3% today", user=5, chat=-100, chat_type="supergroup")
                fake.push(
                    f"@{BOT_USERNAME} why is it up?", user=6, chat=-100, chat_type="supergroup"
                )
                await until(fake, lambda: fake.texts(-100))
                assert len(fake.texts(-100)) == 1
                group_request = model.requests[-1]
                question = last_user(group_request)
                assert "Ann (5): AAPL is up 3% today" in question
                assert question.rstrip().endswith(f"@{BOT_USERNAME} why is it up?")

                # A long answer arrives in several messages, each within Telegram's limit.
                fake.push("LONG please", user=42)
                await until(fake, lambda: "Part 4." in fake.texts(42)[-1])
                long_pieces = fake.texts(42)[1:]
                assert len(long_pieces) == 3
                assert all(len(p) <= 4096 for p in long_pieces)
                assert long_pieces[0].startswith("Part 0.")
                assert "Part 4." in long_pieces[-1]

                # A message sent while a run works is injected into that run's next round.
                model.gate.clear()
                sent_before = len(fake.texts(42))
                fake.push("SLOW question", user=42)
                await model.waiting.wait()
                fake.push("also check MSFT", user=42)
                await until(fake, lambda: fake.count("getUpdates") >= 1 and _queued(service))
                model.gate.set()
                await until(fake, lambda: len(fake.texts(42)) > sent_before)
                await service.dispatcher.join()
                injected = [r for r in model.requests if "also check MSFT" in str(r.messages)]
                assert injected and any(m.role == "tool" for m in injected[0].messages)
                assert len(fake.texts(42)) == sent_before + 1

                # Media gets a short note instead of silence.
                fake.push("", user=42, extra={"voice": {"file_id": "v1", "duration": 3}})
                await until(fake, lambda: "only read text" in fake.texts(42)[-1])
            finally:
                await service.stop()
            answered = len(fake.sent)
            offset = (home / "gateway" / "telegram" / "default.offset").read_text().strip()
            assert int(offset) == len(fake.updates) + 1

            # Each chat is a stored session (what `dexter sessions list` shows).
            sessions = SessionStore(rt.store).list(50)
            assert len(sessions) >= 3

        # Restart: resumes from the saved offset, so nothing earlier is answered again.
        async with runtime_with(model) as rt:
            service = build_service(rt, ConfigSource(config_path(home), interval=0))
            await service.start()
            try:
                fake.push("after restart", user=42)
                await until(fake, lambda: len(fake.sent) > answered)
                await service.dispatcher.join()
                assert [m["text"] for m in fake.sent[answered:]] == ["Answer to: after restart"]
                # The conversation continued in the same stored session.
                history = str(model.requests[-1].messages)
                assert "What is Apple" in history
            finally:
                await service.stop()


async def handled(fake: FakeTelegram, update_id: int) -> None:
    """Wait until the channel asked for updates past `update_id` (so it has handled it)."""

    def past() -> bool:
        return any(
            name == "getUpdates" and int(p.get("offset") or 0) > update_id for name, p in fake.calls
        )

    await until(fake, past)


def _queued(service: object) -> bool:
    dispatcher = service.dispatcher  # type: ignore[attr-defined]
    return any(dispatcher.queued(key) for key in list(dispatcher._sessions))


async def test_rate_limit_and_conflict_are_survived(home: Path) -> None:
    model = ChatModel()
    with serve_telegram() as fake:
        write_config(home, fake)
        fake.fail_next("getUpdates", 409, "Conflict: terminated by other getUpdates request")
        fake.fail_next("sendMessage", 429, "Too Many Requests: retry after 0", retry_after=0)
        async with runtime_with(model) as rt:
            service = build_service(rt, ConfigSource(config_path(home), interval=0))
            slept: list[float] = []

            async def fake_sleep(delay: float) -> None:
                slept.append(delay)

            service.manager._sleep = fake_sleep
            await service.start()
            try:
                fake.push("hi", user=42)
                await until(fake, lambda: fake.texts(42))
                assert fake.texts(42) == ["Answer to: hi"]
                status = service.manager.snapshot()[0]
                assert status.connected and status.reconnect_attempts == 1
                assert slept and slept[0] <= 2.5
            finally:
                await service.stop()
        saved = json.loads((home / "gateway" / "status.json").read_text())
        assert saved["accounts"][0]["running"] is False
        assert "409" in saved["accounts"][0]["last_error"]


async def test_gateway_runs_schedules_and_delivers_alerts_through_telegram(home: Path) -> None:
    from datetime import UTC, datetime

    from dexter.cron import jobs as job_api
    from dexter.cron.schedule import parse_every
    from dexter.cron.store import CronStore

    model = ChatModel()
    with serve_telegram() as fake:
        write_config(home, fake)
        async with runtime_with(model) as rt:
            now = datetime.now(UTC)
            cron = CronStore(rt.store)
            job = job_api.create_job(
                cron,
                name="NVDA 10-Q watch",
                message="Tell me when NVIDIA files its 10-Q.",
                schedule=parse_every("1h", anchor=now),
                now=now,
                target="telegram:42",
            )
            # An alert a daemon could not send (it has no Telegram) waits in the outbox.
            cron.add_alert(
                job=job,
                run_id=None,
                text="NVIDIA filed its 10-Q for the quarter ended 2026-10-26.",
                target="telegram:42",
                created_at=now,
                delivered=False,
            )
            service = build_service(rt, ConfigSource(config_path(home), interval=0))
            assert service.schedules is not None and "telegram" in service.schedules.deliverers
            await service.start()
            try:
                await until(fake, lambda: fake.texts(42))
                assert any("NVIDIA filed its 10-Q" in text for text in fake.texts(42))
                # The runner records the delivery just after Telegram accepted the message.
                for _ in range(200):
                    if [item.status for item in cron.outbox(job.id)] == ["delivered"]:
                        break
                    await asyncio.sleep(0.05)
            finally:
                await service.stop()
            assert [item.status for item in cron.outbox(job.id)] == ["delivered"]


def sent_by_42(**fields: object) -> dict[str, object]:
    """A private message from user 42 with `fields` changed (None removes a field)."""
    message: dict[str, object] = {
        "message_id": 7,
        "from": {"id": 42, "is_bot": False, "first_name": "Ann"},
        "chat": {"id": 42, "type": "private"},
        "date": 1764600000,
        "text": "SECRET question",
    }
    message.update(fields)
    return {"message": {k: v for k, v in message.items() if v is not None}}


# Updates whose shape the Bot API never documents: each is skipped with one line in the log.
MALFORMED: dict[str, dict[str, object]] = {
    "message without chat": sent_by_42(chat=None),
    "chat id as a string": sent_by_42(chat={"id": "42", "type": "private"}),
    "chat id as an object": sent_by_42(chat={"id": {"n": 42}, "type": "private"}),
    "chat as a list": sent_by_42(chat=[42]),
    "text as a number": sent_by_42(text=42),
    "text as a list": sent_by_42(text=["SECRET"]),
    "from missing": sent_by_42(**{"from": None}),
    "from as a string": sent_by_42(**{"from": "ann"}),
    "entities not a list": sent_by_42(entities="bold"),
    "an entity that is a string": sent_by_42(entities=["bold"]),
    "a text_mention without a user object": sent_by_42(
        entities=[{"type": "text_mention", "offset": 0, "length": 3, "user": "ann"}]
    ),
    "date as a string": sent_by_42(date="yesterday"),
    "date out of range": sent_by_42(date=10**20),
    "message_thread_id as an object": sent_by_42(is_topic_message=True, message_thread_id={}),
    "reply_to_message as a string": sent_by_42(reply_to_message="SECRET"),
    "a null message": {"message": None},
    "a message that is a list": {"message": ["SECRET"]},
}
# Kinds of update that carry no new question (inline-button presses among them): passed over.
OTHER_KINDS: dict[str, dict[str, object]] = {
    "callback_query": {
        "callback_query": {
            "id": "4382bfdwdsb323b2d9",
            "from": {"id": 42, "is_bot": False, "first_name": "Ann"},
            "message": sent_by_42()["message"],
            "chat_instance": "-83620923",
            "data": "approve:run-17",
        }
    },
    "callback_query of an odd shape": {"callback_query": ["approve", None]},
    "edited_message with odd fields": {"edited_message": {"chat": 42, "text": {"x": 1}}},
    "my_chat_member": {"my_chat_member": {"chat": {"id": 42}, "new_chat_member": {}}},
    "an update of a kind not invented yet": {"kind_from_2030": {"anything": True}},
}


async def test_a_malformed_update_is_logged_skipped_and_never_blocks_the_next(home: Path) -> None:
    """One bad update used to crash the poll loop before the offset was saved: the same batch
    came back after every reconnect and no later message was ever answered."""
    model = ChatModel()
    with gateway_console() as console, serve_telegram() as fake:
        write_config(home, fake)
        for update in (*MALFORMED.values(), *OTHER_KINDS.values()):
            fake.push_raw(update)
        fake.push_raw(["not", "an", "update"])
        fake.push_raw(sent_by_42(), with_id=False)  # no update_id
        last = fake.push("the real question", user=42)
        async with runtime_with(model) as rt:
            service = build_service(rt, ConfigSource(config_path(home), interval=0))
            await service.start()
            try:
                await until(fake, lambda: fake.texts())
                await handled(fake, last)
                await service.dispatcher.join()
                # Answered from the first batch: no reconnect, nothing fetched twice.
                assert fake.texts() == ["Answer to: the real question"]
                assert fake.count("getMe") == 1
                assert service.manager.snapshot()[0].reconnect_attempts == 0
                offsets = [p.get("offset") for m, p in fake.calls if m == "getUpdates"]
                assert offsets[0] is None and set(offsets[1:]) == {last + 1}
            finally:
                await service.stop()
        saved = (home / "gateway" / "telegram" / "default.offset").read_text().strip()
        assert int(saved) == last + 1
    skipped = console.lines("skipped")
    # One line per malformed update (and for the two without a usable id), none for the others.
    assert len(skipped) == len(MALFORMED) + 2, skipped
    assert all("telegram/default" in line for line in skipped)
    assert "Traceback" not in console.text
    assert "SECRET" not in console.text  # field names and types, never the content
