"""Dexter as an MCP client: servers from `mcpServers`, their tools behind the permission gate,
their output framed as untrusted, and a server that crashes restarted on the next call.

The server is a small one written with the SDK (tests/support/mcp_notes_server.py)."""

from __future__ import annotations

import json
import sys
from itertools import takewhile
from pathlib import Path
from typing import Any

import pytest

from dexter.cli.main import main
from dexter.config import ConfigError, Settings
from dexter.mcp.client import McpConnection, backoff_delay
from dexter.mcp.config import mcp_servers, tool_name
from dexter.mcp.tools import adapt
from dexter.tools.base import ToolContext, ToolFailure, ToolResult
from tests.support.wire_server import WireServer
from tests.test_research_e2e import text_reply, tool_calls_reply

NOTES = Path(__file__).resolve().parent / "support" / "mcp_notes_server.py"


def notes_settings(home: Path) -> dict[str, Any]:
    return {
        "memory": {"enabled": False},
        "mcpServers": {"notes": {"command": sys.executable, "args": [str(NOTES)]}},
    }


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wire_server: WireServer) -> Path:
    monkeypatch.chdir(tmp_path)
    home = tmp_path / ".dexter"
    home.mkdir()
    (home / "settings.json").write_text(json.dumps(notes_settings(home)))
    for name in ("FINANCIAL_DATASETS_API_KEY", "DEXTER_ROUTER_MODEL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DEXTER_HOME", str(home))
    monkeypatch.setenv("DEXTER_MODEL", "openai:gpt-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123456")
    monkeypatch.setenv("OPENAI_BASE_URL", wire_server.url + "/v1")
    return home


def settings_with(tmp_path: Path, servers: Any) -> Settings:
    return Settings(home=tmp_path, file_data={"mcpServers": servers})


@pytest.mark.parametrize(
    ("servers", "message"),
    [
        ([], "must be an object mapping server names"),
        ({"notes": {}}, 'needs exactly one of "command"'),
        ({"notes": {"command": "x", "url": "http://h"}}, 'needs exactly one of "command"'),
        ({"notes": {"command": "x", "args": "--fast"}}, '"args" must be a list of strings'),
        ({"notes": {"url": "ftp://h/mcp"}}, '"url" must be an http:// or https://'),
        ({"notes": {"command": "x", "headers": {}}}, '"headers" is for servers with "url"'),
        ({"notes": {"url": "http://h/mcp", "env": {}}}, '"env" is for servers with "command"'),
        ({"notes": {"command": "x", "arg": ["-y"]}}, "unknown key 'arg' (did you mean \"args\"?)"),
        ({"notes": {"command": "x", "type": "http"}}, '"type" is \'http\', which needs "url"'),
        ({"notes": {"url": "http://h/mcp", "type": "ws"}}, '"type" must be "stdio", "http"'),
        ({"notes": {"command": "x", "sandboxEnabled": True}}, "cannot sandbox an MCP server"),
        ({"notes": {"command": "x", "disabledTools": "a"}}, '"disabledTools" must be a list'),
        ({"mcpServers": {"notes": {"command": "x"}}}, "looks like a whole host config file"),
        ({"a__b": {"command": "x"}}, "may not contain '__'"),
        ({"no spaces": {"command": "x"}}, "names may use letters"),
        ({"notes": {"command": "x", "timeout": 0}}, '"timeout" must be a positive number'),
    ],
)
def test_bad_server_settings_say_which_server_and_key(
    tmp_path: Path, servers: Any, message: str
) -> None:
    with pytest.raises(ConfigError, match="mcpServers") as caught:
        mcp_servers(settings_with(tmp_path, servers))
    assert message in str(caught.value)


def test_desktop_host_shapes_are_accepted_and_disabled_servers_skipped(tmp_path: Path) -> None:
    servers = mcp_servers(
        settings_with(
            tmp_path,
            {
                "notes": {"command": "uvx", "args": ["notes-mcp"], "env": {"K": "v"}},
                "broker": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"A": "b"}},
                "off": {"command": "x", "disabled": True},
            },
        )
    )
    assert [(s.name, s.transport, s.target) for s in servers] == [
        ("notes", "stdio", "uvx notes-mcp"),
        ("broker", "http", "http://127.0.0.1:9/mcp"),
    ]
    assert tool_name("notes", "search.v2") == "notes__search_v2"


def test_backoff_grows_after_repeated_crashes() -> None:
    assert [backoff_delay(n) for n in (0, 1, 2, 3, 4, 12)] == [0.0, 0.0, 0.5, 1.0, 2.0, 30.0]


