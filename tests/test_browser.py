"""`browser` end to end in headless Chromium against pages this test serves on 127.0.0.1: a
table built by JavaScript after 500 ms, a form, and a redirect into a blocked address."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from dexter.tools.base import ToolContext, ToolFailure, ToolResult
from dexter.tools.web.browser import (
    BrowserArgs,
    BrowserTool,
    find_chromium,
    install_hint,
    playwright_installed,
)

if not playwright_installed() or find_chromium() is None:
    pytest.skip(f"no browser here. {install_hint()}", allow_module_level=True)

PAGES = {
    "/table": """<html><head><title>Quarterly revenue</title></head><body><main>
        <h1>Revenue by quarter</h1><div id="t">loading…</div></main>
        <script>setTimeout(() => { document.getElementById('t').innerHTML =
          '<table><tr><th>Quarter</th><th>Revenue</th></tr>' +
          '<tr><td>Q4 FY2025</td><td>$102,466M</td></tr></table>'; }, 500);</script>
        </body></html>""",
    "/form": """<html><head><title>Search filings</title></head><body>
        <form onsubmit="event.preventDefault(); document.getElementById('out').textContent =
          'Results for ' + document.getElementById('q').value;">
          <label for="q">Company</label><input id="q" name="q">
          <button type="submit">Search</button></form><p id="out"></p></body></html>""",
    "/links": """<html><head><title>Links</title></head><body>
        <a href="/redirect">Annual report</a><img src="http://10.11.12.13/pixel.gif"></body></html>""",
}


class _Handler(BaseHTTPRequestHandler):
    served: ClassVar[list[str]] = []

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        self.served.append(self.path)
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "http://169.254.169.254/latest/meta-data/")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = PAGES.get(self.path)
        if body is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


async def offline_dns(host: str, port: int) -> list[str]:
    """No name resolves, as on a machine without a network (Chromium asks for its own update and
    sign-in hosts; the guard must not look them up for real)."""
    raise OSError(f"no such host {host}")


async def call(tool: BrowserTool, ctx: ToolContext, **args: Any) -> ToolResult:
    result = await tool.run(BrowserArgs(**args), ctx)
    assert isinstance(result, ToolResult)
    return result


def ref_of(snapshot: str, needle: str) -> str:
    line = next(line for line in snapshot.splitlines() if needle in line)
    return line.split("[ref=", 1)[1].split("]", 1)[0]


async def test_reads_a_table_that_javascript_builds_late_and_fills_a_form(
    site: str, tmp_path: Path
) -> None:
    tool = BrowserTool(allowed_hosts={"127.0.0.1"}, resolver=offline_dns)
    ctx = ToolContext(run_id="run-1", home=tmp_path)
    try:
        opened = await call(tool, ctx, action="navigate", url=f"{site}/table")
        assert "Quarterly revenue" in opened.content and "[S1]" in opened.content
        await call(tool, ctx, action="wait", time_ms=700)
        snapshot = await call(tool, ctx, action="snapshot")
        assert "$102,466M" in snapshot.content and "<untrusted_content" in snapshot.content
        text = await call(tool, ctx, action="read")
        assert "Q4 FY2025" in text.content and "$102,466M" in text.content

        await call(tool, ctx, action="open_tab", url=f"{site}/form")
        form = (await call(tool, ctx, action="snapshot")).content
        assert "tabs: 0: " in form and "*1: " in form
        await call(tool, ctx, action="type", ref=ref_of(form, "textbox"), text="Buckle")
        await call(tool, ctx, action="click", ref=ref_of(form, 'button "Search"'))
        after = await call(tool, ctx, action="read")
        assert "Results for Buckle" in after.content
    finally:
        await tool.run_finished("run-1")
    assert tool._sessions == {}


async def test_a_redirect_into_a_metadata_address_is_refused(site: str, tmp_path: Path) -> None:
    tool = BrowserTool(allowed_hosts={"127.0.0.1"}, resolver=offline_dns)
    ctx = ToolContext(run_id="run-2", home=tmp_path)
    try:
        with pytest.raises(ToolFailure, match=r"169\.254\.169\.254"):
            await call(tool, ctx, action="navigate", url=f"{site}/redirect")
        # A page's own requests are guarded too: the private-address image is never fetched.
        await call(tool, ctx, action="navigate", url=f"{site}/links")
        session = tool._sessions["run-2"]
        assert any("10.11.12.13" in reason for reason in session.refused)
        with pytest.raises(ToolFailure, match=r"loopback|private|Refused"):
            await call(tool, ctx, action="navigate", url="http://localhost:1/")
    finally:
        await tool.run_finished("run-2")


async def test_each_run_gets_its_own_browser(site: str, tmp_path: Path) -> None:
    tool = BrowserTool(allowed_hosts={"127.0.0.1"}, resolver=offline_dns)
    a, b = ToolContext(run_id="a", home=tmp_path), ToolContext(run_id="b", home=tmp_path)
    try:
        await call(tool, a, action="navigate", url=f"{site}/table")
        with pytest.raises(ToolFailure, match="no page is open"):
            await call(tool, b, action="snapshot")
        assert tool._sessions["a"].browser is not tool._sessions["b"].browser
    finally:
        await tool.run_finished("a")
        await tool.run_finished("b")
