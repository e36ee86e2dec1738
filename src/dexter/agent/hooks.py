"""Run hooks: what a caller adds around the loop without subclassing or mutating the Agent.

The runtime passes hook objects to the Agent's constructor (session recording and ledger labels,
memory load and flush, context-window discovery); the loop calls them at fixed points of every
run, in the order given. Every method has a no-op default, so a hook overrides only what it
needs (the shape of openai-agents' `RunHooksBase`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from dexter.agent.events import Done, RunStarted, ToolEnd, ToolError
from dexter.models.types import Message

if TYPE_CHECKING:
    from dexter.agent.loop import Agent


class RunHooks:
    """Callbacks around one run of an Agent. Exceptions raised here propagate to the caller,
    except in `on_run_cancelled` (the cancellation being raised must win)."""

    async def on_run_start(self, agent: Agent, query: str) -> None:
        """Before anything of the run happens (constraints, system prompt, first model call)."""

    def prompt_sections(self) -> Sequence[str]:
        """Sections added to the system prompt after the tool policy (e.g. remembered facts)."""
        return ()

    async def on_run_started(self, agent: Agent, started: RunStarted) -> None:
        """The run has an id; everything recorded from here on belongs to it."""

    async def on_tool_end(self, agent: Agent, event: ToolEnd | ToolError) -> None:
        """A tool call finished, successfully or not."""

    async def before_compaction(self, agent: Agent, messages: Sequence[Message]) -> None:
        """The messages about to be summarised (a chance to keep what would be lost)."""

    async def on_run_end(self, agent: Agent, query: str, done: Done) -> Done:
        """The run ended with `done`; returns the Done the caller sees (e.g. with totals)."""
        return done

    async def on_run_cancelled(self, agent: Agent, query: str, run_id: str | None) -> None:
        """The run was cancelled (or its consumer stopped) before its Done."""


__all__ = ["RunHooks"]
