"""A real HTTP server on 127.0.0.1 that replays scripted responses, including SSE streams.

Provider adapters are tested against it: our wire clients speak real HTTP to it, exactly as to
the provider, and every request they sent is recorded for assertions.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    # Each item is sent and flushed separately, so clients see a real incremental stream.
    chunks: Sequence[bytes] = ()
    chunk_delay: float = 0.0
    # A server that goes quiet for good after its first chunk (until the test's server stops):
    # a client's timeout is then certain to strike, however loaded the machine, where a delay
    # merely longer than the timeout could end first.
    stall: bool = False


def sse(
    events: Sequence[Any], *, event_names: Sequence[str | None] | None = None, done: bool = True
) -> Reply:
    """An SSE reply: each event is JSON-encoded unless it is already a string."""
    chunks: list[bytes] = []
    for i, event in enumerate(events):
        data = event if isinstance(event, str) else json.dumps(event)
        name = event_names[i] if event_names else None
        prefix = f"event: {name}\n" if name else ""
        chunks.append(f"{prefix}data: {data}\n\n".encode())
    if done:
        chunks.append(b"data: [DONE]\n\n")
    return Reply(headers={"content-type": "text/event-stream"}, chunks=chunks)


def json_reply(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    return Reply(
        status=status,
        headers={"content-type": "application/json", **(headers or {})},
        body=json.dumps(payload).encode(),
    )


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body or b"null")


class WireServer:
    def __init__(self) -> None:
        self._replies: list[Reply] = []
        self._routes: list[tuple[Callable[[Recorded], bool], Reply]] = []
        self.requests: list[Recorded] = []
        # Set when a client hangs up mid-stream (what a cancelled run does to its model call).
        self.hung_up = threading.Event()
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                self._serve()

            def do_POST(self) -> None:
                self._serve()

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                with server._lock:
                    server.requests.append(
                        Recorded(
                            self.command,
                            self.path,
                            {k.lower(): v for k, v in self.headers.items()},
                            body,
                        )
                    )
                    recorded = server.requests[-1]
                    server._arrived.notify_all()
                    routed = next(
                        (i for i, (match, _) in enumerate(server._routes) if match(recorded)), None
                    )
                    if routed is not None:
                        reply = server._routes.pop(routed)[1]
                    elif server._replies:
                        reply = server._replies.pop(0)
                    else:
                        reply = json_reply(
                            {"error": {"message": "wire server: no scripted reply left"}},
                            status=599,
                        )
                self.send_response(reply.status)
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                if reply.chunks:
                    self.send_header("connection", "close")
                    self.end_headers()
                    try:
                        for chunk in reply.chunks:
                            self.wfile.write(chunk)
                            self.wfile.flush()
                            if reply.stall:
                                server._stopping.wait()
                                break
                            if reply.chunk_delay:
                                time.sleep(reply.chunk_delay)
                    except (BrokenPipeError, ConnectionResetError):
                        # The client hung up mid-stream, as cancellation tests make it do.
                        server.hung_up.set()
                    self.close_connection = True
                else:
                    self.send_header("content-length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def route(self, matches: Callable[[Recorded], bool], reply: Reply) -> None:
        """Answer the first request that `matches` with `reply`, ahead of the queue.

        For concurrent requests whose arrival order is not fixed (parallel tool calls that each
        call a model), so each still gets its own scripted answer.
        """
        with self._lock:
            self._routes.append((matches, reply))

    def wait_for_requests(self, count: int, timeout: float) -> bool:
        """Block until `count` requests have arrived (False if `timeout` passes first)."""
        with self._arrived:
            return self._arrived.wait_for(lambda: len(self.requests) >= count, timeout)

    def start(self) -> WireServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()


def running_server() -> Iterator[WireServer]:
    server = WireServer().start()
    try:
        yield server
    finally:
        server.stop()
