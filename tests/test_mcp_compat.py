"""Servers pasted from Claude Desktop, Claude Code, Cursor, VS Code, Cline and Roo Code work in
"mcpServers" as they are: known extra keys load (doctor and `mcp list` note the ignored ones),
unknown keys are named the same way by doctor and the commands, `${VAR}` is expanded (and kept
secret), time-outs say so, tools that need MCP tasks are not offered, and servers' progress shows.

The stdio servers are tests/support/mcp_legacy_server.py, a 2025-11-25 server written the way the
TypeScript SDK's servers answer."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from dexter.cli.doctor import run_doctor
from dexter.cli.main import main
from dexter.config import ConfigError, Settings, load_settings
from dexter.mcp.client import McpConnection
from dexter.mcp.config import mcp_servers
from dexter.mcp.tools import ProgressRelay, adapt
from dexter.permissions.secrets import redact
from dexter.tools.base import ToolContext, ToolFailure
from tests.support.wire_server import WireServer
from tests.test_research_e2e import text_reply, tool_calls_reply

LEGACY = str(Path(__file__).resolve().parent / "support" / "mcp_legacy_server.py")


def legacy(**extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [LEGACY], **extra}


# One entry as each host documents it, with the keys it adds.
PASTED: dict[str, Any] = {
    # Claude Desktop: claude_desktop_config.json
    "desktop": legacy(env={"NOTES_DIR": "/tmp/notes"}),
    # Cline: cline_mcp_settings.json ("timeout" in seconds)
    "cline": legacy(disabled=False, autoApprove=["count"], timeout=30, transportType="stdio"),
    # Roo Code: mcp_settings.json
    "roo": legacy(
        type="stdio", alwaysAllow=["count"], watchPaths=["src/**"], disabledTools=["env"]
    ),
    # Cursor: .cursor/mcp.json, with ${env:…} and ${workspaceFolder}
    "cursor": legacy(
        type="stdio", envFile="${workspaceFolder}/mcp.env", env={"REGION": "${env:REGION}"}
    ),
    # VS Code: a "servers" entry of .vscode/mcp.json
    "vscode": legacy(type="stdio", cwd="${workspaceFolder}", dev={"watch": "**/*.py"}),
    # Claude Code: .mcp.json ("timeout" in milliseconds, ${VAR:-default})
    "claude": legacy(type="stdio", env={"MODE": "${LEGACY_MODE:-fast}"}, timeout=120000),
    "off": {"command": "never-started", "disabled": True, "autoApprove": []},
}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wire_server: WireServer) -> Path:
    """A project folder with its own .dexter home, a model on the fake wire server, and the
    variables the pasted entries use."""
    folder = tmp_path / "project"
    (folder / ".dexter").mkdir(parents=True)
    monkeypatch.chdir(folder)
    monkeypatch.setenv("DEXTER_HOME", str(folder / ".dexter"))
    monkeypatch.setenv("DEXTER_MODEL", "openai:gpt-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123456")
    monkeypatch.setenv("OPENAI_BASE_URL", wire_server.url + "/v1")
    monkeypatch.setenv("REGION", "eu-west-1")
    (folder / "mcp.env").write_text("FROM_FILE=yes\nFILE_SECRET_TOKEN=tok-from-file-9f8e7d6c\n")
    return folder


def write_settings(project: Path, servers: Any, **extra: Any) -> None:
    data = {"memory": {"enabled": False}, "mcpServers": servers, **extra}
    (project / ".dexter" / "settings.json").write_text(json.dumps(data))


def doctor_output(project: Path) -> tuple[int, str]:
    buffer = io.StringIO()
    code = run_doctor(load_settings(cwd=project), Console(file=buffer, width=400))
    return code, buffer.getvalue()


def test_pasted_host_entries_load_and_doctor_notes_the_ignored_keys(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_settings(project, PASTED)
    assert main(["tools", "list", "--json"]) == 0
    names = {tool["name"] for tool in json.loads(capsys.readouterr().out)}
    for server in ("desktop", "cline", "roo", "cursor", "vscode", "claude"):
        assert f"{server}__count" in names
    assert "roo__env" not in names and "cursor__env" in names  # Roo's "disabledTools"
    assert not any(name.startswith("off__") for name in names)

    code, report = doctor_output(project)
    assert code == 0 and "✓ parses" in report
    assert "MCP servers  desktop, cline, roo, cursor, vscode, claude (disabled: off)" in report
    assert "server 'cline': \"autoApprove\" ignored (Dexter asks before every MCP tool" in report
    assert "`dexter permissions allow cline__TOOL`" in report
    assert "server 'roo': \"alwaysAllow\" ignored" in report
    assert "server 'vscode': \"dev\" ignored (VS Code's development mode" in report
    assert '"timeout" 120000 read as milliseconds (120 s)' in report

    assert main(["mcp", "list"]) == 0
    listed = capsys.readouterr().out
    assert '! "watchPaths" ignored' in listed
    assert 'roo__env  not offered: turned off in "disabledTools"' in listed


def test_an_unknown_key_is_named_alike_by_doctor_and_the_commands(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_settings(project, {"notes": legacy(comand="npx")})
    assert main(["tools", "list"]) == 2
    refused = capsys.readouterr().err
    named = "unknown key 'comand' (did you mean \"command\"?)"
    assert named in refused and "Traceback" not in refused
    code, report = doctor_output(project)
    assert code == 1
    assert "commands refuse it" in report and "✓ parses" not in report
    assert named in report
    assert main(["doctor", "--json"]) == 1
    doctor = json.loads(capsys.readouterr().out)
    assert not doctor["ok"] and named in doctor["settings"]["errors"][0]


def test_a_pasted_auto_approval_never_lets_a_tool_run_unasked(
    project: Path, wire_server: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    write_settings(project, {"legacy": legacy(autoApprove=["count"], alwaysAllow=["count"])})
    wire_server.push(
        tool_calls_reply(("c1", "legacy__count", {"n": 1})), text_reply("I could not count.")
    )
    assert main(["ask", "--json", "Count to one."]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [e["tool"] for e in events if e["type"] == "tool_denied"] == ["legacy__count"]
    assert not any(e["type"] in ("tool_end", "tool_progress") for e in events)


async def test_variables_are_expanded_and_what_they_hold_stays_secret(
    project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("BROKER", "brk-4f9a8b7c6d5e")  # not named like a key, but sent as one
    (project / ".env").write_text("DOTENV_ONLY=from-dotenv\n")
    write_settings(
        project,
        {
            "local": legacy(
                args=[LEGACY, "--root", "${workspaceFolder}"],
                envFile="mcp.env",
                env={"REGION": "${env:REGION}", "MODE": "${LEGACY_MODE:-fast}"},
            ),
            "broker": {
                "type": "http",
                "url": "http://127.0.0.1:9/${DOTENV_ONLY}",
                "headers": {"Authorization": "Bearer ${BROKER}", "Accept": "application/json"},
            },
        },
    )
    local, broker = mcp_servers(load_settings(cwd=project))
    assert local.args[-1] == str(project)
    assert local.target.endswith("--root ${workspaceFolder}")  # shown as written
    assert broker.url == "http://127.0.0.1:9/from-dotenv"
    assert broker.headers["Authorization"] == "Bearer brk-4f9a8b7c6d5e"

    # What the server process received.
    connection = McpConnection(local, log_dir=tmp_path)
    try:
        names = ["REGION", "MODE", "FROM_FILE", "FILE_SECRET_TOKEN", "OPENAI_API_KEY"]
        shown = ["REGION", "MODE", "FROM_FILE"]
        result = await connection.call("env", {"names": names, "show": shown})
    finally:
        await connection.aclose()
    received = json.loads(getattr(result.content[0], "text", ""))
    assert received == {
        "REGION": "eu-west-1",
        "MODE": "fast",
        "FROM_FILE": "yes",
        "FILE_SECRET_TOKEN": True,
        "OPENAI_API_KEY": False,  # never Dexter's own keys
    }

    # The header's credential and the env file's token never reach a log or the model.
    from dexter import log

    for secret in ("brk-4f9a8b7c6d5e", "tok-from-file-9f8e7d6c"):
        assert secret not in redact(f"sent {secret} upstream")
        assert secret not in log.redact(f"sent {secret} upstream")
    assert "application/json" in redact("Accept: application/json")


def test_host_transports_and_time_limits_are_read_as_each_host_means_them(
    tmp_path: Path,
) -> None:
    servers = {
        "claude": {"type": "http", "url": "http://127.0.0.1:9/mcp", "timeout": 60000},
        "vscode": {"type": "sse", "url": "http://127.0.0.1:9/events", "description": "x"},
        "cline": {"transportType": "sse", "url": "http://127.0.0.1:9/sse", "timeout": 30},
        "roo": {"type": "streamable-http", "url": "http://127.0.0.1:9/mcp", "alwaysAllow": []},
        "cursor": {"url": "http://127.0.0.1:9/sse", "auth": {"CLIENT_ID": "abc"}},
        "plain": {"url": "http://127.0.0.1:9/mcp"},
    }
    configs = {
        c.name: c for c in mcp_servers(Settings(home=tmp_path, file_data={"mcpServers": servers}))
    }
    assert {name: c.transport for name, c in configs.items()} == {
        "claude": "http",
        "vscode": "sse",
        "cline": "sse",
        "roo": "http",
        "cursor": "sse",  # no type: a URL ending in /sse is an SSE endpoint
        "plain": "http",
    }
    assert configs["claude"].timeout == 60.0 and configs["cline"].timeout == 30.0
    assert any(
        '"auth" ignored (Dexter does not sign in with OAuth' in n for n in configs["cursor"].notes
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "Bearer ${BROKER_TOKEN}",
            '"headers.Authorization" uses ${BROKER_TOKEN}, which is not set',
        ),
        ("${input:broker-key}", "which VS Code asks you for; Dexter cannot ask"),
        ("${config:broker.key}", "Dexter understands ${VAR}"),
    ],
)
def test_a_variable_that_cannot_be_filled_is_named(
    tmp_path: Path, value: str, message: str
) -> None:
    servers = {"broker": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": value}}}
    settings = Settings(home=tmp_path, file_data={"mcpServers": servers}, env={})
    with pytest.raises(ConfigError, match="server 'broker'") as caught:
        mcp_servers(settings)
    assert message in str(caught.value)


async def test_a_call_that_runs_too_long_is_called_a_time_out(tmp_path: Path) -> None:
    # The limit covers every request, listing and `count` too, so it leaves a loaded machine
    # time to answer those (0.3 s did not); `stall` never answers.
    servers = {"legacy": legacy(timeout=1.5)}
    (config,) = mcp_servers(Settings(home=tmp_path, file_data={"mcpServers": servers}))
    connection = McpConnection(config, log_dir=tmp_path)
    try:
        tools = {t.name: t for t in await connection.tools()}
        stall = adapt(connection, tools["stall"])
        with pytest.raises(ToolFailure) as caught:
            await stall.run(stall.Args.model_validate({}), ToolContext())
        # The connection is still good after a time-out.
        count = adapt(connection, tools["count"])
        after = await count.run(count.Args.model_validate({"n": 1}), ToolContext())
    finally:
        await connection.aclose()
    said = str(caught.value)
    assert "MCP server 'legacy' timed out" in said and "1.5 s" in said
    assert "refused" not in said
    assert "counted to 1" in after.content


def test_tools_that_need_mcp_tasks_are_not_offered_and_mcp_list_says_why(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_settings(project, {"legacy": legacy()})
    assert main(["tools", "list", "--json"]) == 0
    names = {tool["name"] for tool in json.loads(capsys.readouterr().out)}
    assert "legacy__count" in names and "legacy__export_all" not in names
    assert main(["mcp", "list", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    (left,) = row["left_out"]
    assert left["name"] == "legacy__export_all"
    assert 'execution.taskSupport "required"' in left["reason"]
    assert main(["mcp", "list"]) == 0
    assert "legacy__export_all  not offered: it runs only as an MCP task" in capsys.readouterr().out


def test_server_progress_shows_in_the_tool_row(
    project: Path, wire_server: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    write_settings(project, {"legacy": legacy()}, permissions={"allow": ["legacy__count"]})
    wire_server.push(
        tool_calls_reply(("c1", "legacy__count", {"n": 3})),
        text_reply("Counted to three."),
    )
    assert main(["ask", "--json", "Count to three."]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    progress = [e["message"] for e in events if e["type"] == "tool_progress"]
    # The first and the last step always show; the server's terminal escapes never do.
    assert progress[0] == "counted 1 (1/3)" and progress[-1] == "counted 3 (3/3)"
    ended = [e for e in events if e["type"] == "tool_end"]
    assert ended and ended[0]["tool"] == "legacy__count"


async def test_progress_is_relayed_without_repeats_or_floods() -> None:
    now = [0.0]
    shown: list[str] = []
    relay = ProgressRelay(shown.append, clock=lambda: now[0])
    await relay(1, 10, "reading")
    await relay(1, 10, "reading")  # a repeat
    now[0] = 0.1
    await relay(2, 10, "reading")  # too soon after the last line
    now[0] = 0.5
    await relay(3, 10, "reading")
    now[0] = 0.55
    await relay(10, 10, "done")  # the last step shows however soon
    await relay(4, None, None)
    assert shown == ["reading (1/10)", "reading (3/10)", "done (10/10)"]
