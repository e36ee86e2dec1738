"""The WhatsApp Web channel (neonize) through the real gateway service, against fakes of
neonize's client and protobuf objects: self-chat, strangers, groups, media, typing, logout."""

from __future__ import annotations

import asyncio
import json
import re
import stat
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from dexter.agent.queue import MessageQueue
from dexter.config import ConfigError
from dexter.gateway.config import ConfigSource, config_path
from dexter.gateway.delivery import ChannelDeliverer, DeliveryError
from dexter.gateway.dispatch import ChatTurn, RunOutcome
from dexter.gateway.service import GatewayService, gateway_dir, pairing_store
from dexter.gateway.text import MEDIA_REPLY
from dexter.gateway.types import ChannelError
from dexter.gateway.whatsapp_web import (
    LOGGED_OUT,
    NOT_LINKED,
    WhatsAppWebChannel,
    default_session_path,
    load_neonize,
)
from dexter.gateway.whatsapp_web_link import link_device
from dexter.install import add_extra_command
from tests.support.fake_neonize import (
    JID,
    AudioMessage,
    E2EMessage,
    FakeWhatsApp,
    FutureProofMessage,
    ImageMessage,
    LoggedOutEv,
    ReactionMessage,
    StickerMessage,
    event_for,
    text_message,
)
from tests.support.gateway_console import gateway_console

OWNER = "15550001111"
ME = JID(OWNER)
BOB = JID("15552223333")
GROUP = JID("120363025246125888", Server="g.us")


class Runner:
    """Answers every turn with `answer(text)`; records what it was asked."""

    def __init__(self, answer: Callable[[str], str] | None = None) -> None:
        self.answer = answer or (lambda text: f"Answer to: {text.splitlines()[-1]}")
        self.turns: list[ChatTurn] = []

    async def run(self, turn: ChatTurn, queue: MessageQueue) -> RunOutcome:
        self.turns.append(turn)
        return RunOutcome(self.answer(turn.text))


class Failing:
    async def run(self, turn: ChatTurn, queue: MessageQueue) -> RunOutcome:
        raise RuntimeError("model unreachable")


def write_config(home: Path, **account: object) -> ConfigSource:
    channel = {"accounts": {"default": {}}, **account}
    path = config_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"channels": {"whatsapp_web": channel}}))
    return ConfigSource(path, interval=0.0)


def linked_session(home: Path) -> Path:
    path = default_session_path(gateway_dir(home), "default")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"SQLite format 3\x00")
    path.chmod(0o644)
    return path


async def until(condition: Callable[[], object], what: str = "condition") -> None:
    for _ in range(6000):  # up to 30 s on a loaded machine; ends as soon as it holds
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"timed out waiting for {what}")


class Rig:
    def __init__(self, home: Path, world: FakeWhatsApp, service: GatewayService) -> None:
        self.home, self.world, self.service = home, world, service
        self.channel = service.channels[0]

    async def say(self, event: object) -> None:
        await self.world.client.emit(event)
        await self.service.dispatcher.join()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


async def start(
    home: Path,
    runner: object | None = None,
    *,
    world: FakeWhatsApp | None = None,
    typing_lapse: float = 0.02,
    **account: object,
) -> Rig:
    world = world or FakeWhatsApp(OWNER)
    source = write_config(home, **account)
    channel = WhatsAppWebChannel(
        "default",
        session_path=linked_session(home),
        api=world.api(),
        typing_lapse=typing_lapse,
    )
    service = GatewayService(home, source, runner or Runner(), [channel])  # type: ignore[arg-type]
    await service.start()
    await until(lambda: service.manager.snapshot()[0].connected, "connected")
    return Rig(home, world, service)


@pytest.fixture
async def rigs() -> AsyncIterator[list[Rig]]:
    made: list[Rig] = []
    yield made
    for rig in made:
        await rig.service.stop()


