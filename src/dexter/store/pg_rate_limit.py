"""A rate limit shared by every process and machine on one Postgres database.

The rule is the server's: no `window` seconds may see more than `capacity` requests ARRIVE. A
limiter only knows when it let a request go and when the answer came back; the arrival lies
somewhere between, later by a TLS handshake, a busy CPU or another machine's network. So each
request holds its place from the moment it is let go until it is answered (counted by when the
answer came, not when the request left): a new request may go only while fewer than `capacity`
requests were in flight or answered within the last `window` seconds. Whatever the delays, no
`capacity + 1` arrivals then fit in one window. A request whose process died holds its place for
`IN_FLIGHT_LIMIT` seconds at most.

Taking a place locks the limit's row (`FOR UPDATE`) and reads the database server's clock, so
takers anywhere queue on the row and measure time by the one clock they share. The tables
install themselves on first use (idempotently, under an advisory lock); `SCHEMA` is also what a
numbered migration would run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg

LIMITS = "dexter_rate_limit"
REQUESTS = "dexter_rate_limit_request"
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {LIMITS} (name text PRIMARY KEY);
CREATE TABLE IF NOT EXISTS {REQUESTS} (
    id bigserial PRIMARY KEY,
    name text NOT NULL REFERENCES {LIMITS} (name) ON DELETE CASCADE,
    -- Epoch seconds by the database server's clock; answered_at is NULL while in flight.
    sent_at double precision NOT NULL,
    answered_at double precision
);
CREATE INDEX IF NOT EXISTS {REQUESTS}_name ON {REQUESTS} (name, sent_at);
"""
# Longer than any request may take (the HTTP client gives up after 30 s and retries).
IN_FLIGHT_LIMIT = 120.0
# How often a taker asks again while the places it waits for are still in flight.
IN_FLIGHT_POLL = 0.05
# Serialises concurrent first uses: CREATE TABLE IF NOT EXISTS can still collide on the catalog.
_INSTALL_LOCK = 0x6465787465725F72  # "dexter_r"

__all__ = [
    "IN_FLIGHT_LIMIT",
    "IN_FLIGHT_POLL",
    "LIMITS",
    "REQUESTS",
    "SCHEMA",
    "answered",
    "install",
    "take",
]


def install(conn: psycopg.Connection[Any], name: str) -> None:
    """The tables and this limit's row (a connection in a transaction; committed here)."""
    # A place is worth nothing after a database crash (the crash outlasts any window), so its
    # commits need not wait for the disk: that wait was most of the limit's cost per request.
    conn.execute("SET synchronous_commit = off")
    if not installed(conn, LIMITS, REQUESTS):
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_INSTALL_LOCK,))
        conn.execute(SCHEMA)
    conn.execute(
        f"INSERT INTO {LIMITS} (name) VALUES (%s) ON CONFLICT (name) DO NOTHING",
        (name,),
    )
    conn.commit()


def installed(conn: psycopg.Connection[Any], *tables: str) -> bool:
    """Whether the tables exist already (made by a migration, or an earlier first use): then no
    DDL runs, so a role without CREATE on the schema can still use them."""
    found = conn.execute(
        "SELECT count(to_regclass(t)) AS n FROM unnest(%s::text[]) AS t", (list(tables),)
    ).fetchone()
    return found is not None and found["n"] == len(tables)


def take(
    conn: psycopg.Connection[Any], name: str, capacity: int, window: float
) -> tuple[int | None, float]:
    """(the request's id, 0) when it may go now; (None, seconds to wait) when it may not."""
    try:
        row = conn.execute(
            f"SELECT name FROM {LIMITS} WHERE name = %s FOR UPDATE",
            (name,),
        ).fetchone()
        if row is None:
            # The row went away (a restore, a hand edit): put it back and ask again at once.
            conn.execute(
                f"INSERT INTO {LIMITS} (name) VALUES (%s) ON CONFLICT (name) DO NOTHING",
                (name,),
            )
            return None, 0.001
        # Read after the row is ours: a time taken while waiting for the lock would be stale.
        # One round trip: places that freed are dropped, the clock and the rest are read (the
        # select sees the rows as they were before the delete, hence the filter below).
        held = conn.execute(
            f"""
            WITH freed AS (
                DELETE FROM {REQUESTS} WHERE name = %(name)s
                AND coalesce(answered_at, sent_at + %(limit)s)
                    <= extract(epoch FROM clock_timestamp()) - %(window)s
            )
            SELECT clock.now, held.until, held.flying
            FROM (SELECT extract(epoch FROM clock_timestamp())::float8 AS now) AS clock
            LEFT JOIN (
                SELECT coalesce(answered_at, sent_at + %(limit)s) AS until,
                       answered_at IS NULL AS flying
                FROM {REQUESTS} WHERE name = %(name)s
            ) AS held ON true
            ORDER BY held.until
            """,
            {"name": name, "limit": IN_FLIGHT_LIMIT, "window": window},
        ).fetchall()
        now = float(held[0]["now"])
        places = [r for r in held if r["until"] is not None and r["until"] > now - window]
        if len(places) >= capacity:
            blocking = places[-capacity]
            if blocking["flying"]:
                # Its answer may come any moment; ask again soon rather than at the limit.
                return None, IN_FLIGHT_POLL
            # An answered place frees `window` seconds after its answer came.
            return None, max(float(blocking["until"]) + window - now, 0.001)
        inserted = conn.execute(
            f"INSERT INTO {REQUESTS} (name, sent_at) VALUES (%s, %s) RETURNING id",
            (name, now),
        ).fetchone()
        assert inserted is not None
        return int(inserted["id"]), 0.0
    finally:
        # Commit in every case: the row lock must never outlive this call.
        conn.commit()


def answered(conn: psycopg.Connection[Any], request_id: int) -> None:
    """The request's answer (or failure) came back now; its place frees `window` seconds on."""
    try:
        conn.execute(
            f"UPDATE {REQUESTS} SET answered_at = extract(epoch FROM clock_timestamp()) "
            "WHERE id = %s",
            (request_id,),
        )
    finally:
        conn.commit()
