"""A stored session built by hand, wired as the runtime wires one: the main model retried
(without real waits) and recorded, the session and memory hooks passed to the Agent."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dexter.agent.hooks import RunHooks
from dexter.agent.loop import Agent, AgentConfig
from dexter.memory.index import MemoryIndex
from dexter.models.base import Model
from dexter.models.phases import PhaseModels
from dexter.models.retry import RetryPolicy
from dexter.session import MemoryHooks, Session, SessionHooks, SessionRecorder
from dexter.store import Ledger, open_store
from dexter.tools.base import Tool
from dexter.tools.registry import ToolRegistry


async def no_sleep(_: float) -> None:
    return None


def hand_session(
    home: Path,
    model: Model,
    *,
    tools: Sequence[Tool[Any]] = (),
    memory: MemoryIndex | None = None,
) -> Session:
    """A session over `model` in `home`'s store (no session started or resumed yet)."""
    store = open_store(home)
    recorder = SessionRecorder(store, Ledger(store), session_id="")
    models = PhaseModels(
        main=model,
        fast=None,
        fast_spec="",
        fast_window=None,
        sink=recorder.record_model_call,
        retry=RetryPolicy(sleep=no_sleep),
    )
    session_hooks = SessionHooks(recorder)
    hooks: list[RunHooks] = [session_hooks]
    if memory is not None:
        hooks.append(MemoryHooks(memory, lambda: models.phase("memory")))
    agent = Agent(
        models.phase("main"), ToolRegistry(list(tools)), config=AgentConfig(home=home), hooks=hooks
    )
    return Session(agent, session_hooks, models)
