"""What `dexter status` shows of the queue: runs waiting, running and failed per queue, the
workers alive, and replies not yet sent."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dexter.work.engine import stalled_after
from dexter.work.limits import max_running
from dexter.work.queue import KINDS


@dataclass(frozen=True, slots=True)
class QueueCounts:
    queue: str
    waiting: int = 0
    running: int = 0
    failed: int = 0


@dataclass(frozen=True, slots=True)
class QueueStatus:
    queues: list[QueueCounts] = field(default_factory=list)
    workers_alive: int = 0
    # Registered workers whose heartbeat stopped (killed or cut off): their runs go back to
    # the queue once a live worker notices.
    workers_silent: int = 0
    replies_unsent: int = 0
    installed: bool = True
    # DEXTER_QUEUE_MAX_RUNNING as this process reads it (None: no team-wide limit).
    team_limit: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "installed": self.installed,
            "queues": [
                {"queue": q.queue, "waiting": q.waiting, "running": q.running, "failed": q.failed}
                for q in self.queues
            ],
            "workers_alive": self.workers_alive,
            "workers_silent": self.workers_silent,
            "replies_unsent": self.replies_unsent,
            "team_limit": self.team_limit,
        }


def read_status(conn: Any) -> QueueStatus:
    """The queue's state from a psycopg connection (dict rows); read-only."""
    found = conn.execute("SELECT to_regclass('procrastinate_jobs') AS t").fetchone()
    if found is None or found["t"] is None:
        return QueueStatus([QueueCounts(kind) for kind in KINDS], installed=False)
    counts = {kind: {"todo": 0, "doing": 0, "failed": 0} for kind in KINDS}
    for row in conn.execute(
        "SELECT queue_name, status::text AS status, count(*) AS n FROM procrastinate_jobs"
        " WHERE status IN ('todo', 'doing', 'failed') GROUP BY 1, 2"
    ).fetchall():
        counts.setdefault(row["queue_name"], {"todo": 0, "doing": 0, "failed": 0})
        counts[row["queue_name"]][row["status"]] = int(row["n"])
    workers = conn.execute(
        "SELECT count(*) FILTER (WHERE last_heartbeat >= now() - make_interval(secs => %s))"
        " AS alive, count(*) FILTER (WHERE last_heartbeat < now() - make_interval(secs => %s))"
        " AS silent FROM procrastinate_workers",
        (stalled_after(), stalled_after()),
    ).fetchone()
    unsent = conn.execute(
        "SELECT count(*) AS n FROM dexter_work_replies WHERE sent_at IS NULL"
    ).fetchone()
    return QueueStatus(
        [
            QueueCounts(name, c["todo"], c["doing"], c["failed"])
            for name, c in sorted(counts.items(), key=lambda item: _order(item[0]))
        ],
        workers_alive=int(workers["alive"]) if workers else 0,
        workers_silent=int(workers["silent"]) if workers else 0,
        replies_unsent=int(unsent["n"]) if unsent else 0,
        team_limit=max_running(),
    )


def _order(name: str) -> tuple[int, str]:
    return (KINDS.index(name) if name in KINDS else len(KINDS), name)
