"""A research session: an Agent whose conversation, constraints and token use are kept in the
SQLite store, so it can be resumed and accounted for.

Sits above `agent/`: the loop knows nothing of storage. The runtime builds the Agent with the
hooks defined here (`SessionHooks` records turns, tool calls and constraints and labels every
model call with its session and run; `MemoryHooks` recalls remembered facts and flushes new ones
before compaction) and hands back a `Session`, which holds the agent, its recorder and its
per-phase models, for resume, listing, the session id and model switches.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from dexter.agent.constraints import Constraints
from dexter.agent.events import Done, Event, RunStarted, ToolEnd, ToolError
from dexter.agent.hooks import RunHooks
from dexter.agent.loop import Agent, AgentConfig, AgentModels
from dexter.agent.queue import MessageQueue
from dexter.config import ConfigError
from dexter.figure_marks import verification_to_dict
from dexter.models.base import Model
from dexter.models.phases import PhaseModels
from dexter.models.recording import ModelCallRecord, RunLabel, current_run
from dexter.models.types import AssistantMessage, Message, UserMessage
from dexter.permissions.gate import PermissionPolicy
from dexter.principal import OPERATOR, Principal
from dexter.store import Ledger, SessionInfo, SessionStore, Store
from dexter.store.db import now_iso
from dexter.store.writer import StoreWriter, Write, WriteKind, usage_payload
from dexter.tools.registry import ToolRegistry

if TYPE_CHECKING:
    # numpy comes with the index: imported only where memory is on (`dexter.memory.setup`).
    from dexter.memory.index import MemoryIndex

# How long the end of a run waits for its records before reporting its own token count.
SETTLE_SECONDS = 2.0

WindowProbe = Callable[[], Awaitable[int | None]]


class SessionRecorder:
    """Writes turns, tool calls and model calls for one session.

    With a `writer` the writes leave the event loop (and survive a busy database, see
    `dexter.store.writer`); without one they are made in place."""

    def __init__(
        self,
        store: Store,
        ledger: Ledger,
        session_id: str,
        *,
        writer: StoreWriter | None = None,
        principal: Principal = OPERATOR,
    ) -> None:
        self.store = store
        self.sessions = SessionStore(store)
        self.ledger = ledger
        self.session_id = session_id
        self.writer = writer
        # Whose sessions these are: new ones are theirs, and only theirs can be resumed
        # (the operator may resume any).
        self.principal = principal
        self._last_ticket = 0

    def _write(self, kind: WriteKind, payload: dict[str, Any]) -> None:
        assert self.writer is not None
        self._last_ticket = self.writer.submit(Write(kind, payload))

    def create_session(self, model: str) -> str:
        if self.writer is not None:
            session_id = secrets.token_hex(4)
            payload = {"model": model, "session_id": session_id, "principal_id": self.principal.id}
            if not self.principal.is_operator:  # its row is recorded with its first session
                payload |= {
                    "principal_kind": self.principal.kind,
                    "principal_name": self.principal.display_name,
                }
            self._write("session", payload)
            return session_id
        found = self.principal
        return self.sessions.create(
            model,
            principal_id=found.id,
            principal=None if found.is_operator else (found.kind, found.display_name),
        )

    @property
    def visible_to(self) -> str | None:
        """The principal whose sessions this recorder may list and resume; None: all."""
        return None if self.principal.is_operator else self.principal.id

    def forget_if_empty(self, session_id: str) -> None:
        if not session_id:
            return
        if self.writer is not None:
            self._write("forget_empty", {"session_id": session_id})
        else:
            self.sessions.delete_if_empty(session_id)

    def record_model_call(self, record: ModelCallRecord) -> None:
        if self.writer is not None:
            self._write(
                "model_call",
                {
                    "session_id": record.session_id,
                    "run_id": record.run_id,
                    "provider": record.provider,
                    "model": record.model,
                    "phase": record.phase,
                    "usage": usage_payload(record.usage),
                    "tool": record.tool,
                    "ok": record.ok,
                    "error": record.error,
                    "at": now_iso(),
                },
            )
            return
        self.ledger.record_model_call(
            record.session_id,
            record.run_id,
            record.provider,
            record.model,
            record.phase,
            record.usage,
            tool=record.tool,
            ok=record.ok,
            error=record.error,
        )

    def record_tool_call(self, session_id: str, run_id: str | None, **fields: Any) -> None:
        if self.writer is not None:
            self._write("tool_call", {"session_id": session_id, "run_id": run_id, **fields})
            return
        self.ledger.record_tool_call(session_id, run_id, **fields)

    def add_turn(self, **fields: Any) -> None:
        if self.writer is not None:
            fields["usage"] = usage_payload(fields.get("usage"))
            self._write("turn", fields)
            return
        self.sessions.add_turn(**fields)

    def set_constraints(self, items: list[str], base: list[str] | None) -> list[str]:
        """The session's constraints after this run: merged with other runs' in the store (the
        writer does the same merge when it writes; here the run's own list stands)."""
        if self.writer is not None:
            self._write(
                "constraints",
                {"session_id": self.session_id, "constraints": items, "base": base},
            )
            return list(items)
        return self.sessions.set_constraints(self.session_id, items, base=base)

    async def settled(self, wait_seconds: float) -> bool:
        """Whether everything this recorder recorded so far is in the database (waiting up to
        `wait_seconds`; what other sessions record meanwhile is not waited for)."""
        if self.writer is None:
            return True
        return await self.writer.drain(wait_seconds, upto=self._last_ticket)


class SessionHooks(RunHooks):
    """Records each run of an agent into its session: the turn (also a cancelled one), every
    tool call, the constraints merged with other runs', and the run's totals from the ledger.
    Labels model calls with the session and run so the ledger knows what they belong to."""

    def __init__(self, recorder: SessionRecorder) -> None:
        self.recorder = recorder
        # The constraints as last loaded or stored: what this session's runs removed is what
        # is missing from it (other runs may add meanwhile).
        self.constraints_base: list[str] | None = None

    async def on_run_start(self, agent: Agent, query: str) -> None:
        current_run.set(RunLabel(self.recorder.session_id, None))

    async def on_run_started(self, agent: Agent, started: RunStarted) -> None:
        current_run.set(RunLabel(self._label()[0], started.run_id))

    def _label(self) -> tuple[str, str | None]:
        """(session id, run id) of the run under way: the session it started in, even if the
        recorder has moved to another session meanwhile."""
        label = current_run.get()
        if label is not None and label.session_id:
            return label.session_id, label.run_id
        return self.recorder.session_id, None

    async def on_tool_end(self, agent: Agent, event: ToolEnd | ToolError) -> None:
        session_id, run_id = self._label()
        self.recorder.record_tool_call(
            session_id,
            run_id,
            tool=event.tool,
            args=event.args,
            call_id=event.call_id,
            ok=isinstance(event, ToolEnd),
            error=event.error if isinstance(event, ToolError) else None,
            duration_ms=event.duration_ms,
            result_chars=len(event.result) if isinstance(event, ToolEnd) else None,
        )

    async def on_run_end(self, agent: Agent, query: str, done: Done) -> Done:
        recorder = self.recorder
        session_id, run_id = self._label()
        recorder.add_turn(
            session_id=session_id,
            run_id=run_id or "",
            query=query,
            answer=done.answer,
            status=done.status,
            iterations=done.iterations,
            duration_ms=done.duration_ms,
            usage=done.usage,
            verification=(
                verification_to_dict(done.verification) if done.verification is not None else None
            ),
        )
        # Merged with constraints other runs stored meanwhile; `base` says what this run removed.
        merged = recorder.set_constraints(list(agent.constraints.items), self.constraints_base)
        agent.constraints = Constraints(merged)
        self.constraints_base = merged
        if run_id is None:
            return done
        # The run's totals across every phase (routers inside tools included), from the ledger,
        # once the writes are in; a busy database must not hold the answer back, so after a short
        # wait the run's own count stands.
        if not await recorder.settled(SETTLE_SECONDS):
            return done
        try:
            totals = recorder.ledger.totals(session_id=session_id, run_id=run_id)
        except recorder.ledger.store.errors:
            return done
        return replace(done, usage=totals.counted) if totals.calls else done

    async def on_run_cancelled(self, agent: Agent, query: str, run_id: str | None) -> None:
        # Cancelled (ctrl+c, /clear mid-run): keep the question, so the session shows it.
        self.recorder.add_turn(
            session_id=self._label()[0],
            run_id=run_id or "",
            query=query,
            answer="",
            status="cancelled",
            iterations=0,
            duration_ms=0.0,
        )


class MemoryHooks(RunHooks):
    """Recall what is remembered about the user at the start of the session, and save durable
    facts from their own messages before the context is summarised. `model` is asked at each
    flush, so a model switch reaches it."""

    def __init__(self, memory: MemoryIndex, model: Callable[[], Model]) -> None:
        self.memory = memory
        self.model = model
        self._loaded = False
        self._section = ""

    async def on_run_start(self, agent: Agent, query: str) -> None:
        if self._loaded:
            return
        self._loaded = True
        from dexter.memory.context import memory_prompt  # memory's modules load only when it is on

        try:
            self._section = await memory_prompt(self.memory.files, self.memory) or ""
        except Exception:  # memory is a help, never a reason for a run to fail
            self._section = ""

    def prompt_sections(self) -> Sequence[str]:
        return (self._section,) if self._section else ()

    async def before_compaction(self, agent: Agent, messages: Sequence[Message]) -> None:
        user = [m.content for m in messages if isinstance(m, UserMessage)]
        findings = "\n".join(m.content for m in messages if isinstance(m, AssistantMessage))
        from dexter.memory.flush import flush_memories

        await flush_memories(
            self.model(), user_messages=user, findings=findings[-8000:], files=self.memory.files
        )


class WindowHooks(RunHooks):
    """Asks a server that can say its model's context window (a server of the user's own,
    Ollama, OpenRouter) once per model choice, before that model's first run, and applies the
    answer; to the fast model's window too when `fast_follows` (one model does every phase)."""

    def __init__(
        self, probe: Callable[[], WindowProbe | None], fast_follows: Callable[[], bool] = bool
    ) -> None:
        self._probe = probe
        self._fast_follows = fast_follows
        self._asked: WindowProbe | None = None

    async def on_run_start(self, agent: Agent, query: str) -> None:
        probe = self._probe()
        if probe is None or probe is self._asked:
            return
        self._asked = probe
        window = await probe()
        if window:
            models = agent.models
            fast = window if self._fast_follows() else models.fast_context_window
            agent.use_models(replace(models, context_window=window, fast_context_window=fast))


class Session:
    """An Agent bound to a stored session, with the per-phase models it was built from.

    The runtime builds it (`Runtime.agent`) and switches its models (`Runtime.with_model`); the
    agent's tools and hooks read `models` when they call, so every phase follows a switch.
    """

    def __init__(
        self,
        agent: Agent,
        hooks: SessionHooks,
        models: PhaseModels,
        *,
        window_probe: WindowProbe | None = None,
    ) -> None:
        self.agent = agent
        self.hooks = hooks
        self.models = models
        self.window_probe = window_probe

    def use_models(
        self, models: PhaseModels, *, context_window: int, window_probe: WindowProbe | None
    ) -> Model:
        """Switch every phase to `models` at once; returns the new main model."""
        self.models = models
        self.window_probe = window_probe
        self.agent.use_models(
            AgentModels(
                main=models.phase("main"),
                fast=models.fast_phase("compaction"),
                constraints=models.fast_phase("constraints"),
                context_window=context_window,
                fast_context_window=models.fast_window,
            )
        )
        return self.agent.model

    # ------------------------------------------------------------------ the agent

    def run(self, query: str, *, queue: MessageQueue | None = None) -> AsyncIterator[Event]:
        return self.agent.run(query, queue=queue)

    @property
    def model(self) -> Model:
        return self.agent.model

    @property
    def fast_model(self) -> Model | None:
        return self.agent.fast_model

    @property
    def constraint_model(self) -> Model | None:
        return self.agent.constraint_model

    @property
    def tools(self) -> ToolRegistry:
        return self.agent.tools

    @property
    def config(self) -> AgentConfig:
        return self.agent.config

    @property
    def policy(self) -> PermissionPolicy:
        return self.agent.policy

    @property
    def queue(self) -> MessageQueue:
        return self.agent.queue

    @property
    def history(self) -> list[Message]:
        return self.agent.history

    # ------------------------------------------------------------------ the stored session

    @property
    def recorder(self) -> SessionRecorder:
        return self.hooks.recorder

    @property
    def session_id(self) -> str:
        return self.recorder.session_id

    def list_sessions(self, limit: int = 20) -> list[SessionInfo]:
        return self.recorder.sessions.list(limit, principal_id=self.recorder.visible_to)

    def resume(self, id_or_prefix: str | None) -> SessionInfo:
        """Load a stored session's history and constraints into the agent (None: the latest)."""
        sessions = self.recorder.sessions
        owner = self.recorder.visible_to
        info = (
            sessions.get(id_or_prefix, principal_id=owner)
            if id_or_prefix
            else sessions.latest(principal_id=owner)
        )
        if info is None:
            raise ConfigError("there is no saved session to resume yet.")
        history: list[Message] = []
        for question, answer in sessions.history(info.id):
            history += [UserMessage(question), AssistantMessage(content=answer)]
        self.agent.history = history
        self.agent.earlier.clear()
        if self.agent.config.verify != "off":
            # What the earlier answers were built on, from their runs' scratchpads, so a
            # follow-up's figures are checked against it too.
            answered = [t for t in sessions.turns(info.id) if t.status == "answered"]
            pads = self.agent.config.home / "scratchpad"
            recent = answered[-self.agent.earlier.max_runs :]
            self.agent.earlier.add_scratchpads(pads / f"{t.run_id}.jsonl" for t in recent)
        self.agent.constraints = Constraints(sessions.constraints(info.id))
        self.hooks.constraints_base = list(self.agent.constraints.items)
        self.recorder.session_id = info.id
        return info

    def new_session(self) -> str:
        self.agent.clear()
        self.hooks.constraints_base = None
        previous = self.recorder.session_id
        self.recorder.session_id = self.recorder.create_session(self.agent.model.name)
        # A session nobody asked anything in would only clutter `dexter sessions list`.
        self.recorder.forget_if_empty(previous)
        return self.recorder.session_id