async def test_self_chat_answers_the_owner_only(home: Path, rigs: list[Rig]) -> None:
    runner = Runner(lambda text: "**Revenue** was $391B ~~maybe~~")
    rig = await start(home, runner, allow_from=[f"+{OWNER}"])
    rigs.append(rig)
    status = rig.service.manager.snapshot()[0]
    assert status.identity == f"+{OWNER} (Owner)"

    question = text_message("Apple revenue FY2024?", chat=ME, from_me=True, push_name="Owner")
    await rig.say(question)
    assert rig.world.sent() == [(f"{OWNER}@s.whatsapp.net", "*Revenue* was $391B ~maybe~")]
    assert runner.turns[0].session_key == f"whatsapp_web:default:direct:+{OWNER}"
    # WhatsApp redelivers: the same message id is not answered twice.
    await rig.say(question)
    assert len(rig.world.sent()) == 1

    # Self-chat mode admits nobody else, and sends no pairing code either.
    await rig.say(text_message("hello?", chat=BOB))
    # The owner writing to a friend is not a question for Dexter.
    await rig.say(text_message("see you at 8", chat=BOB, sender=ME, from_me=True))
    assert len(rig.world.sent()) == 1 and len(runner.turns) == 1
    # Own messages get no read receipt; the owner's self chat is not "read" by Dexter.
    assert not [entry for entry in rig.world.log if entry[0] == "read"]


async def test_a_stranger_gets_a_pairing_code_once_then_is_answered(
    home: Path, rigs: list[Rig]
) -> None:
    rig = await start(home, dm_policy="pairing")
    rigs.append(rig)
    # WhatsApp addresses this stranger by a hidden LID and sends the phone number alongside.
    bob_lid = JID("88771234500001", Server="lid")
    hello = text_message("hi, who is this?", chat=bob_lid, sender_alt=BOB)
    await rig.say(hello)
    [(to, text)] = rig.world.sent()
    assert to == "88771234500001@lid"
    assert "+15552223333" in text and "dexter gateway pair approve" in text
    [request] = pairing_store(home).pending()
    assert request.sender_id == "+15552223333" and request.sender_name == "Bob"

    await rig.say(text_message("hello??", chat=bob_lid, sender_alt=BOB))
    assert len(rig.world.sent()) == 1  # the code went out once

    pairing_store(home).approve(request.code)
    question = text_message(
        "What did NVDA earn?", chat=bob_lid, sender_alt=BOB, message_id="3A5F00C0FFEE"
    )
    await rig.say(question)
    assert rig.world.sent()[-1] == ("88771234500001@lid", "Answer to: What did NVDA earn?")
    # Admitted messages get a read receipt; refused ones did not.
    reads = [entry for entry in rig.world.log if entry[0] == "read"]
    assert reads == [("read", "88771234500001@lid", "3A5F00C0FFEE")]


async def test_allowlist_refuses_strangers_silently(home: Path, rigs: list[Rig]) -> None:
    rig = await start(home, dm_policy="allowlist", allow_from=["+1 555 222 3333"])
    rigs.append(rig)
    await rig.say(text_message("hi", chat=JID("15559990000")))
    assert rig.world.sent() == []
    await rig.say(text_message("hi", chat=BOB))
    assert rig.world.sent() == [("15552223333@s.whatsapp.net", "Answer to: hi")]


def malformed_events() -> dict[str, object]:
    """Message events neonize could hand over in a shape the parser does not expect."""
    far_future = text_message("SECRET", chat=BOB, timestamp_ms=2**62)
    no_source = text_message("SECRET", chat=BOB)
    no_source.Info.MessageSource = None  # type: ignore[assignment]
    odd_body = text_message("SECRET", chat=BOB)
    odd_body.Message = "SECRET"  # type: ignore[assignment]
    no_chat = text_message("SECRET", chat=BOB)
    no_chat.Info.MessageSource.Chat = None  # type: ignore[assignment]
    return {
        "a timestamp past any clock": far_future,
        "no message source": no_source,
        "a message body that is a string": odd_body,
        "no chat": no_chat,
    }


async def test_a_malformed_message_event_is_one_log_line_and_the_next_is_answered(
    home: Path, rigs: list[Rig]
) -> None:
    """neonize runs each handler as its own task: a parser error was lost without a word (and
    with these fakes, which await handlers inline, it raised into the event loop)."""
    with gateway_console() as console:
        rig = await start(home, dm_policy="allowlist", allow_from=["+15552223333"])
        rigs.append(rig)
        bad = malformed_events()
        for event in bad.values():
            await rig.say(event)
        await rig.say(text_message("the real question", chat=BOB))
        assert rig.world.sent() == [("15552223333@s.whatsapp.net", "Answer to: the real question")]
        assert rig.service.manager.snapshot()[0].connected
    skipped = console.lines("skipped")
    assert len(skipped) == len(bad), skipped
    assert all("whatsapp_web/default: skipped" in line for line in skipped)
    assert "Traceback" not in console.text and "SECRET" not in console.text


