"""Who may reach Dexter's OpenBB Workspace endpoint: the key check and the CORS guard.

Both are plain ASGI wrappers, answering before any route: a refusal is a short JSON body saying
what to do. The CORS guard sits outside the key check, since browsers send no key with a
preflight.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

KEY_ENV = "DEXTER_OPENBB_API_KEY"


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
    """Refuses a query without the key (compared in constant time). `/agents.json` says only
    who Dexter is, so Workspace can read it when the agent is added."""

    def __init__(self, app: ASGIApp, key: str | None) -> None:
        self.app = app
        self._key = key.encode() if key else None

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
        if not hmac.compare_digest(_given_key(scope), self._key):
            await _refuse(
                send,
                401,
                "unauthorized",
                "send the key as Authorization: Bearer <key> or X-API-Key: <key>",
                [(b"www-authenticate", b'Bearer realm="dexter-openbb"')],
            )
            return
        await self.app(scope, receive, send)


def _given_key(scope: Scope) -> bytes:
    bearer = _header(scope, b"authorization") or b""
    scheme, _, token = bearer.partition(b" ")
    if scheme.lower() == b"bearer" and token.strip():
        return token.strip()
    return (_header(scope, b"x-api-key") or b"").strip()


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


__all__ = ["KEY_ENV", "ASGIApp", "CorsGuard", "KeyGuard"]
