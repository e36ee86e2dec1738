"""Scheduled jobs in team mode: the scheduler (`dexter daemon`, or the gateway's) keeps its
leases, suppression and delivery, and hands the research to a worker through the queue.

`QueuedExecutor` is the scheduler's `JobExecutor`: it enqueues the run and waits for its result
(the runner's run timeout still applies). `schedule_handler` is what a worker does with it:
the same `AgentExecutor` as in-process, its outcome recorded under the run id. Filing watches
(their own executor, no agent) stay in the scheduler.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from dexter.cron.agent_executor import AgentExecutor, RunFailed
from dexter.cron.executor import Outcome
from dexter.cron.model import Job
from dexter.cron.store import CronStore
from dexter.work.outbox import RESULT_CHANNEL, Outbox, SharedConnection
from dexter.work.queue import SCHEDULE, RunRequest, WorkQueue

if TYPE_CHECKING:
    from dexter.cron.owners import PrincipalResolver
    from dexter.runtime import Runtime

RESULT_POLL = 1.0


class QueuedExecutor:
    def __init__(self, queue: WorkQueue, url: str, *, poll: float = RESULT_POLL) -> None:
        self.queue = queue
        self.url = url
        self.poll = poll

    async def execute(self, job: Job, prompt: str) -> Outcome:
        import psycopg

        from dexter.store.pg import connect

        run_id = f"schedule:{job.id}:{uuid.uuid4().hex[:12]}"
        listener = await psycopg.AsyncConnection.connect(self.url, autocommit=True)
        conn = await asyncio.to_thread(connect, self.url)
        try:
            await listener.execute(f"LISTEN {RESULT_CHANNEL}")
            await self.queue.enqueue(
                RunRequest(
                    kind=SCHEDULE,
                    run_id=run_id,
                    principal_id=job.owner,
                    # One job's runs never overlap, whichever scheduler enqueued them.
                    key=f"job:{job.id}",
                    payload={"job_id": job.id, "prompt": prompt},
                )
            )
            outbox = Outbox(conn)
            while True:
                result = await asyncio.to_thread(outbox.result, run_id)
                if result is not None:
                    await asyncio.to_thread(outbox.forget_result, run_id)
                    return _outcome(result)
                with contextlib.suppress(TimeoutError):
                    async for _ in listener.notifies(timeout=self.poll, stop_after=1):
                        break
        finally:
            await listener.close()
            await asyncio.to_thread(conn.close)


def _outcome(result: dict[str, Any]) -> Outcome:
    if result.get("error"):
        raise RunFailed(str(result["error"]))
    return Outcome(
        answer=str(result.get("answer", "")),
        refused=tuple(result.get("refused") or ()),
        session_id=result.get("session_id"),
    )


def schedule_handler(
    runtime: Runtime, url: str, principal_for: PrincipalResolver | None = None
) -> Callable[[RunRequest], Awaitable[None]]:
    from dexter.store.pg import connect

    executor = AgentExecutor(runtime, principal_for)
    cron = CronStore(runtime.store)
    shared = SharedConnection(lambda: connect(url))

    async def handle(request: RunRequest) -> None:
        box = Outbox(await asyncio.to_thread(shared.get))
        if await asyncio.to_thread(box.answered, request.run_id):
            return
        job_id = str(request.payload["job_id"])
        job = await asyncio.to_thread(cron.get, job_id)
        result: dict[str, Any]
        if job is None:
            result = {"error": "the job was removed before a worker ran it"}
        else:
            try:
                outcome = await executor.execute(job, str(request.payload["prompt"]))
                result = asdict(outcome)
                result["refused"] = list(outcome.refused)
            except Exception as exc:  # the scheduler records it and backs off
                result = {"error": str(exc) or type(exc).__name__}
        await runtime.writer.drain(30.0)
        await asyncio.to_thread(box.put_result, request.run_id, result)

    return handle
