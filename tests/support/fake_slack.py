"""A fake Slack on 127.0.0.1: the Web API over real HTTP and Socket Mode over a real WebSocket.

Web API: `auth.test`, `apps.connections.open` (answers a ws:// URL to this server),
`chat.postMessage`, `chat.update`, `chat.postEphemeral`, `reactions.add` / `reactions.remove`,
`users.info` (GET, from `names`),
each checking the bearer token kind as Slack does (bot `xoxb-`, app-level `xapp-` for the
socket). Socket Mode: sends `hello` on connect, pushes `events_api` envelopes shaped like
Slack's (envelope_id, payload with event_id, retry_attempt …) and records the acks. `drop()`
closes the socket from the server side, as a network blip would. Reactions are kept as Slack
keeps them (`reactions`: what a person sees now); `hold(method)` keeps that method's calls
waiting, unapplied and unanswered, until the returned event is set, as a slow Slack would.
`press(…)` pushes the `interactive` envelope (a `block_actions` payload) a click on a Block Kit
button sends; `buttons(channel)` reads the last message posted there with some.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

BOT_TOKEN = "xoxb-1111-2222-testbot"
APP_TOKEN = "xapp-1-A1-3333-testapp"
BOT_USER_ID = "UDEXTER01"
BOT_ID = "BDEXTER01"
TEAM_ID = "T0TEAM001"


@dataclass
class FakeSlack:
    url: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    acks: list[str] = field(default_factory=list)
    connections: int = 0
    pushed: int = 0
    # Sockets the client closed itself (a clean stop), not closed by `drop()` or shutdown.
    client_closes: int = 0
    _closing: bool = False
    sockets: list[web.WebSocketResponse] = field(default_factory=list)
    errors: dict[str, list[str]] = field(default_factory=dict)
    # Members' display names for users.info; a member not here is `user_not_found`.
    names: dict[str, str] = field(default_factory=dict)
    missing_scopes: set[str] = field(default_factory=set)
    # (channel, ts, name) of every reaction on a message now.
    reactions: set[tuple[str, str, str]] = field(default_factory=set)
    # Every change to `reactions` in the order Slack applied it: ("add" | "remove", ts).
    reaction_log: list[tuple[str, str]] = field(default_factory=list)
    held: dict[str, asyncio.Event] = field(default_factory=dict)
    # The ts Slack gave each chat.postMessage, by its place in `posts()`.
    posted_ts: list[str] = field(default_factory=list)
    _ts: Any = field(default_factory=lambda: itertools.count(1))
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def _notify(self) -> None:
        async with self.changed:
            self.changed.notify_all()

    # ------------------------------------------------------------------ what happened

    def posts(self, channel: str | None = None) -> list[dict[str, Any]]:
        return [
            p for m, p in self.calls if m == "chat.postMessage" and channel in (None, p["channel"])
        ]

    def texts(self, channel: str) -> list[str]:
        return [p["text"] for p in self.posts(channel)]

    def count(self, method: str) -> int:
        return sum(1 for m, _ in self.calls if m == method)

    def buttons(self, channel: str) -> tuple[str, dict[str, dict[str, Any]]]:
        """(ts, {button label: button}) of the last message in `channel` with buttons (among
        those Slack has answered)."""
        for post, ts in reversed(list(zip(self.posts(), self.posted_ts, strict=False))):
            actions = [b for b in post.get("blocks") or [] if b.get("type") == "actions"]
            if actions and post["channel"] == channel:
                return ts, {b["text"]["text"]: b for b in actions[0]["elements"]}
        raise AssertionError(f"fake Slack: no buttons were posted in {channel}")

    def has_buttons(self, channel: str) -> bool:
        try:
            self.buttons(channel)
        except AssertionError:
            return False
        return True

    def calls_of(self, method: str) -> list[dict[str, Any]]:
        return [p for m, p in self.calls if m == method]

    def fail_next(self, method: str, error: str) -> None:
        self.errors.setdefault(method, []).append(error)

    def hold(self, method: str) -> asyncio.Event:
        """Calls of `method` wait (not yet applied) until the returned event is set."""
        return self.held.setdefault(method, asyncio.Event())

    # ------------------------------------------------------------------ events

    def next_ts(self) -> str:
        return f"{int(time.time())}.{next(self._ts):06d}"

    async def push_event(
        self,
        event: dict[str, Any],
        *,
        event_id: str | None = None,
        retry_attempt: int = 0,
    ) -> str:
        """Send one `events_api` envelope on the open socket; returns the envelope id."""
        envelope_id = f"env-{next(self._ids)}"
        envelope = {
            "envelope_id": envelope_id,
            "type": "events_api",
            "accepts_response_payload": False,
            "retry_attempt": retry_attempt,
            "retry_reason": "timeout" if retry_attempt else "",
            "payload": {
                "token": "verification-token-unused",
                "team_id": TEAM_ID,
                "api_app_id": "A0APP0001",
                "event": {"event_ts": event.get("ts", ""), **event},
                "type": "event_callback",
                "event_id": event_id or f"Ev{next(self._ids):08d}",
                "event_time": int(time.time()),
                "authorizations": [
                    {
                        "team_id": TEAM_ID,
                        "user_id": BOT_USER_ID,
                        "is_bot": True,
                        "is_enterprise_install": False,
                    }
                ],
                "is_ext_shared_channel": False,
            },
        }
        socket = self.sockets[-1]
        self.pushed += 1
        await socket.send_str(json.dumps(envelope))
        return envelope_id

    def message(
        self,
        text: str,
        *,
        user: str = "UANN00001",
        channel: str = "D0DM00001",
        thread_ts: str | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """A `message` event as Slack sends it (channel_type from the channel id)."""
        event: dict[str, Any] = {
            "type": "message",
            "user": user,
            "text": text,
            "ts": self.next_ts(),
            "channel": channel,
            "channel_type": "im" if channel.startswith("D") else "channel",
            "team": TEAM_ID,
            "client_msg_id": f"c{next(self._ids)}",
        }
        if thread_ts:
            event["thread_ts"] = thread_ts
        event.update(extra)
        return event

    async def press(
        self,
        button: dict[str, Any],
        *,
        user: str,
        channel: str,
        message_ts: str,
        thread_ts: str | None = None,
    ) -> str:
        """A click on `button` under the message `message_ts`: Slack's `interactive` envelope
        with a `block_actions` payload. Returns the envelope id (acked like events)."""
        envelope_id = f"env-{next(self._ids)}"
        thread = {"thread_ts": thread_ts} if thread_ts else {}
        payload = {
            "type": "block_actions",
            "user": {
                "id": user,
                "username": user.lower(),
                "name": user.lower(),
                "team_id": TEAM_ID,
            },
            "api_app_id": "A0APP0001",
            "token": "verification-token-unused",
            "container": {
                "type": "message",
                "message_ts": message_ts,
                "channel_id": channel,
                "is_ephemeral": False,
                **thread,
            },
            "trigger_id": f"{next(self._ids)}.1111.abcdef",
            "team": {"id": TEAM_ID, "domain": "acme"},
            "enterprise": None,
            "is_enterprise_install": False,
            "channel": {"id": channel, "name": "general"},
            "message": {"type": "message", "user": BOT_USER_ID, "ts": message_ts, **thread},
            "response_url": "https://hooks.slack.invalid/actions/T0TEAM001/1/x",
            "actions": [
                {
                    "action_id": button["action_id"],
                    "block_id": "approval",
                    "text": button["text"],
                    "value": button["value"],
                    "type": "button",
                    "action_ts": self.next_ts(),
                }
            ],
        }
        envelope = {
            "envelope_id": envelope_id,
            "type": "interactive",
            "accepts_response_payload": True,
            "payload": payload,
        }
        await self.sockets[-1].send_str(json.dumps(envelope))
        return envelope_id

    async def drop(self) -> None:
        self._closing = True
        try:
            for socket in list(self.sockets):
                await socket.close()
        finally:
            self._closing = False

    # ------------------------------------------------------------------ HTTP

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        if request.method == "GET":
            params = dict(request.query)
        elif request.content_type == "application/json":
            params = dict(await request.json() or {})
        else:
            params = dict(await request.post())
        self.calls.append((method, params))
        await self._notify()
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        app_level = method == "apps.connections.open"
        expected = APP_TOKEN if app_level else BOT_TOKEN
        if token != expected:
            wrong_kind = token.startswith("xoxb-" if app_level else "xapp-")
            error = "not_allowed_token_type" if wrong_kind else "invalid_auth"
            return web.json_response({"ok": False, "error": error})
        if method in self.held:
            await self.held[method].wait()
        if self.errors.get(method):
            return web.json_response({"ok": False, "error": self.errors[method].pop(0)})
        if method == "auth.test":
            return web.json_response(
                {
                    "ok": True,
                    "url": "https://acme.slack.com/",
                    "team": "Acme",
                    "user": "dexter",
                    "team_id": TEAM_ID,
                    "user_id": BOT_USER_ID,
                    "bot_id": BOT_ID,
                    "is_enterprise_install": False,
                }
            )
        if app_level:
            host = request.host
            return web.json_response({"ok": True, "url": f"ws://{host}/link/?ticket=t1"})
        if method == "chat.postMessage":
            ts = self.next_ts()
            self.posted_ts.append(ts)
            return web.json_response({"ok": True, "channel": params.get("channel"), "ts": ts})
        if method == "chat.update":
            return web.json_response(
                {"ok": True, "channel": params.get("channel"), "ts": params.get("ts")}
            )
        if method == "chat.postEphemeral":
            return web.json_response({"ok": True, "message_ts": self.next_ts()})
        if method in ("reactions.add", "reactions.remove"):
            reaction = (str(params.get("channel")), str(params.get("timestamp")), params["name"])
            if method == "reactions.add" and reaction in self.reactions:
                return web.json_response({"ok": False, "error": "already_reacted"})
            if method == "reactions.remove" and reaction not in self.reactions:
                return web.json_response({"ok": False, "error": "no_reaction"})
            (self.reactions.add if method == "reactions.add" else self.reactions.discard)(reaction)
            self.reaction_log.append((method.removeprefix("reactions."), reaction[1]))
            await self._notify()
            return web.json_response({"ok": True})
        if method == "users.info":
            if "users:read" in self.missing_scopes:
                return web.json_response(
                    {"ok": False, "error": "missing_scope", "needed": "users:read"}
                )
            user = str(params.get("user", ""))
            if user not in self.names:
                return web.json_response({"ok": False, "error": "user_not_found"})
            name = self.names[user]
            profile = {"display_name": name, "real_name": f"{name} Example"}
            return web.json_response(
                {"ok": True, "user": {"id": user, "name": name.lower(), "profile": profile}}
            )
        return web.json_response({"ok": False, "error": "unknown_method"})

    async def _link(self, request: web.Request) -> web.WebSocketResponse:
        socket = web.WebSocketResponse(autoping=True)
        await socket.prepare(request)
        self.connections += 1
        self.sockets.append(socket)
        await self._notify()
        await socket.send_str(
            json.dumps(
                {
                    "type": "hello",
                    "num_connections": 1,
                    "connection_info": {"app_id": "A0APP0001"},
                    "debug_info": {"host": "applink-test", "approximate_connection_time": 18060},
                }
            )
        )
        async for frame in socket:
            if frame.type == WSMsgType.TEXT:
                data = json.loads(frame.data)
                if "envelope_id" in data:
                    self.acks.append(str(data["envelope_id"]))
                    await self._notify()
        if socket in self.sockets:
            self.sockets.remove(socket)
        if not self._closing:
            self.client_closes += 1
        await self._notify()
        return socket


@asynccontextmanager
async def serve_slack() -> AsyncIterator[FakeSlack]:
    fake = FakeSlack()
    app = web.Application()
    app.router.add_post("/api/{method}", fake._api)
    app.router.add_get("/api/{method}", fake._api)
    app.router.add_get("/link/", fake._link)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    fake.url = f"http://127.0.0.1:{port}/api/"
    try:
        yield fake
    finally:
        await fake.drop()
        await runner.cleanup()


async def until(fake: FakeSlack, predicate: Callable[[], object]) -> None:
    """Wait until `predicate` is true: re-checked whenever the fake sees a call, and every 50 ms
    for what the fake cannot see (a channel's hooks receiving a message)."""
    try:
        async with asyncio.timeout(10.0):
            while not predicate():
                async with fake.changed:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(fake.changed.wait(), 0.05)
    except TimeoutError:
        raise AssertionError("timed out waiting for the fake Slack") from None
