"""Serve the recorded Yahoo Finance chart replies (../shared/fixtures/prices/yahoo/) with no
network: an httpx2 MockTransport for a provider built in a test, or a real HTTP server on
127.0.0.1 for whole `dexter` processes (selected through DEXTER_YAHOO_URL, as a user would).

Each recording answers its symbol's `/v8/finance/chart/{symbol}` whatever the query string: the
provider cuts the bars to the window it asked for, which is what the tests check.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx2
import pytest

from tests.support.fixtures import fixtures_dir

CHART_PATH = "/v8/finance/chart/"


@cache
def _recordings() -> dict[str, dict[str, Any]]:
    folder = fixtures_dir() / "prices" / "yahoo"
    if not folder.is_dir():
        pytest.skip(
            f"{folder} is missing; run `uv run python scripts/fetch_fixtures.py` for the SEC "
            "files and `uv run python scripts/record_prices.py` to record chart replies."
        )
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.glob("chart-*.json")):
        recording = json.loads(path.read_text())
        found[path.name] = recording
    return found


def recording(name: str) -> dict[str, Any]:
    """One recording wrapper (`request.url`, `response.bodyJson`), parsed once per session."""
    return _recordings()[name]


def body(name: str) -> Any:
    return recording(name)["response"]["bodyJson"]


# The recording each symbol is served from (AAPL's weekend reply is served on its own name).
SERVED = {
    "AAPL": "chart-AAPL-2020-08-31-to-2020-11-07.json",
    "MSFT": "chart-MSFT-1d-2021-02-01-to-2022-01-31-dividends.json",
    "NVDA": "chart-NVDA-1d-2021-02-01-to-2022-01-31-split.json",
    "TSLA": "chart-TSLA-1d-max-to-2023-08-12.json",
    "WSU.DE": "chart-WSU.DE-1d-2023-08-04-to-2023-08-09.json",
    "EURUSD=X": "chart-EURUSD=X-1d-2020-01-01-to-2020-01-03.json",
    "AAPL-WEEKEND": "chart-AAPL-1m-2025-02-01-weekend-empty.json",
}


class YahooReplies:
    """Symbol -> (status, content type, body); the recordings plus what a test adds."""

    def __init__(self, extra: Mapping[str, tuple[int, str, bytes]] | None = None) -> None:
        self.extra = dict(extra or {})
        self.requests: list[str] = []

    def answer(self, path: str) -> tuple[int, str, bytes]:
        symbol = unquote(path[len(CHART_PATH) :]) if path.startswith(CHART_PATH) else ""
        if symbol in self.extra:
            return self.extra[symbol]
        name = SERVED.get(symbol)
        if name is None:
            error = {"chart": {"result": None, "error": {"code": "Not Found",
                     "description": "No data found, symbol may be delisted"}}}  # fmt: skip
            return 404, "application/json", json.dumps(error).encode()
        return 200, "application/json;charset=utf-8", json.dumps(body(name)).encode()


def yahoo_transport(replies: YahooReplies) -> httpx2.MockTransport:
    def handler(request: httpx2.Request) -> httpx2.Response:
        replies.requests.append(str(request.url))
        status, kind, content = replies.answer(request.url.path)
        return httpx2.Response(status, headers={"content-type": kind}, content=content)

    return httpx2.MockTransport(handler)


class YahooServer:
    """The recordings over real HTTP on 127.0.0.1 (for `dexter` subprocesses and bench/)."""

    def __init__(self, replies: YahooReplies | None = None) -> None:
        self.replies = replies or YahooReplies()
        replies_ = self.replies

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                replies_.requests.append(self.path)
                status, kind, content = replies_.answer(urlsplit(self.path).path)
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            def log_message(self, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            # The default backlog of 5 drops connections when 50 arrive at once (bench/prices.py).
            request_queue_size = 128

        self._server = Server(("127.0.0.1", 0), Handler)
        # A short poll: shutting down waits for it, once per test.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> YahooServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
