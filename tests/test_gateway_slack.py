"""The real Slack channel (slack-bolt over Socket Mode) against a fake Slack on 127.0.0.1: Web API
over HTTP, events over a real WebSocket, runtime-built agents with a scripted model."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from dexter.cli.main import main
from dexter.config import ConfigError
from dexter.gateway.config import (
    AccountConfig,
    ConfigSource,
    GatewayConfig,
    config_path,
    load_config,
)
from dexter.gateway.delivery import DeliveryError, deliverers
from dexter.gateway.pairing import PairingStore
from dexter.gateway.records import MalformedRecord
from dexter.gateway.service import (
    GatewayService,
    build_channel,
    build_service,
    pairing_store,
)
from dexter.gateway.slack import (
    SLACK_LIMIT,
    SlackChannel,
    SlackError,
    parse_event,
    slack_pieces,
    slack_to_text,
)
from dexter.gateway.text import MEDIA_REPLY, markdown_to_slack, markdown_to_telegram_html
from dexter.gateway.types import ChannelStatus, InboundMessage
from dexter.install import add_extra_command
from tests.support.fake_slack import (
    APP_TOKEN,
    BOT_TOKEN,
    BOT_USER_ID,
    FakeSlack,
    serve_slack,
    until,
)
from tests.support.gateway_console import gateway_console
from tests.test_gateway_delivery import Alert
from tests.test_gateway_telegram_e2e import MAIN, ChatModel, last_user, runtime_with
from tests.test_gateway_telegram_e2e import home as home  # the same isolated $DEXTER_HOME

ANN, BOB = "UANN00001", "UBOB00002"
ANN_DM, BOB_DM = "D0DM00001", "D0DM00002"
CHANNEL = "C0CHAN001"


def write_config(home: Path, fake: FakeSlack, **account: Any) -> None:
    home.mkdir(parents=True, exist_ok=True)
    config = {
        "model": MAIN,
        "reconnect": {"initial": 0.25},
        "channels": {
            "slack": {
                "dm_policy": "pairing",
                "allow_from": [ANN],
                "group_policy": "open",
                "accounts": {
                    "default": {
                        "bot_token": BOT_TOKEN,
                        "app_token": APP_TOKEN,
                        "api_base": fake.url,
                        **account,
                    }
                },
            }
        },
    }
    config_path(home).write_text(json.dumps(config))


@dataclass
class Running:
    fake: FakeSlack
    model: ChatModel
    service: GatewayService
    # Every event the channel finished handling (dropped as a retry or handed on).
    handled: list[str]

    async def answered(self) -> None:
        """Wait until the channel has handled every event pushed and every run has answered."""
        await until(self.fake, lambda: len(self.handled) >= self.fake.pushed)
        await self.service.dispatcher.join()


@asynccontextmanager
async def slack_gateway(home: Path) -> AsyncIterator[Running]:
    model = ChatModel()
    async with serve_slack() as fake:
        write_config(home, fake)
        async with runtime_with(model) as rt:
            service = build_service(
                rt, ConfigSource(config_path(home), interval=0), schedules=False
            )
            channel = service.channels[0]
            assert isinstance(channel, SlackChannel)
            channel.health_interval = 0.05
            running = Running(fake, model, service, [])
            inbound = channel._inbound

            async def counted(hooks: Any, body: dict[str, Any], event: dict[str, Any]) -> None:
                await inbound(hooks, body, event)
                running.handled.append(str(body.get("event_id")))
                await fake._notify()

            channel._inbound = counted  # type: ignore[method-assign]

            async def no_wait(delay: float) -> None:
                return None

            service.manager._sleep = no_wait
            await service.start()
            try:
                await until(fake, lambda: fake.sockets)
                await connected(service)
                yield running
            finally:
                await service.stop()


async def connected(service: GatewayService) -> ChannelStatus:
    """The account's status once the manager has marked it connected (just after the socket)."""
    for _ in range(3000):  # up to 30 s on a loaded machine; ends as soon as it connects
        status = service.manager.snapshot()[0]
        if status.connected:
            break
        await asyncio.sleep(0.01)
    return status


