"""`dexter sessions list|show` and `dexter usage`, through their real argument parser."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from dexter.cli.main import _add_store_parsers
from dexter.cli.sessions_command import run_sessions_command
from dexter.cli.usage_command import run_usage_command
from dexter.config import load_settings
from dexter.models.types import Usage
from dexter.store import Ledger, SessionStore, open_store


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="dexter")
    _add_store_parsers(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "160")
    monkeypatch.delenv("DEXTER_MODEL", raising=False)
    return tmp_path / "home"


def run(argv: list[str]) -> int:
    args = parse(argv)
    return int(args.store_run(args))


def seed(home: Path) -> tuple[str, str]:
    with open_store(home) as store:
        sessions, ledger = SessionStore(store), Ledger(store)
        first = sessions.create("openai:gpt-4.1")
        sessions.add_turn(
            first, "r1", "How did Apple's gross margin change?", "It rose to 46.2% in FY2024.",
            "answered", 3, 4200.0, Usage(1300, 150),
        )  # fmt: skip
        sessions.set_constraints(first, ["report in EUR"])
        at = datetime(2025, 3, 1, tzinfo=UTC)
        ledger.record_model_call(first, "r1", "openai", "gpt-4.1", "main", Usage(1000, 100), at=at)
        ledger.record_model_call(
            first, "r1", "openai", "gpt-4.1-mini", "router", Usage(300, 50), tool="fin", at=at
        )
        ledger.record_model_call(
            first, "r1", "openai", "gpt-4.1", "main", None, ok=False, error="boom", at=at
        )
        ledger.record_tool_call(first, "r1", "fin", {"ticker": "AAPL"}, at=at)
        second = sessions.create("acme:mystery")
        sessions.add_turn(second, "r2", "Second question", "", "error", 1, 10.0)
        ledger.record_model_call(second, "r2", "acme", "mystery", "main", Usage(10, 1))
    return first, second


def test_empty_home_creates_nothing(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["sessions", "list"]) == 0
    assert "No sessions yet" in capsys.readouterr().out
    assert run(["sessions", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert run(["usage", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == []
    assert run(["sessions", "show", "abc"]) == 2
    assert not (home / "dexter.db").exists()


def test_sessions_list(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = seed(home)
    assert run(["sessions", "list"]) == 0
    out = capsys.readouterr().out
    # Shortest unique prefixes (two random ids share no 4-character prefix but by chance).
    assert first[:4] in out and second[:4] in out
    assert "How did Apple's gross margin change?" in out
    assert "1,450" in out  # ledger tokens: 1000+100+300+50+0
    assert "—" in out  # the unpriced model's cost is unknown, not zero

    assert run(["sessions", "list", "--limit", "1", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [row["id"] for row in rows] == [second]
    assert rows[0]["cost_usd"] is None and rows[0]["turns"] == 1


def test_sessions_show(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, _ = seed(home)
    assert run(["sessions", "show", first[:6]]) == 0
    out = capsys.readouterr().out
    assert first in out
    assert "## 1. How did Apple's gross margin change?" in out  # piped: the Markdown itself
    assert "It rose to 46.2% in FY2024." in out and "3 rounds" in out
    assert "report in EUR" in out
    assert "3 model calls (1 failed)" in out

    assert run(["sessions", "show", first, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["id"] == first
    assert data["turns"][0]["usage"]["input_tokens"] == 1300
    assert data["usage"]["failed_calls"] == 1 and data["usage"]["tool_calls"] == 1


def test_unknown_session_exits_2_with_suggestions(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = seed(home)
    assert run(["sessions", "show", "zzzz"]) == 2
    err = capsys.readouterr().err
    assert "No session 'zzzz'" in err and first in err and second in err
    assert run(["usage", "--session", "zzzz"]) == 2


def test_usage_table_and_totals(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, _ = seed(home)
    assert run(["usage"]) == 0
    out = capsys.readouterr().out
    assert "Usage by phase" in out
    assert "main" in out and "router" in out
    assert "Total" in out and "4 model calls (1 failed)" in out
    assert "no known price" in out

    assert run(["usage", "--session", first[:5], "--by", "model"]) == 0
    out = capsys.readouterr().out
    assert "openai:gpt-4.1-mini" in out and "acme:mystery" not in out
    assert "Costs are estimates" in out


@pytest.mark.parametrize("by", ["model", "tool", "phase", "day", "session"])
def test_usage_json(home: Path, capsys: pytest.CaptureFixture[str], by: str) -> None:
    seed(home)
    assert run(["usage", "--by", by, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["by"] == by
    assert data["totals"]["calls"] == 4
    assert sum(row["input_tokens"] for row in data["rows"]) == 1310


def test_run_functions_accept_settings_and_console(home: Path) -> None:
    first, _ = seed(home)
    buffer = StringIO()
    console = Console(file=buffer, width=120)
    args = argparse.Namespace(session=first, by="tool", json=False)
    assert run_usage_command(args, settings=load_settings(), console=console) == 0
    assert "fin" in buffer.getvalue() and "Tool calls" in buffer.getvalue()
    args = argparse.Namespace(sessions_command="list", limit=5, json=False)
    assert run_sessions_command(args, settings=load_settings(), console=console) == 0
    assert first in buffer.getvalue()
