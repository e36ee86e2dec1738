"""Schema of team-mode memory in Postgres, as numbered migrations of its own.

They are recorded in `_memory_migrations`, apart from the store's `_migrations`, so the memory
schema and the store's can each grow without renumbering the other (the SQLite index keeps its
own list in `dexter.memory.migrations` for the same reason). Append new ones, never edit a
released one. `apply_memory_migrations` takes a transaction-scoped advisory lock, so two workers
starting at once against a fresh database apply each migration once.

Tables (every row carries its `principal`, and every query filters on it):
- `memory_documents`: the memory itself, MEMORY.md and the daily notes, one row per document
  (the source of truth in team mode; see the README's memory section for why not files).
- `memory_files`: the content hash each document was last indexed at, so a sync re-chunks only
  documents whose hash changed.
- `memory_chunks`: chunks with line range, text hash, daily-note date, the passages' short hashes,
  their mean vector `centroid` (pgvector), and `tsv`, a stored tsvector over the text (GIN index)
  in the `dexter_memory` text-search configuration: English Snowball stemming with NO stopword
  list, over the text with every run of non-alphanumerics made a space: words as the SQLite
  index's `porter unicode61` sees them ("$401.70" is 401 and 70, not one number token; a query of
  only common words still matches).
- `memory_passages`: one pgvector row per passage of a chunk (deleted with it, by cascade).
- `memory_state`: a per-principal generation, bumped by every write, and the chunk count, so a
  search learns in one row read whether its cached term counts are still right.

The HNSW index over `memory_chunks.centroid` is made per embedding dimension (a pgvector index
needs a fixed one) by `ensure_vector_index`, when a model of that dimension first writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dexter.store.migrations import Migration, StoreError

if TYPE_CHECKING:
    import psycopg

__all__ = ["MEMORY_PG_MIGRATIONS", "apply_memory_migrations", "ensure_vector_index"]

MEMORY_PG_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "memory documents, chunks with full-text and pgvector, passages, per-principal state",
        (
            "CREATE EXTENSION IF NOT EXISTS vector",
            "CREATE TEXT SEARCH DICTIONARY dexter_memory_stem "
            "(TEMPLATE = snowball, LANGUAGE = english)",
            "CREATE TEXT SEARCH CONFIGURATION dexter_memory (COPY = english)",
            "ALTER TEXT SEARCH CONFIGURATION dexter_memory ALTER MAPPING FOR asciiword, "
            "asciihword, hword_asciipart, word, hword, hword_part WITH dexter_memory_stem",
            """CREATE TABLE memory_documents (
                principal TEXT NOT NULL,
                name TEXT NOT NULL,
                text TEXT NOT NULL,
                hash TEXT NOT NULL,
                updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
                PRIMARY KEY (principal, name)
            )""",
            """CREATE TABLE memory_files (
                principal TEXT NOT NULL,
                path TEXT NOT NULL,
                hash TEXT NOT NULL,
                indexed_at TIMESTAMPTZ NOT NULL DEFAULT now(),
                PRIMARY KEY (principal, path)
            )""",
            """CREATE TABLE memory_chunks (
                id BIGSERIAL PRIMARY KEY,
                principal TEXT NOT NULL,
                path TEXT NOT NULL,
                start_line INTEGER NOT NULL,
                end_line INTEGER NOT NULL,
                text TEXT NOT NULL,
                hash TEXT NOT NULL,
                date DATE,
                model_id TEXT,
                dims INTEGER,
                passages TEXT,
                centroid vector,
                tsv tsvector GENERATED ALWAYS AS (to_tsvector('dexter_memory'::regconfig,
                    regexp_replace(text, '[^[:alnum:]]+', ' ', 'g'))) STORED
            )""",
            "CREATE INDEX memory_chunks_path ON memory_chunks (principal, path)",
            "CREATE INDEX memory_chunks_hash ON memory_chunks (principal, hash)",
            "CREATE INDEX memory_chunks_model ON memory_chunks (principal, model_id, dims)",
            "CREATE INDEX memory_chunks_tsv ON memory_chunks USING gin (tsv)",
            """CREATE TABLE memory_passages (
                chunk_id BIGINT NOT NULL REFERENCES memory_chunks (id) ON DELETE CASCADE,
                ord INTEGER NOT NULL,
                embedding vector NOT NULL,
                PRIMARY KEY (chunk_id, ord)
            )""",
            """CREATE TABLE memory_state (
                principal TEXT PRIMARY KEY,
                generation BIGINT NOT NULL DEFAULT 0,
                chunks BIGINT NOT NULL DEFAULT 0
            )""",
        ),
    ),
)

_LOCK = 0x6D656D6F  # pg_advisory_xact_lock key for applying these migrations ("memo")


def apply_memory_migrations(conn: psycopg.Connection[Any]) -> list[int]:
    """Bring the memory schema up to date; the numbers applied now (empty when current)."""
    known = {m.number for m in MEMORY_PG_MIGRATIONS}
    newest = max(known)
    # The usual case, a current schema, is settled by reading alone, without the lock.
    if _applied(conn) >= known:
        _refuse_newer(_applied(conn), newest)
        return []
    applied: list[int] = []
    with conn.transaction():
        # Taken before CREATE TABLE too: two workers creating it at once collide in the catalog.
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS _memory_migrations (number INTEGER PRIMARY KEY, "
            "name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        done = _applied(conn)
        _refuse_newer(done, newest)
        for migration in MEMORY_PG_MIGRATIONS:
            if migration.number in done:
                continue
            for statement in migration.statements:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO _memory_migrations (number, name) VALUES (%s, %s)",
                (migration.number, migration.name),
            )
            applied.append(migration.number)
    return applied


def _applied(conn: psycopg.Connection[Any]) -> set[int]:
    row = conn.execute("SELECT to_regclass('_memory_migrations') AS found").fetchone()
    if row is None or row["found"] is None:
        return set()
    return {int(r["number"]) for r in conn.execute("SELECT number FROM _memory_migrations")}


def _refuse_newer(done: set[int], newest: int) -> None:
    ahead = sorted(n for n in done if n > newest)
    if ahead:
        raise StoreError(
            f"The team database's memory schema is newer than this Dexter (migrations {ahead} "
            "are unknown here): upgrade Dexter on this machine before using it."
        )


def ensure_vector_index(conn: psycopg.Connection[Any], dims: int) -> None:
    """The HNSW index over chunk mean vectors of dimension `dims` (inner product, as the SQLite
    index scores), made once; a partial expression index because a pgvector index needs one
    fixed dimension and a team may switch embedding models."""
    name = f"memory_chunks_hnsw_{int(dims)}"
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
        exists = conn.execute("SELECT to_regclass(%s) AS found", (name,)).fetchone()
        if exists and exists["found"] is not None:
            return
        conn.execute(
            f"CREATE INDEX {name} ON memory_chunks USING hnsw "
            f"((centroid::vector({int(dims)})) vector_ip_ops) WHERE dims = {int(dims)}"
        )
