"""A fake Meta Graph API for the WhatsApp Cloud API on 127.0.0.1: real HTTP, bearer tokens
checked as Meta does.

`GET /{phone-number-id}?fields=…` answers the phone number object (`display_phone_number`,
`verified_name`); `POST /{phone-number-id}/messages` records what was sent. A wrong token is 401
with an `OAuthException` (code 190), an unknown phone number id 400 (code 100), as Meta answers.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

PHONE_NUMBER_ID = "106540352242922"
ACCESS_TOKEN = "EAAGtestaccesstoken0000"
DISPLAY_NUMBER = "+1 555-010-0999"
VERIFIED_NAME = "Dexter Research"


@dataclass
class FakeGraph:
    token: str = ACCESS_TOKEN
    phone_number_id: str = PHONE_NUMBER_ID
    url: str = ""
    sent: list[dict[str, Any]] = field(default_factory=list)
    requests: list[tuple[str, str]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(
        self, method: str, path: str, token: str, body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.requests.append((method, path))
        if token != self.token:
            return 401, {
                "error": {
                    "message": "Invalid OAuth access token - Cannot parse access token",
                    "type": "OAuthException",
                    "code": 190,
                }
            }
        parts = [p for p in path.split("/") if p]
        if not parts or parts[0] != self.phone_number_id:
            asked = parts[0] if parts else ""
            return 400, {
                "error": {
                    "message": f"Unsupported get request. Object with ID '{asked}' does not exist",
                    "type": "GraphMethodException",
                    "code": 100,
                }
            }
        if method == "GET" and len(parts) == 1:
            return 200, {
                "display_phone_number": DISPLAY_NUMBER,
                "verified_name": VERIFIED_NAME,
                "id": self.phone_number_id,
            }
        if method == "POST" and parts[1:] == ["messages"]:
            with self._lock:
                self.sent.append(body)
            return 200, {"messaging_product": "whatsapp", "messages": [{"id": "wamid.1"}]}
        return 400, {"error": {"message": "Unknown path", "code": 100}}


@contextmanager
def serve_graph(fake: FakeGraph | None = None) -> Iterator[FakeGraph]:
    fake = fake or FakeGraph()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def _reply(self, method: str) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            token = self.headers.get("authorization", "").removeprefix("Bearer ")
            body = json.loads(raw) if raw else {}
            status, reply = fake.answer(method, urlsplit(self.path).path, token, body)
            data = json.dumps(reply).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._reply("GET")

        def do_POST(self) -> None:
            self._reply("POST")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
