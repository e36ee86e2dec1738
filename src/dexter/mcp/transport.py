"""Serve the MCP server over stdio (for desktop hosts) or streamable HTTP.

HTTP binds to 127.0.0.1 unless told otherwise. Anywhere else it requires a bearer token: every
request without `Authorization: Bearer <token>` gets 401 before it reaches the MCP layer.

On a loopback address (127.0.0.1, 127.0.0.2, ::1, however spelled) a web page the user visits
could still reach the server: through DNS rebinding (its own name, re-pointed at 127.0.0.1) or
from another local site. So every request must name this server in `Host` (the bound address or
`localhost`, with this port) and, when it carries an `Origin`, come from exactly this server's
origin, or from a host or origin the user allowed; else 421 or 403, before the MCP layer. The
SDK's own check is not used: it is on only for three spellings of loopback and lets any port of
localhost in as an origin.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import secrets
import socket
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

TOKEN_ENV = "DEXTER_MCP_TOKEN"
MCP_PATH = "/mcp"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def new_token() -> str:
    return secrets.token_urlsafe(32)


def choose_token(host: str, given: str | None, *, require: bool) -> tuple[str | None, bool]:
    """The token HTTP clients must send, and whether it was generated here. Off loopback one is
    always required, so a server reachable from the network is never open."""
    if given:
        return given, False
    if require or not is_loopback(host):
        return new_token(), True
    return None, False


def _authority(host: str) -> str:
    """`host` as it appears in a Host header or an origin: lower case, IPv6 in brackets."""
    bare = host.strip().lower().removeprefix("[").removesuffix("]")
    return f"[{bare}]" if ":" in bare else bare


def loopback_authorities(host: str, bound: str, port: int) -> list[str]:
    """The `Host` values a server on loopback answers to: its address as bound and as typed
    (`[::1]`, `[0:0:0:0:0:0:0:1]`), and `localhost` where that name leads to it, all with
    `port`. A name a web page controls (DNS rebinding) is never among them."""
    names = {_authority(bound), _authority(host)}
    address = ipaddress.ip_address(bound.strip("[]"))
    if host.strip().lower() == "localhost" or address in _LOCALHOST:
        names.add("localhost")
    authorities = [f"{name}:{port}" for name in sorted(names)]
    if port == 80:  # a browser leaves the default port out
        authorities += sorted(names)
    return authorities


_LOCALHOST = (ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1"))


async def _refuse(
    send: Send, status: int, error: str, message: str, headers: Iterable[tuple[bytes, bytes]] = ()
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


def _header_values(scope: Scope, name: bytes) -> list[str]:
    return [
        value.decode("latin-1").strip()
        for key, value in scope.get("headers", [])
        if key.lower() == name
    ]


class HostOriginGuard:
    """Refuses a request whose `Host` is not one of `hosts` (421) or whose `Origin`, when it
    has one, is not one of `origins` (403): what a rebinding page or another site sends.
    Either list may be None: not checked (a server beyond loopback with no list given)."""

    def __init__(
        self, app: ASGIApp, *, hosts: Iterable[str] | None, origins: Iterable[str] | None
    ) -> None:
        self.app = app
        self.hosts = None if hosts is None else frozenset(h.lower() for h in hosts)
        self.origins = None if origins is None else frozenset(o.lower() for o in origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            hosts = _header_values(scope, b"host")
            if self.hosts is not None and (len(hosts) != 1 or hosts[0].lower() not in self.hosts):
                shown = hosts[0] if hosts else "(none)"
                message = f"Host {shown} is not this server; see `dexter mcp serve --allow-host`"
                await _refuse(send, 421, "misdirected", message)
                return
            origins = _header_values(scope, b"origin")
            if self.origins is not None and any(o.lower() not in self.origins for o in origins):
                message = f"Origin {origins[0]} may not call this server; see `--allow-origin`"
                await _refuse(send, 403, "forbidden", message)
                return
        await self.app(scope, receive, send)


class BearerGuard:
    """Refuses every HTTP request that does not carry the token (compared in constant time)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = b""
            for key, value in scope.get("headers", []):
                if key.lower() == b"authorization":
                    given = value
            if not hmac.compare_digest(given, self._expected):
                await _refuse(
                    send,
                    401,
                    "unauthorized",
                    "send Authorization: Bearer <token>",
                    [(b"www-authenticate", b'Bearer realm="dexter"')],
                )
                return
        await self.app(scope, receive, send)


async def serve_stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before serving so port 0 can report the port it got."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    # IPPROTO_TCP, not the default 0: asyncio turns Nagle off only on connections whose socket
    # says TCP; with it on, each streamed event can wait ~40 ms for the client's delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


def http_app(
    server: Server[Any],
    sock: socket.socket,
    *,
    host: str,
    token: str | None,
    allow_hosts: Iterable[str] = (),
    allow_origins: Iterable[str] = (),
) -> ASGIApp:
    """The ASGI app for `server` listening on `sock` (bound to `host` as the user typed it):
    the MCP endpoint behind the token check (when there is a token) and the Host/Origin check
    (always on loopback; beyond it, for the lists the user gave)."""
    from mcp.server.transport_security import TransportSecuritySettings

    bound, port = sock.getsockname()[:2]
    hosts, origins = list(allow_hosts), list(allow_origins)
    if is_loopback(host):
        own = loopback_authorities(host, str(bound), int(port))
        hosts += own
        origins += [f"http://{authority}" for authority in own]
    app: ASGIApp = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        host=host,
        # Our HostOriginGuard below does this job for every spelling and port.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    if token:
        app = BearerGuard(app, token)
    if hosts or origins:
        app = HostOriginGuard(app, hosts=hosts or None, origins=origins or None)
    return app


async def serve_http(
    app: ASGIApp, sock: socket.socket, *, ready: Callable[[], None] | None = None
) -> None:
    """Serve `app` (from `http_app`) on the already listening `sock` until stopped; `ready` is
    called once requests are being answered (a request sent before then waits in the socket's
    queue, and a client with a short timeout could give up on it)."""
    import uvicorn

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started and ready is not None:
                ready()

    config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False)
    await Server(config).serve(sockets=[sock])
