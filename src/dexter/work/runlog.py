"""What a queued run streams to the front door that follows it, recorded in the queue's database.

A front door that shows a run as it happens (`dexter web`) cannot hold the run's events in
memory when a worker elsewhere runs it: the worker appends each thing the page shows to
`dexter_run_log_items` and notifies `dexter_run_log`; any front door process (a reloaded page,
a second `dexter web` behind a load balancer) reads them back from the first. The page's
answers travel the other way: an approval or a clarifying question is an item, the answer a row
in `dexter_run_log_answers` that the worker polls for, and cancel is a flag on the run's row.

Finished runs are forgotten after `KEEP_DAYS` (their turns are in the sessions, as always).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

CHANNEL = "dexter_run_log"
KEEP_DAYS = 7.0

SCHEMA = """
CREATE TABLE IF NOT EXISTS dexter_run_log_runs (
    run_id            text PRIMARY KEY,
    kind              text NOT NULL,
    principal_id      text NOT NULL,
    key               text NOT NULL,
    question          text NOT NULL DEFAULT '',
    created_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    cancel_requested  boolean NOT NULL DEFAULT false,
    finished_at       timestamptz
);
-- One open run per conversation, however close together two questions come.
CREATE UNIQUE INDEX IF NOT EXISTS dexter_run_log_runs_open
    ON dexter_run_log_runs (key) WHERE finished_at IS NULL AND NOT cancel_requested;
CREATE TABLE IF NOT EXISTS dexter_run_log_items (
    id      bigserial PRIMARY KEY,
    run_id  text NOT NULL REFERENCES dexter_run_log_runs ON DELETE CASCADE,
    item    jsonb NOT NULL
);
CREATE INDEX IF NOT EXISTS dexter_run_log_items_run ON dexter_run_log_items (run_id, id);
CREATE TABLE IF NOT EXISTS dexter_run_log_answers (
    run_id  text NOT NULL REFERENCES dexter_run_log_runs ON DELETE CASCADE,
    key     text NOT NULL,
    answer  jsonb NOT NULL,
    PRIMARY KEY (run_id, key)
);
"""


@dataclass(frozen=True, slots=True)
class LoggedRun:
    run_id: str
    kind: str
    principal_id: str
    key: str
    question: str
    cancel_requested: bool
    finished: bool


def _run(row: dict[str, Any]) -> LoggedRun:
    return LoggedRun(
        row["run_id"],
        row["kind"],
        row["principal_id"],
        row["key"],
        row["question"],
        bool(row["cancel_requested"]),
        row["finished_at"] is not None,
    )


async def connect(url: str) -> Any:
    """An async psycopg connection with dict rows (autocommit)."""
    import psycopg
    from psycopg.rows import dict_row

    from dexter.errors import ConfigError
    from dexter.store.database_url import display_url

    try:
        return await psycopg.AsyncConnection.connect(url, autocommit=True, row_factory=dict_row)
    except psycopg.OperationalError as exc:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"cannot reach the team database {display_url(url)}: {detail}") from None


class RunLog:
    """The run log on one async psycopg connection (dict rows, autocommit)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    async def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        cursor = await self.conn.execute(sql, params)
        return list(await cursor.fetchall()) if cursor.description else []

    async def open_run(
        self, run_id: str, kind: str, principal_id: str, key: str, question: str
    ) -> bool:
        """Record a new run; False (nothing recorded) while another run of `key` is open."""
        rows = await self._rows(
            "INSERT INTO dexter_run_log_runs (run_id, kind, principal_id, key, question)"
            " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (key)"
            " WHERE finished_at IS NULL AND NOT cancel_requested DO NOTHING RETURNING run_id",
            (run_id, kind, principal_id, key, question),
        )
        return bool(rows)

    async def run(self, run_id: str) -> LoggedRun | None:
        rows = await self._rows("SELECT * FROM dexter_run_log_runs WHERE run_id = %s", (run_id,))
        return _run(rows[0]) if rows else None

    async def open_in(self, key: str) -> LoggedRun | None:
        rows = await self._rows(
            "SELECT * FROM dexter_run_log_runs WHERE key = %s AND finished_at IS NULL"
            " ORDER BY created_at DESC LIMIT 1",
            (key,),
        )
        return _run(rows[0]) if rows else None

    async def append(self, run_id: str, items: Sequence[dict[str, Any]]) -> None:
        if not items:
            return
        async with self.conn.cursor() as cursor:
            await cursor.executemany(
                "INSERT INTO dexter_run_log_items (run_id, item) VALUES (%s, %s::jsonb)",
                [(run_id, json.dumps(item, ensure_ascii=False)) for item in items],
            )
        await self.conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, run_id))

    async def items_after(self, run_id: str, after: int) -> list[tuple[int, dict[str, Any]]]:
        rows = await self._rows(
            "SELECT id, item FROM dexter_run_log_items WHERE run_id = %s AND id > %s ORDER BY id",
            (run_id, after),
        )
        return [(int(r["id"]), dict(r["item"])) for r in rows]

    async def request_cancel(self, run_id: str) -> bool:
        rows = await self._rows(
            "UPDATE dexter_run_log_runs SET cancel_requested = true"
            " WHERE run_id = %s AND finished_at IS NULL RETURNING run_id",
            (run_id,),
        )
        return bool(rows)

    async def finish(self, run_id: str) -> None:
        await self.conn.execute(
            "UPDATE dexter_run_log_runs SET finished_at = clock_timestamp()"
            " WHERE run_id = %s AND finished_at IS NULL",
            (run_id,),
        )
        await self.conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, run_id))

    async def answer(self, run_id: str, key: str, answer: dict[str, Any]) -> bool:
        """Record the page's answer to item `key`; False when it was answered already."""
        rows = await self._rows(
            "INSERT INTO dexter_run_log_answers (run_id, key, answer) VALUES (%s, %s, %s::jsonb)"
            " ON CONFLICT DO NOTHING RETURNING key",
            (run_id, key, json.dumps(answer)),
        )
        return bool(rows)

    async def answers(self, run_id: str) -> dict[str, dict[str, Any]]:
        rows = await self._rows(
            "SELECT key, answer FROM dexter_run_log_answers WHERE run_id = %s", (run_id,)
        )
        return {r["key"]: dict(r["answer"]) for r in rows}

    async def prune(self, days: float = KEEP_DAYS) -> None:
        await self.conn.execute(
            "DELETE FROM dexter_run_log_runs"
            " WHERE finished_at < clock_timestamp() - make_interval(days => %s)",
            (int(days),),
        )


__all__ = ["CHANNEL", "SCHEMA", "LoggedRun", "RunLog", "connect"]
