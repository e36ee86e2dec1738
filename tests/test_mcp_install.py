"""`dexter mcp install HOST` prints what each host accepts as it is: Claude Code's own command
(as its parser reads it), and JSON in the shape each host documents."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from dexter.cli.main import main

SEC_AGENT = "Jane Doe jane@example.com"  # the SEC's format always has a space

_STRINGS = {"type": "object", "additionalProperties": {"type": "string"}}
_ARGS = {"type": "array", "items": {"type": "string"}}
_COMMAND = {"type": "string", "minLength": 1}


def _servers_file(key: str, entry: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "required": [key],
        "properties": {key: {"type": "object", "additionalProperties": entry}, **top},
    }


def _stdio_entry(required: list[str], **more: Any) -> dict[str, Any]:
    """A stdio server's entry: command, args and env, plus the keys only this host lists."""
    properties = {"command": _COMMAND, "args": _ARGS, "env": _STRINGS, **more}
    return {
        "type": "object",
        "required": required,
        "additionalProperties": False,
        "properties": properties,
    }


# Each host's documented server entry (the keys it lists for a local, stdio server).
SCHEMAS: dict[str, dict[str, Any]] = {
    # claude_desktop_config.json: command, args, env.
    "claude-desktop": _servers_file("mcpServers", _stdio_entry(["command"])),
    # Claude Code's .mcp.json: what `claude mcp add` writes for a stdio server.
    "claude-code": _servers_file("mcpServers", _stdio_entry(["command"], type={"enum": ["stdio"]})),
    # Cursor's mcp.json, stdio server: type, command, args, env, envFile.
    "cursor": _servers_file(
        "mcpServers",
        _stdio_entry(["type", "command"], type={"const": "stdio"}, envFile={"type": "string"}),
    ),
    # VS Code's mcp.json: "servers" (and optional "inputs"), nothing else; a stdio server needs
    # type and command, and may have args, env, envFile, sandboxEnabled, sandbox.
    "vscode": {
        **_servers_file(
            "servers",
            _stdio_entry(
                ["type", "command"],
                type={"const": "stdio"},
                envFile={"type": "string"},
                sandboxEnabled={"type": "boolean"},
                sandbox={"type": "object"},
            ),
            inputs={"type": "array"},
        ),
        "additionalProperties": False,
    },
}


@pytest.fixture
def research(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "my research"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(folder)
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / ".dexter"))
    monkeypatch.setenv("DEXTER_SEC_USER_AGENT", SEC_AGENT)
    return folder


def printed(out: str) -> tuple[dict[str, Any], list[str] | None]:
    """The JSON snippet, and the one-line command when there is one (parsed as a shell would)."""
    snippet = json.loads(out[out.index("\n{") + 1 :])
    line = next((line for line in out.splitlines() if line.startswith("  ")), None)
    return snippet, shlex.split(line) if line is not None else None


@pytest.mark.parametrize("project", [False, True])
def test_claude_code_gets_the_argv_its_parser_expects(
    project: bool, research: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["mcp", "install", "claude-code", *(["--project"] if project else [])]) == 0
    snippet, argv = printed(capsys.readouterr().out)
    entry = snippet["mcpServers"]["dexter"]
    home = str((research.parent / ".dexter").resolve())
    assert argv == [
        "claude", "mcp", "add", "dexter",
        "--scope", "project" if project else "user",
        "--env", f"DEXTER_HOME={home}",
        "--env", f"DEXTER_SEC_USER_AGENT={SEC_AGENT}",
        "--", entry["command"], *entry["args"],
    ]  # fmt: skip
    # `--env <env...>` takes values until the next option: each is followed by exactly one
    # value and then an option or `--`, so it can never swallow the server's name.
    for index, word in enumerate(argv):
        if word == "--env":
            assert argv[index + 2].startswith("-")
    assert entry["args"][-4:] == ["--workspace", str(research.resolve()), "--name", "claude-code"]


@pytest.mark.parametrize("host", sorted(SCHEMAS))
def test_each_snippet_has_the_shape_its_host_documents(
    host: str, research: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["mcp", "install", host]) == 0
    snippet, _ = printed(capsys.readouterr().out)
    jsonschema.validate(snippet, SCHEMAS[host])
    entry = (snippet.get("mcpServers") or snippet["servers"])["dexter"]
    assert entry["env"]["DEXTER_SEC_USER_AGENT"] == SEC_AGENT


def test_vscode_gets_its_add_mcp_command_and_its_servers_file(
    research: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["mcp", "install", "vscode"]) == 0
    out = capsys.readouterr().out
    snippet, argv = printed(out)
    assert argv is not None and argv[:2] == ["code", "--add-mcp"] and len(argv) == 3
    added = json.loads(argv[2])
    assert added == {"name": "dexter", **snippet["servers"]["dexter"]}
    assert ".config/Code/User/mcp.json" in out

    # --project --write merges into .vscode/mcp.json, keeping the user's servers and inputs.
    config = research / ".vscode" / "mcp.json"
    config.parent.mkdir()
    mine = {"inputs": [{"type": "promptString", "id": "k", "description": "Key"}], "servers": {}}
    mine["servers"] = {"other": {"type": "http", "url": "https://example.com/mcp"}}
    config.write_text(json.dumps(mine))
    assert main(["mcp", "install", "vscode", "--project", "--write"]) == 0
    written = json.loads(config.read_text())
    jsonschema.validate({"servers": {"dexter": written["servers"]["dexter"]}}, SCHEMAS["vscode"])
    assert written["inputs"] == mine["inputs"]
    assert written["servers"]["other"] == mine["servers"]["other"]


def test_a_damaged_host_config_is_named_as_the_hosts_and_left_alone(
    research: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = research / ".cursor" / "mcp.json"
    config.parent.mkdir()
    config.write_text('{"mcpServers": {"other": {"command": "x"},}')
    assert main(["mcp", "install", "cursor", "--project", "--write"]) == 2
    err = capsys.readouterr().err
    assert f"Cursor's config {config} is not valid JSON" in err
    assert "Fix it by hand, then run this again; Dexter did not change it." in err
    # `dexter doctor` checks Dexter's own settings, not a host's file: it is not pointed at.
    assert "doctor" not in err and "Settings file" not in err
    assert config.read_text() == '{"mcpServers": {"other": {"command": "x"},}'
