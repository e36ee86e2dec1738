"""Schema of the memory index (`DEXTER_HOME/memory/index.db`), as numbered migrations.

The index is derived data: the markdown files are the truth, and deleting `index.db` only costs a
re-index. Migrations are recorded in `_migrations` by the same machinery as the main store
(`dexter.store.migrations.apply_migrations`); append new ones, never edit a released one.

Tables:
- `files`: one row per indexed memory file: content sha256 plus the `mtime_ns`/`size` seen, so a
  sync only re-reads files whose stat changed.
- `chunks`: the file's chunks, with line range, sha256 of the text, the daily-note date (NULL for
  MEMORY.md) and, from migration 2, one vector per passage (`dexter.memory.passages`):
  `vector` holds them as little-endian float16 rows, `passages` the passages' short hashes (so an
  edited file re-embeds only its new passages), `centroid` their normalised mean as float32,
  all with the `model_id`/`dims` that made them (NULL in keyword-only mode).
- `chunks_fts`: FTS5 over `chunks.text` (`porter unicode61`, so "revenues" finds "revenue"), an
  external-content table kept in sync by triggers: deleting a chunk row removes it from the
  keyword index in the same transaction.
- `meta`: `generation`, bumped on every write, so another process's sync invalidates our cache.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from dexter.store.db import prepare_database_file, storage_failure
from dexter.store.migrations import Migration, StoreError, apply_migrations

__all__ = ["MEMORY_MIGRATIONS", "open_memory_db"]

MEMORY_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "memory files, chunks with vectors, FTS5 keyword index",
        (
            """CREATE TABLE files (
                path TEXT PRIMARY KEY,
                hash TEXT NOT NULL,
                mtime_ns INTEGER NOT NULL,
                size INTEGER NOT NULL,
                indexed_at TEXT NOT NULL
            )""",
            """CREATE TABLE chunks (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                path TEXT NOT NULL,
                start_line INTEGER NOT NULL,
                end_line INTEGER NOT NULL,
                text TEXT NOT NULL,
                hash TEXT NOT NULL,
                date TEXT,
                model_id TEXT,
                dims INTEGER,
                vector BLOB
            )""",
            "CREATE INDEX chunks_path ON chunks(path)",
            "CREATE INDEX chunks_hash ON chunks(hash, model_id)",
            """CREATE VIRTUAL TABLE chunks_fts USING fts5(
                text, content='chunks', content_rowid='id', tokenize='porter unicode61'
            )""",
            """CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
                INSERT INTO chunks_fts(rowid, text) VALUES (new.id, new.text);
            END""",
            """CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
                INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
            END""",
            """CREATE TRIGGER chunks_au AFTER UPDATE OF text ON chunks BEGIN
                INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
                INSERT INTO chunks_fts(rowid, text) VALUES (new.id, new.text);
            END""",
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
            "INSERT INTO meta (key, value) VALUES ('generation', '0')",
        ),
    ),
    Migration(
        2,
        "one vector per passage of a chunk, their hashes, and the chunk's mean vector",
        (
            "ALTER TABLE chunks ADD COLUMN passages TEXT",
            "ALTER TABLE chunks ADD COLUMN centroid BLOB",
            # A whole-chunk vector means something else: the next sync re-embeds by passage.
            "UPDATE chunks SET vector = NULL, model_id = NULL, dims = NULL",
            "UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) "
            "WHERE key = 'generation'",
        ),
    ),
)


def open_memory_db(path: Path) -> sqlite3.Connection:
    """Open (creating and migrating) the index at `path`, in autocommit mode."""
    # Private like the memory files it copies (its FTS table holds their text).
    prepare_database_file(path)
    try:
        conn = sqlite3.connect(path, isolation_level=None, timeout=10.0, check_same_thread=False)
    except sqlite3.Error as exc:
        raise storage_failure(exc, path) or StoreError(
            f"Cannot open the memory index {path}: {exc}."
        ) from exc
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        apply_migrations(conn, path, MEMORY_MIGRATIONS)
    except StoreError:
        conn.close()
        raise
    except sqlite3.DatabaseError as exc:
        conn.close()
        failure = storage_failure(exc, path)
        if failure is not None:
            raise failure from exc
        raise StoreError(
            f"Cannot use the memory index {path} ({exc}). It holds no data of its own: delete it "
            "and Dexter rebuilds it from the markdown files."
        ) from exc
    return conn
