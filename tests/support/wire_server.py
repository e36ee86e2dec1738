"""A real HTTP server on 127.0.0.1 that replays scripted responses, including SSE streams.

Provider adapters are tested against it: our wire clients speak real HTTP to it, exactly as to
the provider, and every request they sent is recorded for assertions.

Dexter asks a server of the user's own what it is before its first run (a "server probe", sent
with its own User-Agent). Those reads are answered from what the test `describe`d (HTTP 404 for
anything else, like a server without those endpoints), recorded in `probes`, and never take a
scripted reply or appear in `requests`: a test of the conversation sees only the conversation.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from dexter.providers.probe import PROBE_USER_AGENT


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
    # Close the connection without answering: what a server does to a kept-alive connection it
    # has already dropped (uvicorn after llama-cpp-python's empty stream) when a client reuses it.
    hang_up: bool = False


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
        self._described: dict[tuple[str, str], Reply] = {}
        self._responder: Callable[[Recorded], Reply] | None = None
        self.requests: list[Recorded] = []
        self.probes: list[Recorded] = []
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
                recorded = Recorded(
                    self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body
                )
                with server._lock:
                    if recorded.headers.get("user-agent") == PROBE_USER_AGENT:
                        server.probes.append(recorded)
                        reply = server._described.get(
                            (self.command, self.path.split("?")[0]),
                            json_reply({"detail": "Not Found"}, status=404),
                        )
                    else:
                        server.requests.append(recorded)
                        server._arrived.notify_all()
                        reply = server._next_reply(recorded)
                self._send(reply)

            def _send(self, reply: Reply) -> None:
                if reply.hang_up:
                    self.close_connection = True
                    return
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

    def _next_reply(self, recorded: Recorded) -> Reply:
        if self._responder is not None:
            return self._responder(recorded)
        routed = next((i for i, (match, _) in enumerate(self._routes) if match(recorded)), None)
        if routed is not None:
            return self._routes.pop(routed)[1]
        if self._replies:
            return self._replies.pop(0)
        return json_reply({"error": {"message": "wire server: no scripted reply left"}}, status=599)

    def describe(self, method: str, path: str, reply: Reply) -> None:
        """Answer every server probe of `method path` with `reply` (what the server says about
        itself: its model listing, `/props`, `/api/show` …)."""
        with self._lock:
            self._described[(method, path)] = reply

    def respond_with(self, responder: Callable[[Recorded], Reply]) -> None:
        """Answer every request with `responder(request)`: a scripted model that decides from
        what it was sent (how many results it has seen, which tools are offered)."""
        with self._lock:
            self._responder = responder

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