async def test_slack_end_to_end(home: Path) -> None:
    async with slack_gateway(home) as running:
        fake, model, service = running.fake, running.model, running.service
        status = service.manager.snapshot()[0]
        assert status.connected and status.identity == "@dexter (Acme)"

        # A DM from an allowed member is answered, with the working reaction around it.
        asked = fake.message("What is Apple's **margin**?", user=ANN, channel=ANN_DM)
        await fake.push_event(asked, event_id="Ev0001")
        await until(fake, lambda: fake.texts(ANN_DM))
        # The answer's Markdown bold arrives as Slack mrkdwn bold.
        assert fake.texts(ANN_DM) == ["Answer to: What is Apple's *margin*?"]
        await until(fake, lambda: fake.count("reactions.remove") >= 1)
        order = [
            m
            for m, p in fake.calls
            if p.get("timestamp") == asked["ts"] or p.get("channel") == ANN_DM
        ]
        assert order == ["reactions.add", "chat.postMessage", "reactions.remove"]
        assert fake.posts(ANN_DM)[0].get("thread_ts") is None

        # Slack redelivers the event (same event_id, new envelope): answered once.
        await fake.push_event(asked, event_id="Ev0001", retry_attempt=1)
        await running.answered()
        assert len(fake.texts(ANN_DM)) == 1

        # A stranger gets a pairing code once, then is answered after approval.
        await fake.push_event(fake.message("hello", user=BOB, channel=BOB_DM))
        await until(fake, lambda: fake.texts(BOB_DM))
        await fake.push_event(fake.message("hello?", user=BOB, channel=BOB_DM))
        await running.answered()
        assert len(fake.texts(BOB_DM)) == 1
        pending = pairing_store(home).pending()
        assert [p.sender_id for p in pending] == [BOB]
        assert pending[0].code in fake.texts(BOB_DM)[0]
        pairing_store(home).approve(pending[0].code)
        await fake.push_event(fake.message("now?", user=BOB, channel=BOB_DM))
        await until(fake, lambda: len(fake.texts(BOB_DM)) == 2)
        assert fake.texts(BOB_DM)[1] == "Answer to: now?"

        # In a channel, chatter is context until Dexter is @mentioned.
        await fake.push_event(fake.message("AAPL is up 3% today", user=BOB, channel=CHANNEL))
        await running.answered()
        assert fake.posts(CHANNEL) == []
        mention = fake.message(f"<@{BOT_USER_ID}> why is it up?", user=ANN, channel=CHANNEL)
        await fake.push_event(mention)
        # The same message also arrives as an app_mention event: one answer.
        app_mention = {k: v for k, v in mention.items() if k != "channel_type"}
        await fake.push_event({**app_mention, "type": "app_mention"})
        await until(fake, lambda: fake.posts(CHANNEL))
        await service.dispatcher.join()
        assert len(fake.posts(CHANNEL)) == 1
        reply = fake.posts(CHANNEL)[0]
        assert reply["thread_ts"] == mention["ts"]  # it starts a thread under the question
        question = last_user(model.requests[-1])
        assert "AAPL is up 3% today" in question
        assert question.rstrip().endswith("@dexter why is it up?")

        # A follow-up in that thread needs no mention, and continues the same session.
        follow = fake.message("and MSFT?", user=ANN, channel=CHANNEL, thread_ts=mention["ts"])
        await fake.push_event(follow)
        await until(fake, lambda: len(fake.posts(CHANNEL)) == 2)
        assert fake.posts(CHANNEL)[1]["thread_ts"] == mention["ts"]
        assert fake.posts(CHANNEL)[1]["text"].endswith("and MSFT?")
        assert "why is it up?" in str(model.requests[-1].messages)

        # A new mention at the top level is a new thread and a new conversation.
        fresh = fake.message(f"<@{BOT_USER_ID}> hello", user=ANN, channel=CHANNEL)
        await fake.push_event(fresh)
        await until(fake, lambda: len(fake.posts(CHANNEL)) == 3)
        assert fake.posts(CHANNEL)[2]["thread_ts"] == fresh["ts"]
        assert "and MSFT?" not in str(model.requests[-1].messages)

        # A file without text gets the short note instead of silence.
        image = fake.message(
            "",
            user=ANN,
            channel=ANN_DM,
            subtype="file_share",
            files=[{"id": "F1", "mimetype": "image/png", "name": "chart.png"}],
        )
        await fake.push_event(image)
        await until(fake, lambda: len(fake.texts(ANN_DM)) == 2)
        assert fake.texts(ANN_DM)[1] == MEDIA_REPLY

        # A long answer arrives in several messages, each within Slack's limit.
        await fake.push_event(fake.message("LONG please", user=ANN, channel=ANN_DM))
        await until(fake, lambda: "Part 4." in fake.texts(ANN_DM)[-1])
        pieces = fake.texts(ANN_DM)[2:]
        assert len(pieces) > 1 and all(len(p) <= SLACK_LIMIT for p in pieces)
        joined = "\n\n".join(pieces)
        assert [joined.index(f"Part {i}.") for i in range(5)] == sorted(
            joined.index(f"Part {i}.") for i in range(5)
        )
        assert pieces[0].startswith("Part 0.")

        # Every working reaction that was added has been removed.
        await until(fake, lambda: fake.count("reactions.add") == fake.count("reactions.remove"))
    assert fake.client_closes == 1  # Dexter closed its socket on stop
    saved = json.loads((home / "gateway" / "status.json").read_text())
    row = saved["accounts"][0]
    assert (row["channel"], row["running"], row["connected"]) == ("slack", False, False)
    assert row["last_message_at"]


