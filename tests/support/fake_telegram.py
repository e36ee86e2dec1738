"""A fake Telegram Bot API on 127.0.0.1: real HTTP, the real method names and shapes.

Speaks getMe, getUpdates (long polling with offset; updates below the offset stay stored, as a
restarted client with a stale offset would see them again), sendMessage, sendChatAction, and can
answer the next call of a method with an error (429 with retry_after, 409 conflict …). `push_raw`
queues an update of any shape, malformed ones included. Inline keyboards: `keyboard(chat)` reads
the buttons of the last message that had some, `press(…)` pushes the `callback_query` a person's
press produces, and answerCallbackQuery / editMessageText are recorded (`answered`, `edits`).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

BOT_ID = 999
BOT_USERNAME = "dexter_test_bot"


@dataclass
class FakeTelegram:
    token: str = "123:TEST"
    updates: list[Any] = field(default_factory=list)
    sent: list[dict[str, Any]] = field(default_factory=list)
    actions: list[dict[str, Any]] = field(default_factory=list)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    # The message id sendMessage gave each entry of `sent`.
    sent_ids: list[int] = field(default_factory=list)
    edits: list[dict[str, Any]] = field(default_factory=list)
    answered: list[dict[str, Any]] = field(default_factory=list)
    errors: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # The longest a getUpdates long poll is held open (the client asks for longer).
    max_poll_wait: float = 5.0
    # Client ports seen, i.e. the connections the client used.
    peers: set[int] = field(default_factory=set)
    url: str = ""
    _next_id: int = 1
    # The position of each update in `updates`, which getUpdates' offset counts against (the
    # update's own id, or where a raw update without one was pushed).
    _positions: list[int] = field(default_factory=list)
    _message_id: int = 1000
    _cond: threading.Condition = field(default_factory=threading.Condition)

    # ------------------------------------------------------------------ scripting

    def push(
        self,
        text: str = "",
        *,
        user: int = 42,
        chat: int | None = None,
        chat_type: str = "private",
        title: str = "",
        first_name: str = "Ann",
        reply_to_bot: bool = False,
        extra: dict[str, Any] | None = None,
    ) -> int:
        with self._cond:
            update_id = self._next_id
            self._next_id += 1
            self._message_id += 1
            message: dict[str, Any] = {
                "message_id": self._message_id,
                "from": {"id": user, "is_bot": False, "first_name": first_name},
                "chat": {"id": chat if chat is not None else user, "type": chat_type},
                "date": int(time.time()),
            }
            if title:
                message["chat"]["title"] = title
            if text:
                message["text"] = text
            if reply_to_bot:
                message["reply_to_message"] = {
                    "message_id": 1,
                    "from": {"id": BOT_ID, "is_bot": True, "first_name": "Dexter"},
                }
            message.update(extra or {})
            self._store(update_id, {"update_id": update_id, "message": message})
            return update_id

    def push_raw(self, update: Any, *, with_id: bool = True) -> int:
        """An update exactly as given (any shape), with the next `update_id` added unless
        `with_id` is false; returns the position getUpdates' offset counts against."""
        with self._cond:
            update_id = self._next_id
            self._next_id += 1
            if with_id and isinstance(update, dict):
                update = {"update_id": update_id, **update}
            self._store(update_id, update)
            return update_id

    def _store(self, position: int, update: Any) -> None:
        self.updates.append(update)
        self._positions.append(position)
        self._cond.notify_all()

    def keyboard(self, chat: int | str) -> tuple[int, dict[str, str]]:
        """(message id, {button label: callback data}) of the last message in `chat` that
        carried an inline keyboard."""
        with self._cond:
            for payload, message_id in reversed(list(zip(self.sent, self.sent_ids, strict=True))):
                rows = (payload.get("reply_markup") or {}).get("inline_keyboard")
                if rows and str(payload["chat_id"]) == str(chat):
                    buttons = {b["text"]: b["callback_data"] for row in rows for b in row}
                    return message_id, buttons
        raise AssertionError(f"fake Telegram: no keyboard was sent to {chat}")

    def has_keyboard(self, chat: int | str, count: int = 1) -> bool:
        with self._cond:
            return (
                sum(
                    1
                    for p in self.sent
                    if str(p["chat_id"]) == str(chat) and (p.get("reply_markup") or {})
                )
                >= count
            )

    def press(
        self,
        data: str,
        *,
        message_id: int,
        user: int,
        chat: int | None = None,
        chat_type: str = "private",
        first_name: str = "Ann",
    ) -> str:
        """The callback_query a press on an inline button sends; returns its id."""
        with self._cond:
            query_id = f"cq{self._next_id}"
            query = {
                "id": query_id,
                "from": {"id": user, "is_bot": False, "first_name": first_name},
                "message": {
                    "message_id": message_id,
                    "from": {"id": BOT_ID, "is_bot": True, "first_name": "Dexter"},
                    "chat": {"id": chat if chat is not None else user, "type": chat_type},
                    "date": int(time.time()),
                    "text": "(the question)",
                },
                "chat_instance": "-7000",
                "data": data,
            }
            self.push_raw({"callback_query": query})
            return query_id

    def fail_next(self, method: str, code: int, description: str, **parameters: Any) -> None:
        body: dict[str, Any] = {"ok": False, "error_code": code, "description": description}
        if parameters:
            body["parameters"] = parameters
        with self._cond:
            self.errors.setdefault(method, []).append(body)

    def texts(self, chat: int | str | None = None) -> list[str]:
        with self._cond:
            return [m["text"] for m in self.sent if chat is None or str(m["chat_id"]) == str(chat)]

    def wait_for(self, predicate: Any, timeout: float = 10.0) -> None:
        """Block the calling thread until `predicate()` holds (woken by every request)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("fake Telegram: condition not reached in time")
                self._cond.wait(left)

    def count(self, method: str) -> int:
        with self._cond:
            return sum(1 for name, _ in self.calls if name == method)

    # ------------------------------------------------------------------ serving

    def handle(self, method: str, payload: dict[str, Any]) -> dict[str, Any]:
        with self._cond:
            self.calls.append((method, payload))
            self._cond.notify_all()
            queued = self.errors.get(method)
            if queued:
                return queued.pop(0)
        if method == "getMe":
            return {
                "ok": True,
                "result": {"id": BOT_ID, "is_bot": True, "username": BOT_USERNAME},
            }
        if method == "getUpdates":
            offset = int(payload.get("offset") or 0)
            wait = min(float(payload.get("timeout") or 0), self.max_poll_wait)
            deadline = time.monotonic() + wait
            with self._cond:
                while True:
                    ready = [
                        u
                        for at, u in zip(self._positions, self.updates, strict=True)
                        if at >= offset
                    ]
                    left = deadline - time.monotonic()
                    if ready or left <= 0:
                        return {"ok": True, "result": ready}
                    self._cond.wait(left)
        if method == "sendMessage":
            with self._cond:
                self._message_id += 1
                self.sent.append(payload)
                self.sent_ids.append(self._message_id)
                self._cond.notify_all()
                return {"ok": True, "result": {"message_id": self._message_id}}
        if method in ("editMessageText", "answerCallbackQuery"):
            with self._cond:
                (self.edits if method == "editMessageText" else self.answered).append(payload)
                self._cond.notify_all()
            return {"ok": True, "result": True}
        if method == "sendChatAction":
            with self._cond:
                self.actions.append(payload)
                self._cond.notify_all()
            return {"ok": True, "result": True}
        return {"ok": False, "error_code": 404, "description": "Not Found"}


@contextmanager
def serve_telegram(fake: FakeTelegram | None = None) -> Iterator[FakeTelegram]:
    fake = fake or FakeTelegram()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # http.server writes the headers and the body in two sends; with Nagle on, the body
        # waits for the client's delayed ACK (40 ms a response). Real API servers don't.
        disable_nagle_algorithm = True

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            prefix = f"/bot{fake.token}/"
            with fake._cond:
                fake.peers.add(self.client_address[1])
            if not self.path.startswith(prefix):
                reply = {"ok": False, "error_code": 401, "description": "Unauthorized"}
            else:
                payload = json.loads(body or b"{}")
                reply = fake.handle(self.path[len(prefix) :], payload)
            status = 200 if reply.get("ok") else int(reply.get("error_code", 400))
            data = json.dumps(reply).encode()
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:  # the client closed the long poll (shutdown)
                pass

        def log_message(self, format: str, *args: Any) -> None:
            pass

    class Server(ThreadingHTTPServer):
        # The stdlib's accept queue is 5 deep; connects beyond it are dropped and retried a
        # second later, which no real API server does.
        request_queue_size = 128

    server = Server(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        with fake._cond:
            fake._cond.notify_all()
        server.shutdown()
        server.server_close()
