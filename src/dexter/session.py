"""A research session: an Agent whose conversation, constraints and token use are kept in the
SQLite store, so it can be resumed and accounted for.

Sits above `agent/`: the loop knows nothing of storage. The session wraps the models it is given
in `RecordingModel`s (phase main / router / compaction) so every call lands in the ledger, and
labels each run so those records know which session and run they belong to.
"""

from __future__ import annotations

import contextlib
import secrets
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from dexter.agent.constraints import Constraints
from dexter.agent.events import Done, Event, RunStarted, ToolEnd, ToolError
from dexter.agent.loop import Agent
from dexter.config import ConfigError
from dexter.models.base import Model
from dexter.models.recording import ModelCallRecord, RunLabel, current_run
from dexter.models.types import AssistantMessage, Message, UserMessage
from dexter.store import Ledger, SessionInfo, SessionStore, Store
from dexter.store.db import now_iso
from dexter.store.writer import StoreWriter, Write, WriteKind, usage_payload

if TYPE_CHECKING:
    # numpy comes with the index: imported only where memory is on (`dexter.memory.setup`).
    from dexter.memory.index import MemoryIndex

# How long the end of a run waits for its records before reporting its own token count.
SETTLE_SECONDS = 2.0


class SessionRecorder:
    """Writes turns, tool calls and model calls for one session.

    With a `writer` the writes leave the event loop (and survive a busy database, see
    `dexter.store.writer`); without one they are made in place."""

    def __init__(
        self, store: Store, ledger: Ledger, session_id: str, *, writer: StoreWriter | None = None
    ) -> None:
        self.store = store
        self.sessions = SessionStore(store)
        self.ledger = ledger
        self.session_id = session_id
        self.writer = writer

    def _write(self, kind: WriteKind, payload: dict[str, Any]) -> None:
        assert self.writer is not None
        self.writer.submit(Write(kind, payload))

    def create_session(self, model: str) -> str:
        if self.writer is not None:
            session_id = secrets.token_hex(4)
            self._write("session", {"model": model, "session_id": session_id})
            return session_id
        return self.sessions.create(model)

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
        """Whether everything recorded so far is in the database (waiting up to `wait_seconds`)."""
        return True if self.writer is None else await self.writer.drain(wait_seconds)


