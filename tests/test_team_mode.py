"""Team mode end to end: with DEXTER_DATABASE_URL set, the real `dexter` commands (a local server
speaking the OpenAI wire protocol as the model) keep everything in Postgres; `dexter db` migrates,
reports and copies a home's SQLite database into Postgres without loss; the store writer
journals what it cannot write while the server is away and catches up once it is back."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from dexter.cli.main import main
from dexter.models.types import Usage
from dexter.store import SessionStore, open_store
from dexter.store.pg import connect
from dexter.store.writer import JOURNAL_NAME, StoreWriter, Write, replay_journal
from tests.support.wire_server import WireServer, sse
from tests.test_cli import USAGE_CHUNK, chunk, point_at


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in ("DEXTER_HOME", "DEXTER_MODEL", "DEXTER_DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DEXTER_MEMORY", "off")
    monkeypatch.setenv("DEXTER_VERIFY", "off")
    (tmp_path / ".dexter").mkdir()
    return tmp_path


def with_password(url: str, password: str) -> str:
    parts = urlsplit(url)
    netloc = f"{parts.username}:{password}@{parts.netloc.rpartition('@')[2]}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def ask(server: WireServer, question: str, answer: str) -> None:
    server.push(sse([chunk({"content": answer}), chunk({}, "stop"), USAGE_CHUNK]))
    assert main(["ask", "--model", "openai:gpt-test", question]) == 0


def out_json(capsys: pytest.CaptureFixture[str]) -> Any:
    return json.loads(capsys.readouterr().out)


def table_rows(url: str) -> dict[str, list[tuple[Any, ...]]]:
    with connect(url) as conn:
        tables = [
            r["tablename"]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' "
                "AND tablename != '_migrations'"
            )
        ]
        return {
            t: sorted(
                (
                    tuple(v for k, v in row.items() if k != "rowid")
                    for row in conn.execute(f'SELECT * FROM "{t}"'.encode())
                ),
                key=repr,
            )
            for t in tables
        }


def test_team_mode_keeps_sessions_usage_and_jobs_in_postgres(
    workdir: Path,
    wire_server: WireServer,
    postgres_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    point_at(wire_server, monkeypatch)
    url = with_password(postgres_url, "s3cret-pw")
    monkeypatch.setenv("DEXTER_DATABASE_URL", url)
    ask(wire_server, "What was NVDA's revenue?", "About $130 billion.")
    capsys.readouterr()
    assert main(["sessions", "list", "--json"]) == 0
    sessions = out_json(capsys)
    assert [s["title"] for s in sessions] == ["What was NVDA's revenue?"]
    assert sessions[0]["input_tokens"] == 50
    assert main(["sessions", "show", sessions[0]["id"]]) == 0
    assert "About $130 billion." in capsys.readouterr().out
    assert main(["usage", "--by", "model", "--json"]) == 0
    assert [row["key"] for row in out_json(capsys)["rows"]] == ["OpenAI:gpt-test"]
    assert main(["cron", "add", "NVDA watch", "--every", "1h", "--message", "Check NVDA."]) == 0
    capsys.readouterr()
    assert main(["cron", "list", "--json"]) == 0
    assert [job["name"] for job in out_json(capsys)] == ["NVDA watch"]
    # All of it is in Postgres; the home has no SQLite database.
    assert not (workdir / ".dexter" / "dexter.db").exists()
    rows = table_rows(postgres_url)
    assert len(rows["turns"]) == 1 and len(rows["model_calls"]) == 1
    assert len(rows["cron_jobs"]) == 1
    assert main(["db", "status"]) == 0
    status = capsys.readouterr().out
    assert "Postgres (team mode)" in status and "postgres:***@" in status
    assert "s3cret-pw" not in status
    assert "Schema version 1 (up to date)" in status
    main(["doctor", "--json"])
    database = out_json(capsys)["database"]
    assert database["ok"] and database["state"] == "ok (schema 1)"
    assert database["where"].startswith("Postgres postgresql://postgres:***@")


def test_db_migrate_applies_once_and_says_so(
    workdir: Path,
    postgres_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("DEXTER_DATABASE_URL", postgres_url)
    assert main(["db", "status"]) == 1
    assert "1 migration(s) pending" in capsys.readouterr().out
    assert main(["db", "migrate"]) == 0
    assert "applied migration 1:" in capsys.readouterr().out
    assert main(["db", "migrate"]) == 0
    out = capsys.readouterr().out
    assert "nothing to apply" in out and "Schema version 1 (up to date)" in out
    # SQLite, the default, is reported without creating anything.
    monkeypatch.delenv("DEXTER_DATABASE_URL")
    assert main(["db", "status"]) == 0
    assert "Not created yet" in capsys.readouterr().out
    assert not (workdir / ".dexter" / "dexter.db").exists()
    assert main(["db", "migrate"]) == 0
    assert "applied migration 10:" in capsys.readouterr().out


def test_db_copy_moves_a_home_into_postgres_without_loss(
    workdir: Path,
    wire_server: WireServer,
    postgres_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    point_at(wire_server, monkeypatch)
    home = workdir / ".dexter"
    ask(wire_server, "What was NVDA's revenue?", "About $130 billion.")
    ask(wire_server, "And AAPL's?", "About $416 billion.")
    assert main(["cron", "add", "NVDA watch", "--every", "1h", "--message", "Check NVDA."]) == 0
    lite = sqlite3.connect(home / "dexter.db")
    tables = [
        r[0]
        for r in lite.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' "
            "AND name NOT LIKE 'sqlite_%' AND name != '_migrations'"
        )
    ]
    before = {
        t: sorted((tuple(r) for r in lite.execute(f"SELECT * FROM {t}")), key=repr) for t in tables
    }
    lite.close()
    capsys.readouterr()
    assert main(["db", "copy", "--from", f"sqlite:{home}", "--to", postgres_url]) == 0
    out = capsys.readouterr().out
    assert "every count matches" in out and "turns" in out
    # Every row of every table, value for value.
    assert table_rows(postgres_url) == before
    # Team mode now reads what the home had, and new rows get new ids.
    monkeypatch.setenv("DEXTER_DATABASE_URL", postgres_url)
    assert main(["sessions", "list", "--json"]) == 0
    assert [s["title"] for s in out_json(capsys)] == ["And AAPL's?", "What was NVDA's revenue?"]
    with open_store(home, url=postgres_url) as store:
        session = SessionStore(store).latest()
        assert session is not None
        assert SessionStore(store).add_turn(session.id, "r", "q", "a", "answered", 1, 1.0) == 3
    # A target that holds data is refused, clearly, unless told to replace it.
    capsys.readouterr()
    assert main(["db", "copy", "--from", f"sqlite:{home}", "--to", postgres_url]) == 1
    err = capsys.readouterr().err
    assert "already holds Dexter data" in err and "--replace" in err
    assert main(["db", "copy", "--from", f"sqlite:{home}", "--to", postgres_url, "--replace"]) == 0
    assert table_rows(postgres_url) == before
    # A value Postgres refuses (SQLite keeps any type anywhere) stops the copy; the target is
    # left exactly as it was.
    lite = sqlite3.connect(home / "dexter.db")
    lite.execute("UPDATE turns SET iterations = 'many' WHERE id = 2")
    lite.commit()
    lite.close()
    capsys.readouterr()
    assert main(["db", "copy", "--from", f"sqlite:{home}", "--to", postgres_url, "--replace"]) == 1
    assert "Postgres refused a row of turns" in capsys.readouterr().err
    assert table_rows(postgres_url) == before
    assert main(["db", "copy", "--from", "sqlite:/nowhere", "--to", postgres_url]) == 2
    assert "no Dexter database at /nowhere" in capsys.readouterr().err


def _turn(session_id: str, n: int) -> Write:
    return Write(
        "turn",
        {
            "session_id": session_id,
            "run_id": f"r{n}",
            "query": f"question {n}",
            "answer": "a",
            "status": "answered",
            "iterations": 1,
            "duration_ms": 1.0,
            "usage": {
                "input_tokens": 1,
                "output_tokens": 1,
                "cached_tokens": 0,
                "reasoning_tokens": 0,
            },
        },
    )


def _drop_connections(url: str) -> None:
    with connect(url) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid != pg_backend_pid()"
        )


def test_the_writer_journals_while_postgres_is_away_and_catches_up(
    tmp_path: Path, postgres_url: str
) -> None:
    home = tmp_path / "home"
    with open_store(home, url=postgres_url) as store:
        session = SessionStore(store).create("m")
    # A server that cannot be reached at all: the record waits in the journal, whole.
    away = StoreWriter(home, database_url="postgresql://dexter:pw@127.0.0.1:9/team")
    away.submit(_turn(session, 0))
    away.close()
    journal = (home / JOURNAL_NAME).read_text()
    assert "question 0" in journal and "pw" not in journal
    with open_store(home, url=postgres_url) as store:
        assert replay_journal(store, home) == 1
    # A dropped connection (a server restart, an idle timeout) is made again unseen.
    store = open_store(home, url=postgres_url)
    _drop_connections(postgres_url)
    SessionStore(store).touch(session)
    assert SessionStore(store).get(session).turns == 1
    store.close()
    # The server goes away for a while, then comes back: reached through a socket folder of
    # our own whose link to the real socket is removed, then restored.
    query = dict(pair.split("=", 1) for pair in urlsplit(postgres_url).query.split("&") if pair)
    if "host" not in query:
        pytest.skip("the test server is not on a Unix socket")
    relay = tmp_path / "sock"
    relay.mkdir()
    real = Path(query["host"]) / f".s.PGSQL.{urlsplit(postgres_url).port or 5432}"
    link = relay / real.name
    link.symlink_to(real)
    via_relay = postgres_url.replace(f"host={query['host']}", f"host={relay}")
    writer = StoreWriter(home, database_url=via_relay)
    writer.submit(_turn(session, 1))
    assert writer.wait_idle(10)
    link.unlink()
    _drop_connections(postgres_url)
    writer.submit(_turn(session, 2))  # the server is away: journalled
    assert writer.wait_idle(10)
    assert "question 2" in (home / JOURNAL_NAME).read_text()
    link.symlink_to(real)
    writer.submit(_turn(session, 3))  # back: the journal is replayed first, then this write
    assert writer.wait_idle(10)
    writer.close()
    assert not (home / JOURNAL_NAME).exists()
    with open_store(home, url=postgres_url) as store:
        turns = SessionStore(store).turns(session)
    assert [t.query for t in turns] == [f"question {n}" for n in range(4)]
    assert turns[0].usage == Usage(1, 1)
