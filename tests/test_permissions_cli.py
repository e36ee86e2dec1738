from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import pytest

from dexter.cli.permissions_command import add_permissions_parser, run_permissions_command


def run(tmp_path: Path, *argv: str, stdin: io.StringIO | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dexter")
    commands = parser.add_subparsers(dest="command")
    add_permissions_parser(commands)
    args = parser.parse_args(["permissions", *argv])
    (tmp_path / ".dexter").mkdir(exist_ok=True)  # a project home, found from the working dir
    return run_permissions_command(args, cwd=tmp_path, environ={}, stdin=stdin)


def settings(tmp_path: Path) -> dict[str, object]:
    data = json.loads((tmp_path / ".dexter" / "settings.json").read_text())
    assert isinstance(data, dict)
    return data


def test_allow_deny_ask_list_remove_reset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(tmp_path, "allow", "Bash(git log:*)") == 0
    assert run(tmp_path, "allow", "Bash(git", "log:*)") == 0  # unquoted words are joined
    assert run(tmp_path, "deny", "WebFetch(domain:evil.com)") == 0
    assert run(tmp_path, "ask", "Bash(npm", "publish)") == 0
    perms = settings(tmp_path)["permissions"]
    assert perms == {
        "allow": ["Bash(git log:*)"],
        "deny": ["WebFetch(domain:evil.com)"],
        "ask": ["Bash(npm publish)"],
    }
    capsys.readouterr()
    assert run(tmp_path, "list") == 0
    out = capsys.readouterr().out
    assert "Bash(git log:*)" in out and "WebFetch(domain:evil.com)" in out
    assert "other shell commands: ask" in out
    assert run(tmp_path, "list", "--json") == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["allow"] == ["Bash(git log:*)"] and listed["defaultBashDecision"] == "ask"

    assert run(tmp_path, "remove", "Bash(npm publish)") == 0
    assert run(tmp_path, "remove", "Bash(npm publish)") == 1
    assert run(tmp_path, "reset", stdin=io.StringIO("y\n")) == 2  # not a terminal: needs --yes
    assert run(tmp_path, "reset", "--yes") == 0
    assert "permissions" not in settings(tmp_path)


def test_invalid_rule_exits_2_with_grammar(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(tmp_path, "allow", "git status") == 2
    err = capsys.readouterr().err
    assert "Tool(pattern)" in err and "Bash(npm run test:*)" in err
    assert not (tmp_path / ".dexter" / "settings.json").exists()


def test_corrupt_settings_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / ".dexter" / "settings.json"
    path.parent.mkdir()
    path.write_text('{"model": ')
    assert run(tmp_path, "allow", "Bash(ls)") == 2
    assert "not valid JSON" in capsys.readouterr().err
    assert path.read_text() == '{"model": '
    assert run(tmp_path, "list") == 2


def test_reset_confirms_on_a_terminal(tmp_path: Path) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert run(tmp_path, "allow", "Bash(ls)") == 0
    assert run(tmp_path, "reset", stdin=Tty("n\n")) == 1
    assert settings(tmp_path)["permissions"]
    assert run(tmp_path, "reset", stdin=Tty("y\n")) == 0
    assert "permissions" not in settings(tmp_path)


def test_explain_says_why_and_which_sandbox(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(tmp_path, "explain", "git log --oneline") == 0
    out = capsys.readouterr().out
    assert "Decision: allow" in out and "Runs:" in out
    assert ("read-only sandbox" in out) or ("no sandbox" in out)
    assert run(tmp_path, "explain", "git grep -iOrm x") == 0
    out = capsys.readouterr().out
    assert "Decision: ask" in out and "`git grep -O`" in out
    assert run(tmp_path, "explain", "--json", "cat .env") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["decision"] == "deny" and "secret" in report["reason"]
    assert report["sandbox"] == "never runs"