async def test_socket_drop_reconnects_and_status_counts_it(home: Path) -> None:
    async with slack_gateway(home) as running:
        fake, service = running.fake, running.service
        await fake.drop()
        await until(fake, lambda: fake.connections == 2 and fake.sockets)
        status = await connected(service)
        assert status.connected and status.reconnect_attempts == 1
        assert "dropped" in (status.last_error or "")
        await fake.push_event(fake.message("still there?", user=ANN, channel=ANN_DM))
        await until(fake, lambda: fake.texts(ANN_DM))
        assert fake.texts(ANN_DM) == ["Answer to: still there?"]


async def test_group_context_names_members_and_a_missing_scope_stops_the_lookups(
    home: Path,
) -> None:
    async with slack_gateway(home) as running:
        fake, model, service = running.fake, running.model, running.service
        fake.names = {BOB: "Bob"}
        await fake.push_event(fake.message("AAPL is up 3% today", user=BOB, channel=CHANNEL))
        await fake.push_event(fake.message("and MSFT is flat", user=BOB, channel=CHANNEL))
        await running.answered()
        ask = fake.message(f"<@{BOT_USER_ID}> why?", user=ANN, channel=CHANNEL)
        await fake.push_event(ask)
        await until(fake, lambda: fake.posts(CHANNEL))
        await service.dispatcher.join()
        question = last_user(model.requests[-1])
        # Named where Slack says who it is, by member id where it does not (Ann is unknown).
        assert f"Bob ({BOB})" in question and "AAPL is up 3% today" in question
        assert fake.count("users.info") == 2  # Bob once (cached), Ann once

        # Without the users:read scope, one failed lookup and no more: ids stand in for names.
        fake.missing_scopes.add("users:read")
        for text in ("one", "two"):
            await fake.push_event(fake.message(text, user="UCAROL003", channel=CHANNEL))
        await running.answered()
        assert fake.count("users.info") == 3


