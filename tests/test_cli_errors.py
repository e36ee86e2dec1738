"""Failures a new user hit end in one line and a documented exit code, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dexter.cli.main import EXIT_BROKEN_PIPE, main
from tests.support.sec_mirror import Mirror, MirrorServer


@pytest.fixture
def unwritable_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # /sys refuses new directories even to root, which a chmod would not.
    home = Path("/sys/dexter-test-home")
    try:
        home.mkdir()
    except OSError:
        pass
    else:
        home.rmdir()
        pytest.skip("no read-only file system to point DEXTER_HOME at")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEXTER_HOME", str(home))
    return home


@pytest.fixture
def sec(monkeypatch: pytest.MonkeyPatch) -> Iterator[MirrorServer]:
    monkeypatch.delenv("FINANCIAL_DATASETS_API_KEY", raising=False)
    monkeypatch.setenv("COLUMNS", "100")
    with MirrorServer(Mirror()) as server:
        for key, value in server.env().items():
            monkeypatch.setenv(key, value)
        yield server


def test_unwritable_cache_never_stops_a_data_command(
    unwritable_home: Path, sec: MirrorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "income", "AAPL", "--limit", "1"]) == 0
    captured = capsys.readouterr()
    assert "416,161" in captured.out and captured.err == ""


@pytest.mark.parametrize(
    "argv", [["memory", "add", "a fact"], ["permissions", "allow", "Bash(ls:*)"]]
)
def test_unwritable_home_is_one_line_and_exit_2(
    unwritable_home: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1
    assert str(unwritable_home) in err and "DEXTER_HOME" in err


def test_unwritable_settings_folder_names_the_settings_file_not_a_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # /sys exists but refuses new files even to root: the folder is there, writing into it fails.
    try:
        os.close(os.open("/sys/.dexter-probe", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError:
        pass
    else:
        os.unlink("/sys/.dexter-probe")
        pytest.skip("no read-only file system to point DEXTER_HOME at")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEXTER_HOME", "/sys")
    assert main(["models", "default", "openai:gpt-5.6-sol"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "(/sys/settings.json): Permission denied" in err and ".tmp" not in err


@pytest.mark.parametrize("argv", [["ask", "caf\udce9"], ["memory", "add", "\udcff\udcfe"]])
def test_non_utf8_arguments_are_refused_in_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
) -> None:
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / "home"))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "not valid UTF-8" in err and err.count("\n") == 1
    assert not (tmp_path / "home").exists()


def test_non_utf8_question_on_stdin_names_the_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / "home"))
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"caf\xe9?")))
    assert main(["ask"]) == 2
    err = capsys.readouterr().err
    # "(byte 3)" read as the value of a byte; the value and where it is are both said.
    assert "not valid UTF-8 (byte 0xe9 at offset 3)" in err and err.count("\n") == 1


def test_closed_pipe_ends_quietly_with_141(sec: MirrorServer, tmp_path: Path) -> None:
    env = {**os.environ, "DEXTER_HOME": str(tmp_path / "home")}
    script = (
        f"{sys.executable} -m dexter.cli.main data filings AAPL --json --limit 300 | head -c 10"
        ' >/dev/null; echo "status=${PIPESTATUS[0]}" >&2'
    )
    done = subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, check=False
    )
    assert f"status={EXIT_BROKEN_PIPE}" in done.stderr
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr


def test_a_transposed_ticker_suggests_the_company_first(
    sec: MirrorServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / "home"))
    assert main(["data", "income", "APPL"]) == 2
    assert "Did you mean: AAPL (Apple Inc.)" in capsys.readouterr().err


def test_the_documented_placeholder_user_agent_is_refused(
    sec: MirrorServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DEXTER_SEC_USER_AGENT", "Your Name you@example.com")
    assert main(["data", "income", "AAPL"]) == 2
    err = capsys.readouterr().err
    assert "example from the documentation" in err and not sec.mirror.requests


async def test_insider_trades_say_when_some_forms_failed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import argparse

    from rich.console import Console

    from dexter.cli.data_command import _dispatch
    from dexter.cli.progress import Waiting
    from dexter.data.models import Company, InsiderTrade, InsiderTrades

    class Router:
        async def company(self, query: str) -> Company:
            return Company(ticker="AAPL", cik="0000320193", name="Apple Inc.")

        async def insider_trades(self, ticker: str, *, limit: int) -> InsiderTrades:
            trade = InsiderTrade(ticker="AAPL", name="Cook Timothy", transaction_shares=1000)
            return InsiderTrades([trade], ["SEC EDGAR has nothing at …/form4.xml (HTTP 404)."])

    args = argparse.Namespace(
        data_command="insider-trades", ticker="AAPL", limit=5, json=False, csv=False
    )
    console = Console(width=100)
    # What was read is shown, but the exit status says the answer is partial.
    assert await _dispatch(args, Router(), console, Waiting(console)) == 1  # type: ignore[arg-type]
    captured = capsys.readouterr()
    assert "Cook Timothy" in captured.out and "1,000" in captured.out
    assert "1 ownership filing(s) (Form 4 or 5) could not be read" in captured.err
    assert "HTTP 404" in captured.err


def test_memory_commands_honour_memory_off_and_search_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("DEXTER_HOME", str(home))
    monkeypatch.setenv("DEXTER_EMBEDDINGS", "none")
    assert main(["memory", "search", "apple", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["results"] == []
    assert not home.exists()
    monkeypatch.setenv("DEXTER_MEMORY", "off")
    assert main(["memory", "add", "a fact"]) == 2
    assert "memory is off" in capsys.readouterr().err and not home.exists()
