"""simonw/llm-style commands: `keys`, `models`, `config`, `completion`, `--no-color`."""

from __future__ import annotations

import io
import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from dexter.cli.main import main
from dexter.config import load_settings
from dexter.providers import resolve_model
from tests.support.wire_server import WireServer, json_reply
from tests.test_cli import PROVIDER_ENV


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "100")
    return tmp_path / "home"


def piped(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))


def test_stored_key_is_private_never_echoed_and_used_after_env(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    piped(monkeypatch, "sk-stored-abcdef\n")
    assert main(["keys", "set", "openai"]) == 0
    path = home / "keys.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert main(["keys", "list"]) == 0
    assert main(["keys", "path"]) == 0
    out = capsys.readouterr().out
    assert "sk-stored" not in out and str(path) in out and "OPENAI_API_KEY" in out

    resolved = resolve_model("openai:gpt-test", load_settings())
    assert (
        resolved.api_key == "sk-stored-abcdef" and resolved.api_key_source == "keys OPENAI_API_KEY"
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-999")
    assert resolve_model("openai:gpt-test", load_settings()).api_key == "sk-from-env-999"

    assert main(["keys", "rm", "OPENAI_API_KEY"]) == 0
    monkeypatch.delenv("OPENAI_API_KEY")
    assert resolve_model("openai:gpt-test", load_settings()).api_key is None


def test_unknown_key_name_suggests(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["keys", "set", "antropic"]) == 2
    assert "Did you mean 'anthropic'?" in capsys.readouterr().err


def test_models_lists_known_and_what_a_local_server_serves(
    home: Path,
    wire_server: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123456")
    monkeypatch.setenv("OPENAI_BASE_URL", wire_server.url + "/v1")
    wire_server.push(json_reply({"object": "list", "data": [{"id": "qwen3-8b"}]}))
    assert main(["models", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    specs = {row["spec"]: row for row in rows}
    assert specs["openai:qwen3-8b"]["source"] == "served"
    assert any(row["source"] == "known" and row["default"] for row in rows)
    assert wire_server.requests[0].path == "/v1/models"
    assert wire_server.requests[0].headers["authorization"] == "Bearer sk-test-123456"


def test_models_default_saves_and_shows(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "default", "anthropic:claude-sonnet-4-6"]) == 0
    assert main(["models", "default"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("anthropic:claude-sonnet-4-6")
    assert main(["models", "default", "nope:x"]) == 2


def test_config_path_show_hides_secrets(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home.mkdir()
    settings = {"model": "openai:gpt-x", "providers": {"acme": {"apiKey": "sk-secret-1"}}}
    (home / "settings.json").write_text(json.dumps(settings))
    assert main(["config", "path"]) == 0
    assert capsys.readouterr().out.strip() == str(home / "settings.json")
    assert main(["config", "show", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["model"] == "openai:gpt-x" and shown["providers"]["acme"]["apiKey"] == "(set)"


def test_config_edit_checks_the_result(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    editor = home.parent / "editor.sh"
    editor.write_text('#!/bin/sh\nprintf \'{"model": \' > "$1"\n')
    editor.chmod(0o755)
    monkeypatch.setenv("VISUAL", str(editor))
    assert main(["config", "edit"]) == 2
    assert "config edit" in capsys.readouterr().err


def test_bash_completion_completes_commands_and_actions(home: Path) -> None:
    script = subprocess.run(
        [sys.executable, "-m", "dexter.cli.main", "completion", "bash"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    probe = (
        script
        + '\nCOMP_WORDS=(dexter data in); COMP_CWORD=2; _dexter_complete; echo "${COMPREPLY[@]}"'
        + '\nCOMP_WORDS=(dexter ses); COMP_CWORD=1; _dexter_complete; echo "${COMPREPLY[@]}"'
    )
    lines = subprocess.run(
        ["bash", "-c", probe], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert lines == ["income insider-trades", "sessions"]


def test_no_color_flag_sets_no_color(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert main(["--no-color", "sessions", "list"]) == 0
    import os

    assert os.environ.get("NO_COLOR") == "1"
    monkeypatch.delenv("NO_COLOR")


def test_doctor_json_and_a_corrupt_database(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123456")
    assert main(["doctor", "--json", "--model", "openai:gpt-test"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["model"]["ready"] and report["database"]["ok"]
    assert "sk-test" not in json.dumps(report)
    assert not home.exists()  # a read-only command creates nothing

    home.mkdir()
    (home / "dexter.db").write_bytes(b"this is not a database" * 100)
    assert main(["doctor", "--json", "--model", "openai:gpt-test"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert not report["ok"] and "move it aside" in report["database"]["state"]
    assert main(["doctor", "--model", "openai:gpt-test"]) == 1
    assert "✗" in capsys.readouterr().out


def test_doctor_does_not_state_a_window_it_only_assumes(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123456")
    assert main(["doctor", "--json", "--model", "openai:mystery-model-7b"]) == 0
    assert json.loads(capsys.readouterr().out)["model"]["context_window_known"] is False
    assert main(["doctor", "--model", "openai:mystery-model-7b"]) == 0
    assert "context window not known for mystery-model-7b" in " ".join(
        capsys.readouterr().out.split()
    )
    assert main(["doctor", "--json", "--model", "openai:gpt-5.6-sol"]) == 0
    assert json.loads(capsys.readouterr().out)["model"]["context_window_known"] is True
