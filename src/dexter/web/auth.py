"""Who is asking: the one-time login link, login cookies, CSRF, and the gate every request passes.

- The link `dexter web` prints carries a token that logs its first user in as the operator and is
  then spent (as Jupyter's); passwords (`dexter.web.accounts`) log in anyone else, and are the
  only way in once the link is used.
- A login is a random cookie value (HttpOnly, SameSite=Strict) mapped in memory to its principal
  and its CSRF token; restarting `dexter web` logs everyone out.
- Every request except the login page and the static files needs a login. Every state-changing
  one (anything but GET/HEAD/OPTIONS) must carry the login's CSRF token, in the `X-CSRF-Token`
  header or a `csrf` form field, and come from this origin when the browser says where it came
  from; anything else is refused with 403 before a view runs.
- Every response forbids framing and loads scripts, styles and data from this server only.
"""

from __future__ import annotations

import hmac
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs, quote

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from dexter.principal import Principal

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CSRF_HEADER = "x-csrf-token"
CSRF_FIELD = "csrf"
# A login unused this long ends (a browser left open on a shared machine).
IDLE_SECONDS = 12 * 3600
# A form the CSRF check may read to find its field; nothing Dexter serves posts more.
MAX_FORM_BYTES = 1 << 20
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
        b"frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    # The login link's token never leaves in a Referer; "no-referrer" would also make Chromium
    # send `Origin: null` with this site's own forms, which the origin check must refuse.
    (b"referrer-policy", b"same-origin"),
)


@dataclass
class Login:
    id: str
    principal: Principal
    csrf: str
    last_seen: float


@dataclass
class Logins:
    """The logins of this process, by cookie value."""

    idle_seconds: float = IDLE_SECONDS
    clock: Callable[[], float] = time.monotonic
    _by_id: dict[str, Login] = field(default_factory=dict)

    def start(self, principal: Principal) -> Login:
        now = self.clock()
        # Forget idle logins as new ones come, so a long-running server does not collect them.
        for key in [k for k, v in self._by_id.items() if now - v.last_seen > self.idle_seconds]:
            del self._by_id[key]
        login = Login(secrets.token_urlsafe(32), principal, secrets.token_urlsafe(32), now)
        self._by_id[login.id] = login
        return login

    def get(self, cookie: str | None) -> Login | None:
        if not cookie:
            return None
        login = self._by_id.get(cookie)
        if login is None:
            return None
        now = self.clock()
        if now - login.last_seen > self.idle_seconds:
            del self._by_id[cookie]
            return None
        login.last_seen = now
        return login

    def end(self, cookie: str | None) -> None:
        if cookie:
            self._by_id.pop(cookie, None)


@dataclass
class Throttle:
    """Failed password logins, by account name and by client address: after `limit` failures
    within `window` seconds, that name (or address) is refused until the oldest expires."""

    limit: int = 5
    window: float = 900.0
    clock: Callable[[], float] = time.monotonic
    _failures: dict[str, list[float]] = field(default_factory=dict)

    def wait(self, *keys: str) -> float:
        """Seconds until a login for these keys is tried again (0: now)."""
        now = self.clock()
        longest = 0.0
        for key in keys:
            recent = [t for t in self._failures.get(key, []) if now - t < self.window]
            self._failures[key] = recent
            if len(recent) >= self.limit:
                longest = max(longest, self.window - (now - recent[0]))
        return longest

    def failed(self, *keys: str) -> None:
        now = self.clock()
        for key in keys:
            self._failures.setdefault(key, []).append(now)


class OneTimeToken:
    """The token of the printed login link: good for one login, then spent."""

    def __init__(self, value: str | None = None) -> None:
        self.value = value or secrets.token_urlsafe(32)
        self.spent = False

    def spend(self, offered: str) -> bool:
        if self.spent or not hmac.compare_digest(offered.encode(), self.value.encode()):
            return False
        self.spent = True
        return True


def same_secret(offered: str | None, expected: str) -> bool:
    return bool(offered) and hmac.compare_digest(str(offered).encode(), expected.encode())


def cookie_value(scope: Scope, name: str) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == b"cookie":
            jar: SimpleCookie = SimpleCookie()
            try:
                jar.load(value.decode("latin-1"))
            except Exception:  # a malformed cookie header is no login
                return None
            if name in jar:
                return jar[name].value
    return None


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


