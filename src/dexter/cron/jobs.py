"""Creating and changing jobs: the one place the CLI and the agent tools validate input, so both
refuse the same things with the same messages."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from pathlib import Path

from dexter.cron.active import ActiveHours, parse_active_hours
from dexter.cron.model import (
    FULFILLMENTS,
    HEARTBEAT_NAME,
    Fulfillment,
    Job,
    JobState,
)
from dexter.cron.policy import next_active_run
from dexter.cron.schedule import (
    Schedule,
    ScheduleError,
    parse_at,
    parse_cron,
    parse_every,
    zone,
)
from dexter.cron.store import CronStore, new_job_id
from dexter.cron.targets import target_for, validate_target
from dexter.principal import OPERATOR, OPERATOR_ID

_NAME_CHARS = 80
_MESSAGE_CHARS = 8000


def build_schedule(
    *,
    every: str | None = None,
    at: str | None = None,
    cron: str | None = None,
    tz: str,
    now: datetime,
) -> Schedule:
    given = [name for name, value in (("--every", every), ("--at", at), ("--cron", cron)) if value]
    if len(given) != 1:
        raise ScheduleError(
            "Give exactly one schedule: --every 1h, --at 2026-12-02T09:00, or "
            '--cron "35 9 * * 1-5"' + (f" (got {' and '.join(given)})." if given else ".")
        )
    # A zone is checked even where this schedule does not use it: `--every 1h --tz Mars/Olympus`
    # saved quietly would look like a job in a zone that does not exist.
    zone(tz)
    if every:
        # The anchor is the creation time, so runs stay on a fixed grid instead of drifting
        # by however long each run took.
        return parse_every(every, anchor=now)
    if at:
        return parse_at(at, tz, now=now)
    assert cron is not None
    return parse_cron(cron, tz, now=now)


def validate_text(name: str, message: str | None, *, kind: str = "job") -> tuple[str, str]:
    clean_name = " ".join(name.split())
    if not clean_name:
        raise ScheduleError("A job needs a name.")
    if len(clean_name) > _NAME_CHARS:
        raise ScheduleError(f"A job name is at most {_NAME_CHARS} characters.")
    clean_message = (message or "").strip()
    if kind == "job" and not clean_message:
        raise ScheduleError("A job needs --message: what the agent should check or research.")
    if len(clean_message) > _MESSAGE_CHARS:
        raise ScheduleError(f"A job message is at most {_MESSAGE_CHARS} characters.")
    return clean_name, clean_message


def validate_fulfillment(value: str | None) -> Fulfillment:
    if value is None:
        return "keep"
    lowered = value.strip().lower()
    for option in FULFILLMENTS:
        if lowered == option:
            return option
    raise ScheduleError(f"Fulfillment must be keep, once or ask, not {value!r}.")


def build_active(window: str | None, tz: str, days: str | None) -> ActiveHours | None:
    if window is None:
        if days is not None:
            raise ScheduleError("--days needs --active HH:MM-HH:MM as well.")
        return None
    return parse_active_hours(window, tz, days)


def first_run(schedule: Schedule, active: ActiveHours | None, now: datetime) -> datetime | None:
    return next_active_run(schedule, now, active)


def create_job(
    cron: CronStore,
    *,
    name: str,
    message: str | None,
    schedule: Schedule,
    now: datetime,
    fulfillment: str | None = None,
    active: ActiveHours | None = None,
    target: str | None = None,
    model: str | None = None,
    description: str = "",
    kind: str = "job",
    max_iterations: int = 6,
    owner: str = OPERATOR_ID,
) -> Job:
    """A new job of `owner`; `target` is checked for shape here, and for whether the owner may
    use it by the caller (`targets.target_for`), which knows who is asking."""
    clean_name, clean_message = validate_text(name, message, kind=kind)
    job = Job(
        id=new_job_id(),
        name=clean_name,
        schedule=schedule,
        message=clean_message,
        created_at=now,
        updated_at=now,
        kind="heartbeat" if kind == "heartbeat" else "job",
        description=description.strip(),
        model=(model or "").strip() or None,
        fulfillment=validate_fulfillment(fulfillment),
        active=active,
        target=validate_target(target),
        max_iterations=max_iterations,
        state=JobState(next_run_at=first_run(schedule, active, now)),
        owner=owner,
    )
    return cron.add(job)


def update_job(cron: CronStore, job: Job, *, now: datetime, **changes: object) -> Job:
    """Apply validated changes; a new schedule or active hours recompute the next run and clear
    the schedule error count."""
    updated = replace(job, updated_at=now, **changes)  # type: ignore[arg-type]
    validate_text(updated.name, updated.message, kind=updated.kind)
    rescheduled = "schedule" in changes or "active" in changes
    enabling = changes.get("enabled") is True and not job.enabled
    next_run = job.state.next_run_at
    if rescheduled or enabling or next_run is None:
        next_run = first_run(updated.schedule, updated.active, now)
    cron.save_config(updated, next_run_at=next_run, reset_errors=rescheduled or enabling)
    fresh = cron.get(job.id)
    assert fresh is not None
    return fresh


def set_heartbeat(
    cron: CronStore,
    *,
    every: str,
    now: datetime,
    active: ActiveHours | None,
    target: str | None,
    model: str | None,
    home: Path | None = None,
) -> Job:
    """Create or reconfigure the single heartbeat job (the operator's) and enable it."""
    schedule = parse_every(every, anchor=now)
    if target is not None:
        target = target_for(target, by=OPERATOR, home=home)
    existing = cron.heartbeat()
    if existing is None:
        return create_job(
            cron,
            name=HEARTBEAT_NAME,
            message="",
            schedule=schedule,
            now=now,
            active=active,
            target=target,
            model=model,
            description="Periodic review of the HEARTBEAT.md checklist",
            kind="heartbeat",
        )
    changes: dict[str, object] = {"schedule": schedule, "active": active, "enabled": True}
    if target is not None:
        changes["target"] = target
    if model is not None:
        changes["model"] = model.strip() or None
    return update_job(cron, existing, now=now, **changes)


def heartbeat_path(home: Path) -> Path:
    from dexter.cron.prompts import HEARTBEAT_FILE

    return home / HEARTBEAT_FILE
