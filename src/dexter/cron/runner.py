"""The runner: each tick it picks due jobs (taking their lease), runs them through the executor,
keeps quiet what suppression says to, writes every alert to the outbox and hands it to the
deliverer for its target; failed deliveries are retried from the outbox, never by re-running.

`dexter daemon` runs it with the local deliverers; the gateway runs the same class with its
channels' deliverers. Several runners may share one database: leases decide who does what.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path

from dexter.cron import policy, suppression
from dexter.cron.clock import Clock, SystemClock
from dexter.cron.delivery import Alert, Deliverer, DeliveryError, target_scheme
from dexter.cron.executor import JobExecutor, Outcome
from dexter.cron.model import DEFAULT_TARGET, DamagedJob, Job, JobState, RunStatus
from dexter.cron.prompts import heartbeat_prompt, job_prompt, read_checklist
from dexter.cron.schedule import ScheduleError, format_duration, local_zone_name
from dexter.cron.store import CronStore
from dexter.cron.targets import delivery_refusal
from dexter.processes import process_alive

DEFAULT_TICK = 30.0
DEFAULT_RUN_TIMEOUT = timedelta(minutes=15)
DELIVERY_TIMEOUT = 60.0
MAX_DELIVERY_ATTEMPTS = 8
_ERROR_CHARS = 500
# Results kept in memory by a long-running loop (the database has the full history).
_KEEP_RESULTS = 1000
ABANDONED = "the daemon stopped during this run (it crashed or was killed)"
# A clock set back by less than this is left alone: runs would be at most this late.
CLOCK_SLACK = timedelta(minutes=1)


def runner_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


def runner_gone(runner: str) -> bool:
    """Whether the runner with this id (see `runner_id`) is a process on this machine that has
    ended. A runner elsewhere, or in this process, is never known to be gone."""
    host, _, rest = runner.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit() or int(pid) == os.getpid():
        return False
    return not process_alive(int(pid))


@dataclass(frozen=True, slots=True)
class RunResult:
    job_id: str
    status: RunStatus
    reason: str = ""
    alert_id: int | None = None
    error: str | None = None


def _short(text: str, limit: int = _ERROR_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def refusal_note(refused: tuple[str, ...]) -> str:
    lines = "\n".join(f"- {item}" for item in refused)
    return (
        "Not done: these steps need approval, and nobody can approve during a scheduled run. "
        "Allow them with a rule (`dexter permissions`) if they should run unattended:\n" + lines
    )


class Runner:
    def __init__(
        self,
        cron: CronStore,
        executor: JobExecutor,
        *,
        home: Path,
        deliverers: Mapping[str, Deliverer] | None = None,
        clock: Clock | None = None,
        owner: str | None = None,
        tick_seconds: float = DEFAULT_TICK,
        max_concurrency: int = 2,
        run_timeout: timedelta = DEFAULT_RUN_TIMEOUT,
        grace: timedelta = policy.MISSED_GRACE,
        user_zone: str | None = None,
        log: Callable[[str], None] | None = None,
        kind_executors: Mapping[str, JobExecutor] | None = None,
    ) -> None:
        self.cron = cron
        self.executor = executor
        # Jobs of these kinds run with their own executor (the filing watches' poll), the rest
        # with `executor` (the agent).
        self.kind_executors: dict[str, JobExecutor] = dict(kind_executors or {})
        self.home = home
        self.deliverers: dict[str, Deliverer] = dict(deliverers or {})
        self.clock: Clock = clock or SystemClock()
        self.owner = owner or runner_id()
        self.tick_seconds = tick_seconds
        self.max_concurrency = max(1, max_concurrency)
        self.run_timeout = run_timeout
        self.grace = grace
        self.user_zone = user_zone or local_zone_name()
        self._log = log or (lambda _line: None)
        self.stop_grace = 10.0
        # Set when a run or delivery finishes, so a loop waiting for a free slot wakes at once.
        self._finished_one = asyncio.Event()
        self._jobs: set[asyncio.Task[RunResult | None]] = set()
        self._deliveries: set[asyncio.Task[None]] = set()
        self.results: list[RunResult] = []
        # The clock at the last pick: a later pick at an earlier time means it was set back.
        self._last_pick: datetime | None = None
        # Per-tick timings for the benchmark: (pick seconds, wake computation seconds).
        self.last_pick_seconds = 0.0
        self.last_wake_seconds = 0.0

    # --- the loop ------------------------------------------------------------------------------

    async def run_forever(self, stop: asyncio.Event) -> None:
        """Tick until `stop` is set; jobs already running are allowed to finish."""
        self._log(f"runner {self.owner} started")
        try:
            await self.recover()
            while not stop.is_set():
                del self.results[:-_KEEP_RESULTS]
                await self.tick()
                delay = await self.next_delay()
                self._finished_one.clear()
                waiters = {
                    asyncio.ensure_future(self.clock.sleep(delay)),
                    asyncio.ensure_future(stop.wait()),
                    asyncio.ensure_future(self._finished_one.wait()),
                }
                await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
                for waiter in waiters:
                    waiter.cancel()
        finally:
            await self.stop_runs(self.stop_grace)
            self._log(f"runner {self.owner} stopped")

    async def stop_runs(self, grace: float = 10.0) -> None:
        """Let runs in flight finish for `grace` seconds, then cancel them (their leases are
        released, and the runs are recorded as errors so they retry with backoff)."""
        pending = {*self._jobs, *self._deliveries}
        if not pending:
            return
        _, late = await asyncio.wait(pending, timeout=grace)
        for task in late:
            task.cancel()
        if late:
            await asyncio.gather(*late, return_exceptions=True)

    async def run_due(self) -> list[RunResult]:
        """One pass for `dexter daemon --once`: run everything that is due (at most
        `max_concurrency` at a time), deliver what is pending, wait."""
        before = len(self.results)
        await self.recover()
        taken: set[str] = set()
        while True:
            now = self.clock.now()
            await self._notice_clock(now)
            # Jobs taken in this pass are not taken again (one whose state a bug left due).
            due = await asyncio.to_thread(self.cron.due, now, limit=len(taken) + 100)
            fresh = [job for job in due if job.id not in taken]
            if not fresh:
                break
            for job in fresh:
                taken.add(job.id)
                while len(self._jobs) >= self.max_concurrency:
                    await asyncio.wait(self._jobs, return_when=asyncio.FIRST_COMPLETED)
                await self._take(job, self.clock.now())
        await self.drain()
        # Alerts those runs produced were delivered inline; retries that came due are picked here.
        await self.tick(jobs=False)
        await self.drain()
        return self.results[before:]

    async def recover(self) -> None:
        """At start: runs a crashed runner left marked running are recorded as failed, and its
        leases freed, so `cron logs` tells the truth and the jobs run again."""
        now = self.clock.now()
        failed = await asyncio.to_thread(self.cron.fail_abandoned, now, ABANDONED, runner_gone)
        for run in failed:
            self._log(f"{run.job_name or run.job_id}: run #{run.run_id} failed: {ABANDONED}")

    async def drain(self) -> None:
        while self._jobs or self._deliveries:
            await asyncio.gather(*self._jobs, *self._deliveries, return_exceptions=True)

    async def next_delay(self) -> float:
        started = time.perf_counter()
        wake = await asyncio.to_thread(self.cron.next_wake, self.deliverers, self.clock.now())
        self.last_wake_seconds = time.perf_counter() - started
        if wake is None or len(self._jobs) >= self.max_concurrency:
            # Full: a finishing run wakes the loop (see run_forever), not the due time.
            return self.tick_seconds
        seconds = (wake - self.clock.now()).total_seconds()
        return min(max(seconds, 0.0), self.tick_seconds)

    async def tick(self, *, jobs: bool = True) -> None:
        now = self.clock.now()
        if jobs:
            await self._notice_clock(now)
        started = time.perf_counter()
        free = self.max_concurrency - len(self._jobs)
        due = (
            await asyncio.to_thread(self.cron.due, now, limit=max(free, 0))
            if jobs and free > 0
            else []
        )
        self.last_pick_seconds = time.perf_counter() - started
        for job in due:
            await self._take(job, now)
        pending = await asyncio.to_thread(self.cron.due_deliveries, now, self.deliverers)
        for item in pending:
            until = now + timedelta(seconds=DELIVERY_TIMEOUT * 2)
            if await asyncio.to_thread(self.cron.claim_delivery, item.id, self.owner, now, until):
                alert = Alert(item.job_id, item.job_name, item.text, item.created_at, item.target)
                task = asyncio.ensure_future(self._deliver(item.id, alert, item.attempts))
                self._deliveries.add(task)
                task.add_done_callback(self._deliveries.discard)

    async def _take(self, job: Job | DamagedJob, now: datetime) -> None:
        """Claim a due job and start its run; a damaged one is set aside instead."""
        if isinstance(job, DamagedJob):
            await asyncio.to_thread(self.cron.set_aside, job, now)
            self._log(
                f"job {job.id} ({job.name}) is damaged in the database: {job.problem}; disabled. "
                f"`dexter cron rm {job.id}` removes it."
            )
            return
        until = now + self.run_timeout + timedelta(minutes=1)
        if await asyncio.to_thread(self.cron.claim, job.id, self.owner, now, until):
            self._spawn_job(job, manual=False)

    async def _notice_clock(self, now: datetime) -> None:
        """At the first pick and whenever the clock went back since the last one: a job whose
        last run (or creation) is later than now had its next run computed by a clock that was
        ahead, maybe by a day; it is computed again from now."""
        previous, self._last_pick = self._last_pick, now
        if previous is not None and now >= previous:
            return
        for job in await asyncio.to_thread(self.cron.ahead_of, now + CLOCK_SLACK):
            if not isinstance(job, Job) or job.schedule.kind == "at":
                continue
            try:
                upcoming = policy.next_active_run(job.schedule, now, job.active)
            except ScheduleError:
                continue  # left as it is: its run records the schedule error
            was = job.state.next_run_at
            if upcoming is None or (was is not None and upcoming >= was):
                continue
            if await asyncio.to_thread(self.cron.reschedule, job.id, was, upcoming):
                self._log(
                    f"{job.name}: the clock is earlier than its last run; next run "
                    f"{upcoming:%Y-%m-%d %H:%M:%S} UTC"
                )

    def _spawn_job(self, job: Job, *, manual: bool) -> asyncio.Task[RunResult | None]:
        task = asyncio.ensure_future(self._guarded(job, manual=manual))
        self._jobs.add(task)
        task.add_done_callback(self._jobs.discard)
        task.add_done_callback(lambda _task: self._finished_one.set())
        return task

    async def run_now(self, job: Job) -> RunResult | None:
        """Run a job at once on the user's request (`cron run`, the tool's `run`); None when
        another runner is running it right now."""
        now = self.clock.now()
        until = now + self.run_timeout + timedelta(minutes=1)
        if not await asyncio.to_thread(self.cron.claim_now, job.id, self.owner, now, until):
            return None
        result = await self._spawn_job(job, manual=True)
        await self.drain()
        return result

    async def _guarded(self, job: Job, *, manual: bool) -> RunResult | None:
        try:
            result = await self._fire(job, manual=manual)
            self.results.append(result)
            return result
        except Exception as exc:  # a bug here must not kill the loop or leave the lease held
            self._log(f"{job.name}: runner error: {exc!r}")
            return None
        finally:
            await asyncio.to_thread(self.cron.release, job.id, self.owner)

    # --- one job -------------------------------------------------------------------------------

    async def _fire(self, job: Job, *, manual: bool) -> RunResult:
        now = self.clock.now()
        # Re-read under the lease: an edit since the pick wins over the row we picked.
        fresh = await asyncio.to_thread(self.cron.get, job.id)
        if fresh is None:
            return RunResult(job.id, "skipped", "job was removed")
        job = fresh
        due = job.state.next_run_at or now
        if not manual:
            decision = policy.missed_decision(job.schedule, due, now, self.grace)
            if not decision.run:
                reason = (
                    f"missed by {format_duration(decision.late_by.total_seconds())} (the computer "
                    "was asleep or no runner was running); skipped, not run late"
                )
                return await self._not_run(job, now, "missed", reason, decision.due_at)
            due = decision.due_at
            if job.active is not None and not job.active.contains(now):
                return await self._not_run(job, now, "skipped", "outside active hours", due)
        prompt = self._prompt(job, now)
        if prompt is None:
            reason = "HEARTBEAT.md is empty, so there is nothing to check"
            return await self._not_run(job, now, "skipped", reason, due, manual=manual)
        run_id = await asyncio.to_thread(self.cron.start_run, job.id, now, due, self.owner)
        started = time.perf_counter()
        try:
            outcome = await asyncio.wait_for(
                self.kind_executors.get(job.kind, self.executor).execute(job, prompt),
                self.run_timeout.total_seconds(),
            )
        except TimeoutError:
            error = f"the run took longer than {format_duration(self.run_timeout.total_seconds())}"
            return await self._failed(job, run_id, now, error, started, manual=manual)
        except asyncio.CancelledError:
            # The runner is stopping: record it so the run retries (with backoff) next start.
            error = "the runner stopped before the run finished"
            await asyncio.shield(self._failed(job, run_id, now, error, started, manual=manual))
            raise
        except Exception as exc:
            return await self._failed(
                job, run_id, now, _short(str(exc) or repr(exc)), started, manual=manual
            )
        return await self._finished(job, run_id, now, outcome, started, manual=manual)

    def _prompt(self, job: Job, now: datetime) -> str | None:
        tz = job.active.tz if job.active else getattr(job.schedule, "tz", None) or self.user_zone
        if job.kind == "heartbeat":
            checklist = read_checklist(self.home)
            return None if checklist is None else heartbeat_prompt(checklist, now=now, tz=tz)
        return job_prompt(job.name, job.message, fulfillment=job.fulfillment, now=now, tz=tz)

    def _next(self, job: Job, now: datetime, *, manual: bool) -> tuple[datetime | None, int, bool]:
        """(next run, schedule error count, disable) after a run or a skip at `now`."""
        if manual and job.state.next_run_at is not None and job.state.next_run_at > now:
            return job.state.next_run_at, 0, False
        try:
            upcoming = policy.next_active_run(job.schedule, now, job.active)
        except ScheduleError as exc:
            count = job.state.schedule_errors + 1
            self._log(f"{job.name}: schedule error {count}: {exc}")
            if count >= policy.SCHEDULE_ERROR_LIMIT:
                return None, count, True
            return now + policy.SCHEDULE_RETRY, count, False
        return upcoming, 0, upcoming is None

    async def _not_run(
        self,
        job: Job,
        now: datetime,
        status: RunStatus,
        reason: str,
        due: datetime | None,
        *,
        manual: bool = False,
    ) -> RunResult:
        upcoming, schedule_errors, disable = self._next(job, now, manual=manual)
        state = replace(
            job.state,
            next_run_at=upcoming,
            last_status=status,
            schedule_errors=schedule_errors,
        )
        await asyncio.to_thread(self.cron.record_run, job.id, now, status, reason, due)
        await asyncio.to_thread(self.cron.save_state, job.id, state, disable=disable)
        self._log(f"{job.name}: {status}: {reason}")
        return RunResult(job.id, status, reason)

    async def _failed(
        self,
        job: Job,
        run_id: int,
        now: datetime,
        error: str,
        started: float,
        *,
        manual: bool,
    ) -> RunResult:
        duration = (time.perf_counter() - started) * 1000
        errors = job.state.consecutive_errors + 1
        outcome = policy.after_error(
            job.schedule, consecutive_errors=errors, now=now, active=job.active
        )
        state = replace(
            job.state,
            next_run_at=outcome.next_run_at,
            last_run_at=now,
            last_status="error",
            last_error=error,
            last_duration_ms=duration,
            consecutive_errors=errors,
        )
        await asyncio.to_thread(
            self.cron.finish_run,
            run_id,
            finished_at=self.clock.now(),
            status="error",
            error=error,
            duration_ms=duration,
        )
        await asyncio.to_thread(self.cron.save_state, job.id, state, disable=outcome.disable)
        after = (
            "disabled" if outcome.disable else f"retry {outcome.next_run_at:%Y-%m-%d %H:%M:%S} UTC"
        )
        self._log(f"{job.name}: error ({errors} in a row, {after}): {error}")
        return RunResult(job.id, "error", error=error)

    async def _finished(
        self,
        job: Job,
        run_id: int,
        now: datetime,
        outcome: Outcome,
        started: float,
        *,
        manual: bool,
    ) -> RunResult:
        duration = (time.perf_counter() - started) * 1000
        verdict = suppression.evaluate(
            outcome.answer,
            last_text=job.state.last_alert_text,
            last_at=job.state.last_alert_at,
            now=now,
        )
        text = verdict.text
        suppress = verdict.suppress
        reason: str = verdict.reason
        if outcome.refused:
            # A refusal is worth telling the user even when the answer itself was quiet, since
            # the job cannot do what it was asked until a rule allows it; repeats still dedupe.
            note = refusal_note(outcome.refused)
            text = f"{text}\n\n{note}" if (text and not suppress) else note
            repeat = suppression.evaluate(
                text,
                last_text=job.state.last_alert_text,
                last_at=job.state.last_alert_at,
                now=now,
            )
            suppress, reason = repeat.suppress, repeat.reason
        upcoming, schedule_errors, disable = self._next(job, now, manual=manual)
        state = replace(
            job.state,
            next_run_at=upcoming,
            last_run_at=now,
            last_error=None,
            last_duration_ms=duration,
            consecutive_errors=0,
            schedule_errors=schedule_errors,
        )
        alert_id: int | None = None
        if suppress:
            status: RunStatus = "suppressed"
            state = replace(state, last_status="suppressed")
        else:
            status = "ok"
            state = replace(state, last_status="ok", last_alert_text=text, last_alert_at=now)
            if job.fulfillment == "once":
                disable = True
        await asyncio.to_thread(
            self.cron.finish_run,
            run_id,
            finished_at=self.clock.now(),
            status=status,
            reason="" if status == "ok" else reason,
            duration_ms=duration,
            answer=outcome.answer,
        )
        await asyncio.to_thread(self.cron.save_state, job.id, state, disable=disable)
        if status == "ok":
            alert_id = await self._publish(job, run_id, text, now)
            self._log(f"{job.name}: alert #{alert_id} for {job.target}")
        else:
            self._log(f"{job.name}: quiet ({reason})")
        return RunResult(job.id, status, "" if status == "ok" else reason, alert_id)

    # --- delivery ------------------------------------------------------------------------------

    async def _publish(self, job: Job, run_id: int, text: str, now: datetime) -> int:
        target = job.target or DEFAULT_TARGET
        local_only = target_scheme(target) == DEFAULT_TARGET
        item_id = await asyncio.to_thread(
            lambda: self.cron.add_alert(
                job=job,
                run_id=run_id,
                text=text,
                target=target,
                created_at=now,
                delivered=local_only,
            )
        )
        refusal = delivery_refusal(job.owner, target)
        if refusal is not None:
            # Only a row changed behind the tools' back gets here; the alert stays readable.
            await asyncio.to_thread(self.cron.delivery_failed, item_id, refusal, None)
            self._log(f"{job.name}: not delivered to {target}: {refusal}")
            return item_id
        if local_only or target_scheme(target) not in self.deliverers:
            return item_id  # another runner with that channel (the gateway) delivers it
        until = now + timedelta(seconds=DELIVERY_TIMEOUT * 2)
        if await asyncio.to_thread(self.cron.claim_delivery, item_id, self.owner, now, until):
            await self._deliver(item_id, Alert(job.id, job.name, text, now, target), 0)
        return item_id

    async def _deliver(self, item_id: int, alert: Alert, attempts_before: int) -> None:
        deliverer = self.deliverers.get(target_scheme(alert.target))
        error: str | None = None
        if deliverer is None:
            error = f"no deliverer for {target_scheme(alert.target)!r} in this runner"
        else:
            try:
                await asyncio.wait_for(deliverer.deliver(alert), DELIVERY_TIMEOUT)
            except DeliveryError as exc:
                error = _short(str(exc)) or "delivery failed"
            except TimeoutError:
                error = f"delivery took longer than {DELIVERY_TIMEOUT:.0f} s"
            except Exception as exc:  # a channel bug is a failed delivery, not a dead runner
                error = _short(repr(exc))
        now = self.clock.now()
        if error is None:
            await asyncio.to_thread(self.cron.delivered, item_id, now)
            return
        attempts = attempts_before + 1
        retry = now + policy.backoff(attempts) if attempts < MAX_DELIVERY_ATTEMPTS else None
        await asyncio.to_thread(self.cron.delivery_failed, item_id, error, retry)
        when = f"retry at {retry:%H:%M:%S} UTC" if retry else "giving up"
        self._log(f"{alert.job_name}: delivery to {alert.target} failed ({when}): {error}")


def job_state_summary(state: JobState) -> str:
    if state.last_status is None:
        return "never run"
    return state.last_status