async def test_rejected_tokens_are_one_clear_line_without_the_token(home: Path) -> None:
    async with serve_slack() as fake:
        hooks = Hooks()
        wrong_bot = SlackChannel(
            "default", bot_token="xoxb-wrong", app_token=APP_TOKEN, api_base=fake.url
        )
        with pytest.raises(SlackError, match="rejected the bot token") as bot_error:
            await wrong_bot.start(hooks)
        assert "xoxb-wrong" not in str(bot_error.value)
        await wrong_bot.stop()
        wrong_app = SlackChannel(
            "default", bot_token=BOT_TOKEN, app_token="xapp-wrong", api_base=fake.url
        )
        with pytest.raises(SlackError, match="app-level token") as app_error:
            await wrong_app.start(hooks)
        assert "xapp-wrong" not in str(app_error.value) and not hooks.identity
        await wrong_app.stop()
    with pytest.raises(ConfigError, match="xapp-"):
        SlackChannel("default", bot_token=BOT_TOKEN, app_token=BOT_TOKEN)


@asynccontextmanager
async def started(fake: FakeSlack) -> AsyncIterator[tuple[SlackChannel, Hooks]]:
    """A Slack channel connected to the fake, with a short working lease; stopped on exit."""
    channel = SlackChannel("default", bot_token=BOT_TOKEN, app_token=APP_TOKEN, api_base=fake.url)
    channel.working_lease = 0.2
    hooks = Hooks()
    task = asyncio.create_task(channel.start(hooks))
    try:
        await until(fake, lambda: fake.sockets)
        yield channel, hooks
    finally:
        await channel.stop()
        await task


async def test_working_reaction_goes_even_when_no_answer_is_sent() -> None:
    async with serve_slack() as fake:
        async with started(fake) as (channel, hooks):
            first = fake.message("one", user=ANN, channel=ANN_DM)
            await fake.push_event(first)
            await until(fake, lambda: hooks.received)
            await channel.send_typing(ANN_DM)
            await channel.send_typing(ANN_DM)  # a refresh adds nothing
            assert fake.count("reactions.add") == 1
            # A newer message moves the indicator to it.
            second = fake.message("two", user=ANN, channel=ANN_DM)
            await fake.push_event(second)
            await until(fake, lambda: len(hooks.received) == 2)
            await channel.send_typing(ANN_DM)
            added = [p["timestamp"] for m, p in fake.calls if m == "reactions.add"]
            assert added == [first["ts"], second["ts"]]
            # The run ends without an answer and refreshes stop: the reaction still goes.
            # (The fake records a call as it arrives and applies it a moment later.)
            await until(fake, lambda: fake.count("reactions.remove") == 2 and not fake.reactions)
            removed = [p["timestamp"] for m, p in fake.calls if m == "reactions.remove"]
            assert removed == [first["ts"], second["ts"]]
            assert not fake.reactions
        assert fake.client_closes == 1


async def slow_add_given_up_on(fake: FakeSlack, channel: SlackChannel, hooks: Hooks) -> str:
    """A reactions.add Slack is slow to apply, whose wait the dispatcher cancels (it stops
    waiting for typing after a while); returns the message's ts."""
    question = fake.message("one", user=ANN, channel=ANN_DM)
    await fake.push_event(question)
    await until(fake, lambda: hooks.received)
    fake.hold("reactions.add")
    typing = asyncio.create_task(channel.send_typing(ANN_DM))
    await until(fake, lambda: fake.count("reactions.add") == 1)
    typing.cancel()
    await asyncio.wait([typing])
    return str(question["ts"])


async def test_a_slow_add_lands_before_the_answer_takes_the_reaction_off() -> None:
    async with serve_slack() as fake, started(fake) as (channel, hooks):
        ts = await slow_add_given_up_on(fake, channel, hooks)
        await channel.send_text(ANN_DM, "the answer")
        fake.held["reactions.add"].set()  # the add reaches Slack after the answer
        await until(fake, lambda: fake.reaction_log and not fake.reactions)
        assert fake.reaction_log == [("add", ts), ("remove", ts)]


