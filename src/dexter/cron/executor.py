"""What the runner calls to do a job's research: an interface, so the runner is tested with a
scripted agent and the daemon plugs in agents built by the runtime (see `agent_executor`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from dexter.cron.model import Job


@dataclass(frozen=True, slots=True)
class Outcome:
    answer: str
    # Calls refused because they needed approval and nobody can approve during an unattended
    # run, described for the alert ("write_file notes/x.md").
    refused: tuple[str, ...] = ()
    session_id: str | None = None


class JobExecutor(Protocol):
    async def execute(self, job: Job, prompt: str) -> Outcome:
        """Run the research; raise on failure (the runner records it and backs off)."""
        ...
