"""The gateway in team mode: turns go on the durable queue, `dexter worker` runs them, and the
answers come back through the reply outbox, which this gateway sends to its chats.

`QueueDispatcher` implements the `Dispatcher` seam: `submit` stores the turn and returns.
A turn's run id is its message's dedupe key, so a message the platform delivers twice is one
run. `chat_handler` is what a worker runs for a turn (the same `RuntimeRunner` as in-process,
building each run's agent afresh from the shared session store, since the chat's previous turn
may have run on another worker; a turn tried again whose answer is already in the session sends
that answer instead of running twice). `ReplyRelay` sends recorded answers, oldest first, and
marks them sent.

Approval questions cannot be put to a chat from a worker (the chat's connection is here):
in team mode a tool that would need approval is refused and the answer says so, as for a
scheduled run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from dexter.gateway.access import decide_outbound
from dexter.gateway.dispatch import ChatTurn, Replier, RunOutcome
from dexter.gateway.types import Channel, InboundMessage
from dexter.principal import Grants, Principal
from dexter.work.outbox import REPLY_CHANNEL, Outbox, Reply, SharedConnection
from dexter.work.queue import CHAT, Handler, RunRequest, WorkQueue

if TYPE_CHECKING:
    from dexter.gateway.config import GatewayConfig
    from dexter.runtime import Runtime

log = logging.getLogger("dexter.gateway")

RELAY_POLL = 1.0
PRUNE_EVERY = 3600.0


# --------------------------------------------------------------------------- turns as data


def turn_payload(turn: ChatTurn) -> dict[str, Any]:
    m = turn.message
    principal = turn.principal
    return {
        "text": turn.text,
        "group_context": turn.group_context,
        "message": {
            "channel": m.channel,
            "account_id": m.account_id,
            "message_id": m.message_id,
            "chat_id": m.chat_id,
            "chat_type": m.chat_type,
            "sender_id": m.sender_id,
            "text": m.text,
            "sender_name": m.sender_name,
            "timestamp": m.timestamp.isoformat(),
            "mentioned": m.mentioned,
            "thread_id": m.thread_id,
            "chat_title": m.chat_title,
        },
        "principal": None
        if principal is None
        else {
            "id": principal.id,
            "kind": principal.kind,
            "display_name": principal.display_name,
            "grants": principal.grants.to_dict(),
            "reply_target": principal.reply_target,
        },
    }


def turn_from_payload(session_key: str, payload: dict[str, Any]) -> ChatTurn:
    raw = dict(payload["message"])
    raw["timestamp"] = datetime.fromisoformat(raw["timestamp"])
    message = InboundMessage(**raw)
    p = payload.get("principal")
    principal = (
        None
        if p is None
        else Principal(
            p["id"], p["kind"], p["display_name"], Grants.from_dict(p["grants"]), p["reply_target"]
        )
    )
    return ChatTurn(
        session_key,
        payload["text"],
        message,
        group_context=payload.get("group_context", ""),
        principal=principal,
    )


# --------------------------------------------------------------------------- front door


# A database away for a moment (a failover, a restart) should not lose a message: enqueueing is
# tried again after these pauses (about 15 s in all) before the person is told to resend.
ENQUEUE_PAUSES = (0.5, 1.0, 2.0, 4.0, 8.0)
NOT_TAKEN = (
    "Sorry, I couldn't take that message: the team's database did not answer. "
    "Please send it again in a minute."
)


class QueueDispatcher:
    """`Dispatcher` that enqueues: the gateway stays responsive whatever the workers do."""

    def __init__(
        self,
        queue: WorkQueue,
        *,
        pauses: tuple[float, ...] = ENQUEUE_PAUSES,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.queue = queue
        self._pauses = pauses
        self._sleep = sleep
        self._typing: set[asyncio.Task[None]] = set()

    def busy(self, session_key: str) -> bool:
        return False  # every message is its own run, answered in order by the workers

    async def submit(self, turn: ChatTurn, reply: Replier) -> None:
        principal = turn.principal
        request = RunRequest(
            kind=CHAT,
            run_id=turn.message.dedupe_key,
            principal_id=principal.id if principal else "",
            key=turn.session_key,
            payload=turn_payload(turn),
        )
        for pause in (*self._pauses, None):
            try:
                await self.queue.enqueue(request)
                break
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if pause is None:
                    log.error("message %s not queued: %s", request.run_id, exc)
                    await reply.send(NOT_TAKEN)
                    return
                log.warning("queueing message %s failed (%s); trying again", request.run_id, exc)
                await self._sleep(pause)
        # One "typing…" says the message was taken; the answer may come from another machine.
        task = asyncio.create_task(_typing_once(reply))
        self._typing.add(task)
        task.add_done_callback(self._typing.discard)

    async def join(self) -> None:
        await asyncio.gather(*self._typing, return_exceptions=True)

    async def close(self) -> None:
        await self.join()


async def _typing_once(reply: Replier) -> None:
    try:
        await reply.typing()
    except Exception as exc:  # a courtesy only
        log.debug("typing indicator failed: %s", exc)


class ReplyRelay:
    """Sends the answers workers recorded for this gateway's accounts, oldest first."""

    def __init__(
        self,
        url: str,
        channels: Iterable[Channel],
        config: Callable[[], GatewayConfig],
        *,
        poll: float = RELAY_POLL,
    ) -> None:
        self.url = url
        self.channels = {(c.name, c.account_id): c for c in channels}
        self.config = config
        self.poll = poll
        self.sent = 0

    async def run(self, stop: asyncio.Event) -> None:
        from dexter.store.pg import connect

        conn = await asyncio.to_thread(connect, self.url)
        listener = await self._listen()
        try:
            outbox = Outbox(conn)
            pruned_at = float("-inf")
            while not stop.is_set():
                try:
                    if time.monotonic() - pruned_at > PRUNE_EVERY:
                        pruned_at = time.monotonic()
                        await asyncio.to_thread(outbox.prune)
                    await self._send_waiting(outbox)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # the database came back? try again next round
                    log.warning("sending recorded replies failed: %s", exc)
                await self._wait(listener, stop)
        finally:
            await asyncio.to_thread(conn.close)
            if listener is not None:
                await listener.close()

    async def _listen(self) -> Any:
        import psycopg

        try:
            listener = await psycopg.AsyncConnection.connect(self.url, autocommit=True)
            await listener.execute(f"LISTEN {REPLY_CHANNEL}")
        except psycopg.Error as exc:  # polling alone still delivers
            log.warning("no notifications for replies (%s); polling", exc)
            return None
        return listener

    async def _wait(self, listener: Any, stop: asyncio.Event) -> None:
        if listener is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.poll)
            return
        # Whatever arrives first: a notification, the poll interval, or stop.
        notes = listener.notifies(timeout=self.poll, stop_after=1)
        with contextlib.suppress(TimeoutError):
            async for _ in notes:
                break

    async def _send_waiting(self, outbox: Outbox) -> None:
        while True:
            replies = await asyncio.to_thread(outbox.claim_replies, list(self.channels))
            if not replies:
                return
            for reply in replies:
                await self._send(outbox, reply)

    async def _send(self, outbox: Outbox, reply: Reply) -> None:
        channel = self.channels[(reply.channel, reply.account_id)]
        if not reply.text.strip():
            await asyncio.to_thread(outbox.mark_sent, reply.run_id)
            return
        if not self._allowed(reply):
            log.warning("reply to %s blocked by the current access policy", reply.chat_id)
            await asyncio.to_thread(outbox.mark_sent, reply.run_id)
            return
        try:
            await channel.send_text(reply.chat_id, reply.text, thread_id=reply.thread_id)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("could not deliver a reply to %s: %s", reply.chat_id, exc)
            await asyncio.to_thread(outbox.mark_failed, reply.run_id, str(exc))
            return
        await asyncio.to_thread(outbox.mark_sent, reply.run_id)
        self.sent += 1

    def _allowed(self, reply: Reply) -> bool:
        policy = self.config().access(reply.channel, reply.account_id)
        return decide_outbound(
            policy,
            channel=reply.channel,
            chat_id=reply.chat_id,
            chat_type="group" if reply.chat_type == "group" else "direct",
            kind="reply",
        ).allowed


