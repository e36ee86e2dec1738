from __future__ import annotations

import json
from pathlib import Path

import pytest

from dexter.config import load_settings
from dexter.errors import ConfigError
from dexter.store.database_url import database_target, display_url
from dexter.store.pg import PostgresUnavailable, connect


def test_nothing_set_keeps_the_sqlite_file() -> None:
    target = database_target(None, {})
    assert not target.is_postgres
    assert "SQLite" in target.describe()


def test_environment_wins_over_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = Path(str(tmp_path / ".dexter"))
    home.mkdir(parents=True, exist_ok=True)
    (home / "settings.json").write_text(
        json.dumps({"database": {"url": "postgresql://team@db.example/dexter"}})
    )
    settings = load_settings()
    assert database_target(settings, {}).url == "postgresql://team@db.example/dexter"
    env = {"DEXTER_DATABASE_URL": "postgres://other@127.0.0.1/x"}
    assert database_target(settings, env).url == "postgres://other@127.0.0.1/x"


def test_a_url_of_another_kind_is_refused_without_showing_its_password() -> None:
    with pytest.raises(ConfigError) as caught:
        database_target(None, {"DEXTER_DATABASE_URL": "mysql://u:s3cret@host/db"})
    assert "postgresql://" in str(caught.value)
    assert "s3cret" not in str(caught.value)


def test_display_url_drops_the_password() -> None:
    assert (
        display_url("postgresql://dexter:pw@db:5432/team") == "postgresql://dexter:***@db:5432/team"
    )
    assert display_url("postgresql://db/team") == "postgresql://db/team"


def test_an_unreachable_server_is_a_clear_error() -> None:
    with pytest.raises(PostgresUnavailable) as caught:
        connect("postgresql://dexter:pw@127.0.0.1:9/team", connect_timeout=2)
    message = str(caught.value)
    assert "Cannot connect to the database at postgresql://dexter:***@127.0.0.1:9/team" in message
    assert "pw@" not in message


def test_connects_to_a_real_postgres_with_pgvector(postgres_url: str) -> None:
    with connect(postgres_url) as conn:
        row = conn.execute("SELECT '[1,2,3]'::vector <-> '[1,2,4]'::vector AS d").fetchone()
    assert row is not None and row["d"] == pytest.approx(1.0)


def test_a_password_outside_the_user_part_is_never_shown() -> None:
    # libpq also takes the password as a query parameter, and key=value strings are what many
    # people paste; neither may reach a message.
    shown = display_url("postgresql:///team?host=/run/postgresql&password=s3cret&sslmode=off")
    assert "s3cret" not in shown and "sslmode=off" in shown
    with pytest.raises(ConfigError) as caught:
        database_target(None, {"DEXTER_DATABASE_URL": "host=db user=dexter password=s3cret"})
    assert "s3cret" not in str(caught.value) and "postgresql://" in str(caught.value)


def test_a_url_that_cannot_be_parsed_is_a_clear_error_without_its_password() -> None:
    with pytest.raises(ConfigError) as caught:
        database_target(None, {"DEXTER_DATABASE_URL": "postgresql://dexter:s3cret@[::1/team"})
    assert "s3cret" not in str(caught.value) and "DEXTER_DATABASE_URL" in str(caught.value)
    assert "s3cret" not in display_url("postgresql://dexter:s3cret@[::1/team")


def test_the_database_password_is_redacted_from_tool_output_and_logs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dexter import log
    from dexter.permissions.secrets import redact

    home = Path(str(tmp_path / ".dexter"))
    home.mkdir(parents=True, exist_ok=True)
    (home / "settings.json").write_text(
        json.dumps({"database": {"url": "postgresql://team:Settings-Pass-9f3k@db/dexter"}})
    )
    monkeypatch.setenv("DEXTER_DATABASE_URL", "postgresql://team:Env-Pass-72hq@db/dexter")
    load_settings()
    for password in ("Settings-Pass-9f3k", "Env-Pass-72hq"):
        line = f"connection to postgresql://team:{password}@db failed"
        assert password not in redact(line)
        assert password not in log.redact(line)
