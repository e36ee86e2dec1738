"""Replaying the journal a busy database left behind loses nothing and applies nothing twice."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dexter.store import writer
from dexter.store.writer import JOURNAL_NAME, Write, replay_journal


def _line(n: int) -> str:
    return Write("turn", {"n": n}).to_json()


def _applied(monkeypatch: pytest.MonkeyPatch, on_apply: Any = None) -> list[int]:
    seen: list[int] = []

    def apply(store: Any, prices: Any, write: Write) -> None:
        if on_apply is not None:
            on_apply(write)
        seen.append(int(write.payload["n"]))

    monkeypatch.setattr(writer, "apply_write", apply)
    return seen


def test_records_appended_during_a_replay_are_kept_for_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = tmp_path / JOURNAL_NAME
    journal.write_text(_line(1) + "\n" + _line(2) + "\n", encoding="utf-8")

    def another_process_journals(write: Write) -> None:
        if write.payload["n"] == 1:
            with journal.open("a", encoding="utf-8") as handle:
                handle.write(_line(3) + "\n")

    seen = _applied(monkeypatch, another_process_journals)
    assert replay_journal(object(), tmp_path) == 2  # type: ignore[arg-type]
    assert seen == [1, 2]
    # Written while the first two were replayed: still there, not overwritten or deleted.
    assert journal.read_text(encoding="utf-8").splitlines() == [_line(3)]
    assert replay_journal(object(), tmp_path) == 1  # type: ignore[arg-type]
    assert seen == [1, 2, 3] and not journal.exists()
    assert list(tmp_path.iterdir()) == []


def test_records_the_database_still_refuses_stay_journalled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = tmp_path / JOURNAL_NAME
    journal.write_text("\n".join([_line(1), "not json", _line(2)]) + "\n", encoding="utf-8")

    def busy_for_two(write: Write) -> None:
        if write.payload["n"] == 2:
            raise sqlite3.OperationalError("database is locked")

    seen = _applied(monkeypatch, busy_for_two)
    assert replay_journal(object(), tmp_path) == 1  # type: ignore[arg-type]
    assert seen == [1]
    assert journal.read_text(encoding="utf-8").splitlines() == [_line(2)]


def test_a_claim_left_by_a_dead_process_is_replayed_and_a_live_ones_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    dead_pid = int(dead.stdout)
    (tmp_path / f"{JOURNAL_NAME}.{dead_pid}-0.replaying").write_text(_line(7) + "\n")
    live = tmp_path / f"{JOURNAL_NAME}.{os.getppid()}-0.replaying"
    live.write_text(_line(8) + "\n")
    seen = _applied(monkeypatch)
    assert replay_journal(object(), tmp_path) == 1  # type: ignore[arg-type]
    assert seen == [7]
    assert live.exists()  # that process is still replaying it
    assert sorted(p.name for p in tmp_path.iterdir()) == [live.name]
    assert json.loads(live.read_text())["payload"] == {"n": 8}
