"""`dexter sessions`: ids you can copy at any width, search, rm, cancelled turns, no empties."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dexter.agent.events import TextDelta
from dexter.cli.main import main
from dexter.models.scripted import ScriptedModel, text
from dexter.models.types import Usage
from dexter.store import SessionStore, open_store
from tests.test_sessions_resume import session_agent


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("DEXTER_MODEL", raising=False)
    return tmp_path / "home"


def seed(home: Path, ids: list[str]) -> None:
    with open_store(home) as store, store.transaction() as conn:
        for n, session_id in enumerate(ids):
            conn.execute(
                "INSERT INTO sessions (id, created_at, updated_at, title, model) "
                "VALUES (?, ?, ?, ?, 'openai:gpt-4.1')",
                (session_id, f"2026-01-0{n + 1}T00:00:00Z", f"2026-01-0{n + 1}T00:00:00Z", None),
            )
    with open_store(home) as store:
        sessions = SessionStore(store)
        for n, session_id in enumerate(ids):
            sessions.add_turn(
                session_id, f"r{n}", f"Question {n} about Apple margins", f"Answer {n}.",
                "answered", 2, 1000.0, Usage(1200, 300),
            )  # fmt: skip


@pytest.mark.parametrize("width", [60, 80, 120])
def test_list_shows_ids_that_resolve_at_any_width(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    seed(home, ["abc12345", "abd99999", "ffff0000"])
    monkeypatch.setenv("COLUMNS", str(width))
    assert main(["sessions", "list"]) == 0
    out = capsys.readouterr().out
    assert "…" not in out and max(len(line) for line in out.splitlines()) <= width
    # Shortest unique prefixes, never shorter than four characters.
    for prefix in ("abc1", "abd9", "ffff"):
        assert f" {prefix} " in out
        assert main(["sessions", "show", prefix, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["id"].startswith(prefix)
    if width >= 80:
        assert "1,500" in out and "Turns" in out  # room for turns and tokens


def test_json_has_full_ids_and_csv_parses(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seed(home, ["abc12345", "abd99999"])
    assert main(["sessions", "list", "--json"]) == 0
    assert {row["id"] for row in json.loads(capsys.readouterr().out)} == {"abc12345", "abd99999"}
    assert main(["sessions", "list", "--csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("id,Updated,Title,Turns,Tokens,Cost")
    assert lines[1].startswith("abd99999,")


def test_search_and_rm(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seed(home, ["abc12345", "abd99999"])
    assert main(["sessions", "search", "answer 1", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert [row["id"] for row in found] == ["abd99999"] and "Answer 1" in found[0]["match"]
    assert main(["sessions", "rm", "abd9"]) == 0
    assert "Removed session abd99999" in capsys.readouterr().out
    assert main(["sessions", "list", "--json"]) == 0
    assert [row["id"] for row in json.loads(capsys.readouterr().out)] == ["abc12345"]
    assert main(["sessions", "rm", "zzzz"]) == 2


def test_show_is_markdown_with_tables_intact(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed(home, ["abc12345"])
    with open_store(home) as store:
        SessionStore(store).add_turn(
            "abc12345", "r9", "Table please", "| FY | Revenue |\n|---|---|\n| 2025 | 416,161 |",
            "answered", 1, 10.0,
        )  # fmt: skip
    assert main(["sessions", "show", "abc1"]) == 0
    out = capsys.readouterr().out
    assert "## 2. Table please" in out
    assert "| 2025 | 416,161 |" in out  # the table keeps its lines


async def test_cancelled_turn_is_kept_and_clear_leaves_no_empty_session(tmp_path: Path) -> None:
    agent = session_agent(tmp_path, ScriptedModel([text("A long answer that is cut off.")]))
    first = agent.new_session()
    stream = agent.run("cancel me")
    async for event in stream:
        if isinstance(event, TextDelta):
            break
    await stream.aclose()  # what cancelling the worker does to the run
    second = agent.new_session()
    third = agent.new_session()  # /clear twice: the empty second session goes
    with open_store(tmp_path) as store:
        sessions = SessionStore(store)
        turns = sessions.turns(first)
        assert [(t.query, t.status) for t in turns] == [("cancel me", "cancelled")]
        ids = [info.id for info in sessions.list()]
        assert first in ids and second not in ids and third in ids
        assert sessions.history(first) == []  # a resume does not replay the cancelled turn


def test_search_snippets_cut_at_words_with_ellipses() -> None:
    from dexter.store.sessions import _snippet

    body = (
        "Apple's fiscal 2025 revenue was $416.2B (FY2025), up from $391.0B in fiscal 2024, "
        "while services grew faster than products."
    )
    text = _snippet(body, body.index("$391.0B"), len("$391.0B"), context=30)
    assert text.startswith("…") and text.endswith("…")
    assert "$391.0B" in text
    inner = text.strip("…")
    assert body.find(inner) >= 0 and (body[body.find(inner) - 1] == " ")  # starts on a word
    assert _snippet("short answer", 0, 5) == "short answer"