async def test_a_slow_add_and_no_answer_still_expires() -> None:
    async with serve_slack() as fake, started(fake) as (channel, hooks):
        ts = await slow_add_given_up_on(fake, channel, hooks)
        fake.held["reactions.add"].set()
        await until(fake, lambda: fake.reaction_log == [("add", ts), ("remove", ts)])


async def test_a_failed_add_is_still_cleaned_up() -> None:
    async with serve_slack() as fake, started(fake) as (channel, hooks):
        await fake.push_event(fake.message("one", user=ANN, channel=ANN_DM))
        await until(fake, lambda: hooks.received)
        fake.fail_next("reactions.add", "internal_error")
        with pytest.raises(SlackError, match=r"reactions\.add failed"):
            await channel.send_typing(ANN_DM)
        # Slack may have applied it anyway: the watchdog still removes it once refreshes stop.
        await until(fake, lambda: fake.count("reactions.remove") == 1)


async def test_a_failed_name_lookup_is_asked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("dexter.gateway.slack.NAME_TIMEOUT", 0.05)
    async with serve_slack() as fake, started(fake) as (_channel, hooks):
        fake.names = {BOB: "Bob", "UCAROL003": "Carol"}

        async def say(text: str, user: str) -> str:
            await fake.push_event(fake.message(text, user=user, channel=CHANNEL))
            await until(fake, lambda: any(m.text == text for m in hooks.received))
            return hooks.received[-1].sender_name

        fake.fail_next("users.info", "internal_error")  # a hiccup
        assert [await say("one", BOB), await say("two", BOB)] == ["", "Bob"]
        gate = fake.hold("users.info")  # too slow to answer in time
        assert await say("three", "UCAROL003") == ""
        gate.set()
        assert await say("four", "UCAROL003") == "Carol"
        assert await say("five", BOB) == "Bob" and fake.count("users.info") == 4


async def test_a_stop_before_start_is_kept() -> None:
    async with serve_slack() as fake:
        channel = SlackChannel(
            "default", bot_token=BOT_TOKEN, app_token=APP_TOKEN, api_base=fake.url
        )
        hooks = Hooks()
        task = asyncio.create_task(channel.start(hooks))  # scheduled, not yet running
        await channel.stop()
        try:
            await asyncio.wait_for(asyncio.shield(task), 5.0)
        finally:
            task.cancel()
            await asyncio.wait([task])
        assert fake.connections == 0 and not hooks.identity


class Hooks:
    def __init__(self) -> None:
        self.identity = ""
        self.received: list[InboundMessage] = []

    def connected(self, identity: str = "") -> None:
        self.identity = identity

    async def message(self, message: InboundMessage) -> None:
        self.received.append(message)


async def test_proactive_sends_need_an_explicit_recipient(tmp_path: Path) -> None:
    async with serve_slack() as fake:
        config = GatewayConfig.model_validate(
            {
                "channels": {
                    "slack": {
                        "dm_policy": "open",
                        "allow_from": ["*", ANN],
                        "group_policy": "open",
                        "group_allow_from": ["C0ALERTS1"],
                        "accounts": {"default": {}},
                    }
                }
            }
        )
        channel = SlackChannel(
            "default", bot_token=BOT_TOKEN, app_token=APP_TOKEN, api_base=fake.url
        )
        pairing = PairingStore(tmp_path / "pairing.json")
        slack = deliverers([channel], lambda: config, pairing)["slack"]

        def alert(target: str) -> Alert:
            return Alert(
                "j1", "NVDA watch", "NVIDIA filed its **10-Q**.", datetime.now(UTC), target
            )

        try:
            await slack.deliver(alert(f"slack:{ANN}"))
            await slack.deliver(alert("slack:C0ALERTS1"))
            assert [p["channel"] for p in fake.posts()] == [ANN, "C0ALERTS1"]
            assert fake.posts()[0]["text"] == "NVIDIA filed its *10-Q*."
            # `*` and an open policy admit replies, never alerts to someone not listed.
            with pytest.raises(DeliveryError, match=f"{BOB} is not listed in allow_from"):
                await slack.deliver(alert(f"slack:{BOB}"))
            with pytest.raises(DeliveryError, match="not listed in group_allow_from"):
                await slack.deliver(alert("slack:C0RANDOM1"))
            config.channels["slack"].allow_from = ["*"]
            with pytest.raises(DeliveryError, match="'\\*' does not count"):
                await slack.deliver(alert(f"slack:{ANN}"))
            assert len(fake.posts()) == 2
        finally:
            await channel.stop()


