"""Writing a principal's row inside a caller's transaction (sessions record it on creation)."""

from __future__ import annotations

from typing import Any


def record_principal(
    conn: Any, principal_id: str, kind: str, display_name: str, *, at: str
) -> None:
    """First contact creates the row; later ones refresh when it was seen and, if the platform
    gave one, its name."""
    conn.execute(
        "INSERT INTO principals (id, kind, display_name, created_at, last_seen_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET"
        " last_seen_at = excluded.last_seen_at,"
        " display_name = CASE WHEN excluded.display_name != ''"
        " THEN excluded.display_name ELSE principals.display_name END",
        (principal_id, kind, display_name, at, at),
    )
