"""The queue's pieces in one process on a real Postgres: a chat turn survives the trip through
the queue as data, replies are recorded once per run and handed out oldest first, `dexter
status` counts what waits, and team-only commands say what to set without Postgres."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from dexter.cli.main import main
from dexter.gateway.dispatch import ChatTurn
from dexter.gateway.queued import QueueDispatcher, turn_from_payload, turn_payload
from dexter.gateway.routing import session_key
from dexter.gateway.types import InboundMessage
from dexter.principal import Grants, Principal
from dexter.store.pg import connect
from dexter.work.engine import PgQueue, install
from dexter.work.outbox import Outbox, Reply
from dexter.work.queue import CHAT, RunRequest
from dexter.work.status import read_status


def a_turn(text: str = "What did NVDA earn?", *, chat: str = "42") -> ChatTurn:
    message = InboundMessage(
        "telegram",
        "default",
        "7",
        chat,
        "group",
        "42",
        text,
        sender_name="Ann",
        thread_id="t1",
        chat_title="Desk",
        mentioned=True,
    )
    principal = Principal(
        "telegram:42", "user", "Ann", Grants.from_dict({"tools": ["bash"]}), "telegram:42"
    )
    return ChatTurn(session_key(message), text, message, group_context="Desk", principal=principal)


def test_a_turn_round_trips_through_json() -> None:
    turn = a_turn()
    back = turn_from_payload(turn.session_key, json.loads(json.dumps(turn_payload(turn))))
    assert back.message == turn.message
    assert back.principal == turn.principal
    assert (back.text, back.group_context, back.session_key) == (
        turn.text,
        turn.group_context,
        turn.session_key,
    )


class Recorder:
    def __init__(self) -> None:
        self.requests: list[RunRequest] = []

    async def enqueue(self, request: RunRequest) -> None:
        self.requests.append(request)


class Typing:
    def __init__(self) -> None:
        self.typed = 0

    async def send(self, text: str) -> None:
        raise AssertionError("the gateway never answers a queued turn itself")

    async def typing(self) -> None:
        self.typed += 1


def test_the_queue_dispatcher_enqueues_under_the_message_and_shows_typing() -> None:
    queue, reply = Recorder(), Typing()
    dispatcher = QueueDispatcher(queue)
    turn = a_turn()

    async def go() -> None:
        await dispatcher.submit(turn, reply)
        await dispatcher.join()

    asyncio.run(go())
    [request] = queue.requests
    assert (request.kind, request.key, request.principal_id) == (
        CHAT,
        turn.session_key,
        "telegram:42",
    )
    # The platform redelivering the message enqueues the same run id: one run.
    assert request.run_id == turn.message.dedupe_key
    assert reply.typed == 1 and not dispatcher.busy(turn.session_key)


def test_replies_are_recorded_once_and_handed_out_oldest_first(postgres_url: str) -> None:
    asyncio.run(install(postgres_url))
    with connect(postgres_url) as conn:
        box = Outbox(conn)
        first = Reply("run-1", "telegram", "default", "42", None, "direct", "first")
        assert box.put_reply(first)
        # The same run finishing again (its worker died after answering) adds nothing.
        assert not box.put_reply(Reply("run-1", "telegram", "default", "42", None, "direct", "x"))
        assert box.answered("run-1") and not box.answered("run-2")
        box.put_reply(Reply("run-2", "telegram", "default", "42", None, "direct", "second"))
        box.put_reply(Reply("run-3", "slack", "other", "C1", None, "group", "not ours"))

        claimed = box.claim_replies([("telegram", "default")])
        assert [r.text for r in claimed] == ["first", "second"]
        # Claimed replies are not handed to a second gateway while the first sends them.
        assert box.claim_replies([("telegram", "default")]) == []
        box.mark_sent("run-1")
        assert read_status(conn).replies_unsent == 2
        # Sent replies are forgotten in time; unsent ones never are.
        assert box.prune(keep_days=0) == 1
        assert read_status(conn).replies_unsent == 2 and not box.answered("run-1")


def test_status_counts_waiting_runs_per_queue(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DEXTER_DATABASE_URL", postgres_url)
    assert main(["status"]) == 0
    assert "not set up yet" in capsys.readouterr().out

    async def enqueue() -> None:
        async with PgQueue(postgres_url) as queue:
            for i in range(3):
                turn = a_turn(f"q{i}", chat=str(i))
                await queue.enqueue(
                    RunRequest(CHAT, f"run-{i}", "telegram:42", turn.session_key, {"n": i})
                )
            # Enqueued twice while waiting: one run.
            await queue.enqueue(RunRequest(CHAT, "run-0", "telegram:42", "again", {}))

    asyncio.run(enqueue())
    assert main(["status", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["mode"] == "team" and shown["workers_alive"] == 0
    assert shown["queues"][0] == {"queue": "chat", "waiting": 3, "running": 0, "failed": 0}
    assert main(["status"]) == 0
    assert "chat              3        0        0" in capsys.readouterr().out


def test_team_commands_without_postgres_say_what_to_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("DEXTER_DATABASE_URL", raising=False)
    assert main(["worker"]) != 0
    err = capsys.readouterr().err
    assert "DEXTER_DATABASE_URL" in err and "Traceback" not in err
    assert main(["status"]) == 0
    assert "Single-user mode" in capsys.readouterr().out


def test_the_team_limit_holds_across_connections(postgres_url: str) -> None:
    from dexter.work.limits import TeamSlots

    slots = TeamSlots(postgres_url, 2, retry_every=0.01)
    running: list[int] = []
    most = 0

    async def run() -> None:
        nonlocal most
        async with slots.slot():
            running.append(1)
            most = max(most, len(running))
            await asyncio.sleep(0.05)
            running.pop()

    async def go() -> None:
        await asyncio.gather(*(run() for _ in range(6)))

    asyncio.run(go())
    assert most == 2


def test_a_worker_says_when_the_database_cannot_be_reached(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DEXTER_DATABASE_URL", "postgresql://dexter:hunter2@127.0.0.1:1/team")
    assert main(["worker"]) == 2
    err = capsys.readouterr().err
    assert "Cannot connect to the database at postgresql://dexter:***@127.0.0.1:1/team" in err
    assert "hunter2" not in err and "Traceback" not in err


def test_a_retried_turn_finds_the_answer_its_first_run_left_in_the_session(
    tmp_path: Path,
) -> None:
    from dataclasses import replace
    from datetime import timedelta

    from dexter.gateway.queued import answered_in_session
    from dexter.gateway.runs import ChatSessions
    from dexter.store import open_store
    from dexter.store.sessions import SessionStore

    store = open_store(tmp_path)
    turn = a_turn()
    assert turn.principal is not None
    assert answered_in_session(store, turn) is None  # a chat with no session yet
    session_id = SessionStore(store).create("openai:gpt-test", principal_id=turn.principal.id)
    ChatSessions(store).put(turn, session_id, turn.principal.id)
    SessionStore(store).add_turn(session_id, "r1", turn.text, "NVDA earned $1.", "ok", 1, 9.0)

    assert answered_in_session(store, turn) == "NVDA earned $1."
    # Another question, or the same words sent again after that answer: run it.
    assert answered_in_session(store, replace(turn, text="And AMD?")) is None
    later = replace(turn.message, timestamp=turn.message.timestamp + timedelta(minutes=5))
    assert answered_in_session(store, replace(turn, message=later)) is None


class Flaky:
    """A queue whose database does not answer the first `failures` times."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.requests: list[RunRequest] = []

    async def enqueue(self, request: RunRequest) -> None:
        if self.failures:
            self.failures -= 1
            raise OSError("connection refused")
        self.requests.append(request)


class Told(Typing):
    def __init__(self) -> None:
        super().__init__()
        self.sent: list[str] = []

    async def send(self, text: str) -> None:
        self.sent.append(text)


async def _no_wait(seconds: float) -> None:
    return None


def test_a_message_survives_the_database_being_away_for_a_moment() -> None:
    queue, reply = Flaky(failures=3), Told()
    dispatcher = QueueDispatcher(queue, sleep=_no_wait)

    async def go() -> None:
        await dispatcher.submit(a_turn(), reply)
        await dispatcher.join()

    asyncio.run(go())
    assert len(queue.requests) == 1 and reply.sent == [] and reply.typed == 1


def test_a_message_the_queue_never_takes_is_not_lost_silently() -> None:
    queue, reply = Flaky(failures=100), Told()
    dispatcher = QueueDispatcher(queue, sleep=_no_wait)

    async def go() -> None:
        await dispatcher.submit(a_turn(), reply)
        await dispatcher.join()

    asyncio.run(go())
    assert queue.requests == [] and reply.typed == 0
    [told] = reply.sent
    assert "couldn't take that message" in told and "send it again" in told
