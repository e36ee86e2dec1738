"""Agent runs for chats, built by the runtime: each chat is a persisted Dexter session.

`ChatSessions` maps a chat's session key to the session id in the same store the CLI uses, so
`dexter sessions list` shows chats and `dexter --resume ID` opens one in the terminal, and a
restarted gateway continues each conversation where it was.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from dexter.agent.events import Done, ToolDenied
from dexter.agent.queue import MessageQueue
from dexter.config import ConfigError
from dexter.gateway.dispatch import ChatTurn, RunOutcome
from dexter.permissions.gate import Decision, PermissionPolicy, Verdict
from dexter.store.db import Store, now_iso

if TYPE_CHECKING:
    from dexter.runtime import Runtime
    from dexter.session import Session

log = logging.getLogger("dexter.gateway")

T = TypeVar("T")
MAX_LIVE_AGENTS = 256
_CHAT_REFUSAL = "needs approval, which nobody can give from a chat"


class ChatSessions:
    def __init__(self, store: Store) -> None:
        self.store = store

    def get(self, session_key: str) -> str | None:
        rows = self.store.query(
            "SELECT session_id FROM gateway_chats WHERE session_key = ?", (session_key,)
        )
        return str(rows[0]["session_id"]) if rows else None

    def put(self, turn: ChatTurn, session_id: str) -> None:
        message = turn.message
        now = now_iso()
        with self.store.transaction() as conn:
            conn.execute(
                "INSERT INTO gateway_chats (session_key, session_id, channel, account_id, chat_id,"
                " chat_type, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT(session_key) DO UPDATE SET session_id = excluded.session_id,"
                " updated_at = excluded.updated_at",
                (
                    turn.session_key,
                    session_id,
                    message.channel,
                    message.account_id,
                    message.chat_id,
                    message.chat_type,
                    now,
                    now,
                ),
            )

    def chat_for_session(self, session_id: str) -> tuple[str, str] | None:
        """(channel, chat id) of the chat a session belongs to: where its alerts go."""
        rows = self.store.query(
            "SELECT channel, chat_id FROM gateway_chats WHERE session_id = ?", (session_id,)
        )
        return (str(rows[0]["channel"]), str(rows[0]["chat_id"])) if rows else None


class ChatPolicy:
    """Wraps the operator's rules: what would ask a person is refused, naming the rule that
    would allow it, because nobody can approve from a chat."""

    def __init__(self, inner: PermissionPolicy) -> None:
        self.inner = inner

    def evaluate(self, tool: str, args: Mapping[str, Any], *, needs_approval: bool) -> Verdict:
        verdict = self.inner.evaluate(tool, args, needs_approval=needs_approval)
        if verdict.decision is not Decision.ASK:
            return verdict
        rule = verdict.proposed_rule or tool
        return Verdict(
            Decision.DENY,
            reason=f"`{tool}` {_CHAT_REFUSAL}; the operator can allow it with "
            f"`dexter permissions allow '{rule}'`",
        )


class RuntimeRunner:
    """Runs chat turns through `Runtime.agent`, one live agent per chat (LRU-bounded)."""

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
        self._agents: OrderedDict[str, Session] = OrderedDict()
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

    def _agent(self, turn: ChatTurn) -> Session:
        agent = self._agents.get(turn.session_key)
        if agent is not None:
            self._agents.move_to_end(turn.session_key)
            return agent
        from dexter.runtime import GATEWAY, AgentSpec

        resume = self.chats.get(turn.session_key)
        spec = AgentSpec(
            model=self.model, channel=GATEWAY, max_iterations=self.max_iterations, resume=resume
        )
        # Nothing that needs approval runs from a chat; a group's context joins the prompt.
        policy = ChatPolicy(self.runtime.policy())
        sections = (turn.group_context,) if turn.group_context else ()
        try:
            agent = self.runtime.agent(spec, policy=policy, prompt_sections=sections)
        except ConfigError:
            if resume is None:
                raise
            # The session was deleted (`dexter sessions`): start the chat afresh.
            agent = self.runtime.agent(
                AgentSpec(model=self.model, channel=GATEWAY, max_iterations=self.max_iterations),
                policy=policy,
                prompt_sections=sections,
            )
        if agent.session_id != resume:
            self.chats.put(turn, agent.session_id)
        self._agents[turn.session_key] = agent
        while len(self._agents) > self.max_agents:
            self._agents.popitem(last=False)
        return agent

    async def run(self, turn: ChatTurn, queue: MessageQueue) -> RunOutcome:
        agent = await self._in_builder(lambda: self._agent(turn))
        notes: list[str] = []
        done: Done | None = None
        async for event in agent.run(turn.text, queue=queue):
            if isinstance(event, ToolDenied) and _CHAT_REFUSAL in event.reason:
                note = f"(`{event.tool}` was not run: {event.reason}.)"
                if note not in notes:
                    notes.append(note)
            elif isinstance(event, Done):
                done = event
        if done is None:
            return RunOutcome("", error="the run ended without an answer")
        return RunOutcome(done.answer, error=done.error, notes=notes)