async def test_groups_answer_only_when_mentioned_or_replied_to(home: Path, rigs: list[Rig]) -> None:
    runner = Runner()
    rig = await start(home, runner, group_policy="open")
    rigs.append(rig)
    rig.world.groups[GROUP.User] = "Value investors"
    carol = JID("15554445555")

    await rig.say(text_message("NVDA looks pricey", chat=GROUP, sender=carol, group=True))
    await rig.say(text_message("@15550001111 is it?", chat=GROUP, sender=BOB, group=True))
    assert rig.world.sent() == []  # a typed number is not a mention

    await rig.say(
        text_message(
            "@Owner what is its P/E?",
            chat=GROUP,
            sender=BOB,
            group=True,
            mentioned=[f"{OWNER}@s.whatsapp.net"],
        )
    )
    [(to, answer)] = rig.world.sent()
    assert to == f"{GROUP.User}@g.us" and answer.startswith("Answer to:")
    turn = runner.turns[-1]
    assert "NVDA looks pricey" in turn.text and "what is its P/E?" in turn.text
    assert "Value investors" in turn.text and '"Value investors"' in turn.group_context
    assert turn.session_key == f"whatsapp_web:default:group:{GROUP.User}@g.us"

    # Replying to one of the account's messages addresses it too (by its LID here).
    await rig.say(
        text_message(
            "and the forward P/E?",
            chat=GROUP,
            sender=carol,
            group=True,
            reply_to="208340000000001@lid",
        )
    )
    assert len(rig.world.sent()) == 2


async def test_media_voice_and_stickers_get_the_text_only_note(home: Path, rigs: list[Rig]) -> None:
    runner = Runner()
    rig = await start(home, runner, dm_policy="open")
    rigs.append(rig)
    for body in (
        E2EMessage(imageMessage=ImageMessage()),
        E2EMessage(audioMessage=AudioMessage(PTT=True)),
        E2EMessage(
            ephemeralMessage=FutureProofMessage(E2EMessage(stickerMessage=StickerMessage()))
        ),
    ):
        await rig.say(event_for(body, chat=BOB))
    assert [text for _, text in rig.world.sent()] == [MEDIA_REPLY] * 3
    # A reaction is not a message to answer; a captioned photo is answered as its caption.
    await rig.say(event_for(E2EMessage(reactionMessage=ReactionMessage()), chat=BOB))
    await rig.say(
        event_for(E2EMessage(imageMessage=ImageMessage(caption="What is this chart?")), chat=BOB)
    )
    assert rig.world.sent()[-1][1] == "Answer to: What is this chart?"
    assert len(rig.world.sent()) == 4 and len(runner.turns) == 1


async def test_typing_is_paused_when_the_run_fails(home: Path, rigs: list[Rig]) -> None:
    rig = await start(home, Failing(), dm_policy="open")
    rigs.append(rig)
    await rig.say(text_message("hi", chat=BOB))
    [(_, text)] = rig.world.sent()
    assert "couldn't finish" in text and "model unreachable" in text
    kinds = [entry[0] if entry[0] != "presence" else entry[2] for entry in rig.world.log]
    sent_at = kinds.index("send")
    assert "composing" in kinds[:sent_at] and kinds[sent_at - 1] == "paused"


async def test_typing_is_paused_when_a_run_ends_without_a_reply(
    home: Path, rigs: list[Rig]
) -> None:
    rig = await start(home, Runner(lambda text: ""), dm_policy="open")
    rigs.append(rig)
    await rig.say(text_message("hi", chat=BOB))
    assert rig.world.sent() == []
    await until(lambda: rig.world.presence()[-1:] == [(f"{BOB.User}@s.whatsapp.net", "paused")])


async def test_long_replies_are_split_on_paragraphs(home: Path, rigs: list[Rig]) -> None:
    paragraphs = [f"Part {i}. " + "word " * 350 for i in range(4)]
    rig = await start(home, Runner(lambda text: "\n\n".join(paragraphs)), dm_policy="open")
    rigs.append(rig)
    await rig.say(text_message("tell me everything", chat=BOB))
    pieces = [text for _, text in rig.world.sent()]
    assert len(pieces) == 2 and all(len(p) <= 4096 for p in pieces)
    assert pieces[0].startswith("Part 0.") and pieces[1].startswith("Part 2.")
    assert "\n\n".join(pieces) == "\n\n".join(paragraphs).strip()


