"""Runs per chat: serialised, queued messages injected or asked next, every answer delivered,
typing always stopped; the manager reconnects forever and stop really closes."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from dexter.agent.loop import Agent
from dexter.agent.queue import MessageQueue
from dexter.gateway import dispatch
from dexter.gateway.backoff import ReconnectPolicy
from dexter.gateway.dispatch import ChatTurn, InProcessDispatcher, RunOutcome
from dexter.gateway.manager import ChannelManager
from dexter.gateway.types import ChannelError, ChannelHooks, InboundMessage
from dexter.models.scripted import ScriptedModel, text
from dexter.principal import Principal
from dexter.tools.registry import ToolRegistry


def message(text: str = "hi", chat: str = "1") -> InboundMessage:
    return InboundMessage("telegram", "default", text, chat, "direct", chat, text=text)


class Replies:
    def __init__(self) -> None:
        self.sent: list[str] = []
        self.typing_on = 0
        self.typing_calls = 0

    async def send(self, text: str) -> None:
        self.sent.append(text)

    async def typing(self) -> None:
        self.typing_calls += 1


class GatedRunner:
    """A real Agent with a scripted model; the first run waits for `gate`."""

    def __init__(self, tmp: Path, answers: list[str]) -> None:
        self.model = ScriptedModel([text(a) for a in answers])
        self.agent = Agent(self.model, ToolRegistry())
        self.agent.config.home = tmp
        self.gate = asyncio.Event()
        self.started = asyncio.Event()
        self.active = 0
        self.max_active = 0

    async def run(self, turn: ChatTurn, queue: MessageQueue) -> RunOutcome:
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        self.started.set()
        try:
            await self.gate.wait()
            self.agent.queue = queue
            answer = ""
            async for event in self.agent.run(turn.text):
                answer = getattr(event, "answer", answer)
            return RunOutcome(answer)
        finally:
            self.active -= 1


async def test_follow_ups_never_drop_the_first_answer(tmp_path: Path) -> None:
    runner = GatedRunner(tmp_path, ["first answer", "second answer"])
    replies = Replies()
    dispatcher = InProcessDispatcher(runner, typing_interval=0.0)
    await dispatcher.submit(ChatTurn("k", "q1", message("q1")), replies)
    await runner.started.wait()
    await dispatcher.submit(ChatTurn("k", "q2", message("q2")), replies)
    await dispatcher.submit(ChatTurn("k", "q3", message("q3")), replies)
    assert dispatcher.busy("k") and dispatcher.queued("k") == 2
    runner.gate.set()
    await dispatcher.join()
    # The first answer is sent, and the messages no round read become the next question.
    assert replies.sent == ["first answer", "second answer"]
    last_question = runner.model.requests[-1].messages[-1].content
    assert last_question == "q2\n\nq3"
    assert runner.max_active == 1
    assert not dispatcher.busy("k")


async def test_typing_stops_on_every_path(tmp_path: Path) -> None:
    class Failing:
        async def run(self, turn: ChatTurn, queue: MessageQueue) -> RunOutcome:
            await asyncio.sleep(0)
            raise RuntimeError("model exploded")

    ticks: list[float] = []

    async def sleep(delay: float) -> None:
        ticks.append(delay)
        await asyncio.sleep(0)

    replies = Replies()
    dispatcher = InProcessDispatcher(Failing(), typing_interval=4.0, sleep=sleep)
    await dispatcher.submit(ChatTurn("k", "q", message()), replies)
    await dispatcher.join()
    assert replies.sent == ["Sorry, I couldn't finish that: RuntimeError: model exploded"]
    calls = replies.typing_calls
    for _ in range(20):
        await asyncio.sleep(0)
    assert replies.typing_calls == calls >= 1  # no indicator keeps running after the run


async def test_chats_run_in_parallel_but_each_in_order(tmp_path: Path) -> None:
    order: list[str] = []

    class Recording:
        async def run(self, turn: ChatTurn, queue: MessageQueue) -> RunOutcome:
            order.append(turn.text)
            await asyncio.sleep(0)
            return RunOutcome(f"re {turn.text}")

    dispatcher = InProcessDispatcher(Recording(), typing_interval=0.0)
    a, b = Replies(), Replies()
    await dispatcher.submit(ChatTurn("a", "a1", message()), a)
    await dispatcher.submit(ChatTurn("b", "b1", message()), b)
    await dispatcher.join()
    assert a.sent == ["re a1"] and b.sent == ["re b1"]
    assert sorted(order) == ["a1", "b1"]


class FlakyChannel:
    """Fails to connect `failures` times, then stays connected until stopped."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.attempts = 0
        self.closed = asyncio.Event()

    @property
    def name(self) -> str:
        return "telegram"

    @property
    def account_id(self) -> str:
        return "default"

    async def start(self, hooks: ChannelHooks) -> None:
        self.attempts += 1
        if self.attempts <= self.failures:
            raise ChannelError(f"boom {self.attempts}")
        hooks.connected("@bot")
        await hooks.message(message("ping"))
        await self.closed.wait()

    async def stop(self) -> None:
        self.closed.set()

    async def send_text(self, chat_id: str, text: str, *, thread_id: str | None = None) -> None:
        pass

    async def send_typing(self, chat_id: str, *, thread_id: str | None = None) -> None:
        pass

    async def mark_read(self, message: InboundMessage) -> None:
        pass


