"""Watches on the schedules runner: one cron job of kind "watch" polls every active watch (so
there is one scheduler, one lease, one outbox), and its executor is the `Poller`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from dexter.cron.clock import Clock
from dexter.cron.executor import Outcome
from dexter.cron.model import Job, JobState
from dexter.cron.schedule import Every
from dexter.cron.store import CronStore, new_job_id
from dexter.cron.suppression import HEARTBEAT_OK
from dexter.cron.targets import target_for
from dexter.data.errors import DataError
from dexter.data.sec.provider import SecEdgarProvider
from dexter.principal import Principal
from dexter.watch.model import Watch, parse_cluster, parse_forms, parse_items, parse_tickers
from dexter.watch.poller import Poller
from dexter.watch.store import WatchStore

POLL_JOB_NAME = "Filing watches"
# SEC updates submissions files within minutes of acceptance; polling more often buys little
# and every watched company costs a request (a 304 when nothing changed).
POLL_EVERY = timedelta(minutes=5)


def poll_job(cron: CronStore) -> Job | None:
    return next((j for j in cron.all() if j.kind == "watch"), None)


def ensure_poll_job(cron: CronStore, now: datetime, every: timedelta = POLL_EVERY) -> Job:
    """The one job that polls the watches, created with the first watch."""
    existing = poll_job(cron)
    if existing is not None:
        return existing
    job = Job(
        id=new_job_id(),
        name=POLL_JOB_NAME,
        schedule=Every(every.total_seconds(), now),
        message="Poll SEC EDGAR for new filings of the watched companies (dexter watch list).",
        created_at=now,
        updated_at=now,
        kind="watch",
        state=JobState(next_run_at=now),
    )
    return cron.add(job)


def add_watch(
    watches: WatchStore,
    cron: CronStore,
    *,
    by: Principal,
    tickers: Sequence[str],
    forms: str | None,
    items: str | None,
    deliver: str | None,
    now: datetime,
    default_target: str | None = None,
    cluster: str | None = None,
) -> Watch:
    """Validate and store a watch of `by` (its alerts go where `by` may send them)."""
    clean = parse_tickers(tickers)
    chosen_forms = parse_forms(forms)
    chosen_items = parse_items(items)
    rule = parse_cluster(cluster)
    target = target_for(deliver, by=by, default=default_target)
    watch = watches.add(
        owner=by.id,
        tickers=clean,
        forms=chosen_forms,
        items=chosen_items,
        target=target,
        now=now,
        cluster=rule,
    )
    ensure_poll_job(cron, now)
    return watch


class WatchExecutor:
    """Runs the poll job: detect and queue alerts; the runner delivers them from the outbox.

    Its answer is the quiet token, so the runner records the run without an alert of its own;
    every alert is the watches' own outbox row."""

    def __init__(
        self,
        watches: WatchStore,
        sec: SecEdgarProvider,
        clock: Clock,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.poller = Poller(watches, sec, now=clock.now)
        self._log = log or (lambda _line: None)

    async def execute(self, job: Job, prompt: str) -> Outcome:
        report = await self.poller.poll(job.id)
        if report.errors and len(report.errors) >= report.tickers:
            # Nothing could be read: an error, so the runner backs off and `cron logs` says why.
            raise DataError("; ".join(report.errors[:3]))
        for problem in report.errors:
            self._log(f"{job.name}: not read this poll: {problem}")
        if report.alerts:
            self._log(f"{job.name}: {len(report.alerts)} alert(s) queued")
        return Outcome(answer=HEARTBEAT_OK)