def _host_name(scope: Scope) -> str:
    """The Host header without its port, lower-case ("[::1]" keeps its brackets)."""
    host = (_header(scope, b"host") or "").strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1]
    return host.rsplit(":", 1)[0] if ":" in host else host


LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def same_origin(scope: Scope) -> bool:
    """False when the browser says the request came from another site (Origin or Referer);
    True when it came from here or does not say."""
    host = _header(scope, b"host")
    origin = _header(scope, b"origin")
    if origin is None:
        referer = _header(scope, b"referer")
        if referer is None:
            return True
        origin = "/".join(referer.split("/")[:3])
    if origin == "null" or host is None:
        return False
    return origin.split("://", 1)[-1] == host


class AuthGate:
    """The ASGI middleware in front of every view: login, CSRF, origin and security headers.

    `open_paths` need no login (the login page, static files); `own_auth` are mounted apps that
    authenticate their own callers (the OpenBB endpoint, called by Workspace, not this browser)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        logins: Logins,
        cookie: str,
        open_paths: tuple[str, ...] = ("/login", "/static/"),
        own_auth: tuple[str, ...] = (),
        hosts: tuple[str, ...] | None = None,
    ) -> None:
        self.app = app
        # Host names this server answers to (None: any). On loopback, a page whose own name was
        # pointed at 127.0.0.1 (DNS rebinding) is refused before anything else.
        self.hosts = hosts
        self.logins = logins
        self.cookie = cookie
        self.open_paths = open_paths
        self.own_auth = own_auth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if self.hosts is not None and _host_name(scope) not in self.hosts:
            await _refuse(send, 421, "refused: this server does not answer to that host name")
            return
        if any(path == p or path.startswith(p.rstrip("/") + "/") for p in self.own_auth):
            await self.app(scope, receive, send)
            return
        send = _with_security_headers(send)
        method = scope["method"]
        if method not in SAFE_METHODS and not same_origin(scope):
            await _refuse(send, 403, "refused: this request came from another site")
            return
        if any(path == p or (p.endswith("/") and path.startswith(p)) for p in self.open_paths):
            await self.app(scope, receive, send)
            return
        login = self.logins.get(cookie_value(scope, self.cookie))
        if login is None:
            if method == "GET" and "text/html" in (_header(scope, b"accept") or ""):
                query = scope.get("query_string", b"").decode("latin-1")
                back = path + (f"?{query}" if query else "")
                await _redirect(send, f"/login?next={quote(back, safe='')}")
            else:
                await _refuse(send, 401, "log in first: open the link `dexter web` printed")
            return
        scope.setdefault("state", {})["login"] = login
        if method not in SAFE_METHODS:
            offered = _header(scope, CSRF_HEADER.encode())
            if offered is None:
                offered, receive = await _form_field(scope, receive, CSRF_FIELD)
            if not same_secret(offered, login.csrf):
                await _refuse(send, 403, "refused: the form's security token is missing or old")
                return
        await self.app(scope, receive, send)


async def _form_field(scope: Scope, receive: Receive, name: str) -> tuple[str | None, Receive]:
    """`name` from a URL-encoded form body, and a `receive` that replays the body to the view."""
    kind = (_header(scope, b"content-type") or "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        return None, receive
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None, receive
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if size > MAX_FORM_BYTES:
            return None, receive
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    values = parse_qs(body.decode("utf-8", "replace")).get(name)
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return (values[0] if values else None), replay


def _with_security_headers(send: Send) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            names = {key.lower() for key, _ in message.get("headers", ())}
            extra = [(k, v) for k, v in SECURITY_HEADERS if k not in names]
            message = {**message, "headers": [*message.get("headers", ()), *extra]}
        await send(message)

    return sending


async def _refuse(send: Send, status: int, text: str) -> None:
    body = json.dumps({"error": text}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"cache-control", b"no-store")],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _redirect(send: Send, location: str) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [(b"location", location.encode("latin-1")), (b"cache-control", b"no-store")],
        }
    )
    await send({"type": "http.response.body", "body": b""})


def login_of(request: Any) -> Login:
    """The login the gate put on this request (every view behind the gate has one)."""
    login: Login = request.state.login
    return login


__all__ = [
    "CSRF_FIELD",
    "CSRF_HEADER",
    "LOOPBACK_NAMES",
    "AuthGate",
    "Login",
    "Logins",
    "OneTimeToken",
    "Throttle",
    "cookie_value",
    "login_of",
    "same_origin",
    "same_secret",
]
