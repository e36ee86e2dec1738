"""Evaluation runs in the SQLite store (tables from migrations 2 and 7).

A run records the process running it (host, pid) and a heartbeat the runner refreshes while it
works. A run still marked `running` whose process is gone (same host, pid no longer alive) or
whose heartbeat stopped long ago (any host) is marked `crashed` the next time runs are read,
so a killed run never shows as running forever; `--resume` continues it.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from dexter.config import ConfigError
from dexter.evals.results import QuestionResult, RunInfo
from dexter.processes import process_alive
from dexter.store import Store
from dexter.store.db import now_iso

HEARTBEAT_S = 30.0
# A heartbeat this old means the process is gone (or stopped): ten missed beats.
STALE_AFTER = timedelta(minutes=5)


def this_host() -> str:
    return socket.gethostname()


class EvalStore:
    def __init__(self, store: Store) -> None:
        self.store = store

    def create_run(
        self,
        *,
        dataset: str,
        dataset_hash: str,
        model: str,
        judges: Sequence[str],
        options: dict[str, Any],
        question_ids: Sequence[str],
        group_id: str | None = None,
    ) -> RunInfo:
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        run_id = f"{stamp}-{uuid.uuid4().hex[:6]}"
        now = now_iso()
        with self.store.transaction() as conn:
            conn.execute(
                "INSERT INTO eval_runs (id, created_at, updated_at, dataset, dataset_hash, model, "
                "judges_json, options_json, question_ids_json, status, pid, host, heartbeat_at, "
                "group_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?)",
                (
                    run_id,
                    now,
                    now,
                    dataset,
                    dataset_hash,
                    model,
                    json.dumps(list(judges)),
                    json.dumps(options, default=str),
                    json.dumps(list(question_ids)),
                    os.getpid(),
                    this_host(),
                    now,
                    group_id,
                ),
            )
        info = self.get(run_id)
        assert info is not None
        return info

    def _info(self, row: Any) -> RunInfo:
        return RunInfo(
            id=row["id"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            dataset=row["dataset"],
            dataset_hash=row["dataset_hash"],
            model=row["model"],
            judges=json.loads(row["judges_json"]),
            options=json.loads(row["options_json"]),
            question_ids=json.loads(row["question_ids_json"]),
            status=row["status"],
            finished=int(row["finished"]),
            pid=row["pid"],
            host=row["host"],
            heartbeat_at=row["heartbeat_at"],
            group_id=row["group_id"],
        )

    _SELECT = (
        "SELECT r.*, (SELECT COUNT(*) FROM eval_results e WHERE e.run_id = r.id) AS finished "
        "FROM eval_runs r"
    )

    def mark_crashed(self, *, now: datetime | None = None) -> list[str]:
        """Mark `crashed` every run still `running` whose process is gone; returns their ids."""
        moment = now or datetime.now(UTC)
        host = this_host()
        crashed: list[str] = []
        for row in self.store.query(
            "SELECT id, pid, host, heartbeat_at, updated_at FROM eval_runs WHERE status = 'running'"
        ):
            beat = row["heartbeat_at"] or row["updated_at"]
            stale = moment - datetime.fromisoformat(beat) > STALE_AFTER
            gone = row["host"] == host and row["pid"] is not None and not process_alive(row["pid"])
            if gone or stale:
                crashed.append(row["id"])
        if crashed:
            with self.store.transaction() as conn:
                for run_id in crashed:
                    conn.execute(
                        "UPDATE eval_runs SET status = 'crashed' "
                        "WHERE id = ? AND status = 'running'",
                        (run_id,),
                    )
        return crashed

    def get(self, id_or_prefix: str) -> RunInfo | None:
        self.mark_crashed()
        rows = self.store.query(
            f"{self._SELECT} WHERE r.id = ? OR r.id LIKE ? ORDER BY r.id = ? DESC, r.created_at",
            (id_or_prefix, id_or_prefix.replace("%", "") + "%", id_or_prefix),
        )
        if not rows:
            return None
        if rows[0]["id"] != id_or_prefix and len(rows) > 1:
            raise ConfigError(
                f"run {id_or_prefix!r} is ambiguous: "
                + ", ".join(r["id"] for r in rows[:5])
                + ". Give more of the id."
            )
        return self._info(rows[0])

    def require(self, id_or_prefix: str) -> RunInfo:
        info = self.get(id_or_prefix)
        if info is None:
            raise ConfigError(
                f"there is no evaluation run {id_or_prefix!r}; `dexter eval list` shows them."
            )
        return info

    def runs(self, limit: int = 50) -> list[RunInfo]:
        self.mark_crashed()
        rows = self.store.query(f"{self._SELECT} ORDER BY r.created_at DESC LIMIT ?", (limit,))
        return [self._info(row) for row in rows]

    def set_status(self, run_id: str, status: str) -> None:
        with self.store.transaction() as conn:
            if status == "running":
                # This process takes the run over (a resume may come from another one).
                conn.execute(
                    "UPDATE eval_runs SET status = ?, updated_at = ?, heartbeat_at = ?, pid = ?, "
                    "host = ? WHERE id = ?",
                    (status, now_iso(), now_iso(), os.getpid(), this_host(), run_id),
                )
            else:
                conn.execute(
                    "UPDATE eval_runs SET status = ?, updated_at = ? WHERE id = ?",
                    (status, now_iso(), run_id),
                )

    def heartbeat(self, run_id: str) -> None:
        """This process still works on the run (revives it if a reader thought it crashed
        while, say, the machine slept)."""
        with self.store.transaction() as conn:
            conn.execute(
                "UPDATE eval_runs SET heartbeat_at = ?, status = 'running' WHERE id = ? "
                "AND pid = ? AND host = ? AND status IN ('running', 'crashed')",
                (now_iso(), run_id, os.getpid(), this_host()),
            )

    def save_result(self, run_id: str, result: QuestionResult) -> None:
        total = result.total_cost
        with self.store.transaction() as conn:
            conn.execute(
                "INSERT INTO eval_results (run_id, question_id, epoch, position, "
                "category, status, score, result_json, input_tokens, output_tokens, cost_usd, "
                "finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(run_id, question_id, epoch) DO UPDATE SET "
                "position = excluded.position, category = excluded.category, "
                "status = excluded.status, score = excluded.score, "
                "result_json = excluded.result_json, input_tokens = excluded.input_tokens, "
                "output_tokens = excluded.output_tokens, cost_usd = excluded.cost_usd, "
                "finished_at = excluded.finished_at",
                (
                    run_id,
                    result.question_id,
                    result.epoch,
                    result.position,
                    result.category,
                    result.status,
                    result.score,
                    json.dumps(result.to_dict(), ensure_ascii=False, default=str),
                    total.input_tokens,
                    total.output_tokens,
                    total.cost_usd,
                    now_iso(),
                ),
            )
            conn.execute(
                "UPDATE eval_runs SET updated_at = ?, heartbeat_at = ? WHERE id = ?",
                (now_iso(), now_iso(), run_id),
            )

    def results(self, run_id: str) -> list[QuestionResult]:
        rows = self.store.query(
            "SELECT result_json, epoch FROM eval_results WHERE run_id = ? ORDER BY position, epoch",
            (run_id,),
        )
        out: list[QuestionResult] = []
        for row in rows:
            data = json.loads(row["result_json"])
            data["epoch"] = row["epoch"]
            out.append(QuestionResult.from_dict(data))
        return out

    def finished_keys(self, run_id: str) -> set[tuple[str, int]]:
        """(question id, epoch) of every stored result of the run."""
        rows = self.store.query(
            "SELECT question_id, epoch FROM eval_results WHERE run_id = ?", (run_id,)
        )
        return {(row["question_id"], int(row["epoch"])) for row in rows}

    def finished_ids(self, run_id: str) -> set[str]:
        return {question for question, _ in self.finished_keys(run_id)}

    def group(self, group_id: str) -> list[RunInfo]:
        rows = self.store.query(
            f"{self._SELECT} WHERE r.group_id = ? ORDER BY r.created_at, r.id", (group_id,)
        )
        return [self._info(row) for row in rows]
