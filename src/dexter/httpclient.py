"""httpx2 clients whose connection pools, TLS and proxy set-up are built by the first request
that needs them.

`httpx2.AsyncClient()` builds, in its constructor, a pool with a TLS context (reading the CA
bundle, ~20 ms) for direct requests, and one more pool with its own TLS context for every proxy
variable in the environment (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY): three of them for a user with
a proxy set, even when every request goes to a host in NO_PROXY or over plain http to a local
model server. `async_client` mounts the same routes (the environment's proxies, NO_PROXY hosts
exempt, matched by httpx2 exactly as it always does) but each route builds its pool when a
request first takes it, and a TLS context only for https. The TLS context itself (the one
`httpx2.create_ssl_context()` makes, as httpx2 would, so SSL_CERT_FILE and SSL_CERT_DIR still
count) is built once per process and shared by every client.

This module imports httpx2: callers import it where they make a client, not at start-up.
"""

from __future__ import annotations

import functools
import ssl
from typing import Any

import httpx2
from httpx2._utils import get_environment_proxies

__all__ = ["LazyTransport", "async_client", "shared_tls_context"]

_TLS_SCHEMES = frozenset({"https", "wss"})


@functools.cache
def shared_tls_context() -> ssl.SSLContext:
    """The process's TLS context for verified https, built on first use."""
    return httpx2.create_ssl_context()


class LazyTransport(httpx2.AsyncBaseTransport):
    """One route (`proxy` None: direct): a plain-http pool and a TLS pool, each built by the
    first request of its kind."""

    def __init__(self, proxy: str | None = None) -> None:
        self.proxy = proxy
        self._pools: dict[bool, httpx2.AsyncHTTPTransport] = {}

    @property
    def built(self) -> tuple[str, ...]:
        """The pools built so far ("http", "https")."""
        return tuple("https" if tls else "http" for tls in sorted(self._pools))

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        tls = request.url.scheme in _TLS_SCHEMES
        pool = self._pools.get(tls)
        if pool is None:
            # A plain-http pool gets no TLS context: httpx2 would build one it never uses.
            verify: Any = shared_tls_context() if tls else None
            pool = httpx2.AsyncHTTPTransport(verify=verify, proxy=self.proxy)
            self._pools[tls] = pool
        return await pool.handle_async_request(request)

    async def aclose(self) -> None:
        pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            await pool.aclose()


def async_client(
    *, transport: httpx2.AsyncBaseTransport | None = None, **options: Any
) -> httpx2.AsyncClient:
    """`httpx2.AsyncClient(**options)` with lazily built pools. An explicit `transport` (tests,
    mock servers) is used as given, with no proxies, as httpx2 itself does."""
    if transport is not None:
        return httpx2.AsyncClient(transport=transport, **options)
    # httpx2's own reading of the environment, so NO_PROXY and ALL_PROXY mean what they did.
    mounts: dict[str, httpx2.AsyncBaseTransport | None] = {
        pattern: None if url is None else LazyTransport(url)
        for pattern, url in get_environment_proxies().items()
    }
    return httpx2.AsyncClient(transport=LazyTransport(), mounts=mounts, **options)
