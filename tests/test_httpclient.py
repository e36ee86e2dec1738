"""HTTP clients pay for a proxy or TLS only when a request uses it, and proxies still work."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from dexter.httpclient import LazyTransport, async_client, shared_tls_context
from tests.support.wire_server import WireServer, json_reply


class _Proxy:
    """A forward proxy on 127.0.0.1 that answers every request itself, saying what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.url = ""
        self._server: asyncio.Server | None = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        self.asked.append(head.split(b"\r\n", 1)[0].decode())
        body = b"via proxy"
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\nconnection: close\r\n\r\n%s"
            % (len(body), body)
        )
        await writer.drain()
        writer.close()

    async def __aenter__(self) -> _Proxy:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()


@pytest.fixture
async def proxy() -> AsyncIterator[_Proxy]:
    async with _Proxy() as server:
        yield server


def _routes(client: object) -> list[LazyTransport]:
    mounts = getattr(client, "_mounts", {})
    return [t for t in mounts.values() if isinstance(t, LazyTransport)]


async def test_a_no_proxy_host_over_plain_http_builds_no_proxy_pool_and_no_tls(
    monkeypatch: pytest.MonkeyPatch, wire_server: WireServer, proxy: _Proxy
) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.setenv(name, proxy.url)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    shared_tls_context.cache_clear()
    wire_server.push(json_reply({"ok": True}))
    async with async_client() as client:
        response = await client.get(wire_server.url + "/v1/models")
        routes = _routes(client)
        assert response.json() == {"ok": True}
        assert proxy.asked == []  # NO_PROXY still exempts the host
        assert len(routes) == 3  # the three proxy variables are still honoured ...
        assert all(route.built == () for route in routes)  # ... but none was set up
        direct = client._transport
        assert isinstance(direct, LazyTransport) and direct.built == ("http",)
    assert shared_tls_context.cache_info().currsize == 0  # plain http: no TLS context


async def test_a_proxy_in_the_environment_still_carries_requests_to_other_hosts(
    monkeypatch: pytest.MonkeyPatch, proxy: _Proxy
) -> None:
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    async with async_client() as client:
        response = await client.get("http://data.example.test/prices?t=1")
    assert response.text == "via proxy"
    assert proxy.asked == ["GET http://data.example.test/prices?t=1 HTTP/1.1"]


async def test_an_explicit_transport_is_used_as_given(wire_server: WireServer) -> None:
    import httpx2

    seen: list[str] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(str(request.url))
        return httpx2.Response(200, json={"mocked": True})

    async with async_client(transport=httpx2.MockTransport(handler)) as client:
        response = await client.get("https://api.example.test/x")
    assert response.json() == {"mocked": True}
    assert seen == ["https://api.example.test/x"]
