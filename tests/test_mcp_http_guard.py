"""`dexter mcp serve --http` on loopback cannot be driven by a web page: a DNS-rebinding page
sends its own name as Host, another local site sends its own Origin, and both are refused before
the MCP layer, on every spelling of loopback. Real servers on real sockets, the SDK's own client
for what must keep working."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from dexter.agent.events import Done, Event
from dexter.httpclient import async_client
from dexter.mcp.server import Served, build_server
from dexter.mcp.transport import MCP_PATH, bind, http_app
from dexter.permissions.gate import SimplePolicy
from tests.support.mcp_process import until_ready

REPO = Path(__file__).resolve().parents[1]
INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "page", "version": "1"},
    },
}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


def spellings() -> list[Any]:
    no_v6 = pytest.mark.skipif(not ipv6_loopback(), reason="this machine has no IPv6 loopback")
    return [
        "127.0.0.1",
        "127.0.0.2",
        pytest.param("[::1]", marks=no_v6),
        pytest.param("0:0:0:0:0:0:0:1", marks=no_v6),
    ]


@dataclass
class Running:
    port: int
    authority: str  # how a client names it: 127.0.0.2:PORT, [::1]:PORT
    questions: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://{self.authority}{MCP_PATH}"


@contextmanager
def serving(host: str, **options: Any) -> Iterator[Running]:
    """The MCP server with a stand-in `research` (it records the question) on `host`."""
    questions: list[str] = []

    async def research(question: str, max_iterations: int | None) -> AsyncIterator[Event]:
        questions.append(question)
        yield Done(answer="Revenue rose 12% [S1].", status="answered", iterations=1)

    server = build_server(Served(tools=[], policy=SimplePolicy(), research=research))
    sock = bind(host, 0)  # listening already: requests queue until uvicorn takes them
    bound, port = sock.getsockname()[:2]
    app = http_app(server, sock, host=host, token=None, **options)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False)
    ready = threading.Event()

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            ready.set()

    runner = Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(runner.serve(sockets=[sock])))
    thread.start()
    try:
        # Requests before uvicorn answers would wait in the socket's queue against the client's
        # 5 s timeout, which a loaded machine can exceed: start once it answers.
        assert ready.wait(60), "uvicorn did not start"
        shown = f"[{bound}]" if ":" in bound else bound
        yield Running(port, f"{shown}:{port}", questions)
    finally:
        runner.should_exit = True
        thread.join()
        sock.close()


async def post(running: Running, headers: dict[str, str]) -> httpx2.Response:
    async with async_client() as client:
        return await client.post(running.url, json=INITIALIZE, headers=HEADERS | headers)


async def ask_research(running: Running) -> str:
    async with Client(streamable_http_client(running.url)) as client:
        result = await client.call_tool("research", {"question": "How did revenue change?"})
    return result.content[0].text  # type: ignore[union-attr]


@pytest.mark.parametrize("host", spellings())
async def test_loopback_server_refuses_foreign_hosts_and_origins(host: str) -> None:
    with serving(host) as running:
        port, own = running.port, f"http://{running.authority}"
        rebound = await post(running, {"host": f"attacker.example:{port}"})
        assert rebound.status_code == 421
        rebound_page = await post(
            running,
            {"host": f"attacker.example:{port}", "origin": f"http://attacker.example:{port}"},
        )
        assert rebound_page.status_code == 421
        for origin in (
            f"http://attacker.example:{port}",
            f"http://localhost:{port + 1}",  # another site on this machine
            f"http://127.0.0.1:{port + 1}",
            f"{own.rsplit(':', 1)[0]}:{port + 1}",
            f"https://{running.authority}",
            "null",
        ):
            refused = await post(running, {"host": running.authority, "origin": origin})
            assert refused.status_code == 403, origin
        assert running.questions == []

        # The server's own Host and origin work (as bound, and as typed), and so does an MCP
        # host (no Origin).
        assert (await post(running, {"host": running.authority, "origin": own})).status_code == 200
        typed = f"[{host.strip('[]')}]:{port}" if ":" in host else f"{host}:{port}"
        assert (await post(running, {"host": typed})).status_code == 200
        assert "Revenue rose 12%" in await ask_research(running)
        assert running.questions == ["How did revenue change?"]


async def test_localhost_names_the_default_server_but_only_on_its_port() -> None:
    with serving("127.0.0.1") as running:
        port = running.port
        own = {"host": f"localhost:{port}", "origin": f"http://localhost:{port}"}
        assert (await post(running, own)).status_code == 200
        assert (await post(running, {"host": f"localhost:{port + 1}"})).status_code == 421
        origin = {"origin": f"http://localhost:{port + 1}"}
        assert (await post(running, {"host": f"localhost:{port}"} | origin)).status_code == 403


async def test_allowed_hosts_and_origins_are_exact() -> None:
    options = {"allow_hosts": ["localhost:9000"], "allow_origins": ["https://app.example.com"]}
    with serving("127.0.0.2", **options) as running:
        tunnel = await post(running, {"host": "localhost:9000"})
        app = await post(running, {"host": running.authority, "origin": "https://app.example.com"})
        assert tunnel.status_code == 200 and app.status_code == 200
        for origin in ("https://app.example.com.attacker.example", "http://app.example.com"):
            refused = await post(running, {"host": running.authority, "origin": origin})
            assert refused.status_code == 403, origin
        assert (await post(running, {"host": "localhost:9001"})).status_code == 421


@asynccontextmanager
async def cli_server(home: Path, *args: str) -> AsyncIterator[str]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "PYTHONPATH": str(REPO / "src"),
        "DEXTER_HOME": str(home / ".dexter"),
    }
    command = [sys.executable, "-m", "dexter", "mcp", "serve", "--http", "--port", "0", *args]
    process = await asyncio.create_subprocess_exec(
        *command, env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
    )
    try:
        assert process.stderr is not None
        line = (await asyncio.wait_for(process.stderr.readline(), 60)).decode()
        assert line.startswith("Dexter MCP server on http://"), line
        # The address is known before the server answers: wait until it says it does, rather
        # than racing the first request's client timeout on a loaded machine.
        await until_ready(process.stderr)
        yield line.split(" on ", 1)[1].strip()
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 10)


async def test_dexter_mcp_serve_on_127_0_0_2_checks_host_and_origin(tmp_path: Path) -> None:
    async with cli_server(tmp_path, "--host", "127.0.0.2", "--no-research") as url:
        authority = url.split("//", 1)[1].split("/", 1)[0]
        port = int(authority.rsplit(":", 1)[1])
        async with async_client() as client:
            rebound = await client.post(
                url, json=INITIALIZE, headers=HEADERS | {"host": f"attacker.example:{port}"}
            )
            other_site = await client.post(
                url, json=INITIALIZE, headers=HEADERS | {"origin": f"http://localhost:{port}"}
            )
            own = await client.post(url, json=INITIALIZE, headers=HEADERS)
    assert url == f"http://127.0.0.2:{port}/mcp"
    assert (rebound.status_code, other_site.status_code, own.status_code) == (421, 403, 200)


async def test_dexter_mcp_serve_stopped_with_ctrl_c_exits_130(tmp_path: Path) -> None:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(REPO / "src"),
        "DEXTER_HOME": str(tmp_path / ".dexter"),
    }
    command = [sys.executable, "-m", "dexter", "mcp", "serve", "--http", "--port", "0"]
    process = await asyncio.create_subprocess_exec(
        *command, "--no-research", env=env, stderr=asyncio.subprocess.PIPE
    )
    try:
        assert process.stderr is not None
        await until_ready(process.stderr)
        process.send_signal(signal.SIGINT)
        # Ctrl+C is 130, the status the README gives every command for it.
        assert await asyncio.wait_for(process.wait(), 30) == 130
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def test_the_listening_socket_says_tcp_so_streamed_events_are_not_held_back() -> None:
    # asyncio turns Nagle off only on connections accepted from a socket created as TCP; with
    # it on, each streamed progress event waited ~40 ms for the client's delayed ACK.
    sock = bind("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
    finally:
        sock.close()
