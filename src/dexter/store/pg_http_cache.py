"""HTTP bodies cached in the team database, so that a document one machine fetched from the SEC
is not fetched again by the next (each fetch spends the team's one shared rate limit).

Freshness is measured by the database server's clock, one clock for every machine. The table
installs itself on first use (idempotently, under an advisory lock); `SCHEMA` is also what a
numbered migration would run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg

TABLE = "dexter_http_cache"
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    namespace text NOT NULL,
    key text NOT NULL,
    url text NOT NULL,
    -- Epoch seconds by the database server's clock.
    fetched_at double precision NOT NULL,
    body bytea NOT NULL,
    PRIMARY KEY (namespace, key)
)
"""
_INSTALL_LOCK = 0x6465787465725F63  # "dexter_c"

__all__ = ["SCHEMA", "TABLE", "Row", "get", "install", "put"]


@dataclass(frozen=True)
class Row:
    url: str
    fetched_at: float
    body: bytes


def install(conn: psycopg.Connection[Any]) -> None:
    # A cache entry lost to a database crash is fetched again; commits need not wait for disk.
    conn.execute("SET synchronous_commit = off")
    from dexter.store.pg_rate_limit import installed

    if installed(conn, TABLE):
        return
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_INSTALL_LOCK,))
        conn.execute(SCHEMA)


def get(conn: psycopg.Connection[Any], namespace: str, key: str, ttl: float) -> Row | None:
    """The entry fetched within the last `ttl` seconds, or None."""
    found = conn.execute(
        f"SELECT url, fetched_at, body FROM {TABLE} WHERE namespace = %s AND key = %s "
        "AND extract(epoch FROM clock_timestamp()) - fetched_at <= %s",
        (namespace, key, ttl),
    ).fetchone()
    if found is None:
        return None
    return Row(url=found["url"], fetched_at=float(found["fetched_at"]), body=bytes(found["body"]))


def put(conn: psycopg.Connection[Any], namespace: str, key: str, url: str, body: bytes) -> None:
    conn.execute(
        f"INSERT INTO {TABLE} (namespace, key, url, fetched_at, body) "
        "VALUES (%s, %s, %s, extract(epoch FROM clock_timestamp()), %s) "
        "ON CONFLICT (namespace, key) DO UPDATE "
        "SET url = excluded.url, fetched_at = excluded.fetched_at, body = excluded.body",
        (namespace, key, url, body),
    )