class SessionAgent(Agent):
    """An Agent bound to a stored session. Use `attach` to start or resume one."""

    recorder: SessionRecorder
    _window_probe: Callable[[], Awaitable[int | None]] | None = None
    _memory: MemoryIndex | None = None
    _memory_model: Model | None = None
    _memory_loaded = True
    # The runtime's per-phase models for this agent (see `Runtime.with_model`).
    phase_models: Any = None

    def attach(
        self,
        recorder: SessionRecorder,
        *,
        window_probe: Callable[[], Awaitable[int | None]] | None = None,
    ) -> None:
        self.recorder = recorder
        self._window_probe = window_probe

    def set_window_probe(self, probe: Callable[[], Awaitable[int | None]] | None) -> None:
        self._window_probe = probe

    @property
    def memory_model(self) -> Model | None:
        return self._memory_model

    @memory_model.setter
    def memory_model(self, model: Model | None) -> None:
        self._memory_model = model

    @property
    def session_id(self) -> str:
        return self.recorder.session_id

    def list_sessions(self, limit: int = 20) -> list[SessionInfo]:
        return self.recorder.sessions.list(limit)

    def resume(self, id_or_prefix: str | None) -> SessionInfo:
        """Load a stored session's history and constraints into this agent (None: the latest)."""
        sessions = self.recorder.sessions
        info = sessions.get(id_or_prefix) if id_or_prefix else sessions.latest()
        if info is None:
            raise ConfigError("there is no saved session to resume yet.")
        self.history = []
        for question, answer in sessions.history(info.id):
            self.history += [UserMessage(question), AssistantMessage(content=answer)]
        self.constraints = Constraints(sessions.constraints(info.id))
        self._constraints_base = list(self.constraints.items)
        self.recorder.session_id = info.id
        return info

    def use_memory(self, memory: MemoryIndex, model: Model) -> None:
        """Recall what is remembered about the user at the start of the session, and save
        durable facts from their own messages before the context is summarised."""
        self._memory = memory
        self._memory_model = model
        self._memory_loaded = False
        self.before_compaction = self._flush_memories

    async def _load_memory(self) -> None:
        if self._memory is None or self._memory_loaded:
            return
        self._memory_loaded = True
        from dexter.memory.context import memory_prompt  # memory's modules load only when it is on

        try:
            section = await memory_prompt(self._memory.files, self._memory)
        except Exception:  # memory is a help, never a reason for a run to fail
            return
        if section:
            self.prompt_sections.append(section)

    async def _flush_memories(self, messages: Sequence[Message]) -> None:
        if self._memory is None or self._memory_model is None:
            return
        user = [m.content for m in messages if isinstance(m, UserMessage)]
        findings = "\n".join(m.content for m in messages if isinstance(m, AssistantMessage))
        from dexter.memory.flush import flush_memories

        await flush_memories(
            self._memory_model,
            user_messages=user,
            findings=findings[-8000:],
            files=self._memory.files,
        )

    def new_session(self) -> str:
        self.clear()
        previous = self.recorder.session_id
        self.recorder.session_id = self.recorder.create_session(self.model.name)
        # A session nobody asked anything in would only clutter `dexter sessions list`.
        self.recorder.forget_if_empty(previous)
        return self.recorder.session_id

    async def run(self, query: str) -> AsyncIterator[Event]:
        await self._load_memory()
        if self._window_probe is not None:
            probe, self._window_probe = self._window_probe, None
            window = await probe()
            if window:
                self.config.context_window = window
        recorder = self.recorder
        session_id = recorder.session_id
        current_run.set(RunLabel(session_id, None))
        run_id: str | None = None
        finished = False
        try:
            async for event in self._recorded(query, session_id):
                if isinstance(event, RunStarted):
                    run_id = event.run_id
                elif isinstance(event, Done):
                    finished = True
                yield event
        finally:
            if not finished:
                # Cancelled (ctrl+c, /clear mid-run): keep the question, so the session shows it.
                # Best effort: a failed write must not replace the cancellation being raised.
                with contextlib.suppress(Exception):
                    recorder.add_turn(
                        session_id=session_id,
                        run_id=run_id or "",
                        query=query,
                        answer="",
                        status="cancelled",
                        iterations=0,
                        duration_ms=0.0,
                    )

    async def _recorded(self, query: str, session_id: str) -> AsyncIterator[Event]:
        recorder = self.recorder
        run_id: str | None = None
        async for event in super().run(query):
            if isinstance(event, RunStarted):
                run_id = event.run_id
                current_run.set(RunLabel(session_id, run_id))
            elif isinstance(event, ToolEnd | ToolError):
                recorder.record_tool_call(
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
            elif isinstance(event, Done):
                event = await self._finish(event, query, run_id)
            yield event

    async def _finish(self, done: Done, query: str, run_id: str | None) -> Done:
        recorder = self.recorder
        recorder.add_turn(
            session_id=recorder.session_id,
            run_id=run_id or "",
            query=query,
            answer=done.answer,
            status=done.status,
            iterations=done.iterations,
            duration_ms=done.duration_ms,
            usage=done.usage,
        )
        # Merged with constraints other runs stored meanwhile; `base` says what this run removed.
        merged = recorder.set_constraints(
            list(self.constraints.items), getattr(self, "_constraints_base", None)
        )
        self.constraints = Constraints(merged)
        self._constraints_base = merged
        if run_id is None:
            return done
        # The run's totals across every phase (routers inside tools included), from the ledger,
        # once the writes are in; a busy database must not hold the answer back, so after a short
        # wait the run's own count stands.
        if not await recorder.settled(SETTLE_SECONDS):
            return done
        try:
            totals = recorder.ledger.totals(session_id=recorder.session_id, run_id=run_id)
        except sqlite3.Error:
            return done
        return replace(done, usage=totals.usage) if totals.calls else done
