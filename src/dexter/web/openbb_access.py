"""Who may reach Dexter's OpenBB Workspace endpoint: the key check and the CORS guard.

Both are plain ASGI wrappers, answering before any route: a refusal is a short JSON body saying
what to do. The CORS guard sits outside the key check, since browsers send no key with a
preflight.
"""

from __future__ import annotations

import asyncio
import hmac
import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

KEY_ENV = "DEXTER_OPENBB_API_KEY"
# The agent's text option in Workspace that can carry the key (declared in /agents.json).
API_KEY_OPTION = "dexter-api-key"
API_KEY_LABEL = "Dexter API key"
# Bodies above this size are parsed on a worker thread while looking for the key option.
INLINE_PARSE_LIMIT = 64 * 1024


async def _refuse(
    send: Send,
    status: int,
    error: str,
    message: str,
    headers: Iterable[tuple[bytes, bytes]] = (),
) -> None:
    body = json.dumps({"error": error, "message": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return bytes(value)
    return None


class KeyGuard:
    """Refuses a query without the key, compared in constant time. Workspace can send it as a
    header (`Authorization: Bearer <key>` or `X-API-Key: <key>`) or, where its dialog has no
    headers, as the agent's own text option (`API_KEY_OPTION`, which `/agents.json` declares)
    that arrives in the request's `workspace_options`. `/agents.json` says only who Dexter is,
    so Workspace can read it when the agent is added."""

    def __init__(self, app: ASGIApp, key: str | None, *, max_body: int) -> None:
        self.app = app
        self._key = key.encode() if key else None
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path", "").endswith("/agents.json"):
            await self.app(scope, receive, send)
            return
        if self._key is None:
            await _refuse(
                send,
                403,
                "not_configured",
                f'Dexter\'s OpenBB endpoint has no API key: set {KEY_ENV} (or "openbb": '
                '{"apiKey": …} in settings.json), restart `dexter web`, and give Workspace '
                "the same key.",
            )
            return
        given = _header_key(scope)
        if given is None and scope.get("method") == "POST":
            body = await _read_body(receive, self.max_body)
            if body is None:
                await _refuse(
                    send, 413, "too_large", f"the request is over {self.max_body:,} bytes"
                )
                return
            # Parsed before anyone is known to hold the key: a large body is parsed off the
            # event loop, so a stranger's megabytes cannot stall every other page.
            if len(body) > INLINE_PARSE_LIMIT:
                given = await asyncio.to_thread(_option_key, body)
            else:
                given = _option_key(body)
            receive = _replaying(body, receive)
        if given is None or not hmac.compare_digest(given, self._key):
            await _refuse(
                send,
                401,
                "unauthorized",
                "send the key as Authorization: Bearer <key> or X-API-Key: <key>, or enter it "
                f'in the agent\'s "{API_KEY_LABEL}" option in Workspace',
                [(b"www-authenticate", b'Bearer realm="dexter-openbb"')],
            )
            return
        await self.app(scope, receive, send)


def _header_key(scope: Scope) -> bytes | None:
    bearer = _header(scope, b"authorization") or b""
    scheme, _, token = bearer.partition(b" ")
    if scheme.lower() == b"bearer" and token.strip():
        return token.strip()
    given = (_header(scope, b"x-api-key") or b"").strip()
    return given or None


def _option_key(body: bytes) -> bytes | None:
    """The key entered in the agent's option in Workspace, from the request body."""
    try:
        raw = json.loads(body)
    except ValueError:
        return None
    options = raw.get("workspace_options") if isinstance(raw, dict) else None
    value = options.get(API_KEY_OPTION) if isinstance(options, dict) else None
    return value.strip().encode() if isinstance(value, str) and value.strip() else None


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)
        chunk = bytes(message.get("body", b""))
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives the body read already, then what the client sends next (its
    disconnect)."""
    sent = False

    async def again() -> MutableMapping[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


_ALLOWED_HEADERS = b"authorization, content-type, x-api-key"


class CorsGuard:
    """Cross-origin access for the allowed origins only ("*" allows any): preflights are
    answered here (before the key check, since browsers send no key with them), a request
    from any other origin is refused before it can start a run, and answers to allowed ones
    carry the CORS headers. Requests without an Origin (curl, servers) pass to the key check."""

    def __init__(self, app: ASGIApp, origins: Iterable[str]) -> None:
        self.app = app
        listed = {o.lower() for o in origins}
        self.any = "*" in listed
        self.origins = frozenset(listed - {"*"})

    def _allowed(self, origin: str) -> bool:
        return self.any or origin.lower() in self.origins

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = _header(scope, b"origin") if scope["type"] == "http" else None
        if raw is None:
            await self.app(scope, receive, send)
            return
        origin = raw.decode("latin-1").strip()
        if not self._allowed(origin):
            await _refuse(
                send,
                403,
                "forbidden_origin",
                f'Origin {origin} may not call this agent; add it to "openbb": '
                '{"allowOrigins": […]} in settings.json',
            )
            return
        cors = [
            (b"access-control-allow-origin", origin.encode("latin-1")),
            (b"vary", b"Origin"),
        ]
        preflight = scope.get("method") == "OPTIONS" and _header(
            scope, b"access-control-request-method"
        )
        if preflight:
            headers = [
                *cors,
                (b"access-control-allow-methods", b"GET, POST, OPTIONS"),
                (b"access-control-allow-headers", _ALLOWED_HEADERS),
                (b"access-control-max-age", b"600"),
                (b"content-length", b"0"),
            ]
            if _header(scope, b"access-control-request-private-network") == b"true":
                # Chrome asks before a public page may reach an agent on 127.0.0.1.
                headers.append((b"access-control-allow-private-network", b"true"))
            await send({"type": "http.response.start", "status": 204, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return

        async def with_cors(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *cors]}
            await send(message)

        await self.app(scope, receive, with_cors)


__all__ = ["API_KEY_LABEL", "API_KEY_OPTION", "KEY_ENV", "ASGIApp", "CorsGuard", "KeyGuard"]
