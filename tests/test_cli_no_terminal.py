"""`dexter` with no command needs a terminal: without one (a pipe, /dev/null, a cron line, a
closed stdin) it says so in one line and exits 2 instead of drawing a full-screen app that
nobody sees and waiting for keys forever."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# A guard against the hang this prevents, not a measure of speed: a loaded machine may take a
# few seconds to start Python, and a hanging session never ends at all.
HANG = 30


def _environment(tmp_path: Path) -> dict[str, str]:
    # A usable provider: before the fix, the session got as far as drawing its screen.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "DEXTER_MODEL"))}
    env |= {
        "DEXTER_HOME": str(tmp_path / "home"),
        "OPENAI_API_KEY": "sk-test-123456",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
    }
    return env


@pytest.mark.parametrize(
    "stdin",
    [
        pytest.param("devnull", id="dexter < /dev/null"),
        pytest.param("pipe", id="echo q | dexter"),
        pytest.param("closed", id="stdin closed"),
    ],
)
def test_no_terminal_is_one_line_and_exit_2(tmp_path: Path, stdin: str) -> None:
    command = [sys.executable, "-m", "dexter"]
    if stdin == "closed":
        command = ["sh", "-c", 'exec "$@" <&-', "sh", *command]
    result = subprocess.run(
        command,
        cwd=tmp_path,
        env=_environment(tmp_path),
        input="q\n" if stdin == "pipe" else None,
        stdin=None if stdin == "pipe" else subprocess.DEVNULL if stdin == "devnull" else None,
        capture_output=True,
        text=True,
        timeout=HANG,
        start_new_session=True,  # no controlling terminal either, as under cron
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert "no terminal for the interactive session" in result.stderr
    assert "dexter ask" in result.stderr
    assert "\x1b" not in result.stderr  # no escape codes from a screen that was never shown
    assert not (tmp_path / "home" / "dexter.db").exists()  # no session was started


def test_resume_without_a_terminal_is_refused_the_same_way(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "dexter", "--resume"],
        cwd=tmp_path,
        env=_environment(tmp_path),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert result.returncode == 2
    assert "no terminal for the interactive session" in result.stderr
