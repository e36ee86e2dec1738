"""The durable queue on Postgres: procrastinate (MIT) under our `WorkQueue` interface.

Why procrastinate (measured against DBOS and pgqueuer; figures in the README): a job's `lock`
gives per-conversation order across every worker (the next job of a lock is fetched only once
the previous one finished, oldest first), a new job wakes workers through LISTEN/NOTIFY (tens
of milliseconds from enqueue to start, no polling), workers register with heartbeats, and a
job whose worker stopped beating is found by one query and put back. Its schema is plain SQL
applied once per database (under an advisory lock, so workers starting together do not race).

A run killed with its worker (`kill -9`, a lost machine) stays "doing" until its worker's
heartbeat is `STALLED_AFTER` seconds old (DEXTER_WORKER_STALLED_SECONDS); every live worker
looks for such runs a few times in that period and puts them back, first in their
conversation's line.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from dexter.errors import ConfigError
from dexter.work.limits import TeamSlots, max_running
from dexter.work.queue import KINDS, Handler, Limits, RunRequest, handler_for

if TYPE_CHECKING:
    import procrastinate

log = logging.getLogger("dexter.work")

TASK = "dexter.run"
STALLED_AFTER = 10.0
STALLED_ENV = "DEXTER_WORKER_STALLED_SECONDS"
# A run failing outside the agent (the database away for a moment) is tried again, this many
# times in all; handlers skip what an earlier attempt finished, so a retry never answers twice.
ATTEMPTS = 4
_SCHEMA_LOCK = 0x0DE7E5  # advisory lock id held while the queue schema is installed


def _procrastinate() -> Any:
    try:
        import procrastinate
    except ImportError:
        from dexter.install import missing_extra

        raise missing_extra("The team queue (`dexter worker`)", "team", "procrastinate") from None
    return procrastinate


def stalled_after() -> float:
    """Seconds without a heartbeat after which a worker counts as gone (and its runs go back)."""
    raw = os.environ.get(STALLED_ENV, "").strip()
    if not raw:
        return STALLED_AFTER
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if value < 1.0:
        raise ConfigError(f"{STALLED_ENV} must be a number of seconds of at least 1, got {raw!r}.")
    return value


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class PgQueue:
    """The queue in one Postgres database. Open it with `async with`."""

    def __init__(self, url: str, *, max_connections: int = 4) -> None:
        self.url = url
        pc = _procrastinate()
        connector = pc.PsycopgConnector(conninfo=url, min_size=1, max_size=max(2, max_connections))
        self.app: procrastinate.App = pc.App(connector=connector)
        self._handlers: Mapping[str, Handler] = {}
        self._slots: TeamSlots | None = None
        self._task = self.app.task(
            name=TASK,
            queue=KINDS[0],
            pass_context=True,
            retry=pc.RetryStrategy(max_attempts=ATTEMPTS - 1, wait=1, exponential_wait=2),
        )(self._execute)

    async def __aenter__(self) -> PgQueue:
        # First, on a plain connection: a server that cannot be reached is one clear error,
        # not the pool's retries for half a minute.
        await install(self.url)
        await self.app.open_async()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.app.close_async()

    async def enqueue(self, request: RunRequest) -> None:
        pc = _procrastinate()
        configured = self._task.configure(
            queue=request.kind,
            lock=f"{request.kind}:{request.key}",
            # The same run enqueued twice (a platform delivering a message twice) waits once.
            queueing_lock=request.run_id,
        )
        with contextlib.suppress(pc.exceptions.AlreadyEnqueued):
            await configured.defer_async(
                kind=request.kind,
                run_id=request.run_id,
                principal_id=request.principal_id,
                key=request.key,
                payload=json.loads(json.dumps(request.payload)),
            )

    async def _execute(
        self,
        context: Any,
        *,
        kind: str,
        run_id: str,
        principal_id: str,
        key: str,
        payload: dict[str, Any],
    ) -> None:
        attempt = int(getattr(context.job, "attempts", 0) or 0)
        request = RunRequest(kind, run_id, principal_id, key, payload, attempt)
        handler = handler_for(self._handlers, kind)
        async with contextlib.AsyncExitStack() as slot:
            if self._slots is not None:
                await slot.enter_async_context(self._slots.slot())
            started = time.monotonic()
            log.info("%s run %s started", kind, run_id)
            await handler(request)
        log.info("%s run %s done in %.1fs", kind, run_id, time.monotonic() - started)

    async def work(
        self, handlers: Mapping[str, Handler], limits: Limits, stop: asyncio.Event
    ) -> None:
        """Run jobs with `handlers` until `stop` is set; then let running jobs finish and
        unregister. (Cancelled runs would be recorded as aborted and never run again, so none
        is cut off: a supervisor that kills a worker still finishing leaves its runs to be put
        back by the others.)"""
        self._handlers = handlers
        stalled = stalled_after()
        team_limit = max_running()
        self._slots = TeamSlots(self.url, team_limit) if team_limit else None
        reaper = asyncio.create_task(self._reap_forever(stop, stalled), name="dexter-worker-reaper")
        stopping = asyncio.create_task(stop.wait())
        try:
            while not stop.is_set():
                worker = asyncio.create_task(
                    self._run_worker(limits, stalled), name="dexter-worker"
                )
                try:
                    await asyncio.wait({worker, stopping}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    if not worker.done():
                        worker.cancel()  # procrastinate's graceful stop: running jobs finish
                    with contextlib.suppress(asyncio.CancelledError):
                        await asyncio.gather(worker, return_exceptions=True)
                error = None if worker.cancelled() else worker.exception()
                if error is None or stop.is_set():
                    break
                # A run put back while it was still running (its heartbeat was late) cannot
                # be finished by this worker, and procrastinate stops over it: start again.
                log.warning("the queue worker stopped (%s); starting it again", error)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 1.0)
        finally:
            reaper.cancel()
            stopping.cancel()
            await asyncio.gather(reaper, stopping, return_exceptions=True)

    async def _run_worker(self, limits: Limits, stalled: float) -> None:
        await self.app.run_worker_async(
            queues=list(limits.kinds),
            concurrency=max(1, limits.concurrency),
            name=worker_name(),
            install_signal_handlers=False,
            update_heartbeat_interval=stalled / 5,
            stalled_worker_timeout=stalled,
            # Polling is only the fallback when a notification was missed.
            fetch_job_polling_interval=2.0,
            delete_jobs="successful",
        )

    async def _reap_forever(self, stop: asyncio.Event, stalled: float) -> None:
        while not stop.is_set():
            try:
                await self.reap(stalled)
            except Exception as exc:  # the next round tries again
                log.warning("looking for runs of stopped workers failed: %s", exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), stalled / 5)

    async def reap(self, stalled: float = STALLED_AFTER) -> int:
        """Put back the runs of workers whose heartbeat stopped; returns how many."""
        manager = self.app.job_manager
        await manager.prune_stalled_workers(stalled)
        back = 0
        for job in await manager.get_stalled_jobs(seconds_since_heartbeat=stalled):
            try:
                await manager.retry_job(job)
            except Exception as exc:  # another worker put it back first
                log.debug("run %s was already put back: %s", job.id, exc)
                continue
            log.warning("run %s of a stopped worker is queued again", job.id)
            back += 1
        return back


async def install(url: str) -> None:
    """Create the queue's tables in `url` unless they are there (idempotent; safe to race)."""
    from dexter.store.pg import connect
    from dexter.work.outbox import SCHEMA as OUTBOX_SCHEMA
    from dexter.work.runlog import SCHEMA as RUNLOG_SCHEMA

    def apply() -> None:
        schema = _procrastinate().schema.SchemaManager.get_schema()
        with connect(url) as conn:
            conn.execute("SELECT pg_advisory_lock(%s)", (_SCHEMA_LOCK,))
            try:
                found = conn.execute("SELECT to_regclass('procrastinate_jobs') AS t").fetchone()
                if found is None or found["t"] is None:
                    conn.execute(schema)
                conn.execute(OUTBOX_SCHEMA)
                conn.execute(RUNLOG_SCHEMA)
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (_SCHEMA_LOCK,))

    await asyncio.to_thread(apply)


def queue_url(settings: Any) -> str:
    """The Postgres URL the team's queue lives in, or a ConfigError saying how to set one."""
    from dexter.store.database_url import database_target

    target = database_target(settings)
    if target.url is None:
        raise ConfigError(
            "The work queue needs a Postgres database (team mode), and none is configured. "
            'Set DEXTER_DATABASE_URL=postgresql://… (or "database": {"url": …} in '
            "settings.json); with one user, `dexter gateway run` and `dexter daemon` run "
            "everything themselves and need no worker."
        )
    return target.url
