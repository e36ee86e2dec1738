"""`dexter mcp serve` as an MCP host sees it: the SDK's own client over stdio (a subprocess) and
streamable HTTP (a real port on 127.0.0.1), with SEC data from the recorded mirror and the
research model scripted by a local OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from dexter.cli.open_runtime import open_runtime
from dexter.httpclient import async_client
from dexter.mcp.config import McpServerConfig
from dexter.mcp.tools import McpToolset
from dexter.mcp.transport import choose_token, is_loopback
from dexter.tools.base import ToolContext, ToolResult
from tests.support.mcp_process import until_ready
from tests.support.sec_mirror import Mirror, MirrorServer
from tests.support.wire_server import Reply, WireServer, sse
from tests.test_research_e2e import chunk, text_reply, tool_calls_reply

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def server_env(tmp_path: Path, wire_server: WireServer) -> Iterator[dict[str, str]]:
    home = tmp_path / ".dexter"
    home.mkdir()
    (home / "settings.json").write_text(json.dumps({"memory": {"enabled": False}}))
    with MirrorServer(Mirror()) as sec:
        yield {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(tmp_path),
            "PYTHONPATH": str(REPO / "src"),
            "DEXTER_HOME": str(home),
            "DEXTER_MODEL": "openai:gpt-test",
            "DEXTER_FINANCE_TOOLS": "direct",
            "OPENAI_API_KEY": "sk-test-123456",
            "OPENAI_BASE_URL": wire_server.url + "/v1",
            **sec.env(),
        }


def script_answered_research(wire: WireServer) -> None:
    wire.push(
        tool_calls_reply(("c1", "income_statements", {"company": "AAPL", "limit": 2})),
        text_reply("Apple's revenue was $416.2B in FY2025, up from $391.0B in FY2024 [S1]."),
    )


def script_slow_research(wire: WireServer) -> None:
    """A calculation, then an answer that streams for a long time unless the run is stopped."""
    slow = sse([chunk({"content": "still thinking "}) for _ in range(400)], done=True)
    wire.push(
        tool_calls_reply(
            ("c2", "calculate", {"operation": "percent_change", "start": 391035, "end": 416161})
        ),
        Reply(headers=slow.headers, chunks=slow.chunks, chunk_delay=0.05),
    )


async def check_server(client: Client, wire: WireServer) -> None:
    listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert {
        "income_statements",
        "filing_section",
        "insider_trades",
        "calculate",
        "research",
    } <= set(listed)
    income = listed["income_statements"]
    assert income.title == "Income statements"
    assert income.annotations is not None and income.annotations.read_only_hint is True
    assert "company" in income.input_schema["properties"]

    statements = await client.call_tool("income_statements", {"company": "AAPL", "limit": 2})
    assert not statements.is_error
    text = statements.content[0].text  # type: ignore[union-attr]
    assert "416,161" in text and "[S1]" in text
    assert "0000320193-25-000079" in text  # the FY2025 10-K, cited
    assert "https://www.sec.gov/Archives/edgar/data/320193/" in text  # and a link to it
    assert statements.structured_content["sources"][0]["id"] == "S1"

    bad = await client.call_tool("income_statements", {"company": "AAPL", "limit": "many"})
    assert bad.is_error and "limit" in bad.content[0].text  # type: ignore[union-attr]

    templates = (await client.list_resource_templates()).resource_templates
    assert [t.uri_template for t in templates] == ["dexter://filings/{company}"]
    filings = await client.read_resource("dexter://filings/AAPL")
    listing = filings.contents[0].text  # type: ignore[union-attr]
    assert "10-K" in listing and "0000320193-25-000079" in listing

    prompts = {p.name: p for p in (await client.list_prompts()).prompts}
    assert {"dcf", "write-memo"} <= set(prompts)
    dcf = await client.get_prompt("dcf", {"request": "NVIDIA"})
    text = dcf.messages[0].content.text  # type: ignore[union-attr]
    assert "NVIDIA" in text and "calculate" in text

    script_answered_research(wire)
    progress: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    answer = await client.call_tool(
        "research", {"question": "What was Apple's revenue?"}, progress_callback=on_progress
    )
    assert not answer.is_error, answer.content
    assert "416.2B" in answer.content[0].text  # type: ignore[union-attr]
    assert answer.structured_content["status"] == "answered"
    assert "0000320193-25-000079" in answer.structured_content["sources"][0]["label"]
    # Both figures were found in the statements the run fetched, as `ask --json` says.
    assert answer.structured_content["verification"] == {
        "checked": 2,
        "verified": 2,
        "derived": 0,
        "unsupported": 0,
        "repaired": 0,
    }
    assert [f["status"] for f in answer.structured_content["figures"]] == ["verified"] * 2
    assert "running income_statements" in progress
    assert any(m.startswith("income_statements done") for m in progress)


async def check_cancel(client: Client, wire: WireServer) -> None:
    script_slow_research(wire)
    before = len(wire.requests)
    calculated = anyio.Event()

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        if (message or "").startswith("calculate done"):
            calculated.set()

    async with anyio.create_task_group() as group:

        async def research() -> None:
            await client.call_tool(
                "research", {"question": "Grow 391035 to 416161?"}, progress_callback=on_progress
            )

        group.start_soon(research)
        with anyio.fail_after(30):
            await calculated.wait()
        # Cancel once the answer is streaming, so stopping the run has a stream to drop.
        assert await asyncio.to_thread(wire.wait_for_requests, before + 2, 30)
        group.cancel_scope.cancel()
    # The server stopped the run: its model stream was dropped mid-answer.
    assert await asyncio.to_thread(wire.hung_up.wait, 30)
    # And it keeps serving.
    again = await client.call_tool("calculate", {"operation": "sum", "values": [1, 2]})
    assert not again.is_error and "3" in again.content[0].text  # type: ignore[union-attr]


async def test_stdio_server_serves_data_research_progress_and_cancel(
    server_env: dict[str, str], wire_server: WireServer, tmp_path: Path
) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "dexter", "mcp", "serve"], env=server_env, cwd=tmp_path
    )
    async with Client(params, read_timeout_seconds=60) as client:
        await check_server(client, wire_server)
        await check_cancel(client, wire_server)


@asynccontextmanager
async def http_server(env: dict[str, str], *args: str) -> AsyncIterator[str]:
    process = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "dexter", "mcp", "serve", "--http", "--port", "0", *args],
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stderr is not None
        line = (await asyncio.wait_for(process.stderr.readline(), 60)).decode()
        assert line.startswith("Dexter MCP server on http://127.0.0.1:"), line
        # The address is known before the server answers: wait until it says it does, rather
        # than racing the first request's client timeout on a loaded machine.
        await until_ready(process.stderr)
        yield line.split(" on ", 1)[1].strip()
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 10)


async def test_http_server_requires_its_token_and_serves_with_it(
    server_env: dict[str, str], wire_server: WireServer, tmp_path: Path
) -> None:
    env = {**server_env, "DEXTER_MCP_TOKEN": "s3cret-token"}
    async with http_server(env, "--require-token") as url:
        async with async_client() as http:
            hello: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
            refused = await http.post(url, json=hello)
            wrong = await http.post(url, json=hello, headers={"authorization": "Bearer nope"})
        assert refused.status_code == 401 and wrong.status_code == 401
        assert refused.headers["www-authenticate"].startswith("Bearer")

        authorised = create_mcp_http_client(headers={"authorization": "Bearer s3cret-token"})
        async with Client(streamable_http_client(url, http_client=authorised)) as client:
            await check_server(client, wire_server)
            await check_cancel(client, wire_server)

        # Dexter as a client of an HTTP server (this one), with the token as a header.
        config = McpServerConfig(
            name="dexter", url=url, headers={"Authorization": "Bearer s3cret-token"}
        )
        toolset = McpToolset([config], home=tmp_path)
        try:
            tools = {tool.name: tool for tool in toolset.tools()}
            calculate = tools["dexter__calculate"]
            args = calculate.Args.model_validate({"operation": "sum", "values": [2, 3]})
            result = await calculate.run(args, ToolContext())
        finally:
            await toolset.aclose()
        assert isinstance(result, ToolResult) and "5" in result.content
        assert '<untrusted_content source="mcp:dexter/calculate">' in result.content


def test_only_loopback_addresses_may_go_without_a_token() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5") and not is_loopback("::")


def test_a_server_beyond_loopback_always_gets_a_token() -> None:
    token, generated = choose_token("0.0.0.0", None, require=False)
    assert token and generated and len(token) >= 32
    assert choose_token("0.0.0.0", "mine", require=False) == ("mine", False)
    assert choose_token("127.0.0.1", None, require=False) == (None, False)
    assert choose_token("127.0.0.1", None, require=True)[0]


async def test_served_tools_come_from_the_registry_and_rules_still_apply(tmp_path: Path) -> None:
    from dexter.config import Settings
    from dexter.mcp.server import Served, build_server
    from dexter.permissions.gate import SimplePolicy

    async with open_runtime(Settings(home=tmp_path, cwd=tmp_path)) as runtime:
        tools = runtime.data_tools()
        served = Served(tools=tools, policy=SimplePolicy(deny=["insider_trades"]))
        async with Client(build_server(served)) as client:
            listed = {t.name for t in (await client.list_tools()).tools}
            denied = await client.call_tool("insider_trades", {"company": "AAPL"})
            unknown = await client.call_tool("no_such_tool", {})
    # One registry: every data call the sources serve, and no research without a runtime agent.
    assert listed == {tool.name for tool in tools}
    assert {"calculate", "income_statements", "filing_section", "screen_companies"} <= listed
    assert denied.is_error and "denied" in denied.content[0].text  # type: ignore[union-attr]
    assert unknown.is_error


# --------------------------------------------------------------------------- whose workspace


def read_files_reply(*paths: str) -> Reply:
    return tool_calls_reply(
        *((f"r{n}", "read_file", {"path": path}) for n, path in enumerate(paths, 1))
    )


def offered_tools(wire: WireServer) -> set[str]:
    first = wire.requests[0].json()
    return {tool["function"]["name"] for tool in first.get("tools") or []}


def seen_by_model(wire: WireServer) -> str:
    return "\n".join(request.body.decode() for request in wire.requests)


@pytest.fixture
def private_files(tmp_path: Path, server_env: dict[str, str]) -> dict[str, Path]:
    """What a host must never see: a document in ~/Documents and Dexter's saved keys."""
    documents = tmp_path / "Documents"
    documents.mkdir()
    (documents / "portfolio.md").write_text("PRIVATE-HOLDINGS 300 AAPL\n")
    keys = Path(server_env["DEXTER_HOME"]) / "keys.json"
    keys.write_text('{"openai": "sk-PRIVATE-KEY-999"}\n')
    research = tmp_path / "research"
    research.mkdir()
    (research / "notes.md").write_text("SHARED-NOTES NVDA thesis\n")
    return {"portfolio": documents / "portfolio.md", "keys": keys, "research": research}