def test_missing_extra_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "slack_bolt" else real(name, *a),
    )
    account = AccountConfig(bot_token=BOT_TOKEN, app_token=APP_TOKEN)
    with pytest.raises(ConfigError, match=re.escape(add_extra_command("slack"))):
        build_channel(tmp_path, "slack", "default", account)


async def test_setup_and_logout_slack(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    answers = iter(
        ["3", "xapp-oops", "xoxb-wrong", BOT_TOKEN, "xapp-wrong", APP_TOKEN, f"{ANN}, {BOB}", "y"]
    )
    monkeypatch.setattr("builtins.input", lambda _prompt="": next(answers))
    async with serve_slack() as fake:
        # Setup asks the fake Slack (the account's api_base) who the tokens are.
        await asyncio.to_thread(write_config, home, fake, enabled=False)
        assert await asyncio.to_thread(main, ["gateway", "setup"]) == 0
    out = capsys.readouterr().out
    assert "Socket Mode" in out and "try again" in out and "reactions:write" in out
    assert "Slack rejected that token (invalid_auth): copy the Bot User OAuth Token" in out
    assert "Slack says: @dexter in Acme." in out
    assert "Slack rejected that token (invalid_auth): make an app-level token" in out
    assert "xoxb-wrong" not in out and "xapp-wrong" not in out
    account = load_config(config_path(home)).channels["slack"].accounts["default"]
    assert (account.bot_token, account.app_token) == (BOT_TOKEN, APP_TOKEN)
    assert account.allow_from == [ANN, BOB] and account.dm_policy == "allowlist"
    assert account.group_policy == "open"
    assert config_path(home).stat().st_mode & 0o777 == 0o600
    assert await asyncio.to_thread(main, ["gateway", "status"]) == 0
    assert "slack/default: not connected" in capsys.readouterr().out

    assert await asyncio.to_thread(main, ["gateway", "logout", "slack"]) == 0
    assert "Forgot the slack credentials" in capsys.readouterr().out
    after = load_config(config_path(home)).channels["slack"].accounts["default"]
    assert after.bot_token is None and after.app_token is None and not after.enabled


# ---------------------------------------------------------------------- pure parts


def event(**fields: Any) -> dict[str, Any]:
    base = {"type": "message", "user": ANN, "text": "hi", "ts": "1700000000.000100"}
    return {**base, "channel": ANN_DM, "channel_type": "im", **fields}


def parsed(raw: dict[str, Any], **kw: Any) -> InboundMessage | None:
    return parse_event(raw, account_id="default", bot_user_id=BOT_USER_ID, bot_name="dexter", **kw)


def test_events_become_inbound_messages() -> None:
    dm = parsed(event())
    assert dm is not None
    assert (dm.chat_type, dm.chat_id, dm.sender_id, dm.thread_id) == ("direct", ANN_DM, ANN, None)
    group = parsed(event(channel=CHANNEL, channel_type="channel", text="hello all"))
    assert group is not None and group.chat_type == "group" and not group.mentioned
    assert group.thread_id == "1700000000.000100"  # an answer would start a thread here
    threaded = parsed(event(channel=CHANNEL, channel_type="channel", thread_ts="1699.1"))
    assert threaded is not None and threaded.thread_id == "1699.1" and not threaded.mentioned
    ours = parsed(
        event(channel=CHANNEL, channel_type="channel", thread_ts="1699.1"),
        in_our_thread=lambda channel, thread: (channel, thread) == (CHANNEL, "1699.1"),
    )
    assert ours is not None and ours.mentioned
    mention = parsed({**event(channel=CHANNEL, text=f"<@{BOT_USER_ID}> go"), "type": "app_mention"})
    assert mention is not None and mention.mentioned and mention.text == "@dexter go"
    voice = parsed(
        event(
            subtype="file_share",
            text="",
            files=[{"mimetype": "audio/webm", "subtype": "slack_audio"}],
        )
    )
    assert voice is not None and voice.kind == "voice"
    for ignored in (
        event(subtype="message_changed"),
        event(subtype="channel_join"),
        event(bot_id="B0OTHER01", subtype="bot_message"),
        event(user=BOT_USER_ID),
        {"type": "reaction_added", "user": ANN},
    ):
        assert parsed(ignored) is None


# Events whose fields do not have the types Slack documents: each is skipped with one log line.
MALFORMED_EVENTS: dict[str, dict[str, Any]] = {
    "user as an object": {"user": {"id": ANN}},
    "text as a list": {"text": ["SECRET"]},
    "text as a number": {"text": 42},
    "ts as a number": {"ts": 1700000000.1},
    "ts out of any clock's range": {"ts": "1e400"},
    "files as a number": {"files": 5},
    "a file that is a string": {"files": ["SECRET.pdf"]},
    "a file mimetype that is a number": {"files": [{"mimetype": 7}]},
    "user_profile as a string": {"user_profile": "SECRET"},
    "channel as a list": {"channel": [ANN_DM]},
    "channel_type as an object": {"channel_type": {}},
    "thread_ts as an object": {"thread_ts": {"ts": "1"}},
    "parent_user_id as a list": {"parent_user_id": [BOT_USER_ID]},
}


@pytest.mark.parametrize("shape", sorted(MALFORMED_EVENTS))
def test_each_malformed_event_is_refused_by_name_not_by_a_crash(shape: str) -> None:
    with pytest.raises(MalformedRecord, match=r"^event\.") as refused:
        parsed(event(**MALFORMED_EVENTS[shape]))
    assert "SECRET" not in str(refused.value)


async def test_a_malformed_event_is_logged_in_one_line_and_the_next_is_answered(
    home: Path,
) -> None:
    with gateway_console() as console:
        async with slack_gateway(home) as running:
            fake = running.fake
            for number, fields in enumerate(MALFORMED_EVENTS.values()):
                bad = fake.message("SECRET question", user=ANN, channel=ANN_DM)
                await fake.push_event({**bad, **fields}, event_id=f"EvBAD{number:03d}")
            await fake.push_event(fake.message("the real question", user=ANN, channel=ANN_DM))
            await until(fake, lambda: fake.posts())
            await running.answered()
            assert [p["text"] for p in fake.posts()] == ["Answer to: the real question"]
            assert fake.connections == 1 and running.service.manager.snapshot()[0].connected
    skipped = console.lines("skipped")
    assert len(skipped) == len(MALFORMED_EVENTS), skipped
    assert all("slack/default: skipped malformed event EvBAD" in line for line in skipped)
    assert "Traceback" not in console.text and "SECRET" not in console.text


def test_slack_text_and_mrkdwn() -> None:
    wire = "<@U1|ann> see <#C1|general> <https://sec.gov/x|the 10-K> &lt;3 &amp; <!here>"
    assert slack_to_text(wire) == "@ann see #general the 10-K (https://sec.gov/x) <3 & @here"
    markdown = (
        "## Margins\n- **NVDA** grew *fast*\n\n| A | B |\n|---|---|\n| 1 | 2 |\n\n~~x~~ `a<b`"
    )
    assert markdown_to_slack(markdown) == (
        "*Margins*\n• *NVDA* grew _fast_\n\n```\nA  B\n1  2\n```\n\n~x~ `a&lt;b`"
    )
    long = "\n\n".join(f"Paragraph {i} " + "x & y " * 300 for i in range(6))
    pieces = slack_pieces(long)
    assert len(pieces) > 1 and all(len(p) <= SLACK_LIMIT for p in pieces)
    assert pieces[0].startswith("Paragraph 0") and "&amp;" in pieces[0]


# Answers carry text and links from fetched pages: none of it may become a Slack control sequence
# (`<!channel>`, `<@U…>`, `<#C…>`) or break out of a Telegram tag or attribute.
HOSTILE = [
    "[a](https://x.com/>x<!channel>)",
    "[a](https://x.com/?a=1&b=2|<@U0BOSS001>)",
    "[a](https://x.com/%3E<#C0GEN0001>)",
    "[a](https://x.com/&lt;!here&gt;)",
    "[a](https://[::1/<!here>)",
    '[a](https://x.com/"onclick="go<b>)',
    "[<!channel>](https://x.com/)",
    "[a|<!here>](https://x.com/)",
    "[`<!here>`](https://x.com/`<!here>`)",
    "[**<@U1>**](https://x.com/)",
    "<!channel> <@U0BOSS001> <#C0GEN0001|general> <!subteam^S1|team> &lt;!here&gt;",
    "<https://x.com/|<!everyone>> <https://x.com/>",
    "`<!here>` and\n```\n<!channel>\n```",
    "**<!here>** _<@U1>_ ~~<#C1>~~ # <!channel>",
    "## <!channel>\n- <@U1>\n\n| <!here> | <@U1> |\n|---|---|\n| a | b |",
]


def test_hostile_markdown_never_becomes_a_slack_control_sequence() -> None:
    for markdown in HOSTILE:
        outputs = [
            markdown_to_slack(markdown),
            *slack_pieces(markdown),
            *slack_pieces(markdown, 24),
        ]
        for out in outputs:
            # The only `<` Slack sees is a link we made, to an http(s) URL, closed before the next.
            for start in [i for i, ch in enumerate(out) if ch == "<"]:
                assert out.startswith(("<http://", "<https://"), start), (markdown, out)
                assert "<" not in out[start + 1 :].split(">", 1)[0], (markdown, out)
            assert not any(s in out for s in ("<!", "<@", "<#")), (markdown, out)
    link = markdown_to_slack("[10-K](https://sec.gov/x?a=1&b=2)")
    assert link == "<https://sec.gov/x?a=1&amp;b=2|10-K>"
    assert markdown_to_slack("[a](https://x.com/>x<!channel>)") == (
        "<https://x.com/%3Ex%3C!channel%3E|a>"
    )
    # Not a URL Slack could link safely: the label and the URL, as text.
    assert markdown_to_slack("[a](https://[::1/<!here>)") == "a (https://[::1/&lt;!here&gt;)"


def test_hostile_markdown_stays_inside_telegrams_html() -> None:
    from html.parser import HTMLParser

    class Tags(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.seen: list[tuple[str, list[tuple[str, str | None]]]] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self.seen.append((tag, attrs))

    for markdown in HOSTILE:
        parser = Tags()
        parser.feed(markdown_to_telegram_html(markdown))
        for tag, attrs in parser.seen:
            assert tag in ("b", "i", "s", "code", "pre", "a"), (markdown, tag)
            if tag == "a":  # one attribute, the whole URL, quoted
                assert len(attrs) == 1 and attrs[0][0] == "href", (markdown, attrs)
                assert str(attrs[0][1]).startswith("https://"), (markdown, attrs)
    parser = Tags()
    parser.feed(markdown_to_telegram_html('[a](https://x.com/"onclick="go<b>)'))
    assert parser.seen == [("a", [("href", 'https://x.com/"onclick="go<b>')])]
