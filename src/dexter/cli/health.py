"""`dexter doctor --health`: one line and an exit status for a container's HEALTHCHECK.

Quick and quiet: settings load (a broken secret file or settings.json is unhealthy), and the
database answers a query (Postgres in team mode, the SQLite file otherwise). No model endpoint
or data source is asked: a provider outage must not make an orchestrator restart every worker.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from dexter.errors import ConfigError

HEALTHY = 0
UNHEALTHY = 1
# A HEALTHCHECK has its own timeout (compose.yaml: 10 s); this one leaves room to say why.
CONNECT_TIMEOUT = 5.0


def run_health() -> int:
    started = time.perf_counter()
    try:
        from dexter.config import load_settings
        from dexter.store.database_url import database_target

        settings = load_settings()
        target = database_target(settings)
        if target.is_postgres:
            assert target.url is not None
            _check_postgres(target.url)
        else:
            _check_sqlite(settings.home)
    except ConfigError as error:
        print(f"unhealthy: {error}", file=sys.stderr)
        return UNHEALTHY
    elapsed = (time.perf_counter() - started) * 1000
    print(f"healthy: {target.describe()} answered in {elapsed:.0f} ms")
    return HEALTHY


def _check_postgres(url: str) -> None:
    from dexter.store.pg import PostgresUnavailable, connect, psycopg_module

    pg = psycopg_module()
    with connect(url, connect_timeout=CONNECT_TIMEOUT) as conn:
        try:
            conn.execute("SELECT 1").fetchone()
        except pg.Error as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else "no detail"
            raise PostgresUnavailable(f"the database did not answer a query: {first}") from None


def _check_sqlite(home: Path) -> None:
    import sqlite3

    from dexter.store.db import DB_FILE_NAME

    path = home / DB_FILE_NAME
    if not path.exists():
        # A fresh home: nothing to query yet, and a health probe must not create the file.
        if not home.exists() or _writable(home):
            return
        raise ConfigError(f"the Dexter home {home} is not writable by this user.")
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=CONNECT_TIMEOUT)
        try:
            # Reads the schema, so a damaged or foreign file fails here (`SELECT 1` reads none).
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            conn.close()
    except sqlite3.Error as error:
        raise ConfigError(f"cannot read {path}: {error}.") from None


def _writable(folder: Path) -> bool:
    import os

    return os.access(folder, os.W_OK | os.X_OK)