# --------------------------------------------------------------------------- worker side


def chat_handler(runtime: Runtime, url: str, config: Callable[[], GatewayConfig]) -> Handler:
    """What a worker does with a chat turn: run it (unless a run before it finished), record
    the session, then the answer for the gateway to send."""
    from dexter.store.pg import connect

    shared = SharedConnection(lambda: connect(url))

    async def handle(request: RunRequest) -> None:
        outbox = Outbox(await asyncio.to_thread(shared.get))
        if await asyncio.to_thread(outbox.answered, request.run_id):
            return  # a worker that died after answering: the answer is recorded once
        turn = turn_from_payload(request.key, dict(request.payload))
        earlier = None
        if request.attempt > 0:
            # Tried before: a worker that died after recording the answer in the session, but
            # before the reply, has done the work; its answer is sent, not a second run's.
            earlier = await asyncio.to_thread(answered_in_session, runtime.store, turn)
        if earlier is not None:
            outcome = RunOutcome(earlier)
        else:
            outcome = await _run(runtime, turn, config())
        # The turn is in the session before the next turn of this chat may start elsewhere.
        await runtime.writer.drain(30.0)
        text = outcome.text()
        m = turn.message
        reply = Reply(
            request.run_id, m.channel, m.account_id, m.chat_id, m.thread_id, m.chat_type, text
        )
        await asyncio.to_thread(outbox.put_reply, reply)

    return handle


async def _run(runtime: Runtime, turn: ChatTurn, current: GatewayConfig) -> RunOutcome:
    from dexter.agent.queue import MessageQueue
    from dexter.gateway.runs import RuntimeRunner

    # No live agents kept: the chat's last turn may have run on another worker.
    runner = RuntimeRunner(
        runtime, model=current.model, max_iterations=current.max_iterations, max_agents=0
    )
    try:
        return await runner.run(turn, MessageQueue())
    except Exception as exc:  # the chat is told, as in-process
        log.exception("a run for %s failed: %s", turn.session_key, exc)
        return RunOutcome("", error=f"{type(exc).__name__}: {exc}")
    finally:
        runner.close()


def answered_in_session(store: Any, turn: ChatTurn) -> str | None:
    """The answer this turn already has in its chat's session: the session's last turn, if it
    asked this question, was answered, and started once the message had come in."""
    from dexter.gateway.runs import ChatSessions

    if turn.principal is None:
        return None
    session_id = ChatSessions(store).get(turn.session_key, turn.principal.id)
    if session_id is None:
        return None
    rows = store.query(
        "SELECT query, answer, started_at FROM turns WHERE session_id = ? ORDER BY id DESC LIMIT 1",
        (session_id,),
    )
    if not rows or rows[0]["query"] != turn.text or not rows[0]["answer"]:
        return None
    started = datetime.fromisoformat(rows[0]["started_at"])
    sent = turn.message.timestamp
    if started.tzinfo is None:
        started = started.replace(tzinfo=UTC)
    if sent.tzinfo is None:
        sent = sent.replace(tzinfo=UTC)
    # Platform times have whole seconds.
    return str(rows[0]["answer"]) if started >= sent - timedelta(seconds=1) else None
