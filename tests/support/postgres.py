"""A real PostgreSQL with pgvector for the team-mode tests.

`DEXTER_TEST_DATABASE_URL` (a server you run, with pgvector available) wins; otherwise the
`pgserver` wheel starts one in a folder under the temp directory, shared by every test process
on the machine (pgserver stops it when the last of them exits). Each test gets a database of
its own, created empty and dropped afterwards, so tests never see each other's rows.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

ENV_NAME = "DEXTER_TEST_DATABASE_URL"
# Read on import (conftest imports this module): each test's environment is isolated from DEXTER_*
# variables before its fixtures run.
_GIVEN = os.environ.get(ENV_NAME, "").strip()


@cache
def server_url() -> str:
    """The maintenance URL of the test server (its `postgres` database)."""
    if _GIVEN:
        return _GIVEN
    try:
        import pgserver
    except ImportError:  # pragma: no cover - a dev dependency
        pytest.skip("pgserver is not installed: run `uv sync` (it is a dev dependency)")
    # A short path: the server's Unix socket lives in it, and socket paths are limited to ~100
    # bytes.
    folder = Path(tempfile.gettempdir()) / f"dexter-pg-{os.getuid()}"
    server = pgserver.get_server(folder, cleanup_mode="stop")
    return str(server.get_uri())


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


def _admin(sql: str) -> None:
    import psycopg

    with psycopg.connect(server_url(), autocommit=True) as conn:
        conn.execute(sql)  # type: ignore[arg-type]


def create_database() -> str:
    """A new empty database with pgvector enabled; returns its URL."""
    import psycopg

    name = f"dexter_test_{uuid.uuid4().hex[:16]}"
    _admin(f'CREATE DATABASE "{name}"')
    url = with_database(server_url(), name)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return url


def drop_database(url: str) -> None:
    name = urlsplit(url).path.lstrip("/")
    _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh, empty Postgres database (pgvector enabled) for one test."""
    url = create_database()
    try:
        yield url
    finally:
        drop_database(url)
