"""The `dexter` log: written only when there is something to say, never holding a key."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from dexter.cli import ask
from dexter.cli.main import main

KEY = "sk-proj-logtest-9f8e7d6c5b4a"
ANT_KEY = "sk-ant-logtest-1234567890"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    home = tmp_path / "home"
    monkeypatch.setenv("DEXTER_HOME", str(home))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    (tmp_path / ".env").write_text(f"ANTHROPIC_API_KEY={ANT_KEY}\n")
    return home


def test_unexpected_error_is_one_line_and_logged_without_keys(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*_args: object, **_kwargs: object) -> int:
        logging.getLogger("dexter.test").debug("about to fail using %s and %s", KEY, ANT_KEY)
        raise RuntimeError(f"bad header Authorization: Bearer {KEY}")

    monkeypatch.setattr(ask, "run_ask", broken)
    assert main(["ask", "hi"]) == 1
    err = capsys.readouterr().err
    log_file = home / "logs" / "dexter.log"
    assert err.strip() == (
        "dexter: unexpected error: RuntimeError: bad header Authorization: Bearer [redacted], "
        f"details in {log_file}"
    )
    assert "Traceback" not in err
    text = log_file.read_text()
    assert "Traceback" in text and "RuntimeError" in text
    assert "about to fail" in text
    assert KEY not in text and ANT_KEY not in text
    assert "[redacted]" in text


def test_debug_mirrors_the_log_to_stderr_redacted(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def noisy(*_args: object, **_kwargs: object) -> int:
        logging.getLogger("dexter.test").debug("calling with key %s", KEY)
        return 0

    monkeypatch.setattr(ask, "run_ask", noisy)
    assert main(["--debug", "ask", "hi"]) == 0
    err = capsys.readouterr().err
    assert "calling with key [redacted]" in err
    assert KEY not in err


def test_read_only_command_creates_nothing(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["doctor"])
    main(["sessions", "list"])
    capsys.readouterr()
    assert not home.exists()
