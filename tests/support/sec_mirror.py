"""Serve the recorded SEC mirror to the code under test, with no network.

Two ways, both answering real SEC URL paths from `../shared/fixtures/sec-mirror`:
- `mirror_transport()`: an httpx2 MockTransport for a provider built in the test;
- `MirrorServer`: a real HTTP server on 127.0.0.1 for end-to-end runs of `dexter`, selected
  through `DEXTER_SEC_DATA_URL` / `DEXTER_SEC_WWW_URL` / `DEXTER_SEC_EFTS_URL` exactly as a
  user would point at a mirror.
Extra documents (synthetic filings built in a test) can be added by URL path.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2

from tests.support.fixtures import fixtures_dir

SEC_HOSTS = ("data.sec.gov", "www.sec.gov")
TIMEOUT = "timeout"


class Mirror:
    """Maps (host, path) to bytes: the recorded files plus any extras a test adds."""

    def __init__(
        self,
        extra: Mapping[str, bytes] | None = None,
        failing: Mapping[str, int | str] | None = None,
    ) -> None:
        self.root = fixtures_dir() / "sec-mirror"
        self.extra = dict(extra or {})  # "www.sec.gov/Archives/…" -> bytes
        # "data.sec.gov/submissions/…" -> an HTTP status to answer with, or TIMEOUT (the mock
        # transport only): how a test makes one document fail while the rest are served.
        self.failing: dict[str, int | str] = dict(failing or {})
        self.requests: list[str] = []
        self.user_agents: list[str | None] = []
        # Conditional GETs answered 304 (the body's ETag matched If-None-Match), by URL path.
        self.not_modified: list[str] = []

    def answer_304(self, key: str, body: bytes, if_none_match: str | None) -> bool:
        if if_none_match is not None and if_none_match == etag_of(body):
            self.not_modified.append(key)
            return True
        return False

    def failure(self, host: str, path: str) -> int | str | None:
        return self.failing.get(f"{host}/{path.lstrip('/')}")

    def lookup(self, host: str, path: str) -> bytes | None:
        key = f"{host}/{path.lstrip('/')}"
        if key in self.extra:
            return self.extra[key]
        file = self.root / key
        return file.read_bytes() if file.is_file() else None


def etag_of(body: bytes) -> str:
    """The ETag the mirror gives a body: changes exactly when the body does, as SEC's does."""
    return '"' + hashlib.sha256(body).hexdigest()[:16] + '"'


def mirror_transport(mirror: Mirror) -> httpx2.MockTransport:
    def handler(request: httpx2.Request) -> httpx2.Response:
        mirror.requests.append(str(request.url))
        mirror.user_agents.append(request.headers.get("user-agent"))
        failure = mirror.failure(request.url.host, request.url.path)
        if failure == TIMEOUT:
            raise httpx2.ReadTimeout("timed out", request=request)
        if isinstance(failure, int):
            return httpx2.Response(failure, text=f"HTTP {failure}")
        body = mirror.lookup(request.url.host, request.url.path)
        if body is None:
            return httpx2.Response(404, text="Not Found")
        key = f"{request.url.host}{request.url.path}"
        if mirror.answer_304(key, body, request.headers.get("if-none-match")):
            return httpx2.Response(304, headers={"etag": etag_of(body)})
        return httpx2.Response(200, content=body, headers={"etag": etag_of(body)})

    return httpx2.MockTransport(handler)


class MirrorServer:
    """A static server whose first path segment is the SEC host: /data.sec.gov/submissions/…"""

    def __init__(self, mirror: Mirror) -> None:
        self.mirror = mirror
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                host, _, path = self.path.lstrip("/").partition("/")
                outer.mirror.requests.append(self.path)
                outer.mirror.user_agents.append(self.headers.get("user-agent"))
                failure = outer.mirror.failure(host, path.split("?", 1)[0])
                if isinstance(failure, int):
                    self.send_response(failure)
                    # Retry at once: the client's retries then cost the test no waiting.
                    self.send_header("retry-after", "0")
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                body = outer.mirror.lookup(host, path.split("?", 1)[0])
                if body is None:
                    self.send_response(404)
                    self.send_header("content-length", "9")
                    self.end_headers()
                    self.wfile.write(b"Not Found")
                    return
                bare = path.split("?", 1)[0]
                if outer.mirror.answer_304(
                    f"{host}/{bare}", body, self.headers.get("if-none-match")
                ):
                    self.send_response(304)
                    self.send_header("etag", etag_of(body))
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("etag", etag_of(body))
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def env(self) -> dict[str, str]:
        return {
            "DEXTER_SEC_DATA_URL": f"{self.url}/data.sec.gov",
            "DEXTER_SEC_WWW_URL": f"{self.url}/www.sec.gov",
            # Full-text and company-name search: not recorded, so the mirror answers 404.
            "DEXTER_SEC_EFTS_URL": f"{self.url}/efts.sec.gov",
            "DEXTER_SEC_USER_AGENT": "Dexter Tests tests@example.com",
        }

    def __enter__(self) -> MirrorServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def local_fixture(relative: str) -> Path:
    return fixtures_dir() / relative