async def research_reading(client: Client, wire: WireServer, *paths: str) -> str:
    wire.requests.clear()
    wire.push(read_files_reply(*paths), text_reply("Read what I could."))
    answer = await client.call_tool("research", {"question": "Summarise my files."})
    assert not answer.is_error, answer.content
    return seen_by_model(wire)


async def test_a_host_started_in_home_reads_no_files_and_with_workspace_only_inside(
    server_env: dict[str, str],
    wire_server: WireServer,
    tmp_path: Path,
    private_files: dict[str, Path],
) -> None:
    # What a desktop host does: start `dexter mcp serve` from the user's home folder.
    portfolio, keys = str(private_files["portfolio"]), str(private_files["keys"])
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "dexter", "mcp", "serve"], env=server_env, cwd=tmp_path
    )
    async with Client(params, read_timeout_seconds=60) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert "reads no local files" in (listed["research"].description or "")
        seen = await research_reading(client, wire_server, "Documents/portfolio.md", keys)
    assert not offered_tools(wire_server) & {"read_file", "write_file", "edit_file", "bash"}
    assert "PRIVATE-HOLDINGS" not in seen and "sk-PRIVATE-KEY-999" not in seen

    workspace = str(private_files["research"])
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "dexter", "mcp", "serve", "--workspace", workspace, "--name", "claude-desktop"],
        env=server_env,
        cwd=tmp_path,
    )
    async with Client(params, read_timeout_seconds=60) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert workspace in (listed["research"].description or "")
        seen = await research_reading(
            client, wire_server, "notes.md", portfolio, "../Documents/portfolio.md", keys
        )
    assert "read_file" in offered_tools(wire_server)
    assert "SHARED-NOTES" in seen
    assert "PRIVATE-HOLDINGS" not in seen and "sk-PRIVATE-KEY-999" not in seen
    # The host is a principal of its own: its session is recorded as its own.
    db = sqlite3.connect(Path(server_env["DEXTER_HOME"]) / "dexter.db")
    owners = {row[0] for row in db.execute("SELECT principal_id FROM sessions")}
    kinds = dict(db.execute("SELECT id, kind FROM principals").fetchall())
    db.close()
    assert owners == {"mcp:host", "mcp:claude-desktop"}
    assert kinds["mcp:claude-desktop"] == "mcp"