async def test_logged_out_shows_in_status_and_asks_for_setup(
    home: Path, rigs: list[Rig], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rig = await start(home, dm_policy="open")
    rigs.append(rig)
    await rig.world.client.emit(LoggedOutEv())
    await until(lambda: rig.service.manager.snapshot()[0].last_error, "the error in status")
    status = rig.service.manager.snapshot()[0]
    assert status.last_error == LOGGED_OUT and not status.connected
    assert rig.world.client.stopped
    with pytest.raises(ChannelError, match="gateway setup whatsapp_web"):
        await rig.channel.start(rig.service.gateway)  # type: ignore[arg-type]

    from dexter.cli.gateway_command import _status

    rig.service.manager._write_status()
    assert _status(home, __import__("sys").stdout, as_json=False) == 0
    out = capsys.readouterr().out
    assert "whatsapp_web/default: not connected" in out
    assert "logged this linked device out" in out and "gateway setup whatsapp_web" in out


async def test_no_proactive_sends_unless_turned_on(home: Path, rigs: list[Rig]) -> None:
    rig = await start(home, dm_policy="allowlist", allow_from=["+15552223333"])
    rigs.append(rig)

    class Alert:
        job_name, text, target = "nvda", "NVDA fell 5%", "whatsapp:+15552223333"

    deliverer = ChannelDeliverer(
        "whatsapp", rig.service.channels, rig.service.config.get, rig.service.pairing
    )
    with pytest.raises(DeliveryError, match="reply-only"):
        await deliverer.deliver(Alert())
    assert rig.world.sent() == []

    write_config(home, dm_policy="allowlist", allow_from=["+15552223333"], proactive=True)
    await deliverer.deliver(Alert())
    assert rig.world.sent() == [("15552223333@s.whatsapp.net", "NVDA fell 5%")]


async def test_clean_stop_and_reconnect_through_the_manager(home: Path) -> None:
    world = FakeWhatsApp(OWNER)
    rig = await start(home, world=world, dm_policy="open")
    first = world.client
    from tests.support.fake_neonize import DisconnectedEv

    rig.service.manager._sleep = lambda _delay: asyncio.sleep(0)  # type: ignore[method-assign]
    await first.emit(DisconnectedEv())
    await until(lambda: world.connects == 2 and rig.service.manager.snapshot()[0].connected)
    assert first.stopped and rig.service.manager.snapshot()[0].reconnect_attempts == 1
    await rig.service.stop()
    assert world.client.stopped and not rig.service.manager.snapshot()[0].running


async def test_unlinked_session_is_one_clear_error(home: Path) -> None:
    world = FakeWhatsApp(OWNER)
    channel = WhatsAppWebChannel(
        "default", session_path=default_session_path(gateway_dir(home), "x"), api=world.api()
    )
    with pytest.raises(ChannelError, match="not linked"):
        await channel.start(None)  # type: ignore[arg-type]
    assert world.connects == 0 and not (gateway_dir(home) / "whatsapp_web").exists()

    # A database without a device makes WhatsApp offer a QR code: that is "not linked" too.
    world.linked = False
    channel.session_path = linked_session(home)
    with pytest.raises(ChannelError) as caught:
        await channel.start(None)  # type: ignore[arg-type]
    assert str(caught.value) == NOT_LINKED and world.client.stopped
    # The session folder and files are private.
    assert stat.S_IMODE(channel.session_path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(channel.session_path.stat().st_mode) == 0o600


async def test_link_by_qr_then_by_pair_code(home: Path) -> None:
    import io

    world = FakeWhatsApp(OWNER, linked=False)
    path = default_session_path(gateway_dir(home), "default")
    out = io.StringIO()

    async def scan_when_shown() -> None:
        await until(lambda: "Linked devices" in out.getvalue(), "the QR")
        await world.client.scan()

    scanner = asyncio.create_task(scan_when_shown())
    linked = await link_device(path, out, api=world.api())
    await scanner
    assert linked.phone == f"+{OWNER}" and linked.name == "Owner"
    assert "Scan this with your phone" in out.getvalue() and world.client.stopped
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700

    world.linked = False
    path.unlink()
    out = io.StringIO()
    scanner = asyncio.create_task(scan_when_shown())
    linked = await link_device(path, out, api=world.api(), phone="15550001111")
    await scanner
    assert world.paired_phone == "15550001111" and "ABCD-1234" in out.getvalue()

    world.linked = False
    with pytest.raises(ChannelError, match="no phone was linked"):
        await link_device(path, io.StringIO(), api=world.api(), wait=0.05)


def test_missing_extra_and_missing_library_are_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import importlib.machinery
    import importlib.util

    monkeypatch.setattr("platform.system", lambda: "Linux")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    # The step that fits this installation (`uv sync --extra whatsapp` in a checkout).
    with pytest.raises(ConfigError, match=re.escape(add_extra_command("whatsapp"))):
        load_neonize()

    spec = importlib.machinery.ModuleSpec("neonize", None, is_package=True)
    spec.submodule_search_locations = [str(tmp_path)]
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: spec)
    with pytest.raises(ConfigError, match="download") as caught:
        load_neonize()
    assert "neonize-linux-" in str(caught.value) and "\n" not in str(caught.value)


def test_cli_setup_links_by_qr_and_logout_unlinks_and_deletes(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dexter.cli.main import main
    from dexter.gateway.config import load_config

    monkeypatch.setenv("DEXTER_HOME", str(home))
    world = FakeWhatsApp(OWNER, linked=False)
    world.scan_on_qr = True
    monkeypatch.setattr("dexter.gateway.whatsapp_web.load_neonize", world.api)
    answers = iter(["y", "1", "1"])
    monkeypatch.setattr("builtins.input", lambda _prompt="": next(answers))
    assert main(["gateway", "setup", "whatsapp-web"]) == 0
    out = capsys.readouterr().out
    assert "can be banned" in out and "Cloud API" in out
    assert "Scan this with your phone" in out and f"Linked to +{OWNER}" in out
    account = load_config(config_path(home)).channels["whatsapp_web"].accounts["default"]
    assert (account.dm_policy, account.allow_from) == ("allowlist", [f"+{OWNER}"])
    session = default_session_path(gateway_dir(home), "default")
    assert stat.S_IMODE(session.stat().st_mode) == 0o600

    assert main(["gateway", "logout", "whatsapp-web"]) == 0
    out = capsys.readouterr().out
    assert "Unlinked default from WhatsApp" in out and "Deleted the WhatsApp Web session" in out
    assert world.client.logged_out and not session.exists()
    assert not load_config(config_path(home)).channels["whatsapp_web"].accounts["default"].enabled


def test_cli_run_without_the_extra_is_one_line(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    from dexter.cli.main import main

    monkeypatch.setenv("DEXTER_HOME", str(home))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123456")
    monkeypatch.setenv("DEXTER_MEMORY", "off")
    write_config(home, allow_from=[f"+{OWNER}"])
    find_spec = importlib.util.find_spec
    monkeypatch.setattr("platform.system", lambda: "Linux")
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *rest: None if name == "neonize" else find_spec(name, *rest),
    )
    assert main(["gateway", "run"]) == 2
    err = capsys.readouterr().err
    assert add_extra_command("whatsapp") in err and "Traceback" not in err


def test_cli_setup_by_pair_code_for_other_people_and_groups(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dexter.cli.main import main
    from dexter.gateway.config import load_config

    monkeypatch.setenv("DEXTER_HOME", str(home))
    world = FakeWhatsApp(OWNER, linked=False)
    world.scan_on_qr = True
    monkeypatch.setattr("dexter.gateway.whatsapp_web.load_neonize", world.api)
    answers = iter(["y", "2", "555", "+1 555 000 1111", "2", "+15552223333", "y"])
    monkeypatch.setattr("builtins.input", lambda _prompt="": next(answers))
    assert main(["gateway", "setup", "whatsapp_web", "--account", "work"]) == 0
    out = capsys.readouterr().out
    assert "country code" in out and "enter: ABCD-1234" in out
    assert world.paired_phone == OWNER
    account = load_config(config_path(home)).channels["whatsapp_web"].accounts["work"]
    assert account.allow_from == ["+15552223333"]
    assert (account.dm_policy, account.group_policy) == ("allowlist", "open")
    assert default_session_path(gateway_dir(home), "work").exists()


def test_a_session_path_in_a_shared_folder_changes_nothing_else(tmp_path: Path) -> None:
    from dexter.gateway.whatsapp_web import delete_session, secure_session

    folder = tmp_path / "home"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    script, notes = folder / "script.sh", folder / "wa.db.backup"
    script.write_text("echo hi\n")
    script.chmod(0o755)
    notes.write_text("keep me\n")
    notes.chmod(0o644)
    session = folder / "wa.db"
    secure_session(session, create=True)
    (folder / "wa.db-wal").write_bytes(b"")
    secure_session(session, create=False)
    assert stat.S_IMODE(session.stat().st_mode) == 0o600
    assert stat.S_IMODE((folder / "wa.db-wal").stat().st_mode) == 0o600
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert stat.S_IMODE(notes.stat().st_mode) == 0o644
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755
    assert delete_session(session)
    assert sorted(p.name for p in folder.iterdir()) == ["script.sh", "wa.db.backup"]
