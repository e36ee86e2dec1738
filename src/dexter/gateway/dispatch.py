"""The seam between inbound messages, agent runs and outbound delivery.

`Dispatcher` is the interface; `InProcessDispatcher` (one user, the default) runs everything on
this event loop; in team mode `gateway.queued.QueueDispatcher` puts turns on the durable queue
for `dexter worker`s, without channels changing.

Per session (one chat), runs are serialised: a message that arrives while a run works goes into
that run's queue and the agent reads it at its next round; anything the run never picked up
becomes the next run's question after the first answer has been sent. Every answer is sent
(the original replaced the first answer with the follow-up's and never sent it). Only the same
actor's messages join a run: in a group, another member's question waits for its own run, as
that member, so it never borrows what the first asker may do.

"typing…" starts the moment a turn is accepted, before anything is built for the run, so the
person sees it at once however long the set-up takes; runs begin their set-up once the first
indicators on their way are out (in a burst, set-up would otherwise compete with them for the
loop); it stops on every exit path, after a call already on its way has landed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

from dexter.agent.queue import MessageQueue
from dexter.gateway.types import InboundMessage
from dexter.principal import Principal

if TYPE_CHECKING:
    from dexter.agent.executor import Approver

log = logging.getLogger("dexter.gateway")

# Telegram's "typing…" lasts 5 s; refresh a little sooner so it never flickers off.
TYPING_INTERVAL = 4.0
MAX_CONCURRENT_RUNS = 16
# How long an answer waits for a "typing…" call already on its way, so it lands first.
TYPING_STOP_WAIT = 2.0
# Runs start their set-up once no chat's first "typing…" is still on its way (so in a burst of
# messages every indicator goes out first), but never wait longer than this for it.
TYPING_FIRST_WAIT = 1.0
RUN_FAILED = "Sorry, I couldn't finish that: {error}"


@dataclass(frozen=True, slots=True)
class ChatTurn:
    session_key: str
    text: str
    message: InboundMessage
    # Extra system-prompt context for group chats (name, how it was addressed).
    group_context: str = ""
    # Whose data the run touches (resolved from gateway.json when the message came in). A
    # runner that builds agents refuses a turn without one rather than guess.
    principal: Principal | None = None
    # Who answers this turn's approval questions: the asker, in this chat.
    approver: Approver | None = None

    @property
    def actor(self) -> Hashable:
        """Who the run would act as: turns of different actors never share a run."""
        return (self.principal, self.message.channel, self.message.sender_id)


@dataclass(slots=True)
class RunOutcome:
    answer: str
    error: str | None = None
    # Short notes for the person, e.g. which tool was refused and the rule that would allow it.
    notes: list[str] = field(default_factory=list)

    def text(self) -> str:
        parts = [self.answer.strip()] if self.answer.strip() else []
        if self.error and not parts:
            parts.append(RUN_FAILED.format(error=self.error))
        parts += self.notes
        return "\n\n".join(parts)


class Replier(Protocol):
    """Outbound for one chat."""

    async def send(self, text: str) -> None: ...

    async def typing(self) -> None: ...


class AgentRunner(Protocol):
    async def run(self, turn: ChatTurn, queue: MessageQueue) -> RunOutcome: ...


class Dispatcher(Protocol):
    async def submit(self, turn: ChatTurn, reply: Replier) -> None:
        """Accept a turn; returns as soon as it is queued or started, not when answered."""
        ...

    def busy(self, session_key: str) -> bool: ...

    async def join(self) -> None:
        """Wait until every accepted turn has been answered."""
        ...

    async def close(self) -> None:
        """Cancel work in flight (shutdown)."""
        ...


@dataclass
class _Session:
    actor: Hashable
    queue: MessageQueue = field(default_factory=MessageQueue)
    task: asyncio.Task[None] | None = None
    typing: _Typing | None = None
    # Turns of another actor that arrived while a run worked: each gets a run of its own after.
    later: deque[tuple[ChatTurn, Replier]] = field(default_factory=deque)


class InProcessDispatcher:
    def __init__(
        self,
        runner: AgentRunner,
        *,
        typing_interval: float = TYPING_INTERVAL,
        max_concurrent_runs: int = MAX_CONCURRENT_RUNS,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        on_delivered: Callable[[ChatTurn, str], None] | None = None,
    ) -> None:
        self.runner = runner
        self.typing_interval = typing_interval
        self._limit = asyncio.Semaphore(max(1, max_concurrent_runs))
        self._sleep = sleep
        self._sessions: dict[str, _Session] = {}
        self._on_delivered = on_delivered
        self._first_typing_pending = 0
        self._no_first_typing_pending = asyncio.Event()
        self._no_first_typing_pending.set()

    def busy(self, session_key: str) -> bool:
        session = self._sessions.get(session_key)
        return session is not None and session.task is not None and not session.task.done()

    def queued(self, session_key: str) -> int:
        session = self._sessions.get(session_key)
        return len(session.queue) if session else 0

    async def submit(self, turn: ChatTurn, reply: Replier) -> None:
        session = self._sessions.get(turn.session_key)
        if session is not None and self.busy(turn.session_key):
            if turn.actor != session.actor:
                session.later.append((turn, reply))
                return
            source = f"{turn.message.channel}:{turn.session_key}"
            session.queue.enqueue(turn.text, priority="next", source=source)
            return
        session = _Session(turn.actor)
        self._sessions[turn.session_key] = session
        # Scheduled before the run, so the indicator goes out ahead of the run's set-up.
        session.typing = self._start_typing(reply)
        session.task = asyncio.create_task(
            self._drive(session, turn, reply), name=f"gateway-run:{turn.session_key}"
        )

    async def _drive(self, session: _Session, turn: ChatTurn, reply: Replier) -> None:
        try:
            while True:
                outcome = await self._run_once(session, turn, reply)
                text = outcome.text()
                if text:
                    await _send(reply, text)
                    if self._on_delivered is not None:
                        self._on_delivered(turn, text)
                left = session.queue.drain()
                if left:
                    # No round of that run read these, so they are the next question.
                    turn = replace(turn, text="\n\n".join(item.text for item in left))
                elif session.later:
                    turn, reply = session.later.popleft()
                    session.actor = turn.actor
                else:
                    return
                session.typing = self._start_typing(reply)
        finally:
            # Before any await: once the queue was read for the last time, a new message must
            # start a new run, not wait in this one's queue for a read that never comes.
            if self._sessions.get(turn.session_key) is session:
                del self._sessions[turn.session_key]
            await _stop(session.typing)

    def _start_typing(self, reply: Replier) -> _Typing:
        self._first_typing_pending += 1
        self._no_first_typing_pending.clear()
        return _Typing(reply, self.typing_interval, self._sleep, first_done=self._first_typing_done)

    def _first_typing_done(self) -> None:
        self._first_typing_pending -= 1
        if self._first_typing_pending <= 0:
            self._first_typing_pending = 0
            self._no_first_typing_pending.set()

    async def _run_once(self, session: _Session, turn: ChatTurn, reply: Replier) -> RunOutcome:
        try:
            # Set-up (building the agent, the first model call) competes with every indicator
            # still on its way for this loop: let them go out first.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._no_first_typing_pending.wait(), TYPING_FIRST_WAIT)
            async with self._limit:
                return await self.runner.run(turn, session.queue)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # one failing run must not take the gateway down
            log.exception("a run for %s failed: %s", turn.session_key, exc)
            return RunOutcome("", error=f"{type(exc).__name__}: {exc}")
        finally:
            # Every exit path stops the indicator (the original leaked it for queued messages).
            await _stop(session.typing)

    async def join(self) -> None:
        while self._sessions:
            tasks = [s.task for s in self._sessions.values() if s.task is not None]
            await asyncio.gather(*tasks, return_exceptions=True)

    async def close(self) -> None:
        # A run cancelled before it first ran never reaches its `finally`: stop typing here too.
        tasks = [s.task for s in self._sessions.values() if s.task is not None]
        tasks += [s.typing.task for s in self._sessions.values() if s.typing is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._sessions.clear()


class _Typing:
    """Sends "typing…" now and every `interval` seconds until stopped.

    Stopping waits for a call already on its way instead of cancelling it: a cancelled request
    may still reach the platform after the answer (and show "typing…" under it), and it costs
    the kept-alive connection it was using.
    """

    def __init__(
        self,
        reply: Replier,
        interval: float,
        sleep: Callable[[float], Awaitable[None]],
        *,
        first_done: Callable[[], None] | None = None,
    ) -> None:
        self._reply = reply
        self._interval = interval
        self._sleep = sleep
        self._stopped = False
        self._sending = False
        self._first_done = first_done
        self.task = asyncio.create_task(self._loop())
        self.task.add_done_callback(lambda _task: self._first())

    def _first(self) -> None:
        """Report the first call done (answered, failed, or never made) exactly once."""
        done, self._first_done = self._first_done, None
        if done is not None:
            done()

    async def _loop(self) -> None:
        while not self._stopped:
            self._sending = True
            try:
                await self._reply.typing()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # typing is a courtesy; never a reason to fail the run
                log.debug("typing indicator failed: %s", exc)
            finally:
                self._sending = False
                self._first()
            if self._stopped:
                return
            await self._sleep(self._interval)

    async def stop(self) -> None:
        self._stopped = True
        try:
            if self._sending:
                await asyncio.wait([self.task], timeout=TYPING_STOP_WAIT)
        finally:
            self.task.cancel()
        await asyncio.wait([self.task])


async def _stop(typing: _Typing | None) -> None:
    if typing is not None:
        await typing.stop()


async def _send(reply: Replier, text: str) -> None:
    try:
        await reply.send(text)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.exception("could not deliver a reply: %s", exc)
