"""Job runs as isolated agents built by the runtime on the `cron` channel: nobody to ask, so
anything needing approval is refused (and listed in the alert); no shell, no writes, memory
read-only. Each run is its own session, so `dexter sessions show` can replay it.

A run acts for the job's owner: a chat user's job reads that user's memory and records its
session under them, with only the tools they may use (see `owners`)."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING

from dexter.cron.executor import Outcome
from dexter.cron.model import Job
from dexter.cron.owners import PrincipalResolver, principal_for_job

if TYPE_CHECKING:
    from dexter.runtime import Runtime


class RunFailed(Exception):
    """The agent ended with an error (model unreachable, out of iterations…)."""


def _describe_call(tool: str, args: dict[str, object]) -> str:
    shown = json.dumps(args, ensure_ascii=False, sort_keys=True)
    if len(shown) > 160:
        shown = shown[:159] + "…"
    return f"{tool} {shown}"


class AgentExecutor:
    def __init__(self, runtime: Runtime, principal_for: PrincipalResolver | None = None) -> None:
        self.runtime = runtime
        self.principal_for = principal_for or (
            lambda owner: principal_for_job(runtime.store, owner)
        )

    async def execute(self, job: Job, prompt: str) -> Outcome:
        from dexter.agent.events import Done, ToolDenied
        from dexter.runtime import CRON, AgentSpec

        principal = await asyncio.to_thread(self.principal_for, job.owner)
        spec = AgentSpec(
            model=job.model,
            channel=CRON,
            max_iterations=job.max_iterations,
            principal=principal,
        )
        agent = self.runtime.agent(spec, approver=None)
        refused: list[str] = []
        done: Done | None = None
        async for event in agent.run(prompt):
            if isinstance(event, ToolDenied):
                refused.append(_describe_call(event.tool, event.args))
            elif isinstance(event, Done):
                done = event
        if done is None:
            raise RunFailed("the agent stopped without an answer")
        if done.status == "error":
            raise RunFailed(done.error or "the agent run failed")
        from dexter.figure_marks import marked_answer

        # An alert goes out unattended: a figure its data did not support is marked in it.
        answer = marked_answer(done.answer, done.verification)
        return Outcome(answer=answer, refused=tuple(refused), session_id=agent.session_id)
