"""Jobs, runs, the outbox and leases in the shared database (SQLite migration 3).

Writers touch only their own columns: the CLI and the tools write a job's configuration, the
runner writes its run state, so a long run never overwrites an edit made meanwhile. Leases are
claimed with one conditional UPDATE, so of two runners on the same database exactly one wins.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, TypeVar

from dexter.cron.active import ActiveHours
from dexter.cron.model import DamagedJob, Job, JobState, OutboxItem, RunRecord, RunStatus
from dexter.cron.schedule import Schedule, ScheduleError, from_dict, to_dict
from dexter.errors import EXIT_USAGE
from dexter.principal import OPERATOR_ID
from dexter.store.backend import Connection, insert_id
from dexter.store.db import Store, now_iso
from dexter.store.migrations import StoreError


@dataclass(frozen=True, slots=True)
class AbandonedRun:
    run_id: int
    job_id: str
    job_name: str


class JobNotFound(StoreError):
    """No job, or more than one, matches an id prefix or name."""

    # A usage error (a wrong id), not a damaged database.
    exit_code = EXIT_USAGE


_T = TypeVar("_T")


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else now_iso(moment)


def _dt(text: str | None) -> datetime | None:
    if text is None:
        return None
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def new_job_id() -> str:
    return secrets.token_hex(5)


_CONFIG_COLUMNS = (
    "name",
    "kind",
    "description",
    "enabled",
    "schedule_json",
    "message",
    "model",
    "fulfillment",
    "active_json",
    "target",
    "max_iterations",
    "updated_at",
)
_STATE_COLUMNS = (
    "next_run_at",
    "last_run_at",
    "last_status",
    "last_error",
    "last_duration_ms",
    "consecutive_errors",
    "schedule_errors",
    "last_alert_text",
    "last_alert_at",
)


def _config_values(job: Job) -> tuple[Any, ...]:
    return (
        job.name,
        job.kind,
        job.description,
        int(job.enabled),
        json.dumps(to_dict(job.schedule)),
        job.message,
        job.model,
        job.fulfillment,
        json.dumps(job.active.to_dict()) if job.active else None,
        job.target,
        job.max_iterations,
        _iso(job.updated_at),
    )


def _state_values(state: JobState) -> tuple[Any, ...]:
    return (
        _iso(state.next_run_at),
        _iso(state.last_run_at),
        state.last_status,
        state.last_error,
        state.last_duration_ms,
        state.consecutive_errors,
        state.schedule_errors,
        state.last_alert_text,
        _iso(state.last_alert_at),
    )


class _Damaged(Exception):
    """A column of a job row that cannot be read; the message says which and why."""


def _read(row: Any, column: str, parse: Callable[[Any], _T]) -> _T:
    try:
        return parse(row[column])
    except (ValueError, TypeError, KeyError, AttributeError, ScheduleError) as exc:
        raise _Damaged(f"{column} is unreadable ({exc})") from exc


def _required(moment: datetime | None) -> datetime:
    if moment is None:
        raise ValueError("missing")
    return moment


def _schedule(text: Any) -> Schedule:
    return from_dict(json.loads(text))


def _active(text: Any) -> ActiveHours | None:
    return ActiveHours.from_dict(json.loads(text)) if text else None


def _job(row: Any) -> Job:
    """The job in `row`; raises _Damaged naming the first column that cannot be read."""

    def moment(column: str) -> datetime | None:
        return _read(row, column, _dt)

    state = JobState(
        next_run_at=moment("next_run_at"),
        last_run_at=moment("last_run_at"),
        last_status=row["last_status"],
        last_error=row["last_error"],
        last_duration_ms=row["last_duration_ms"],
        consecutive_errors=row["consecutive_errors"],
        schedule_errors=row["schedule_errors"],
        last_alert_text=row["last_alert_text"],
        last_alert_at=moment("last_alert_at"),
    )
    return Job(
        id=row["id"],
        name=row["name"],
        schedule=_read(row, "schedule_json", _schedule),
        message=row["message"],
        created_at=_required(moment("created_at")),
        updated_at=_required(moment("updated_at")),
        enabled=bool(row["enabled"]),
        kind=row["kind"],
        description=row["description"],
        model=row["model"],
        fulfillment=row["fulfillment"],
        active=_read(row, "active_json", _active),
        target=row["target"],
        max_iterations=row["max_iterations"],
        state=state,
        owner=row["owner"],
    )


def _owned_by(owner: str | None) -> tuple[str, tuple[str, ...]]:
    """The condition limiting a query to `owner`'s jobs (None: everyone's)."""
    return ("", ()) if owner is None else (" AND owner = ?", (owner,))


def _entry(row: Any) -> Job | DamagedJob:
    try:
        return _job(row)
    except _Damaged as damage:
        owner = row["owner"] if isinstance(row["owner"], str) else OPERATOR_ID
        return DamagedJob(row["id"], row["name"] or "", str(damage), owner=owner)


def _usable(entry: Job | DamagedJob) -> Job:
    if isinstance(entry, DamagedJob):
        raise StoreError(
            f"Scheduled job {entry.id} is damaged in the database ({entry.problem}); remove it "
            f"with `dexter cron rm {entry.id}` and add it again."
        )
    return entry


def _run(row: Any) -> RunRecord:
    started = _dt(row["started_at"])
    assert started is not None
    return RunRecord(
        id=row["id"],
        job_id=row["job_id"],
        started_at=started,
        finished_at=_dt(row["finished_at"]),
        status=row["status"],
        reason=row["reason"],
        error=row["error"],
        duration_ms=row["duration_ms"],
        answer=row["answer"],
        due_at=_dt(row["due_at"]),
    )


def _outbox(row: Any) -> OutboxItem:
    created = _dt(row["created_at"])
    assert created is not None
    return OutboxItem(
        id=row["id"],
        job_id=row["job_id"],
        job_name=row["job_name"],
        run_id=row["run_id"],
        text=row["text"],
        target=row["target"],
        created_at=created,
        status=row["status"],
        attempts=row["attempts"],
        next_attempt_at=_dt(row["next_attempt_at"]),
        last_error=row["last_error"],
        delivered_at=_dt(row["delivered_at"]),
        seen=bool(row["seen"]),
    )


class CronStore:
    def __init__(self, store: Store) -> None:
        self.store = store

    # --- jobs ----------------------------------------------------------------------------------

    def add(self, job: Job) -> Job:
        self.add_many([job])
        return job

    def add_many(self, jobs: Sequence[Job]) -> None:
        """Insert jobs in one transaction (imports, benchmarks)."""
        columns = ("id", "created_at", "owner", *_CONFIG_COLUMNS, *_STATE_COLUMNS)
        marks = ", ".join("?" for _ in columns)
        rows = [
            (
                job.id,
                _iso(job.created_at),
                job.owner,
                *_config_values(job),
                *_state_values(job.state),
            )
            for job in jobs
        ]
        with self.store.transaction() as conn:
            conn.executemany(f"INSERT INTO cron_jobs ({', '.join(columns)}) VALUES ({marks})", rows)

    def save_config(self, job: Job, *, next_run_at: datetime | None, reset_errors: bool) -> None:
        """Write what the user changed; the run state keeps what the runner wrote, except the
        next run (recomputed for the new schedule) and, when asked, the error counters."""
        assignments = ", ".join(f"{c} = ?" for c in _CONFIG_COLUMNS)
        extra = ", consecutive_errors = 0, schedule_errors = 0" if reset_errors else ""
        with self.store.transaction() as conn:
            cursor = conn.execute(
                f"UPDATE cron_jobs SET {assignments}, next_run_at = ?{extra} WHERE id = ?",
                (*_config_values(job), _iso(next_run_at), job.id),
            )
            if cursor.rowcount == 0:
                raise JobNotFound(f"No scheduled job {job.id}; see `dexter cron list`.")

    def save_state(self, job_id: str, state: JobState, *, disable: bool = False) -> None:
        assignments = ", ".join(f"{c} = ?" for c in _STATE_COLUMNS)
        disabling = ", enabled = 0" if disable else ""
        with self.store.transaction() as conn:
            conn.execute(
                f"UPDATE cron_jobs SET {assignments}{disabling} WHERE id = ?",
                (*_state_values(state), job_id),
            )

    def get(self, job_id: str, *, owner: str | None = None) -> Job | None:
        """The job with this id (with `owner`, only if it is theirs); None if there is none;
        StoreError if its row is damaged."""
        entry = self.entry(job_id, owner=owner)
        return None if entry is None else _usable(entry)

    def entry(self, job_id: str, *, owner: str | None = None) -> Job | DamagedJob | None:
        mine, params = _owned_by(owner)
        rows = self.store.query(f"SELECT * FROM cron_jobs WHERE id = ?{mine}", (job_id, *params))
        return _entry(rows[0]) if rows else None

    def find(self, ref: str, *, owner: str | None = None) -> Job:
        """A job by id, unique id prefix, or exact name (case-insensitive); a damaged one is a
        StoreError that says how to remove it. With `owner`, only their jobs are searched:
        another's job is "not found", in the very same words."""
        return _usable(self.find_entry(ref, owner=owner))

    def find_entry(self, ref: str, *, owner: str | None = None) -> Job | DamagedJob:
        """Like `find`, a damaged job included (to show or remove it)."""
        text = ref.strip()
        if not text:
            raise JobNotFound("Give a job id or name; see `dexter cron list`.")
        exact = self.entry(text, owner=owner)
        if exact is not None:
            return exact
        mine, owned = _owned_by(owner)
        pattern = text.replace("%", "").replace("_", "")
        rows = []
        for sql, param in (
            ("id LIKE ?", pattern + "%"),
            ("lower(name) = lower(?)", text),
            ("lower(name) LIKE lower(?)", pattern + "%"),
            ("lower(name) LIKE lower(?)", "%" + pattern + "%"),
        ):
            rows = self.store.query(
                f"SELECT * FROM cron_jobs WHERE {sql}{mine} ORDER BY created_at", (param, *owned)
            )
            if rows:
                break
        if len(rows) == 1:
            return _entry(rows[0])
        if not rows:
            raise JobNotFound(f"No scheduled job matches {ref!r}; see `dexter cron list`.")
        ids = ", ".join(row["id"] for row in rows[:5])
        raise JobNotFound(f"{ref!r} matches several jobs ({ids}); give more of the id.")

    def heartbeat(self) -> Job | None:
        rows = self.store.query("SELECT * FROM cron_jobs WHERE kind = 'heartbeat'")
        return _usable(_entry(rows[0])) if rows else None

    def all(self, *, owner: str | None = None) -> list[Job]:
        """Every job that can be read, or only `owner`'s (see `entries` for damaged ones)."""
        return [e for e in self.entries(owner=owner) if isinstance(e, Job)]

    def entries(self, *, owner: str | None = None) -> list[Job | DamagedJob]:
        mine, params = _owned_by(owner)
        sql = f"SELECT * FROM cron_jobs WHERE 1=1{mine} ORDER BY created_at"
        return [_entry(r) for r in self.store.query(sql, params)]

    def set_aside(self, job: DamagedJob, at: datetime) -> None:
        """Disable a damaged job so runners stop picking it; `cron list` still shows it."""
        with self.store.transaction() as conn:
            conn.execute(
                "UPDATE cron_jobs SET enabled = 0, last_status = 'error', last_error = ?, "
                "updated_at = ? WHERE id = ?",
                (f"damaged: {job.problem}", now_iso(at), job.id),
            )

    def remove(self, job_id: str) -> None:
        with self.store.transaction() as conn:
            conn.execute("DELETE FROM cron_jobs WHERE id = ?", (job_id,))

    def set_enabled(self, job: Job, enabled: bool, *, next_run_at: datetime | None) -> None:
        with self.store.transaction() as conn:
            if enabled:
                conn.execute(
                    "UPDATE cron_jobs SET enabled = 1, next_run_at = ?, consecutive_errors = 0, "
                    "schedule_errors = 0, updated_at = ? WHERE id = ?",
                    (_iso(next_run_at), now_iso(), job.id),
                )
            else:
                conn.execute(
                    "UPDATE cron_jobs SET enabled = 0, updated_at = ? WHERE id = ?",
                    (now_iso(), job.id),
                )

    # --- picking and leasing -------------------------------------------------------------------

    def due(self, now: datetime, *, limit: int = 100) -> list[Job | DamagedJob]:
        """Enabled jobs whose next run is at or before `now` and that no live runner holds;
        a damaged row among them is returned as it is, for the runner to set aside."""
        at = now_iso(now)
        rows = self.store.query(
            "SELECT * FROM cron_jobs WHERE enabled = 1 AND next_run_at <= ? "
            "AND (lease_until IS NULL OR lease_until < ?) ORDER BY next_run_at LIMIT ?",
            (at, at, limit),
        )
        return [_entry(r) for r in rows]

    def claim(self, job_id: str, owner: str, now: datetime, until: datetime) -> bool:
        """Take the job's lease if it is still due and free; True for exactly one claimant."""
        at = now_iso(now)
        with self.store.transaction() as conn:
            cursor = conn.execute(
                "UPDATE cron_jobs SET lease_owner = ?, lease_until = ? WHERE id = ? "
                "AND enabled = 1 AND next_run_at <= ? "
                "AND (lease_until IS NULL OR lease_until < ? OR lease_owner = ?)",
                (owner, now_iso(until), job_id, at, at, owner),
            )
            return cursor.rowcount == 1

    def claim_now(self, job_id: str, owner: str, now: datetime, until: datetime) -> bool:
        """Take the lease for a run the user asked for (`cron run`), due or not."""
        at = now_iso(now)
        with self.store.transaction() as conn:
            cursor = conn.execute(
                "UPDATE cron_jobs SET lease_owner = ?, lease_until = ? WHERE id = ? "
                "AND (lease_until IS NULL OR lease_until < ? OR lease_owner = ?)",
                (owner, now_iso(until), job_id, at, owner),
            )
            return cursor.rowcount == 1

    def release(self, job_id: str, owner: str) -> None:
        with self.store.transaction() as conn:
            conn.execute(
                "UPDATE cron_jobs SET lease_owner = NULL, lease_until = NULL "
                "WHERE id = ? AND lease_owner = ?",
                (job_id, owner),
            )

    def next_wake(self, schemes: Iterable[str], now: datetime) -> datetime | None:
        """The earliest time anything needs this runner: a job's next run or a delivery retry.

        Work leased by a runner (this one included) is left out: it is in hand, and counting
        its past due time would make the loop spin until it finishes. An expired lease is
        noticed at the next tick.
        """
        at = now_iso(now)
        job = self.store.query(
            "SELECT MIN(next_run_at) FROM cron_jobs WHERE enabled = 1 AND next_run_at IS NOT NULL "
            "AND (lease_until IS NULL OR lease_until < ?)",
            (at,),
        )[0][0]
        times = [t for t in (job, self._next_delivery(schemes, at)) if t is not None]
        try:
            return _dt(min(times)) if times else None
        except ValueError:  # a damaged row's time: wake at the tick instead
            return None

    def ahead_of(self, moment: datetime) -> list[Job | DamagedJob]:
        """Enabled jobs, not due by `moment`, that last ran (or were made) after it: their next
        run was computed by a clock that has since been set back."""
        at = now_iso(moment)
        rows = self.store.query(
            "SELECT * FROM cron_jobs WHERE enabled = 1 AND next_run_at > ? "
            "AND COALESCE(last_run_at, created_at) > ?",
            (at, at),
        )
        return [_entry(r) for r in rows]

    def reschedule(self, job_id: str, was: datetime | None, next_run_at: datetime) -> bool:
        """Move the next run, unless another writer changed it since it was read as `was`."""
        # `IS ?` (SQLite) and `IS NOT DISTINCT FROM` (newer SQLite, Postgres) differ: split.
        same = "next_run_at IS NULL" if was is None else "next_run_at = ?"
        with self.store.transaction() as conn:
            cursor = conn.execute(
                f"UPDATE cron_jobs SET next_run_at = ? WHERE id = ? AND {same}",
                (now_iso(next_run_at), job_id, *(() if was is None else (now_iso(was),))),
            )
            return cursor.rowcount == 1

    # --- runs ----------------------------------------------------------------------------------

    def fail_abandoned(
        self, now: datetime, reason: str, gone: Callable[[str], bool]
    ) -> list[AbandonedRun]:
        """Record as failed, with `reason`, every run still marked running whose runner no longer
        holds its job's lease (expired, or taken by another) or is known to be `gone`; free the
        leases those runners held. Returns the runs so marked.

        A live runner holds the lease for the whole run (it outlasts the run timeout), so a run
        left running without one was abandoned by a runner that crashed or was killed."""
        at = now_iso(now)
        rows = self.store.query(
            "SELECT r.id, r.job_id, r.runner, j.name, j.lease_owner, j.lease_until "
            "FROM cron_runs r LEFT JOIN cron_jobs j ON j.id = r.job_id WHERE r.status = 'running'"
        )
        abandoned: list[AbandonedRun] = []
        for row in rows:
            runner = row["runner"] or ""
            held = row["lease_owner"] == runner and (row["lease_until"] or "") >= at
            if held and not gone(runner):
                continue
            with self.store.transaction() as conn:
                conn.execute(
                    "UPDATE cron_runs SET status = 'error', finished_at = ?, error = ? "
                    "WHERE id = ? AND status = 'running'",
                    (at, reason, row["id"]),
                )
                conn.execute(
                    "UPDATE cron_jobs SET lease_owner = NULL, lease_until = NULL "
                    "WHERE id = ? AND lease_owner = ?",
                    (row["job_id"], runner),
                )
            abandoned.append(AbandonedRun(row["id"], row["job_id"], row["name"] or ""))
        return abandoned

    def start_run(
        self, job_id: str, started_at: datetime, due_at: datetime | None, runner: str
    ) -> int:
        with self.store.transaction() as conn:
            return insert_id(
                conn,
                "INSERT INTO cron_runs (job_id, due_at, started_at, status, runner) "
                "VALUES (?, ?, ?, 'running', ?)",
                (job_id, _iso(due_at), now_iso(started_at), runner),
            )

    def finish_run(
        self,
        run_id: int,
        *,
        finished_at: datetime,
        status: RunStatus,
        reason: str = "",
        error: str | None = None,
        duration_ms: float | None = None,
        answer: str = "",
    ) -> None:
        with self.store.transaction() as conn:
            conn.execute(
                "UPDATE cron_runs SET finished_at = ?, status = ?, reason = ?, error = ?, "
                "duration_ms = ?, answer = ? WHERE id = ?",
                (now_iso(finished_at), status, reason, error, duration_ms, answer, run_id),
            )

    def record_run(
        self, job_id: str, at: datetime, status: RunStatus, reason: str, due_at: datetime | None
    ) -> None:
        """A run that did not happen (skipped, missed), kept so `cron logs` can say why."""
        with self.store.transaction() as conn:
            conn.execute(
                "INSERT INTO cron_runs (job_id, due_at, started_at, finished_at, status, reason) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (job_id, _iso(due_at), now_iso(at), now_iso(at), status, reason),
            )

    def runs(self, job_id: str, *, limit: int = 20) -> list[RunRecord]:
        rows = self.store.query(
            "SELECT * FROM cron_runs WHERE job_id = ? ORDER BY id DESC LIMIT ?", (job_id, limit)
        )
        return [_run(r) for r in rows]

    # --- outbox --------------------------------------------------------------------------------

    def add_alert(
        self,
        *,
        job: Job,
        run_id: int | None,
        text: str,
        target: str,
        created_at: datetime,
        delivered: bool,
    ) -> int:
        with self.store.transaction() as conn:
            return insert_alert(
                conn,
                job_id=job.id,
                job_name=job.name,
                run_id=run_id,
                text=text,
                target=target,
                created_at=created_at,
                delivered=delivered,
            )

    def _scheme_filter(self, schemes: Iterable[str]) -> tuple[str, list[str]]:
        names = sorted(set(schemes))
        if not names:
            return "1=0", []
        clauses = " OR ".join("target = ? OR target LIKE ?" for _ in names)
        params: list[str] = []
        for name in names:
            params.extend((name, f"{name}:%"))
        return f"({clauses})", params

    def _next_delivery(self, schemes: Iterable[str], at: str) -> str | None:
        where, params = self._scheme_filter(schemes)
        row = self.store.query(
            "SELECT MIN(next_attempt_at) FROM cron_outbox WHERE status = 'pending' "
            f"AND (lease_until IS NULL OR lease_until < ?) AND {where}",
            (at, *params),
        )[0]
        return row[0] if row and row[0] is not None else None

    def due_deliveries(
        self, now: datetime, schemes: Iterable[str], *, limit: int = 50
    ) -> list[OutboxItem]:
        where, params = self._scheme_filter(schemes)
        at = now_iso(now)
        rows = self.store.query(
            "SELECT * FROM cron_outbox WHERE status = 'pending' AND next_attempt_at <= ? "
            f"AND (lease_until IS NULL OR lease_until < ?) AND {where} ORDER BY id LIMIT ?",
            (at, at, *params, limit),
        )
        return [_outbox(r) for r in rows]

    def claim_delivery(self, item_id: int, owner: str, now: datetime, until: datetime) -> bool:
        at = now_iso(now)
        with self.store.transaction() as conn:
            cursor = conn.execute(
                "UPDATE cron_outbox SET lease_owner = ?, lease_until = ? WHERE id = ? "
                "AND status = 'pending' AND (lease_until IS NULL OR lease_until < ?)",
                (owner, now_iso(until), item_id, at),
            )
            return cursor.rowcount == 1

    def delivered(self, item_id: int, at: datetime) -> None:
        with self.store.transaction() as conn:
            conn.execute(
                "UPDATE cron_outbox SET status = 'delivered', delivered_at = ?, "
                "attempts = attempts + 1, last_error = NULL, lease_owner = NULL, "
                "lease_until = NULL WHERE id = ?",
                (now_iso(at), item_id),
            )

    def delivery_failed(self, item_id: int, error: str, retry_at: datetime | None) -> None:
        """Record a failed attempt; `retry_at` None gives up (status 'failed')."""
        with self.store.transaction() as conn:
            conn.execute(
                "UPDATE cron_outbox SET attempts = attempts + 1, last_error = ?, "
                "status = ?, next_attempt_at = ?, lease_owner = NULL, lease_until = NULL "
                "WHERE id = ?",
                (error, "pending" if retry_at else "failed", _iso(retry_at), item_id),
            )

    def outbox(self, job_id: str | None = None, *, limit: int = 20) -> list[OutboxItem]:
        if job_id is None:
            rows = self.store.query("SELECT * FROM cron_outbox ORDER BY id DESC LIMIT ?", (limit,))
        else:
            rows = self.store.query(
                "SELECT * FROM cron_outbox WHERE job_id = ? ORDER BY id DESC LIMIT ?",
                (job_id, limit),
            )
        return [_outbox(r) for r in rows]

    def unseen(self, *, limit: int = 20) -> list[OutboxItem]:
        rows = self.store.query(
            "SELECT * FROM cron_outbox WHERE seen = 0 ORDER BY id DESC LIMIT ?", (limit,)
        )
        return [_outbox(r) for r in rows]

    def mark_seen(self, ids: Sequence[int]) -> None:
        if not ids:
            return
        marks = ", ".join("?" for _ in ids)
        with self.store.transaction() as conn:
            conn.execute(f"UPDATE cron_outbox SET seen = 1 WHERE id IN ({marks})", tuple(ids))


def insert_alert(
    conn: Connection,
    *,
    job_id: str,
    job_name: str,
    run_id: int | None,
    text: str,
    target: str,
    created_at: datetime,
    delivered: bool,
) -> int:
    """Write one alert to the outbox inside the caller's transaction (a watch records which
    filings an alert covers in the same commit)."""
    return insert_id(
        conn,
        "INSERT INTO cron_outbox (job_id, job_name, run_id, text, target, created_at, "
        "status, next_attempt_at, delivered_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            job_id,
            job_name,
            run_id,
            text,
            target,
            now_iso(created_at),
            "delivered" if delivered else "pending",
            None if delivered else now_iso(created_at),
            now_iso(created_at) if delivered else None,
        ),
    )


def with_state(job: Job, **changes: Any) -> JobState:
    return replace(job.state, **changes)
