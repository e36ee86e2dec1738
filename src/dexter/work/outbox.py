"""What runs leave for the front doors, recorded once per run in the queue's database.

Replies: a worker does not hold the chat connections (the gateway does), so a finished chat run
writes its answer here under its run id and notifies; the gateway's relay sends it and marks it
sent. The run id is the primary key: a run repeated after its worker died finds its answer
already written and neither runs again nor adds a second one, so the chat gets it once.

Results: a scheduled job's outcome, which the scheduler that enqueued it waits for and then
delivers as it always has (suppression, alert outbox, retries).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

REPLY_CHANNEL = "dexter_work_replies"
RESULT_CHANNEL = "dexter_work_results"
# A reply claimed by a gateway that then died is claimed again after this long.
RECLAIM_AFTER_SECONDS = 60
# Sent replies are kept this long (a week of "was this answered?"), then forgotten.
KEEP_DAYS = 7.0

SCHEMA = """
CREATE TABLE IF NOT EXISTS dexter_work_replies (
    run_id      text PRIMARY KEY,
    channel     text NOT NULL,
    account_id  text NOT NULL,
    chat_id     text NOT NULL,
    thread_id   text,
    chat_type   text NOT NULL,
    text        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    claimed_at  timestamptz,
    sent_at     timestamptz,
    attempts    integer NOT NULL DEFAULT 0,
    last_error  text
);
CREATE INDEX IF NOT EXISTS dexter_work_replies_unsent
    ON dexter_work_replies (channel, account_id, created_at) WHERE sent_at IS NULL;
CREATE TABLE IF NOT EXISTS dexter_work_results (
    run_id      text PRIMARY KEY,
    result      jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
"""


@dataclass(frozen=True, slots=True)
class Reply:
    run_id: str
    channel: str
    account_id: str
    chat_id: str
    thread_id: str | None
    chat_type: str
    text: str


class Outbox:
    """Synchronous calls on one psycopg connection (callers run them off the event loop)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    # ------------------------------------------------------------------ workers

    def answered(self, run_id: str) -> bool:
        """Whether this run already left its reply or result (it ran to the end before)."""
        row = self.conn.execute(
            "SELECT EXISTS (SELECT 1 FROM dexter_work_replies WHERE run_id = %(id)s)"
            " OR EXISTS (SELECT 1 FROM dexter_work_results WHERE run_id = %(id)s) AS done",
            {"id": run_id},
        ).fetchone()
        return bool(row and row["done"])

    def put_reply(self, reply: Reply) -> bool:
        """Record the reply unless this run has one; True when this call recorded it."""
        row = self.conn.execute(
            "INSERT INTO dexter_work_replies (run_id, channel, account_id, chat_id, thread_id,"
            " chat_type, text) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (run_id) DO NOTHING"
            " RETURNING run_id",
            (
                reply.run_id,
                reply.channel,
                reply.account_id,
                reply.chat_id,
                reply.thread_id,
                reply.chat_type,
                reply.text,
            ),
        ).fetchone()
        self.conn.execute("SELECT pg_notify(%s, %s)", (REPLY_CHANNEL, reply.channel))
        return row is not None

    def put_result(self, run_id: str, result: dict[str, Any]) -> None:
        self.conn.execute(
            "INSERT INTO dexter_work_results (run_id, result) VALUES (%s, %s)"
            " ON CONFLICT (run_id) DO NOTHING",
            (run_id, json.dumps(result)),
        )
        self.conn.execute("SELECT pg_notify(%s, %s)", (RESULT_CHANNEL, run_id))

    # ------------------------------------------------------------------ front doors

    def result(self, run_id: str) -> dict[str, Any] | None:
        row = self.conn.execute(
            "SELECT result FROM dexter_work_results WHERE run_id = %s", (run_id,)
        ).fetchone()
        return dict(row["result"]) if row else None

    def forget_result(self, run_id: str) -> None:
        self.conn.execute("DELETE FROM dexter_work_results WHERE run_id = %s", (run_id,))

    def claim_replies(self, accounts: Iterable[tuple[str, str]], limit: int = 50) -> list[Reply]:
        """Unsent replies for these (channel, account) pairs, oldest first, claimed so that
        another gateway does not send them too."""
        pairs = list(accounts)
        if not pairs:
            return []
        rows = self.conn.execute(
            "UPDATE dexter_work_replies SET claimed_at = clock_timestamp(),"
            " attempts = attempts + 1 WHERE run_id IN ("
            " SELECT run_id FROM dexter_work_replies WHERE sent_at IS NULL"
            " AND (claimed_at IS NULL"
            " OR claimed_at < clock_timestamp() - make_interval(secs => %s))"
            " AND (channel, account_id) IN (SELECT * FROM unnest(%s::text[], %s::text[]))"
            " ORDER BY created_at LIMIT %s FOR UPDATE SKIP LOCKED)"
            " RETURNING run_id, channel, account_id, chat_id, thread_id, chat_type, text,"
            " created_at",
            (
                RECLAIM_AFTER_SECONDS,
                [channel for channel, _ in pairs],
                [account for _, account in pairs],
                limit,
            ),
        ).fetchall()
        rows.sort(key=lambda row: row["created_at"])
        return [
            Reply(
                r["run_id"],
                r["channel"],
                r["account_id"],
                r["chat_id"],
                r["thread_id"],
                r["chat_type"],
                r["text"],
            )
            for r in rows
        ]

    def mark_sent(self, run_id: str) -> None:
        self.conn.execute(
            "UPDATE dexter_work_replies SET sent_at = clock_timestamp(), last_error = NULL"
            " WHERE run_id = %s",
            (run_id,),
        )

    def prune(self, keep_days: float = KEEP_DAYS) -> int:
        """Forget sent replies (and results nobody collected) older than `keep_days`."""
        cursor = self.conn.execute(
            "DELETE FROM dexter_work_replies WHERE sent_at < clock_timestamp()"
            " - make_interval(secs => %s)",
            (keep_days * 86400,),
        )
        removed = cursor.rowcount
        cursor = self.conn.execute(
            "DELETE FROM dexter_work_results WHERE created_at < clock_timestamp()"
            " - make_interval(secs => %s)",
            (keep_days * 86400,),
        )
        return int(removed + cursor.rowcount)

    def mark_failed(self, run_id: str, error: str) -> None:
        """Leave it for another attempt once the claim lapses."""
        self.conn.execute(
            "UPDATE dexter_work_replies SET last_error = %s WHERE run_id = %s",
            (error[:500], run_id),
        )


class SharedConnection:
    """One connection for every run of a worker, opened on first use and again after it was
    lost (psycopg serialises statements on a connection across threads)."""

    def __init__(self, open_conn: Callable[[], Any]) -> None:
        import threading

        self._open = open_conn
        self._conn: Any = None
        self._lock = threading.Lock()

    def get(self) -> Any:
        with self._lock:
            if self._conn is None or self._conn.closed:
                self._conn = self._open()
            return self._conn
