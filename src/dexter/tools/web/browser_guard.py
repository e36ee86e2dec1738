"""The browser's network guard: Chromium reaches the network only through a proxy that vets and
pins every connection.

Chromium is started with `--proxy-server` pointing at `GuardProxy`, a small HTTP proxy on
127.0.0.1 that this module runs (loopback included: Playwright adds `<-loopback>`). For each
plain-http request and each CONNECT tunnel (https, WebSockets) it checks the target with the same
SSRF guard as `web_fetch`, then connects to the very address it vetted: a name that answers a
public address to the check and 127.0.0.1 a moment later (DNS rebinding) cannot steer the browser
inside, because there is no second lookup. Redirects, scripts, frames, WebSockets and anything a
page starts go through the same door; TLS stays end to end between Chromium and the site, so
certificates are checked against the name as usual.

Playwright's request routes are not used for this: they let some requests through unrouted (the
hops of a redirect, requests of a page that is closing) and never see WebSockets.

Only http(s) pages (and about:blank) can be opened: `chrome:`, `file:`, `javascript:`, `data:`,
`view-source:` and the rest are refused before the browser sees them (`navigable_url`).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from dexter.tools.base import ToolFailure
from dexter.tools.web.ssrf import BlockedURL, Resolver, check_url

# host, port -> an open connection to exactly that address (tests map "public" addresses here).
Connector = Callable[[str, int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]

CONNECT_TIMEOUT = 15.0
# A request or response head longer than this is refused (the proxy's StreamReader limit).
MAX_HEAD_BYTES = 64 * 1024
_CHUNK = 64 * 1024
_HTTP_URL = re.compile(r"https?://", re.IGNORECASE)
# What URL parsers drop before reading the scheme: tabs and newlines anywhere (`java\tscript:`
# is `javascript:`), and control characters and spaces at either end.
_IGNORED_IN_URL = re.compile(r"[\t\n\r]")
_C0_AND_SPACE = "".join(map(chr, range(0x21)))
# Hop-by-hop headers: they describe the connection to the proxy, not the request.
_HOP_BY_HOP = frozenset(
    {b"connection", b"keep-alive", b"proxy-connection", b"proxy-authorization", b"te",
     b"trailer", b"upgrade"}
)  # fmt: skip
_REFUSED = b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


def navigable_url(url: str) -> str:
    """The URL the browser may open: http(s), or about:blank. Anything else is a ToolFailure."""
    cleaned = _IGNORED_IN_URL.sub("", url).strip(_C0_AND_SPACE)
    if cleaned.lower() == "about:blank" or _HTTP_URL.match(cleaned):
        return cleaned
    scheme = urlsplit(cleaned).scheme.lower() if ":" in cleaned else ""
    what = f"a {scheme}: URL" if scheme else "a URL without http:// or https://"
    raise ToolFailure(
        f"[browser] only http(s) pages can be opened (or about:blank), not {what}: {url[:200]}"
    )


def origin_of(url: str) -> tuple[str, int]:
    """(host, port) of an http(s) or ws(s) URL, the way the proxy sees a connection."""
    parts = urlsplit(url)
    secure = parts.scheme.lower() in ("https", "wss")
    return (parts.hostname or "").lower(), parts.port or (443 if secure else 80)


@dataclass(frozen=True)
class Refusal:
    """A connection the proxy stopped: to where, and why (a sentence for the model)."""

    host: str
    port: int
    reason: str


async def open_tcp(host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.wait_for(asyncio.open_connection(host, port), CONNECT_TIMEOUT)


class GuardProxy:
    """The proxy every browser connection goes through. One request per client connection
    (plain http), or one tunnel (CONNECT); `refused` lists the connections it stopped."""

    def __init__(
        self,
        *,
        allowed_hosts: frozenset[str] = frozenset(),
        resolver: Resolver | None = None,
        connect: Connector | None = None,
    ) -> None:
        self.allowed_hosts = allowed_hosts
        self.refused: list[Refusal] = []
        self._resolver = resolver
        self._connect = connect or open_tcp
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self) -> str:
        """Listen on a free loopback port; the proxy address for Chromium."""
        self._server = await asyncio.start_server(
            self._accept, "127.0.0.1", 0, limit=MAX_HEAD_BYTES
        )
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await self._serve(reader, writer)
        except (OSError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # a side hung up, or sent a head too long or too malformed to be real
        finally:
            self._connections.discard(task)
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        request_line, *header_lines = head[:-4].split(b"\r\n")
        method, target, _version = request_line.decode("latin-1").split(" ", 2)
        if method == "CONNECT":
            await self._tunnel(target, reader, writer)
        else:
            await self._forward(method, target, header_lines, reader, writer)

    async def _tunnel(
        self, target: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        """https and WebSockets: a byte tunnel to the vetted address, after a 200."""
        upstream = await self._open(f"https://{target}/")
        if upstream is None:
            writer.write(_REFUSED)
            await writer.drain()
            return
        up_reader, up_writer = upstream
        try:
            writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            await writer.drain()
            await _splice(reader, writer, up_reader, up_writer)
        finally:
            up_writer.close()

    async def _forward(
        self,
        method: str,
        url: str,
        header_lines: list[bytes],
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        """Plain http: this one request to the vetted address, its answer back, then close."""
        parts = urlsplit(url)
        if parts.scheme.lower() != "http":
            self._refuse(url, f"Refused a proxy request for {url[:200]!r}: not an http URL.")
            return
        headers = [_split_header(line) for line in header_lines]
        if any(name == b"transfer-encoding" for name, _ in headers):
            # Chromium sends bodies with a length; a stream would have no end we could trust.
            self._refuse(url, f"Refused {url}: a request body without a length.")
            return
        upstream = await self._open(url)
        if upstream is None:
            return  # closing without an answer fails the request in the browser
        up_reader, up_writer = upstream
        try:
            path = parts.path or "/"
            if parts.query:
                path += f"?{parts.query}"
            kept = [(n, v) for n, v in headers if n not in _HOP_BY_HOP]
            lines = [f"{method} {path} HTTP/1.1".encode("latin-1")]
            lines += [name + b": " + value for name, value in kept]
            lines.append(b"Connection: close")
            up_writer.write(b"\r\n".join(lines) + b"\r\n\r\n")
            length = next((v for n, v in kept if n == b"content-length"), b"0")
            remaining = int(length) if length.strip().isdigit() else 0
            while remaining > 0:
                chunk = await reader.read(min(remaining, _CHUNK))
                if not chunk:
                    return
                up_writer.write(chunk)
                await up_writer.drain()
                remaining -= len(chunk)
            await up_writer.drain()
            # Nothing more is read from the browser on this connection: a second request on it
            # can never reach this site. The answer goes back as it came, until the site closes.
            await _copy(up_reader, writer)
        finally:
            up_writer.close()

    async def _open(self, url: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        """A connection to the address `url` was vetted for, or None (why: in `refused`)."""
        try:
            vetted = await check_url(url, allowed_hosts=self.allowed_hosts, resolver=self._resolver)
        except BlockedURL as exc:
            self._refuse(url, str(exc))
            return None
        host, port = origin_of(url)
        # An allowed host or an IP literal is reached as given; a name, only at what was vetted.
        addresses = vetted or [urlsplit(url).hostname or ""]
        problem: BaseException | None = None
        for address in addresses:
            try:
                return await self._connect(address, port)
            except (OSError, TimeoutError) as exc:
                problem = exc
        self._refuse(url, f"Could not connect to {host}:{port} ({problem or 'no address'}).")
        return None

    def _refuse(self, url: str, reason: str) -> None:
        try:
            host, port = origin_of(url)
        except ValueError:
            host, port = "", 0
        self.refused.append(Refusal(host, port, reason))


def _split_header(line: bytes) -> tuple[bytes, bytes]:
    name, _, value = line.partition(b":")
    return name.strip().lower(), value.strip()


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while chunk := await reader.read(_CHUNK):
        writer.write(chunk)
        await writer.drain()


async def _splice(
    a_reader: asyncio.StreamReader,
    a_writer: asyncio.StreamWriter,
    b_reader: asyncio.StreamReader,
    b_writer: asyncio.StreamWriter,
) -> None:
    """Copy both ways until either side closes."""
    tasks = [
        asyncio.create_task(_copy(a_reader, b_writer)),
        asyncio.create_task(_copy(b_reader, a_writer)),
    ]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, ConnectionError, OSError):
                await task


__all__ = ["Connector", "GuardProxy", "Refusal", "navigable_url", "open_tcp", "origin_of"]