async def test_manager_never_gives_up_and_stop_closes(tmp_path: Path) -> None:
    channel = FlakyChannel(failures=30)  # the original stopped for good after 12
    delays: list[float] = []
    got: list[str] = []
    arrived = asyncio.Event()

    async def sleep(delay: float) -> None:
        delays.append(delay)
        await asyncio.sleep(0)

    async def on_message(_channel: object, inbound: InboundMessage) -> None:
        got.append(inbound.text)
        arrived.set()

    manager = ChannelManager(
        [channel],
        on_message,
        policy=ReconnectPolicy(jitter=0.0),
        sleep=sleep,
        status_path=tmp_path / "status.json",
    )
    await manager.start()
    await arrived.wait()
    status = manager.snapshot()[0]
    assert status.connected and status.reconnect_attempts == 30
    assert status.last_error == "boom 30" and status.identity == "@bot"
    assert max(delays) == 30.0 and len(delays) == 30
    await manager.stop()
    assert channel.closed.is_set()
    final = manager.snapshot()[0]
    assert not final.running and not final.connected


async def test_typing_goes_out_before_the_run_is_set_up(tmp_path: Path) -> None:
    replies = Replies()
    seen_at_start: list[int] = []

    class Recording:
        async def run(self, turn: ChatTurn, queue: MessageQueue) -> RunOutcome:
            # The runner builds the agent here; the person must already see "typing…".
            seen_at_start.append(replies.typing_calls)
            return RunOutcome("done")

    dispatcher = InProcessDispatcher(Recording(), typing_interval=60.0)
    await dispatcher.submit(ChatTurn("k", "q", message()), replies)
    await dispatcher.join()
    assert seen_at_start == [1] and replies.sent == ["done"]


async def test_answer_waits_for_a_typing_call_on_its_way_instead_of_cutting_it(
    tmp_path: Path,
) -> None:
    """A cancelled "typing…" request can still land after the answer (and show typing under
    it); the answer is sent once the refresh on its way has finished."""
    events: list[str] = []
    refreshing = asyncio.Event()
    release = asyncio.Event()

    class SlowRefresh(Replies):
        async def typing(self) -> None:
            self.typing_calls += 1
            events.append("typing sent")
            if self.typing_calls == 2:  # the refresh is slow
                refreshing.set()
                await release.wait()
            events.append("typing answered")

        async def send(self, text: str) -> None:
            events.append(f"answer: {text}")

    class Quick:
        async def run(self, turn: ChatTurn, queue: MessageQueue) -> RunOutcome:
            await refreshing.wait()
            asyncio.get_running_loop().call_soon(release.set)
            return RunOutcome("42")

    dispatcher = InProcessDispatcher(Quick(), typing_interval=0.0)
    await dispatcher.submit(ChatTurn("k", "q", message()), SlowRefresh())
    await dispatcher.join()
    assert events == [*["typing sent", "typing answered"] * 2, "answer: 42"]


async def test_a_queued_message_starts_no_second_indicator(tmp_path: Path) -> None:
    runner = GatedRunner(tmp_path, ["first", "second"])
    replies = Replies()
    dispatcher = InProcessDispatcher(runner, typing_interval=60.0)
    await dispatcher.submit(ChatTurn("k", "q1", message("q1")), replies)
    await runner.started.wait()
    await dispatcher.submit(ChatTurn("k", "q2", message("q2")), replies)
    assert replies.typing_calls == 1
    runner.gate.set()
    await dispatcher.join()
    assert replies.sent == ["first", "second"]
    calls = replies.typing_calls
    for _ in range(10):
        await asyncio.sleep(0)
    assert replies.typing_calls == calls  # none left running


