"""Evaluation runs in the SQLite store (tables from migration 2)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from dexter.config import ConfigError
from dexter.evals.results import QuestionResult, RunInfo
from dexter.store import Store
from dexter.store.db import now_iso


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
    ) -> RunInfo:
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        run_id = f"{stamp}-{uuid.uuid4().hex[:6]}"
        now = now_iso()
        with self.store.transaction() as conn:
            conn.execute(
                "INSERT INTO eval_runs (id, created_at, updated_at, dataset, dataset_hash, model, "
                "judges_json, options_json, question_ids_json, status) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'running')",
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
        )

    _SELECT = (
        "SELECT r.*, (SELECT COUNT(*) FROM eval_results e WHERE e.run_id = r.id) AS finished "
        "FROM eval_runs r"
    )

    def get(self, id_or_prefix: str) -> RunInfo | None:
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
        rows = self.store.query(f"{self._SELECT} ORDER BY r.created_at DESC LIMIT ?", (limit,))
        return [self._info(row) for row in rows]

    def set_status(self, run_id: str, status: str) -> None:
        with self.store.transaction() as conn:
            conn.execute(
                "UPDATE eval_runs SET status = ?, updated_at = ? WHERE id = ?",
                (status, now_iso(), run_id),
            )

    def save_result(self, run_id: str, result: QuestionResult) -> None:
        total = result.total_cost
        with self.store.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO eval_results (run_id, question_id, position, category, "
                "status, score, result_json, input_tokens, output_tokens, cost_usd, finished_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    result.question_id,
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
            conn.execute("UPDATE eval_runs SET updated_at = ? WHERE id = ?", (now_iso(), run_id))

    def results(self, run_id: str) -> list[QuestionResult]:
        rows = self.store.query(
            "SELECT result_json FROM eval_results WHERE run_id = ? ORDER BY position", (run_id,)
        )
        return [QuestionResult.from_dict(json.loads(row["result_json"])) for row in rows]

    def finished_ids(self, run_id: str) -> set[str]:
        rows = self.store.query("SELECT question_id FROM eval_results WHERE run_id = ?", (run_id,))
        return {row["question_id"] for row in rows}
