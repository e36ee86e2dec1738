"""`dexter db migrate` and `dexter db status`: the configured database's schema, applied or shown.

Status only reads: a missing SQLite file is reported, never created, and a Postgres database
is not migrated by looking at it.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from dexter.store.database_url import display_url
from dexter.store.db import DB_FILE_NAME, open_store
from dexter.store.migrations import MIGRATIONS, Migration, StoreError

__all__ = ["DatabaseStatus", "database_status", "migrate_database"]


@dataclass(frozen=True, slots=True)
class DatabaseStatus:
    backend: str  # "sqlite" | "postgres"
    where: str  # for people: a path, or a URL without its password
    exists: bool
    applied: tuple[int, ...]
    known: tuple[Migration, ...]

    @property
    def version(self) -> int:
        return max(self.applied, default=0)

    @property
    def newest(self) -> int:
        return max((m.number for m in self.known), default=0)

    @property
    def pending(self) -> list[Migration]:
        return [m for m in self.known if m.number not in self.applied]


def _known(url: str | None) -> tuple[Migration, ...]:
    if url is None:
        return MIGRATIONS
    from dexter.store.pg_migrations import PG_MIGRATIONS

    return PG_MIGRATIONS


def migrate_database(home: Path, url: str | None) -> tuple[DatabaseStatus, list[int]]:
    """Apply what is pending (creating the SQLite file if need be); the status after, and the
    numbers applied now (empty: it was current)."""
    with open_store(home, url=url) as store:
        applied = list(store.applied_now)
    return database_status(home, url), applied


def database_status(home: Path, url: str | None) -> DatabaseStatus:
    if url is not None:
        from dexter.store.pg import connect
        from dexter.store.postgres import schema_version

        with connect(url) as conn:
            applied = schema_version(conn)
        return DatabaseStatus("postgres", display_url(url), True, applied, _known(url))
    path = home / DB_FILE_NAME
    if not path.is_file():
        return DatabaseStatus("sqlite", str(path), False, (), _known(None))
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            table = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'"
            ).fetchone()
            rows = conn.execute("SELECT number FROM _migrations").fetchall() if table else []
    except sqlite3.Error as error:
        raise StoreError(f"Cannot read {path} ({error}).") from None
    return DatabaseStatus(
        "sqlite", str(path), True, tuple(sorted(r[0] for r in rows)), _known(None)
    )
