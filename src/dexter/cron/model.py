"""A scheduled job, its run state and its run history, as plain values."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from dexter.cron.active import ActiveHours
from dexter.cron.schedule import Schedule
from dexter.principal import OPERATOR_ID

Fulfillment = Literal["keep", "once", "ask"]
# "watch": the filing watches' poll (dexter.watch), run by its own executor.
JobKind = Literal["job", "heartbeat", "watch"]
RunStatus = Literal["ok", "suppressed", "error", "skipped", "missed"]

FULFILLMENTS: tuple[Fulfillment, ...] = ("keep", "once", "ask")
HEARTBEAT_NAME = "Heartbeat"
# Where alerts go when the job names no target: the local outbox (`dexter cron logs`).
DEFAULT_TARGET = "outbox"


@dataclass(frozen=True, slots=True)
class JobState:
    next_run_at: datetime | None = None
    last_run_at: datetime | None = None
    last_status: RunStatus | None = None
    last_error: str | None = None
    last_duration_ms: float | None = None
    consecutive_errors: int = 0
    schedule_errors: int = 0
    # Suppression memory: the last alert actually delivered, so an identical one within the
    # duplicate window stays quiet, across restarts too.
    last_alert_text: str | None = None
    last_alert_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Job:
    id: str
    name: str
    schedule: Schedule
    message: str
    created_at: datetime
    updated_at: datetime
    enabled: bool = True
    kind: JobKind = "job"
    description: str = ""
    model: str | None = None
    fulfillment: Fulfillment = "keep"
    active: ActiveHours | None = None
    target: str = DEFAULT_TARGET
    max_iterations: int = 6
    state: JobState = field(default_factory=JobState)
    # The principal who created it: only they (or the operator) see or change it, and its
    # unattended runs act for them.
    owner: str = OPERATOR_ID


@dataclass(frozen=True, slots=True)
class DamagedJob:
    """A job row that cannot be read back (hand-edited, or written by a broken version): listed
    and removable, never run."""

    id: str
    name: str
    problem: str  # what is wrong, for `cron list`: "schedule_json is unreadable (...)"
    owner: str = OPERATOR_ID


@dataclass(frozen=True, slots=True)
class RunRecord:
    id: int
    job_id: str
    started_at: datetime
    finished_at: datetime | None
    status: RunStatus
    reason: str = ""
    error: str | None = None
    duration_ms: float | None = None
    answer: str = ""
    due_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class OutboxItem:
    id: int
    job_id: str
    job_name: str
    run_id: int | None
    text: str
    target: str
    created_at: datetime
    status: Literal["pending", "delivered", "failed"]
    attempts: int = 0
    next_attempt_at: datetime | None = None
    last_error: str | None = None
    delivered_at: datetime | None = None
    seen: bool = False
