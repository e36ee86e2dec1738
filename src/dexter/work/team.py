"""Which queue a front door uses: the team's durable queue when a Postgres database is
configured, else none (everything runs in the process, as for one user)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dexter.config import Settings
    from dexter.work.engine import PgQueue


def team_queue(settings: Settings) -> PgQueue | None:
    """An unopened `PgQueue` in team mode (open it with `async with`), None for one user."""
    from dexter.store.database_url import database_target

    target = database_target(settings)
    if not target.is_postgres or target.url is None:
        return None
    from dexter.work.engine import PgQueue

    return PgQueue(target.url)
