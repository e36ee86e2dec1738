"""Agent runs for chats, built by the runtime: each chat is a persisted Dexter session.

`ChatSessions` maps a chat's session key to the session id in the same store the CLI uses, so
`dexter sessions list` shows chats and `dexter --resume ID` opens one in the terminal, and a
restarted gateway continues each conversation where it was.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypeVar

from dexter.agent.events import Done, ToolDenied
from dexter.agent.queue import MessageQueue
from dexter.config import ConfigError
from dexter.figure_marks import marked_answer
from dexter.gateway.dispatch import ChatTurn, RunOutcome
from dexter.gateway.routing import delivery_target
from dexter.permissions.principal_policy import ASK_OPERATOR
from dexter.principal import Principal
from dexter.store.db import Store, now_iso
from dexter.store.sessions import SessionLookupError

if TYPE_CHECKING:
    from dexter.runtime import Runtime
    from dexter.session import Session

log = logging.getLogger("dexter.gateway")

T = TypeVar("T")
MAX_LIVE_AGENTS = 256


class ChatSessions:
    def __init__(self, store: Store) -> None:
        self.store = store

    def get(self, session_key: str, principal_id: str) -> str | None:
        """The session this chat continues, if it belongs to `principal_id`: when the chat's
        principal changed (an id added to `operators`), the chat starts a new session."""
        rows = self.store.query(
            "SELECT session_id FROM gateway_chats WHERE session_key = ? AND principal_id = ?",
            (session_key, principal_id),
        )
        return str(rows[0]["session_id"]) if rows else None

    def put(self, turn: ChatTurn, session_id: str, principal_id: str) -> None:
        message = turn.message
        now = now_iso()
        with self.store.transaction() as conn:
            conn.execute(
                "INSERT INTO gateway_chats (session_key, session_id, channel, account_id, chat_id,"
                " chat_type, created_at, updated_at, principal_id)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT(session_key) DO UPDATE SET session_id = excluded.session_id,"
                " updated_at = excluded.updated_at, principal_id = excluded.principal_id",
                (
                    turn.session_key,
                    session_id,
                    message.channel,
                    message.account_id,
                    message.chat_id,
                    message.chat_type,
                    now,
                    now,
                    principal_id,
                ),
            )

    def chat_for_session(self, session_id: str) -> tuple[str, str] | None:
        """(channel, chat id) of the chat a session belongs to: where its alerts go."""
        rows = self.store.query(
            "SELECT channel, chat_id FROM gateway_chats WHERE session_id = ?", (session_id,)
        )
        return (str(rows[0]["channel"]), str(rows[0]["chat_id"])) if rows else None


@dataclass
class _Live:
    """A chat's built agent, and the actor it was built for."""

    session: Session
    actor: Hashable


class RuntimeRunner:
    """Runs chat turns through `Runtime.agent`, one live agent per chat (LRU-bounded).

    Each chat's agent acts for the turn's principal: its own memory, sessions and jobs, the
    tools its grants bind, jobs delivering to that chat, and approvals put to the asker in that
    chat. A group's agent starts every run as one that has read outside text (the group's
    messages are in its question and history), so memory writes ask first. The agent is built
    again when the actor changes: another member asking in a group, or new grants after
    gateway.json changed.
    """

    def __init__(
        self,
        runtime: Runtime,
        *,
        model: str | None = None,
        max_iterations: int | None = None,
        max_agents: int = MAX_LIVE_AGENTS,
    ) -> None:
        self.runtime = runtime
        self.model = model
        self.max_iterations = max_iterations
        self.max_agents = max_agents
        self.chats = ChatSessions(runtime.store)
        self._agents: OrderedDict[str, _Live] = OrderedDict()
        # Building an agent is a few milliseconds of Python (tools, skills, the session row).
        # One thread does them in arrival order: more threads would not build faster under
        # the GIL, only take it from the event loop more often.
        self._builder: ThreadPoolExecutor | None = None

    async def _in_builder(self, work: Callable[[], T]) -> T:
        if self._builder is None:
            self._builder = ThreadPoolExecutor(1, thread_name_prefix="dexter-gateway-build")
        return await asyncio.get_running_loop().run_in_executor(self._builder, work)

    async def prepare(self) -> None:
        """Pay the one-time cost of the first agent (imports, skills, tool schemas, about a
        second) before any chat waits for it."""
        await self._in_builder(self._warm)

    def _warm(self) -> None:
        from dexter.runtime import GATEWAY, AgentSpec

        # Built exactly as a chat's agent is, so every first-time cost is paid here; its
        # session row is removed again, as an unused session always is.
        spec = AgentSpec(model=self.model, channel=GATEWAY, max_iterations=self.max_iterations)
        agent = self.runtime.agent(spec)
        agent.tools.specs()
        agent.agent.system_prompt()
        agent.recorder.forget_if_empty(agent.session_id)

    def close(self) -> None:
        if self._builder is not None:
            self._builder.shutdown(wait=False, cancel_futures=True)
            self._builder = None

    def _agent(self, turn: ChatTurn, principal: Principal) -> Session:
        live = self._agents.get(turn.session_key)
        if live is not None and live.actor == turn.actor:
            self._agents.move_to_end(turn.session_key)
            return live.session
        from dexter.runtime import GATEWAY, AgentSpec

        message = turn.message
        resume = self.chats.get(turn.session_key, principal.id)
        spec = AgentSpec(
            model=self.model,
            channel=GATEWAY,
            max_iterations=self.max_iterations,
            resume=resume,
            principal=principal,
            # Jobs made in this chat answer in this chat.
            delivery_target=delivery_target(message),
            untrusted_context=message.chat_type == "group",
        )
        # A group's context joins the prompt.
        sections = (turn.group_context,) if turn.group_context else ()
        try:
            agent = self.runtime.agent(spec, prompt_sections=sections)
        except (ConfigError, SessionLookupError):
            if resume is None:
                raise
            # The session was deleted (`dexter sessions`): start the chat afresh.
            agent = self.runtime.agent(replace(spec, resume=None), prompt_sections=sections)
        if agent.session_id != resume:
            self.chats.put(turn, agent.session_id, principal.id)
        self._agents[turn.session_key] = _Live(agent, turn.actor)
        self._agents.move_to_end(turn.session_key)
        while len(self._agents) > self.max_agents:
            self._agents.popitem(last=False)
        return agent

    async def run(self, turn: ChatTurn, queue: MessageQueue) -> RunOutcome:
        principal = turn.principal
        if principal is None:  # never guess whose data a run may touch
            raise ConfigError("this chat message has no principal; it was not run")
        agent = await self._in_builder(lambda: self._agent(turn, principal))
        # This turn's asker answers this turn's questions (nobody, without an approver).
        agent.agent.approver = turn.approver
        notes: list[str] = []
        done: Done | None = None
        async for event in agent.run(turn.text, queue=queue):
            if isinstance(event, ToolDenied) and ASK_OPERATOR in event.reason:
                # Outside the principal's grants: say so, and whom to ask.
                note = f"(`{event.tool}` was not run: {event.reason}.)"
                if note not in notes:
                    notes.append(note)
            elif isinstance(event, Done):
                done = event
        if done is None:
            return RunOutcome("", error="the run ended without an answer")
        # The chat sees unsupported figures marked, with the footer naming them.
        return RunOutcome(
            marked_answer(done.answer, done.verification), error=done.error, notes=notes
        )