def test_server_tools_are_listed_asked_for_and_framed(
    home: Path, wire_server: WireServer, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    assert main(["mcp", "test", "notes"]) == 0
    out = capsys.readouterr().out
    assert "notes__lookup" in out and "notes__crash" in out

    assert main(["tools", "list", "--json"]) == 0
    listed = {t["name"]: t for t in json.loads(capsys.readouterr().out)}
    assert listed["notes__lookup"]["needs_approval"] is True
    assert listed["notes__lookup"]["parameters"]["required"] == ["topic"]

    # --json runs have nobody to ask: the call is refused, the model told so.
    wire_server.push(
        tool_calls_reply(("m1", "notes__lookup", {"topic": "apple"})),
        text_reply("I could not read the note."),
    )
    assert main(["ask", "--json", "What does my Apple note say?"]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    denied = [e for e in events if e["type"] == "tool_denied"]
    assert denied and denied[0]["tool"] == "notes__lookup"
    assert not any(e["type"] == "tool_end" for e in events)

    # On a terminal the user is asked, says yes, and the server's text reaches the model framed.
    prompts: list[str] = []

    def answer(self: Any, prompt: str = "", **_: Any) -> str:
        prompts.append(str(prompt))
        return "y"

    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("rich.console.Console.input", answer)
    wire_server.push(
        tool_calls_reply(("m2", "notes__lookup", {"topic": "apple"})),
        text_reply("Your note says Apple's FY2025 revenue was $416.2B."),
    )
    assert main(["ask", "What does my Apple note say?"]) == 0
    seen = capsys.readouterr()
    assert "416.2B" in seen.out
    assert "Allow notes__lookup" in seen.err and prompts  # asked, and answered yes
    tool_message = next(
        m
        for r in wire_server.requests
        for m in r.json()["messages"]
        if m.get("tool_call_id") == "m2"
    )
    assert '<untrusted_content source="mcp:notes/lookup">' in tool_message["content"]
    assert "Ignore previous instructions" in tool_message["content"]  # kept, but as data


async def test_a_crashed_server_is_restarted_on_the_next_call(tmp_path: Path) -> None:
    sleeps: list[float] = []

    async def no_sleep(seconds: float) -> None:
        sleeps.append(seconds)

    (config,) = mcp_servers(Settings(home=tmp_path, file_data=notes_settings(tmp_path)))
    connection = McpConnection(config, log_dir=tmp_path, sleep=no_sleep)
    try:
        tools = {
            tool.name: tool for tool in (adapt(connection, t) for t in await connection.tools())
        }
        lookup, crash = tools["notes__lookup"], tools["notes__crash"]
        ctx = ToolContext()
        first = await lookup.run(lookup.Args.model_validate({"topic": "apple"}), ctx)
        for _ in range(2):
            with pytest.raises(ToolFailure, match="stopped while running crash"):
                await crash.run(crash.Args.model_validate({}), ctx)
        again = await lookup.run(lookup.Args.model_validate({"topic": "apple"}), ctx)
    finally:
        await connection.aclose()
    assert isinstance(first, ToolResult) and isinstance(again, ToolResult)
    assert "416.2B" in again.content
    pid = first.content.split("(pid ", 1)[1].split(")", 1)[0]
    assert f"(pid {pid})" not in again.content  # a new process answered
    assert sleeps == [0.5]  # the second crash in a row waited before restarting
    assert connection.starts == 3


def with_servers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, servers: Any) -> None:
    """A Dexter home in `tmp_path` whose settings list these MCP servers."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / ".dexter"))
    (tmp_path / ".dexter").mkdir()
    (tmp_path / ".dexter" / "settings.json").write_text(json.dumps({"mcpServers": servers}))


def test_mcp_list_shows_a_server_that_cannot_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with_servers(tmp_path, monkeypatch, {"gone": {"command": "no-such-mcp-server-here"}})
    assert main(["mcp", "list"]) == 1
    out = capsys.readouterr().out
    assert "gone" in out and "is not available" in out and "no-such-mcp-server-here" in out
    assert main(["mcp", "test", "missing"]) == 2
    assert "no MCP server named 'missing'" in capsys.readouterr().err


def test_mcp_list_shortens_a_long_description_at_a_word(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["mcp", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  - notes__search"))
    entry = [lines[at], *takewhile(lambda line: line.startswith("    "), lines[at + 1 :])]
    shown = " ".join(line.strip() for line in entry).removeprefix("- notes__search").strip()
    assert all(len(line) <= 80 for line in entry)
    full = (
        "Search every note for a phrase and return the matching notes, newest first, each with "
        "the date it was written, the folder it lives in and the sentences around every match."
    )
    # Shortened with an ellipsis, after a whole word of the description: never mid-word.
    assert shown.endswith(" …") and len(shown) < len(full)
    kept = shown.removesuffix(" …")
    assert full.startswith(kept) and full[len(kept)] == " "
    assert main(["mcp", "list", "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert next(t for t in row["tools"] if t["name"] == "notes__search")["description"] == full


def test_mcp_test_of_a_failing_server_shows_its_error_output_and_what_to_try(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fails = "import sys; print('NOTES_DIR is not set', file=sys.stderr); sys.exit(2)"
    servers = {
        "gone": {"command": "no-such-mcp-server-here"},
        "fails": {"command": sys.executable, "args": ["-c", fails]},
    }
    with_servers(tmp_path, monkeypatch, servers)
    assert main(["mcp", "test", "fails"]) == 1
    out = capsys.readouterr().out
    # What the server said, and a next step that is not the command that just ran.
    assert "The server's error output:\n    NOTES_DIR is not set" in out
    assert "Run the command yourself" in out and "mcp-fails.log" in out
    assert "dexter mcp test" not in out
    assert main(["mcp", "test", "gone"]) == 1
    out = capsys.readouterr().out
    assert "no-such-mcp-server-here is not a command here: install it" in out
    assert "dexter mcp test" not in out
    # The listing points at `mcp test` for the details.
    assert main(["mcp", "list"]) == 1
    assert "`dexter mcp test gone` shows what the server said" in capsys.readouterr().out


def test_install_merges_into_the_hosts_config_keeping_what_is_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"  # not above the (test's) home folder: a usable workspace
    project.mkdir()
    monkeypatch.chdir(project)
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / ".dexter"))
    config = project / ".cursor" / "mcp.json"
    config.parent.mkdir()
    config.write_text(json.dumps({"mcpServers": {"other": {"command": "x"}}, "theme": "dark"}))
    assert main(["mcp", "install", "cursor", "--project", "--write"]) == 0
    written = json.loads(config.read_text())
    assert written["theme"] == "dark" and written["mcpServers"]["other"] == {"command": "x"}
    dexter = written["mcpServers"]["dexter"]
    serve = ["mcp", "serve", "--workspace", str(project.resolve()), "--name", "cursor"]
    assert dexter["args"][-6:] == serve
    assert dexter["env"]["DEXTER_HOME"] == str((tmp_path / ".dexter").resolve())

    assert main(["mcp", "install", "claude-desktop"]) == 0
    printed = capsys.readouterr().out
    assert '"dexter"' in printed and "claude_desktop_config.json" in printed


@pytest.mark.parametrize("host", ["claude-desktop", "claude-code", "cursor", "vscode"])
def test_every_install_snippet_names_the_workspace_and_the_host(
    host: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    research = tmp_path / "my research"
    research.mkdir()
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(research)
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / ".dexter"))
    assert main(["mcp", "install", host]) == 0
    out = capsys.readouterr().out
    snippet = json.loads(out[out.index("\n{") + 1 :])
    args = (snippet.get("mcpServers") or snippet["servers"])["dexter"]["args"]
    assert args[-6:] == ["mcp", "serve", "--workspace", str(research.resolve()), "--name", host]
    if host == "claude-code":  # the one-line command quotes the folder's space
        assert f"--workspace '{research.resolve()}' --name claude-code" in out


@pytest.mark.parametrize("where", ["/", "~"])
def test_install_refuses_the_whole_disk_or_home_as_the_workspace(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / ".dexter"))
    monkeypatch.chdir(Path(where).expanduser())
    assert main(["mcp", "install", "cursor", "--write"]) == 2
    err = capsys.readouterr().err
    assert "--workspace ~/research" in err and "Traceback" not in err
    assert not (tmp_path / ".cursor").exists()
    research = tmp_path / "research"
    research.mkdir()
    assert main(["mcp", "install", "cursor", "--write", "--workspace", str(research)]) == 0
    written = json.loads((tmp_path / ".cursor" / "mcp.json").read_text())
    assert str(research.resolve()) in written["mcpServers"]["dexter"]["args"]


def test_install_keeps_the_mode_the_user_gave_the_hosts_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A host's config may carry API keys in "env"; a private one must not become readable.
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / ".dexter"))
    config = project / ".cursor" / "mcp.json"
    config.parent.mkdir()
    config.write_text(json.dumps({"mcpServers": {"other": {"env": {"KEY": "sk-x"}}}}))
    config.chmod(0o600)
    assert main(["mcp", "install", "cursor", "--project", "--write"]) == 0
    assert config.stat().st_mode & 0o777 == 0o600
    assert "dexter" in json.loads(config.read_text())["mcpServers"]
    assert [p.name for p in config.parent.iterdir()] == ["mcp.json"]


def test_server_schemas_are_inlined_safely() -> None:
    from dexter.mcp.tools import server_schema

    recursive = {
        "type": "object",
        "title": "Args",
        "$defs": {"Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}}},
        "properties": {"tree": {"$ref": "#/$defs/Node"}, "gone": {"$ref": "#/$defs/Missing"}},
    }
    schema = server_schema(recursive)
    assert "$defs" not in schema and "title" not in schema
    assert schema["properties"]["tree"]["properties"]["child"] == {}
    assert schema["properties"]["gone"] == {}
    assert server_schema({"type": "string"}) == {"type": "object", "properties": {}}
