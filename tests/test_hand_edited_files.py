"""Files a person edits by hand (gateway.json, HEARTBEAT.md, MEMORY.md, keys.json, .env, SOUL.md,
the pairing list) saved in another encoding or broken: one line that names the file and says
what to do, exit 2, the file left as it was; never "unexpected error"."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from dexter.agent.prompts import load_rules, load_soul
from dexter.cli.main import main
from dexter.cli.open_runtime import open_runtime
from dexter.tools.base import ToolContext
from dexter.tools.invoke import run_tool
from dexter.userfiles import UnreadableFile

LATIN1 = "Bénéfice net: 12 M€ — à surveiller\n".encode("cp1252")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DEXTER_EMBEDDINGS", "none")
    (tmp_path / "home" / "memory").mkdir(parents=True)
    return tmp_path / "home"


def said_plainly(capsys: pytest.CaptureFixture[str], path: Path) -> str:
    err = capsys.readouterr().err
    assert str(path) in err, err
    assert "unexpected error" not in err and "Traceback" not in err
    return err


@pytest.mark.parametrize(
    ("relative", "argv"),
    [
        ("gateway.json", ["gateway", "status"]),
        ("gateway.json", ["gateway", "run"]),
        ("HEARTBEAT.md", ["heartbeat", "show"]),
        ("memory/MEMORY.md", ["memory", "search", "net"]),
        ("memory/MEMORY.md", ["memory", "add", "Prefers EUR figures"]),
        ("memory/2026-12-01.md", ["memory", "index"]),
        ("gateway/pairing.json", ["gateway", "pair", "list"]),
    ],
)
def test_a_file_in_another_encoding_is_named_and_left_alone(
    home: Path, capsys: pytest.CaptureFixture[str], relative: str, argv: list[str]
) -> None:
    path = home / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"# notes\n" + LATIN1)
    assert main(argv) == 2
    err = said_plainly(capsys, path)
    assert "is not valid UTF-8" in err and "Save it as UTF-8" in err
    assert path.read_bytes() == b"# notes\n" + LATIN1


@pytest.mark.parametrize("content", [b'{"OPENAI_API_KEY": "sk-', LATIN1])
def test_a_damaged_keys_file_stops_keys_set_with_what_to_do(
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    content: bytes,
) -> None:
    keys = home / "keys.json"
    keys.write_bytes(content)
    monkeypatch.setattr(sys, "stdin", io.StringIO("sk-ant-api03-realistic-key-000000\n"))
    assert main(["keys", "set", "anthropic"]) == 2
    err = said_plainly(capsys, keys)
    assert "move it aside" in err and "dexter keys set" in err
    assert keys.read_bytes() == content
    # Other commands still work: a damaged keys file only hides the keys stored in it.
    assert main(["cron", "list"]) == 0


def test_an_env_file_in_another_encoding_is_named(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = Path.cwd() / ".env"
    env.write_bytes(b"NOTE=" + LATIN1)
    assert main(["cron", "list"]) == 2
    assert "is not valid UTF-8" in said_plainly(capsys, env)


def test_voice_and_rules_files_in_another_encoding_are_said_not_skipped(home: Path) -> None:
    for name, load in (("SOUL.md", load_soul), ("RULES.md", load_rules)):
        (home / name).write_bytes(LATIN1)
        with pytest.raises(UnreadableFile, match=name):
            load(home)


async def test_a_tool_reading_such_a_file_tells_the_model_what_the_person_would_read(
    home: Path,
) -> None:
    from dexter.config import load_settings
    from dexter.runtime import CLI, AgentSpec

    (home / "HEARTBEAT.md").write_bytes(LATIN1)
    runtime = open_runtime(load_settings())
    try:
        tool = runtime.tools(AgentSpec(channel=CLI)).get("heartbeat")
        assert tool is not None
        args = tool.Args.model_validate({"action": "view"})
        outcome = await run_tool(tool, args, ToolContext())
    finally:
        runtime.close_local()
    assert outcome.error is not None and "HEARTBEAT.md is not valid UTF-8" in outcome.error
    assert "unexpectedly" not in outcome.error
