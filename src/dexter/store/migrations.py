"""Numbered schema migrations, applied in order and recorded in `_migrations`.

Append new migrations; never edit or renumber a released one, because databases in the wild have
already recorded it as applied. Each migration is a list of single statements (not a script) so it
runs inside our own transaction: `executescript` would commit half-way.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from dexter.errors import DexterError


class StoreError(DexterError):
    """The database cannot be used as it is (corrupt, newer, unwritable); the CLI prints the
    message and exits 1."""


@dataclass(frozen=True, slots=True)
class Migration:
    number: int
    name: str
    statements: tuple[str, ...]


_TOKENS = """
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cached_tokens INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens INTEGER NOT NULL DEFAULT 0"""

MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "sessions, turns and the token ledger",
        (
            """CREATE TABLE sessions (
                id TEXT PRIMARY KEY,
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL,
                title TEXT,
                model TEXT NOT NULL,
                constraints_json TEXT NOT NULL DEFAULT '[]'
            )""",
            "CREATE INDEX sessions_updated ON sessions(updated_at)",
            f"""CREATE TABLE turns (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
                run_id TEXT NOT NULL,
                started_at TEXT NOT NULL,
                query TEXT NOT NULL,
                answer TEXT NOT NULL DEFAULT '',
                status TEXT NOT NULL,
                iterations INTEGER NOT NULL DEFAULT 0,
                duration_ms REAL NOT NULL DEFAULT 0,{_TOKENS}
            )""",
            "CREATE INDEX turns_session ON turns(session_id, id)",
            # The ledger tables carry no foreign key on purpose: a record must never fail a run
            # because it was written before (or without) its session row, e.g. `dexter ask`.
            """CREATE TABLE tool_calls (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                session_id TEXT,
                run_id TEXT,
                call_id TEXT,
                at TEXT NOT NULL,
                tool TEXT NOT NULL,
                args_json TEXT NOT NULL DEFAULT '{}',
                ok INTEGER NOT NULL,
                error TEXT,
                duration_ms REAL,
                result_chars INTEGER
            )""",
            "CREATE INDEX tool_calls_session ON tool_calls(session_id)",
            "CREATE INDEX tool_calls_run ON tool_calls(run_id)",
            f"""CREATE TABLE model_calls (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                session_id TEXT,
                run_id TEXT,
                at TEXT NOT NULL,
                provider TEXT NOT NULL,
                model TEXT NOT NULL,
                phase TEXT NOT NULL,
                tool TEXT,{_TOKENS},
                estimated_input_tokens INTEGER,
                reported INTEGER NOT NULL,
                ok INTEGER NOT NULL,
                error TEXT,
                cost_usd REAL
            )""",
            "CREATE INDEX model_calls_session ON model_calls(session_id)",
            "CREATE INDEX model_calls_run ON model_calls(run_id)",
        ),
    ),
    Migration(
        2,
        "evaluation runs and their per-question results",
        (
            """CREATE TABLE eval_runs (
                id TEXT PRIMARY KEY,
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL,
                dataset TEXT NOT NULL,
                dataset_hash TEXT NOT NULL,
                model TEXT NOT NULL,
                judges_json TEXT NOT NULL DEFAULT '[]',
                options_json TEXT NOT NULL DEFAULT '{}',
                question_ids_json TEXT NOT NULL DEFAULT '[]',
                status TEXT NOT NULL
            )""",
            "CREATE INDEX eval_runs_created ON eval_runs(created_at)",
            # One row per finished question, written as soon as it is graded: a crash or
            # Ctrl+C loses only the questions still in flight, and resume skips these.
            """CREATE TABLE eval_results (
                run_id TEXT NOT NULL REFERENCES eval_runs(id) ON DELETE CASCADE,
                question_id TEXT NOT NULL,
                position INTEGER NOT NULL,
                category TEXT NOT NULL,
                status TEXT NOT NULL,
                score REAL,
                result_json TEXT NOT NULL,
                input_tokens INTEGER NOT NULL DEFAULT 0,
                output_tokens INTEGER NOT NULL DEFAULT 0,
                cost_usd REAL,
                finished_at TEXT NOT NULL,
                PRIMARY KEY (run_id, question_id)
            )""",
        ),
    ),
    Migration(
        3,
        "scheduled jobs, their runs, the alert outbox and runner leases",
        (
            # Times are UTC ISO strings from now_iso(): fixed width, so they compare as text.
            """CREATE TABLE cron_jobs (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL,
                kind TEXT NOT NULL DEFAULT 'job',
                description TEXT NOT NULL DEFAULT '',
                enabled INTEGER NOT NULL DEFAULT 1,
                schedule_json TEXT NOT NULL,
                message TEXT NOT NULL,
                model TEXT,
                fulfillment TEXT NOT NULL DEFAULT 'keep',
                active_json TEXT,
                target TEXT NOT NULL DEFAULT 'outbox',
                max_iterations INTEGER NOT NULL DEFAULT 6,
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL,
                next_run_at TEXT,
                last_run_at TEXT,
                last_status TEXT,
                last_error TEXT,
                last_duration_ms REAL,
                consecutive_errors INTEGER NOT NULL DEFAULT 0,
                schedule_errors INTEGER NOT NULL DEFAULT 0,
                last_alert_text TEXT,
                last_alert_at TEXT,
                lease_owner TEXT,
                lease_until TEXT
            )""",
            "CREATE INDEX cron_jobs_due ON cron_jobs(enabled, next_run_at)",
            "CREATE UNIQUE INDEX cron_jobs_one_heartbeat ON cron_jobs(kind) "
            "WHERE kind = 'heartbeat'",
            """CREATE TABLE cron_runs (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                job_id TEXT NOT NULL,
                due_at TEXT,
                started_at TEXT NOT NULL,
                finished_at TEXT,
                status TEXT NOT NULL,
                reason TEXT NOT NULL DEFAULT '',
                error TEXT,
                duration_ms REAL,
                answer TEXT NOT NULL DEFAULT '',
                runner TEXT
            )""",
            "CREATE INDEX cron_runs_job ON cron_runs(job_id, id)",
            """CREATE TABLE cron_outbox (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                job_id TEXT NOT NULL,
                job_name TEXT NOT NULL,
                run_id INTEGER,
                text TEXT NOT NULL,
                target TEXT NOT NULL,
                created_at TEXT NOT NULL,
                status TEXT NOT NULL DEFAULT 'pending',
                attempts INTEGER NOT NULL DEFAULT 0,
                next_attempt_at TEXT,
                last_error TEXT,
                delivered_at TEXT,
                seen INTEGER NOT NULL DEFAULT 0,
                lease_owner TEXT,
                lease_until TEXT
            )""",
            "CREATE INDEX cron_outbox_pending ON cron_outbox(status, next_attempt_at)",
            "CREATE INDEX cron_outbox_job ON cron_outbox(job_id, id)",
        ),
    ),
    Migration(
        4,
        "gateway chats and the session each one continues",
        (
            """CREATE TABLE gateway_chats (
                session_key TEXT PRIMARY KEY,
                session_id TEXT NOT NULL,
                channel TEXT NOT NULL,
                account_id TEXT NOT NULL,
                chat_id TEXT NOT NULL,
                chat_type TEXT NOT NULL,
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL
            )""",
            "CREATE INDEX gateway_chats_session ON gateway_chats(session_id)",
        ),
    ),
    Migration(
        5,
        "principals: whose sessions and jobs they are (existing rows are the operator's)",
        (
            """CREATE TABLE principals (
                id TEXT PRIMARY KEY,
                kind TEXT NOT NULL,
                display_name TEXT NOT NULL DEFAULT '',
                created_at TEXT NOT NULL,
                last_seen_at TEXT NOT NULL
            )""",
            # now_iso()'s shape, so the times sort with every other row's.
            "INSERT INTO principals (id, kind, display_name, created_at, last_seen_at) "
            "VALUES ('operator', 'operator', 'the operator', "
            "strftime('%Y-%m-%dT%H:%M:%S.000000+00:00', 'now'), "
            "strftime('%Y-%m-%dT%H:%M:%S.000000+00:00', 'now'))",
            "ALTER TABLE sessions ADD COLUMN principal_id TEXT NOT NULL DEFAULT 'operator'",
            "CREATE INDEX sessions_principal ON sessions(principal_id, updated_at)",
            "ALTER TABLE cron_jobs ADD COLUMN owner TEXT NOT NULL DEFAULT 'operator'",
            "CREATE INDEX cron_jobs_owner ON cron_jobs(owner)",
            "ALTER TABLE gateway_chats ADD COLUMN principal_id TEXT NOT NULL DEFAULT 'operator'",
        ),
    ),
    Migration(
        6,
        "the ledger's own estimate of output tokens, for calls a server reported no usage for",
        ("ALTER TABLE model_calls ADD COLUMN estimated_output_tokens INTEGER",),
    ),
    Migration(
        7,
        "evaluation epochs, the process a run lives in, and the model response cache",
        (
            # Who runs an evaluation and when it last showed life: a run whose process died
            # is told apart from one still running (and marked crashed).
            "ALTER TABLE eval_runs ADD COLUMN pid INTEGER",
            "ALTER TABLE eval_runs ADD COLUMN host TEXT",
            "ALTER TABLE eval_runs ADD COLUMN heartbeat_at TEXT",
            # Runs started by one command (`--model a --model b`) share a group.
            "ALTER TABLE eval_runs ADD COLUMN group_id TEXT",
            # A question may now be run several times (epochs): the key gains the epoch.
            # SQLite cannot change a primary key in place, so the table is rebuilt.
            """CREATE TABLE eval_results_epochs (
                run_id TEXT NOT NULL REFERENCES eval_runs(id) ON DELETE CASCADE,
                question_id TEXT NOT NULL,
                epoch INTEGER NOT NULL DEFAULT 1,
                position INTEGER NOT NULL,
                category TEXT NOT NULL,
                status TEXT NOT NULL,
                score REAL,
                result_json TEXT NOT NULL,
                input_tokens INTEGER NOT NULL DEFAULT 0,
                output_tokens INTEGER NOT NULL DEFAULT 0,
                cost_usd REAL,
                finished_at TEXT NOT NULL,
                PRIMARY KEY (run_id, question_id, epoch)
            )""",
            "INSERT INTO eval_results_epochs (run_id, question_id, epoch, position, category, "
            "status, score, result_json, input_tokens, output_tokens, cost_usd, finished_at) "
            "SELECT run_id, question_id, 1, position, category, status, score, result_json, "
            "input_tokens, output_tokens, cost_usd, finished_at FROM eval_results",
            "DROP TABLE eval_results",
            "ALTER TABLE eval_results_epochs RENAME TO eval_results",
            # Model replies by a hash of the full request (see models/cache.py).
            """CREATE TABLE model_responses (
                key TEXT PRIMARY KEY,
                model TEXT NOT NULL,
                response_json TEXT NOT NULL,
                created_at TEXT NOT NULL,
                hits INTEGER NOT NULL DEFAULT 0
            )""",
        ),
    ),
    Migration(
        8,
        "how each answer's figures were checked (null: not checked)",
        ("ALTER TABLE turns ADD COLUMN verification_json TEXT",),
    ),
    Migration(
        9,
        "filing watches, their cursors, the filings they detected, SEC validators",
        (
            """CREATE TABLE watches (
                id TEXT PRIMARY KEY,
                owner TEXT NOT NULL,
                tickers_json TEXT NOT NULL,
                forms_json TEXT NOT NULL,
                items_json TEXT NOT NULL DEFAULT '[]',
                target TEXT NOT NULL,
                paused INTEGER NOT NULL DEFAULT 0,
                created_at TEXT NOT NULL
            )""",
            # The newest accession a watch has seen per ticker: what is newer is new.
            """CREATE TABLE watch_cursors (
                watch_id TEXT NOT NULL REFERENCES watches(id) ON DELETE CASCADE,
                ticker TEXT NOT NULL,
                last_accession TEXT,
                PRIMARY KEY (watch_id, ticker)
            )""",
            # state: detected (recorded with the cursor's advance) -> queued (its alert is in
            # cron_outbox, which tracks delivery); a crash between the two re-queues once.
            """CREATE TABLE watch_filings (
                watch_id TEXT NOT NULL REFERENCES watches(id) ON DELETE CASCADE,
                accession TEXT NOT NULL,
                ticker TEXT NOT NULL,
                cik TEXT NOT NULL,
                form TEXT NOT NULL,
                filing_date TEXT NOT NULL,
                items TEXT NOT NULL DEFAULT '',
                primary_document TEXT,
                state TEXT NOT NULL DEFAULT 'detected',
                outbox_id INTEGER,
                detected_at TEXT NOT NULL,
                PRIMARY KEY (watch_id, accession)
            )""",
            "CREATE INDEX watch_filings_state ON watch_filings(state)",
            # ETag / Last-Modified per submissions URL, for conditional polling.
            """CREATE TABLE watch_validators (
                url TEXT PRIMARY KEY,
                etag TEXT,
                last_modified TEXT
            )""",
        ),
    ),
    Migration(
        10,
        "a watch's insider-sale cluster rule (N insiders selling within D days, or off)",
        ("ALTER TABLE watches ADD COLUMN cluster TEXT NOT NULL DEFAULT '3/7'",),
    ),
)


def _already_current(conn: sqlite3.Connection, path: Path, known: set[int], newest: int) -> bool:
    table = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'"
    ).fetchone()
    if table is None:
        return False
    done = {row[0] for row in conn.execute("SELECT number FROM _migrations")}
    _refuse_newer(done, known, newest, path)
    return known <= done


def _refuse_newer(done: set[int], known: set[int], newest: int, path: Path) -> None:
    unknown = sorted(done - known)
    if unknown and unknown[-1] > newest:
        raise StoreError(
            f"{path} was written by a newer version of Dexter (schema migration "
            f"{unknown[-1]}; this version knows up to {newest}). Upgrade Dexter, or "
            "point DEXTER_HOME elsewhere; Dexter will not downgrade the database."
        )


def apply_migrations(
    conn: sqlite3.Connection, path: Path, migrations: tuple[Migration, ...] = MIGRATIONS
) -> list[int]:
    """Bring the schema up to date; returns the numbers applied now (empty when current).

    `conn` must be in autocommit mode (isolation_level=None) so the transactions here are ours.
    """
    known = {m.number for m in migrations}
    newest = max(known, default=0)
    # The usual case, a current schema, is settled by reading alone: no write lock, so opening
    # the database never waits on another process that is busy writing to it.
    if _already_current(conn, path, known, newest):
        return []
    conn.execute(
        "CREATE TABLE IF NOT EXISTS _migrations ("
        "number INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    applied_now: list[int] = []
    for migration in sorted(migrations, key=lambda m: m.number):
        # IMMEDIATE takes the write lock before checking, so two processes opening a fresh
        # database at once cannot both apply the same migration.
        conn.execute("BEGIN IMMEDIATE")
        try:
            done = {row[0] for row in conn.execute("SELECT number FROM _migrations")}
            _refuse_newer(done, known, newest, path)
            if migration.number not in done:
                for statement in migration.statements:
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO _migrations (number, name, applied_at) VALUES (?, ?, ?)",
                    (migration.number, migration.name, datetime.now(UTC).isoformat()),
                )
                applied_now.append(migration.number)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return applied_now