def test_the_working_directory_is_a_workspace_only_below_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dexter.config import ConfigError
    from dexter.mcp.host import chosen_workspace, serve_workspace

    home = tmp_path / "you"
    (home / "research").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    for cwd in (Path("/"), home, tmp_path):
        assert serve_workspace(None, cwd) is None
    assert serve_workspace(None, home / "research") == (home / "research").resolve()
    assert serve_workspace("research", home) == (home / "research").resolve()
    for given, why in (("/", "whole disk"), ("~", "whole home folder"), (str(tmp_path), "above")):
        with pytest.raises(ConfigError, match=why):
            serve_workspace(given, home / "research")
    with pytest.raises(ConfigError, match="no such folder"):
        chosen_workspace("~/nowhere", home)


async def test_research_never_reads_dexters_own_folder_inside_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A project keeps its `.dexter` (keys, settings, other people's memory) inside the folder
    the host may read: the host's research still cannot open it."""
    from dexter.cli.mcp_command import served
    from dexter.config import load_settings
    from dexter.mcp.host import host_principal, serve_workspace
    from dexter.mcp.server import build_server
    from dexter.models.scripted import ScriptedModel, calls, text

    project = tmp_path / "project"
    home = project / ".dexter"
    home.mkdir(parents=True)
    (home / "keys.json").write_text('{"openai": "sk-PRIVATE-KEY-999"}\n')
    (project / "notes.md").write_text("SHARED-NOTES NVDA thesis\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("DEXTER_HOME", str(home))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123456")
    monkeypatch.setenv("DEXTER_EMBEDDINGS", "none")
    monkeypatch.setenv("DEXTER_ROUTER_MODEL", "openai:router-test")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    settings = load_settings(cwd=project)
    host = host_principal("cursor", serve_workspace(None, settings.cwd))
    main_model = ScriptedModel(
        [
            calls(
                ("read_file", {"path": "notes.md"}),
                ("read_file", {"path": ".dexter/keys.json"}),
                ("read_file", {"path": str(home / "keys.json")}),
            ),
            text("done"),
        ]
    )
    async with open_runtime(settings) as runtime:
        runtime._clients[runtime.resolve("openai:main-test").spec] = main_model
        router = ScriptedModel([text("{}")] * 20)
        runtime._clients[runtime.resolve("openai:router-test").spec] = router
        offered = served(runtime, "openai:main-test", research=True, host=host)
        async with Client(build_server(offered)) as client:
            answer = await client.call_tool("research", {"question": "Read my notes."})
    assert not answer.is_error, answer.content
    seen = "\n".join(str(request.messages) for request in main_model.requests)
    assert "SHARED-NOTES" in seen
    assert "sk-PRIVATE-KEY-999" not in seen and "Dexter's own folder" in seen