async def test_a_message_arriving_just_as_a_run_ends_is_answered(tmp_path: Path) -> None:
    """Whenever the next message lands (while the run winds down or after), it is answered:
    never queued on a run that has already read its queue for the last time."""

    class Echo:
        async def run(self, turn: ChatTurn, queue: MessageQueue) -> RunOutcome:
            return RunOutcome(f"re {turn.text}")

    for delay in range(6):
        replies = Replies()
        delivered = asyncio.Event()
        dispatcher = InProcessDispatcher(
            Echo(), typing_interval=60.0, on_delivered=lambda _t, _x, d=delivered: d.set()
        )
        await dispatcher.submit(ChatTurn("k", "a", message("a")), replies)
        await delivered.wait()
        for _ in range(delay):
            await asyncio.sleep(0)
        await dispatcher.submit(ChatTurn("k", "b", message("b")), replies)
        await dispatcher.join()
        assert replies.sent == ["re a", "re b"], f"after {delay} loop turns"


async def test_in_a_burst_every_indicator_goes_out_before_any_set_up(tmp_path: Path) -> None:
    release = asyncio.Event()
    started: list[str] = []

    class Held(Replies):
        async def typing(self) -> None:
            self.typing_calls += 1
            await release.wait()

    class Recording:
        async def run(self, turn: ChatTurn, queue: MessageQueue) -> RunOutcome:
            started.append(turn.text)
            return RunOutcome(f"re {turn.text}")

    dispatcher = InProcessDispatcher(Recording(), typing_interval=60.0)
    chats = {key: Held() for key in ("a", "b", "c")}
    for key, replies in chats.items():
        await dispatcher.submit(ChatTurn(key, key, message(key, chat=key)), replies)
    for _ in range(20):
        await asyncio.sleep(0)
    assert started == [] and all(r.typing_calls == 1 for r in chats.values())
    release.set()
    await dispatcher.join()
    assert sorted(started) == ["a", "b", "c"]
    assert [r.sent for r in chats.values()] == [["re a"], ["re b"], ["re c"]]


async def test_a_hung_indicator_never_holds_the_answer_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dispatch, "TYPING_FIRST_WAIT", 0.01)
    monkeypatch.setattr(dispatch, "TYPING_STOP_WAIT", 0.01)

    class Hung(Replies):
        async def typing(self) -> None:
            await asyncio.Event().wait()

    class Echo:
        async def run(self, turn: ChatTurn, queue: MessageQueue) -> RunOutcome:
            return RunOutcome("still answered")

    replies = Hung()
    dispatcher = InProcessDispatcher(Echo(), typing_interval=60.0)
    await dispatcher.submit(ChatTurn("k", "q", message()), replies)
    await dispatcher.join()
    assert replies.sent == ["still answered"]


@dataclass
class Recorder:
    """Holds the first run until `release`; records who each run was for and what it read."""

    release: asyncio.Event = field(default_factory=asyncio.Event)
    started: asyncio.Event = field(default_factory=asyncio.Event)
    runs: list[tuple[str, list[str]]] = field(default_factory=list)

    async def run(self, turn: ChatTurn, queue: MessageQueue) -> RunOutcome:
        self.started.set()
        await self.release.wait()
        read = [turn.text, *(item.text for item in queue.drain())]
        self.runs.append((turn.message.sender_id, read))
        return RunOutcome("ok")


async def test_another_members_question_waits_for_a_run_of_its_own() -> None:
    group = Principal("telegram:group:-100", "group", "Desk")
    runner = Recorder()
    dispatcher = InProcessDispatcher(runner)

    def turn(sender: str, text: str) -> ChatTurn:
        member = InboundMessage("telegram", "default", text, "-100", "group", sender, text=text)
        return ChatTurn("telegram:default:group:-100", text, member, principal=group)

    await dispatcher.submit(turn("222", "ana: first"), Replies())
    await runner.started.wait()
    await dispatcher.submit(turn("444", "eve: read the portfolio"), Replies())
    await dispatcher.submit(turn("222", "ana: and MSFT?"), Replies())
    runner.release.set()
    await dispatcher.join()
    # Ana's follow-up joined her run; Eve's question ran on its own, as Eve.
    assert runner.runs == [
        ("222", ["ana: first", "ana: and MSFT?"]),
        ("444", ["eve: read the portfolio"]),
    ]
