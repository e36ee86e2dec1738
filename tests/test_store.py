"""The SQLite store: migrations, refusal to touch newer or broken databases, sessions."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from dexter.models.types import Usage
from dexter.store import SessionLookupError, SessionStore, Store, StoreError, open_store
from dexter.store.migrations import MIGRATIONS


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return open_store(tmp_path / "home")


def test_migrations_apply_once_and_are_recorded(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with open_store(home) as store:
        rows = store.query("SELECT number FROM _migrations ORDER BY number")
        assert [row[0] for row in rows] == [m.number for m in MIGRATIONS]
        tables = {row[0] for row in store.query("SELECT name FROM sqlite_master")}
        assert {"sessions", "turns", "tool_calls", "model_calls"} <= tables
        assert store.query("PRAGMA journal_mode")[0][0] == "wal"
        assert store.query("PRAGMA foreign_keys")[0][0] == 1
        session_id = SessionStore(store).create("openai:gpt-4.1")
    # Reopening applies nothing and keeps the data.
    with open_store(home) as store:
        assert len(store.query("SELECT * FROM _migrations")) == len(MIGRATIONS)
        assert SessionStore(store).get(session_id).id == session_id


def test_newer_database_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    open_store(home).close()
    conn = sqlite3.connect(home / "dexter.db")
    conn.execute("INSERT INTO _migrations VALUES (999, 'future', '2099-01-01')")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match=r"newer version of Dexter.*999"):
        open_store(home)
    # Nothing was rolled back or removed.
    conn = sqlite3.connect(home / "dexter.db")
    assert conn.execute("SELECT COUNT(*) FROM _migrations WHERE number = 999").fetchone()[0] == 1
    conn.close()


def test_corrupt_file_names_the_file_and_is_kept(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    path = home / "dexter.db"
    garbage = b"this is not sqlite at all\n" * 200
    path.write_bytes(garbage)
    with pytest.raises(StoreError) as caught:
        open_store(home)
    message = str(caught.value)
    assert str(path) in message
    assert "Move it aside" in message
    assert path.read_bytes() == garbage


def test_create_false_does_not_create(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        open_store(tmp_path / "home", create=False)
    assert not (tmp_path / "home" / "dexter.db").exists()


def test_sessions_create_list_and_get(store: Store) -> None:
    sessions = SessionStore(store)
    first = sessions.create("openai:gpt-4.1")
    second = sessions.create("anthropic:claude-sonnet-4-6", title="Margins")
    assert len(first) == 8 and int(first, 16) >= 0
    sessions.add_turn(
        first, "run-1", "What was Apple's gross margin in FY2024, and how did it change?",
        "46.2%.", "answered", 3, 1200.0, Usage(100, 20, 10, 5),
    )  # fmt: skip
    listed = sessions.list()
    assert [info.id for info in listed] == [first, second]  # most recently updated first
    info = listed[0]
    assert info.title is not None and info.title.startswith("What was Apple's gross margin")
    assert len(info.title) <= 60
    assert info.turns == 1
    assert info.total_tokens == 120  # no ledger rows: falls back to the turn's usage
    assert listed[1].title == "Margins" and listed[1].turns == 0
    assert sessions.latest() == info
    assert sessions.get(first[:6]).id == first
    assert sessions.get(second.upper()).id == second
    assert sessions.list(limit=1) == [info]


def test_get_ambiguous_and_unknown(store: Store) -> None:
    sessions = SessionStore(store)
    ids = ["abc12345", "abc99999", "def00000"]
    with store.transaction() as conn:
        for session_id in ids:
            conn.execute(
                "INSERT INTO sessions (id, created_at, updated_at, model) VALUES (?, ?, ?, 'm')",
                (session_id, "2025-01-01T00:00:00+00:00", "2025-01-01T00:00:00+00:00"),
            )
    assert sessions.get("def").id == "def00000"
    assert sessions.get("abc1").id == "abc12345"
    with pytest.raises(SessionLookupError, match="ambiguous") as ambiguous:
        sessions.get("abc")
    assert sorted(ambiguous.value.candidates) == ["abc12345", "abc99999"]
    with pytest.raises(SessionLookupError, match="No session 'zzz'") as unknown:
        sessions.get("zzz")
    assert set(unknown.value.candidates) == set(ids)
    with pytest.raises(SessionLookupError):
        sessions.get("  ")


def test_history_round_trip_skips_unanswered_turns(store: Store) -> None:
    sessions = SessionStore(store)
    session_id = sessions.create("openai:gpt-4.1")
    sessions.add_turn(session_id, "r1", "Q1", "A1", "answered", 1, 10.0, Usage(1, 1))
    sessions.add_turn(session_id, "r2", "Q2", "", "error", 1, 10.0, None)
    sessions.add_turn(session_id, "r3", "Q3 — ünïcode", "A3\nline 2", "answered", 2, 5.0)
    assert sessions.history(session_id) == [("Q1", "A1"), ("Q3 — ünïcode", "A3\nline 2")]
    assert [turn.status for turn in sessions.turns(session_id)] == ["answered", "error", "answered"]
    assert sessions.get(session_id).turns == 3
    assert sessions.history("nope") == []


def test_constraints_round_trip(store: Store) -> None:
    sessions = SessionStore(store)
    session_id = sessions.create("openai:gpt-4.1")
    assert sessions.constraints(session_id) == []
    wanted = ["use GAAP figures only", "report in EUR", "ignore fiscal 2020"]
    sessions.set_constraints(session_id, wanted)
    assert sessions.constraints(session_id) == wanted
    assert sessions.get(session_id).constraints == wanted
    sessions.set_constraints(session_id, [])
    assert sessions.constraints(session_id) == []


def test_touch_moves_session_to_the_top(store: Store) -> None:
    sessions = SessionStore(store)
    older = sessions.create("m")
    newer = sessions.create("m")
    assert sessions.list()[0].id == newer
    sessions.touch(older)
    assert sessions.list()[0].id == older


def test_turns_require_an_existing_session(store: Store) -> None:
    with pytest.raises(sqlite3.IntegrityError):
        SessionStore(store).add_turn("missing1", "r", "q", "a", "answered", 1, 1.0)


def test_a_current_database_opens_while_another_process_is_writing(tmp_path: Path) -> None:
    open_store(tmp_path).close()
    other = sqlite3.connect(tmp_path / "dexter.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another Dexter in the middle of recording
    try:
        with open_store(tmp_path) as store:  # reading the schema needs no write lock
            assert store.query("SELECT COUNT(*) FROM sessions")[0][0] == 0
    finally:
        other.execute("ROLLBACK")
        other.close()
