"""`browser` cannot be turned against the user's machine: a listener on 127.0.0.1 stands in for
an internal service and must never be reached, whether by a name that rebinds to it after the
check, a `javascript:` URL, a page's WebSocket, WebRTC or script, or a `chrome:` page. The
"public" site is a second local server that the guard's connections to the vetted public address
are handed to (the suite may not leave the machine), so the test sees exactly where each
connection went."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from dexter.tools.base import ToolContext, ToolFailure, ToolResult
from dexter.tools.web.browser import (
    BrowserArgs,
    BrowserTool,
    find_chromium,
    install_hint,
    playwright_installed,
)
from dexter.tools.web.browser_guard import navigable_url

PUBLIC_IP = "93.184.216.34"
REPORT = "<html><head><title>Annual report</title></head><body><main>Revenue rose 12%.</main>"


@dataclass
class Site:
    """A real HTTP server on 127.0.0.1 that records what reached it."""

    port: int
    hits: list[tuple[str, str, str]] = field(default_factory=list)  # method, path, Host


def serve(pages: dict[str, str]) -> Iterator[Site]:
    hits: list[tuple[str, str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def _answer(self) -> None:
            hits.append((self.command, self.path, self.headers.get("host", "")))
            length = int(self.headers.get("content-length") or 0)
            form = self.rfile.read(length).decode() if length else ""
            headers = {"Content-Type": "text/html"}
            if self.headers.get("upgrade"):
                status, body = 403, ""  # a WebSocket attempt: refused, so the page sees it end
            elif self.path == "/login":
                status, body = 303, ""
                headers |= {"Location": "/account", "Set-Cookie": "sid=abc123; Path=/; HttpOnly"}
            elif self.path == "/account":
                who = "signed in" if "sid=abc123" in self.headers.get("cookie", "") else "anon"
                status, body = 200, f"<title>Account</title><main>{who} {form}</main>"
            elif self.path.split("?", 1)[0] in pages:
                status, body = 200, pages[self.path.split("?", 1)[0]]
            else:
                status, body = 404, ""
            data = body.encode()
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _answer

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    yield Site(server.server_address[1], hits)
    server.shutdown()
    server.server_close()


@pytest.fixture
def internal() -> Iterator[Site]:
    """A service on 127.0.0.1 that nothing the browser does may reach."""
    yield from serve({"/admin": "<title>internal admin</title>secret"})


@pytest.fixture
def public() -> Iterator[Site]:
    socket_page = (
        "<html><head><title>Live quotes</title></head><body><script>"
        "const ws = new WebSocket(new URLSearchParams(location.search).get('ws'));"
        "ws.onclose = () => { document.title = 'socket closed'; };</script></body></html>"
    )
    form = (
        "<html><head><title>Sign in</title></head><body><form method=post action=/login>"
        "<input type=hidden name=q value=1><button>Sign in</button></form></body></html>"
    )
    yield from serve({"/report": REPORT, "/quotes": socket_page, "/start": form})


class Network:
    """What the guard's connections meet: the public address leads to the `public` server;
    anything else is connected for real (and is loopback, in this suite)."""

    def __init__(self, public: Site) -> None:
        self.public = public
        self.connections: list[tuple[str, int]] = []

    async def connect(
        self, host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        self.connections.append((host, port))
        if host == PUBLIC_IP:
            return await asyncio.open_connection("127.0.0.1", self.public.port)
        return await asyncio.open_connection(host, port)


def loopback_alias() -> str:
    """A name this machine's hosts file maps to 127.0.0.1, if it has one: a browser that looked
    the name up again (instead of connecting to the vetted address) would reach the listener.
    Otherwise any name does; only the injected resolver ever sees it."""
    try:
        lines = Path("/etc/hosts").read_text().splitlines()
    except OSError:
        lines = []
    for line in lines:
        fields = line.split("#", 1)[0].split()
        if fields[:1] == ["127.0.0.1"]:
            names = [n for n in fields[1:] if "localhost" not in n.lower() and "." not in n]
            if names:
                return names[0].lower()
    return "rebind.example"


class Dns:
    """The site's names (`*.example.com`) answer the public address. `rebinds` answers it
    once, then 127.0.0.1 ever after (DNS rebinding). Other names, such as those Chromium asks for
    on its own, are unknown, as offline."""

    def __init__(self, rebinds: str = "") -> None:
        self.rebinds = rebinds
        self.asked: list[str] = []

    async def resolve(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        if host == self.rebinds:
            return [PUBLIC_IP if self.asked.count(host) == 1 else "127.0.0.1"]
        if host.endswith(".example.com"):
            return [PUBLIC_IP]
        raise OSError(f"no such host {host}")


async def call(tool: BrowserTool, ctx: ToolContext, **args: Any) -> ToolResult:
    result = await tool.run(BrowserArgs(**args), ctx)
    assert isinstance(result, ToolResult)
    return result


needs_browser = pytest.mark.skipif(
    not playwright_installed() or find_chromium() is None,
    reason=f"no browser here. {install_hint()}",
)


@pytest.mark.parametrize(
    "url",
    [
        "chrome://version",
        "chrome://settings/passwords",
        "about:version",
        "file:///etc/passwd",
        "data:text/html,<script>fetch('http://127.0.0.1/')</script>",
        "view-source:http://127.0.0.1/",
        "javascript:alert(1)",
        " JaVaScRiPt:alert(1)",
        "java\tscript:alert(1)",
        "blob:http://example.com/uuid",
        "ftp://example.com/",
        "example.com/page",
    ],
)
def test_only_http_pages_can_be_opened(url: str) -> None:
    with pytest.raises(ToolFailure, match=r"only http\(s\) pages can be opened"):
        navigable_url(url)


def test_http_pages_and_about_blank_can_be_opened() -> None:
    assert navigable_url(" https://example.com/a ") == "https://example.com/a"
    assert navigable_url("HTTP://example.com/") == "HTTP://example.com/"
    assert navigable_url("about:blank") == "about:blank"


# Resolves once the page has gathered its ICE candidates, asking the given STUN server.
ICE_GATHERING = """stun => new Promise(done => {
    const pc = new RTCPeerConnection({iceServers: [{urls: stun}]});
    pc.onicegatheringstatechange = () => {
        if (pc.iceGatheringState === 'complete') done(pc.iceGatheringState);
    };
    pc.createDataChannel('quotes');
    pc.createOffer().then(offer => pc.setLocalDescription(offer));
})"""


def javascript_urls(target: str) -> list[str]:
    """A GET (location) and a POST (a form submitted) to `target`, as javascript: URLs."""
    return [
        f"javascript:location='{target}/admin'",
        f"javascript:document.body.innerHTML='<form method=post action={target}/admin>"
        "<input name=q value=1></form>';document.forms[0].submit()",
    ]


async def test_browser_pages_and_javascript_urls_are_refused_before_a_browser_starts(
    internal: Site, tmp_path: Path
) -> None:
    tool = BrowserTool(resolver=Dns().resolve)
    ctx = ToolContext(run_id="refused", home=tmp_path)
    for url in ("chrome://version", "file:///etc/hostname", "view-source:https://example.com/"):
        with pytest.raises(ToolFailure, match=r"only http\(s\) pages"):
            await call(tool, ctx, action="navigate", url=url)
    for url in javascript_urls(f"http://127.0.0.1:{internal.port}"):
        for action in ("navigate", "open_tab"):
            with pytest.raises(ToolFailure, match=r"not a javascript: URL"):
                await call(tool, ctx, action=action, url=url)
    with pytest.raises(ToolFailure, match=r"127\.0\.0\.1 is a loopback address"):
        await call(tool, ctx, action="navigate", url=f"http://127.0.0.1:{internal.port}/admin")
    assert tool._sessions == {} and internal.hits == []


@needs_browser
async def test_nothing_a_url_or_a_page_does_reaches_a_loopback_service(
    internal: Site, public: Site, tmp_path: Path
) -> None:
    name = loopback_alias()
    dns, network = Dns(rebinds=name), Network(public)
    tool = BrowserTool(resolver=dns.resolve, connect=network.connect)
    ctx = ToolContext(run_id="guarded", home=tmp_path)
    loopback = f"http://127.0.0.1:{internal.port}"
    try:
        # A name that rebinds to 127.0.0.1 after it was checked: the browser still gets the page
        # from the address that was checked.
        opened = await call(
            tool, ctx, action="navigate", url=f"http://{name}:{internal.port}/report"
        )
        assert "Annual report" in opened.content
        text = await call(tool, ctx, action="read")
        assert "Revenue rose 12%" in text.content and "secret" not in text.content
        assert network.connections[0] == (PUBLIC_IP, internal.port)
        assert public.hits[0] == ("GET", "/report", f"{name}:{internal.port}")

        # javascript: URLs, with a page open, are refused like on a fresh tab.
        for url in javascript_urls(loopback):
            for action in ("navigate", "open_tab"):
                with pytest.raises(ToolFailure, match=r"not a javascript: URL"):
                    await call(tool, ctx, action=action, url=url)

        # A page's WebSocket to the internal service is refused, and the page sees it close.
        url = f"http://ir.example.com/quotes?ws=ws://127.0.0.1:{internal.port}/ws"
        await call(tool, ctx, action="navigate", url=url)
        page = tool._sessions["guarded"].page
        await page.wait_for_function("document.title == 'socket closed'")

        # WebRTC would send STUN over UDP around the proxy: it is held to proxied TCP.
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.bind(("127.0.0.1", 0))
            stun = f"stun:127.0.0.1:{udp.getsockname()[1]}"
            gathered = await page.evaluate(ICE_GATHERING, stun)
            udp.setblocking(False)
            with pytest.raises(BlockingIOError):
                udp.recv(2048)  # not one datagram arrived
        assert gathered == "complete"

        # A page script that sends the tab to the internal service ends on an error page.
        from playwright.async_api import Error as PlaywrightError

        with pytest.raises(PlaywrightError, match="ERR_EMPTY_RESPONSE"):
            async with page.expect_navigation():
                await page.evaluate(f"location = '{loopback}/admin'")
        assert f"127.0.0.1:{internal.port}/admin" in tool._sessions["guarded"].refused[-1]
    finally:
        await tool.run_finished("guarded")
    assert internal.hits == []
    assert {host for host, _ in network.connections} == {PUBLIC_IP}


@needs_browser
async def test_forms_cookies_redirects_and_websockets_work_through_the_guard(
    public: Site, tmp_path: Path
) -> None:
    network = Network(public)
    tool = BrowserTool(resolver=Dns().resolve, connect=network.connect)
    ctx = ToolContext(run_id="forms", home=tmp_path)
    try:
        await call(tool, ctx, action="navigate", url="http://ir.example.com/start")
        snapshot = (await call(tool, ctx, action="snapshot")).content
        ref = next(line for line in snapshot.splitlines() if "button" in line)
        await call(tool, ctx, action="click", ref=ref.split("[ref=", 1)[1].split("]", 1)[0])
        after = await call(tool, ctx, action="read")
        # A WebSocket to a public name is tunnelled to the vetted address.
        url = "http://ir.example.com/quotes?ws=ws://quotes.example.com/ws"
        await call(tool, ctx, action="navigate", url=url)
        await tool._sessions["forms"].page.wait_for_function("document.title == 'socket closed'")
    finally:
        await tool.run_finished("forms")
    assert "signed in" in after.content  # the cookie set with the redirect came back
    assert ("POST", "/login", "ir.example.com") in public.hits
    assert ("GET", "/ws", "quotes.example.com") in public.hits
    assert {host for host, _ in network.connections} == {PUBLIC_IP}
