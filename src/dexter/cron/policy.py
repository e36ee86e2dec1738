"""What happens to a job after a run, an error or a sleep: pure rules over its state and a time.

- errors back off 30 s, 1 m, 5 m, 15 m, then 60 m for every later consecutive error; a recurring
  job runs at the later of its normal next time and the backoff; a one-shot job retries up to
  MAX_AT_RETRIES times, then is disabled;
- a schedule that cannot be computed is retried after a minute and disabled after 3 failures;
- active hours move a run to the first due time inside the window;
- missed runs (a sleeping laptop, a stopped daemon): when the latest due time was missed by at
  most the grace window it runs once, otherwise that run is skipped; either way the next run is
  computed from now, so there is never a burst of catch-up runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from dexter.cron.active import ActiveHours
from dexter.cron.schedule import Cron, Every, Schedule, ScheduleError, next_run

BACKOFF = (
    timedelta(seconds=30),
    timedelta(minutes=1),
    timedelta(minutes=5),
    timedelta(minutes=15),
    timedelta(minutes=60),
)
MAX_AT_RETRIES = 3
SCHEDULE_ERROR_LIMIT = 3
SCHEDULE_RETRY = timedelta(minutes=1)
MISSED_GRACE = timedelta(minutes=15)
# How far ahead to look for a due time inside active hours before giving up on the schedule.
_ACTIVE_SEARCH_STEPS = 64


def backoff(consecutive_errors: int) -> timedelta:
    """The wait after the n-th consecutive error (n >= 1)."""
    index = min(max(consecutive_errors, 1), len(BACKOFF)) - 1
    return BACKOFF[index]


def next_active_run(
    schedule: Schedule, after: datetime, active: ActiveHours | None
) -> datetime | None:
    """The first run after `after` that falls inside `active` (any run when it is None).

    Outside the window we jump to the window's next opening instead of stepping through every
    firing, so `every 1m` on a weekend costs a handful of steps, not thousands.
    """
    candidate = next_run(schedule, after)
    if active is None:
        return candidate
    for _ in range(_ACTIVE_SEARCH_STEPS):
        if candidate is None or active.contains(candidate):
            return candidate
        opening = active.next_open(candidate)
        if isinstance(schedule, Every | Cron):
            candidate = next_run(schedule, opening - timedelta(microseconds=1))
        else:
            return None  # a one-shot outside its window never runs
    raise ScheduleError("No run of this schedule falls inside its active hours.")


@dataclass(frozen=True, slots=True)
class ErrorOutcome:
    next_run_at: datetime | None
    disable: bool


def after_error(
    schedule: Schedule,
    *,
    consecutive_errors: int,
    now: datetime,
    active: ActiveHours | None,
) -> ErrorOutcome:
    """Where a job goes after its `consecutive_errors`-th error in a row (already counted)."""
    wait = now + backoff(consecutive_errors)
    if schedule.kind == "at":
        if consecutive_errors >= MAX_AT_RETRIES:
            return ErrorOutcome(None, disable=True)
        return ErrorOutcome(wait, disable=False)
    normal = next_active_run(schedule, now, active)
    return ErrorOutcome(max(normal, wait) if normal is not None else wait, disable=False)


@dataclass(frozen=True, slots=True)
class MissedDecision:
    run: bool
    due_at: datetime  # the due time this decision is about (the latest one missed)
    late_by: timedelta


def missed_decision(
    schedule: Schedule, recorded_due: datetime, now: datetime, grace: timedelta = MISSED_GRACE
) -> MissedDecision:
    """Run the latest missed due time if it is within `grace` of now, else skip it."""
    from dexter.cron.schedule import latest_due

    latest = latest_due(schedule, recorded_due, now)
    late = now - latest
    return MissedDecision(run=late <= grace, due_at=latest, late_by=late)
