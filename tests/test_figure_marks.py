"""How unchecked figures are shown (a dagger in place, one footer line), how a check is stored,
and that a database from before the check was stored upgrades without loss."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from dexter.figure_marks import (
    footer,
    mark_in_place,
    marked_answer,
    summary_line,
    verification_from_dict,
    verification_to_dict,
)
from dexter.figures.types import Figure, Verification
from dexter.store import SessionStore, open_store
from dexter.store.migrations import MIGRATIONS, apply_migrations

ANSWER = "Apple's FY2024 revenue was $391,305 million [S1], up 2.0%, and EPS was $6.11 [S1]."


def _figure(text: str, value: float, unit: str, status: str, **extra: object) -> Figure:
    start = ANSWER.index(text)
    return Figure(text, value, unit, status, start=start, end=start + len(text), **extra)  # type: ignore[arg-type]


CHECKED = Verification(
    (
        _figure("$391,305 million", 391_305e6, "USD", "unsupported"),
        _figure("2.0%", 2.0, "%", "derived", formula="(391035 - 383285) / 383285"),
        _figure("$6.11", 6.11, "USD/share", "verified", source="income_statements: EPS = 6.11"),
    )
)


def test_an_unsupported_figure_is_marked_in_place_and_named_in_one_footer_line() -> None:
    text = marked_answer(ANSWER, CHECKED)
    body, _, last = text.rpartition("\n\n")
    # Only the unsupported figure carries the mark; verified and derived ones read as written.
    assert body == ANSWER.replace("$391,305 million", "$391,305 million†")
    assert last == "† 1 figure could not be checked against the data: $391,305 million"


def test_a_clean_answer_or_an_unchecked_one_is_shown_exactly_as_written() -> None:
    clean = Verification(tuple(f for f in CHECKED.figures if f.status != "unsupported"))
    assert marked_answer(ANSWER, clean) == ANSWER
    assert marked_answer(ANSWER, None) == ANSWER
    assert footer(clean) is None


def test_stale_offsets_still_find_the_figure_and_a_missing_one_stays_in_the_footer() -> None:
    moved = "Note. " + ANSWER
    assert "$391,305 million† [S1]" in mark_in_place(moved, CHECKED)
    gone = Verification((Figure("$1.2 trillion", 1.2e12, "USD", "unsupported", start=3, end=16),))
    assert mark_in_place(ANSWER, gone) == ANSWER
    assert footer(gone) == "† 1 figure could not be checked against the data: $1.2 trillion"


def test_the_status_line_counts_what_was_checked_and_corrected() -> None:
    assert summary_line(CHECKED) == "2 of 3 figures checked"
    repaired = Verification(CHECKED.figures[1:], repaired=1)
    assert summary_line(repaired) == "2 figures checked"
    assert summary_line(Verification()) is None


def test_a_stored_check_reads_back_whole_and_an_odd_one_reads_as_none() -> None:
    stored = verification_to_dict(Verification(CHECKED.figures, repaired=1))
    back = verification_from_dict(stored)
    assert back == Verification(CHECKED.figures, repaired=1)
    assert verification_from_dict(None) is None
    assert verification_from_dict({"figures": [{"status": "odd"}, "x"]}) == Verification()


def test_a_database_from_before_figure_checks_upgrades_and_keeps_its_turns(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    path = home / "dexter.db"
    conn = sqlite3.connect(path, isolation_level=None)
    before = [m for m in MIGRATIONS if m.number < 8]
    apply_migrations(conn, path, tuple(before))
    stamp = "2026-11-30T10:00:00.000000+00:00"
    conn.execute(
        "INSERT INTO sessions (id, created_at, updated_at, title, model) VALUES (?, ?, ?, ?, ?)",
        ("abcd1234", stamp, stamp, "old question", "openai:gpt"),
    )
    conn.execute(
        "INSERT INTO turns (session_id, run_id, started_at, query, answer, status) "
        "VALUES ('abcd1234', 'r1', ?, 'old question', 'old answer', 'answered')",
        (stamp,),
    )
    conn.close()
    with open_store(home) as store:
        sessions = SessionStore(store)
        (old,) = sessions.turns("abcd1234")
        assert (old.answer, old.verification) == ("old answer", None)
        stored = verification_to_dict(CHECKED)
        sessions.add_turn(
            "abcd1234", "r2", "new question", ANSWER, "answered", 1, 5.0, verification=stored
        )
        new = sessions.turns("abcd1234")[-1]
        assert verification_from_dict(new.verification) == CHECKED
        assert new.to_dict()["verification"] == stored
        assert SessionStore(store).history("abcd1234")[-1] == ("new question", ANSWER)
