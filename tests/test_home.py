"""Where user state lives: DEXTER_HOME, else a project .dexter found upwards, else ~/.dexter."""

from __future__ import annotations

from pathlib import Path

import pytest

from dexter.cli.main import main


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    monkeypatch.delenv("DEXTER_HOME")
    return project


def test_failed_ask_and_read_only_commands_leave_no_home_behind(
    fresh: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ask", "--model", "anthropic:claude-sonnet-4-6", "hi"]) == 2
    main(["doctor"])
    main(["sessions", "list"])
    main(["usage"])
    output = capsys.readouterr()
    assert "ANTHROPIC_API_KEY" in output.err
    assert "user-level default ~/.dexter" in output.out
    assert not (fresh / ".dexter").exists()
    assert not (Path.home() / ".dexter").exists()


def test_doctor_names_the_project_home_from_a_subfolder(
    fresh: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (fresh / ".dexter").mkdir()
    sub = fresh / "notes" / "2026"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    # Wide enough that the path (long under a test worker's folder) stays on one line.
    monkeypatch.setenv("COLUMNS", "240")
    main(["doctor"])
    out = capsys.readouterr().out
    assert str(fresh / ".dexter") in out
    assert "project .dexter found from the working directory" in out
