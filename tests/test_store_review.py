"""Defects found reviewing the store's new parts: each test shows what a user hit before."""

from __future__ import annotations

from pathlib import Path

import pytest

from dexter.store import open_store
from dexter.store.manage import database_status


def test_db_status_reads_a_home_whose_path_holds_url_characters(tmp_path: Path) -> None:
    # `#`, `?` and `%` are ordinary in folder names ("Q3 #2", "100% done").
    home = tmp_path / "Q3 #2 100%" / ".dexter"
    home.mkdir(parents=True)
    open_store(home).close()
    status = database_status(home, None)
    assert status.exists and status.version > 0 and not status.pending


def test_doctor_checks_the_database_of_a_home_whose_path_holds_url_characters(
    tmp_path: Path,
) -> None:
    from dexter.cli.doctor_json import database_state
    from dexter.config import load_settings

    home = tmp_path / "Q3 #2 100%" / ".dexter"
    home.mkdir(parents=True)
    open_store(home).close()
    (home / "dexter.db").write_bytes(b"not a database, damaged")
    settings = load_settings(cwd=tmp_path, environ={"DEXTER_HOME": str(home)})
    usable, said = database_state(settings)
    assert not usable, said
    assert sorted(p.name for p in home.parent.parent.iterdir()) == ["Q3 #2 100%"]


def test_a_role_that_cannot_create_the_tables_is_told_what_to_grant(postgres_url: str) -> None:
    # Postgres 15 and later let only a schema's owner create tables in it: a team's usual
    # setup (an admin's database, an app role) fails Dexter's first migration.
    import secrets
    from urllib.parse import urlsplit, urlunsplit

    from dexter.store.migrations import StoreError
    from dexter.store.pg import connect
    from dexter.store.postgres import open_postgres

    role, password = f"reviewer_{secrets.token_hex(4)}", "rev-pass-s3cret-123"
    with connect(postgres_url) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
        admin.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
    parts = urlsplit(postgres_url)
    host = parts.netloc.rpartition("@")[2]
    url = urlunsplit((parts.scheme, f"{role}:{password}@{host}", parts.path, parts.query, ""))
    try:
        with pytest.raises(StoreError) as caught:
            open_postgres(url)
        message = str(caught.value)
        assert "permission denied" in message and "GRANT" in message, message
        assert password not in message
    finally:
        with connect(postgres_url) as admin:
            admin.execute(f"DROP ROLE {role}")
