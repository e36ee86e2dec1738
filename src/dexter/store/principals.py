"""The principals Dexter has met: created on first contact, listed by `dexter principals`.

A row says who (id, kind, name) and when they were first and last seen; what belongs to them is
found by their id in the other tables (sessions, cron_jobs, gateway_chats) and in their folder
under `DEXTER_HOME/principals/` (memory).
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any

from dexter.principal import OPERATOR_ID, Principal
from dexter.store.db import Store, now_iso
from dexter.store.principal_rows import record_principal


@dataclass(frozen=True, slots=True)
class PrincipalRow:
    id: str
    kind: str
    display_name: str
    created_at: str
    last_seen_at: str
    sessions: int = 0
    jobs: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "display_name": self.display_name,
            "created_at": self.created_at,
            "last_seen_at": self.last_seen_at,
            "sessions": self.sessions,
            "jobs": self.jobs,
        }


_SUMMARY = """
SELECT p.*,
    (SELECT COUNT(*) FROM sessions s WHERE s.principal_id = p.id) AS n_sessions,
    (SELECT COUNT(*) FROM cron_jobs j WHERE j.owner = p.id) AS n_jobs
FROM principals p
"""


def _row(row: Any) -> PrincipalRow:
    return PrincipalRow(
        id=row["id"],
        kind=row["kind"],
        display_name=row["display_name"],
        created_at=row["created_at"],
        last_seen_at=row["last_seen_at"],
        sessions=row["n_sessions"],
        jobs=row["n_jobs"],
    )


class PrincipalStore:
    def __init__(self, store: Store) -> None:
        self.store = store

    def touch(self, principal: Principal) -> None:
        """Record `principal` (first contact creates it; later ones refresh name and time)."""
        with self.store.transaction() as conn:
            record_principal(
                conn, principal.id, principal.kind, principal.display_name, at=now_iso()
            )

    def get(self, principal_id: str) -> PrincipalRow | None:
        rows = self.store.query(_SUMMARY + " WHERE p.id = ?", (principal_id,))
        return _row(rows[0]) if rows else None

    def list(self) -> builtins.list[PrincipalRow]:
        """The operator first, then the most recently seen."""
        rows = self.store.query(
            _SUMMARY + " ORDER BY p.id != ?, p.last_seen_at DESC, p.id", (OPERATOR_ID,)
        )
        return [_row(row) for row in rows]

    def remove(self, principal_id: str) -> dict[str, int]:
        """Forget a principal and everything recorded for it (sessions with their turns, jobs
        with their runs and alerts, chat mappings). The operator cannot be removed."""
        if principal_id == OPERATOR_ID:
            raise ValueError("the operator cannot be removed")
        with self.store.transaction() as conn:
            sessions = [
                r[0]
                for r in conn.execute(
                    "SELECT id FROM sessions WHERE principal_id = ?", (principal_id,)
                ).fetchall()
            ]
            jobs = [
                r[0]
                for r in conn.execute(
                    "SELECT id FROM cron_jobs WHERE owner = ?", (principal_id,)
                ).fetchall()
            ]
            for session_id in sessions:
                for table in ("turns", "tool_calls", "model_calls"):
                    conn.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))
            conn.execute("DELETE FROM sessions WHERE principal_id = ?", (principal_id,))
            for job_id in jobs:
                for table in ("cron_runs", "cron_outbox"):
                    conn.execute(f"DELETE FROM {table} WHERE job_id = ?", (job_id,))
            conn.execute("DELETE FROM cron_jobs WHERE owner = ?", (principal_id,))
            conn.execute("DELETE FROM gateway_chats WHERE principal_id = ?", (principal_id,))
            gone = conn.execute("DELETE FROM principals WHERE id = ?", (principal_id,)).rowcount
        return {"principal": gone, "sessions": len(sessions), "jobs": len(jobs)}


__all__ = ["PrincipalRow", "PrincipalStore"]
