"""HTTP plumbing shared by the wire-protocol modules (OpenAI Chat, Anthropic Messages).

Both protocols are one JSON POST answered with JSON or a server-sent-event stream, so the
connection pool, the POST whose non-2xx reply becomes a `ModelError`, and the SSE framing live
here once; each protocol module keeps its own error classification. httpx2 is imported lazily so
that `dexter --help` does not pay for it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from dexter.models.errors import ErrorKind, ModelError

if TYPE_CHECKING:
    import httpx2

_JSON_HEADERS = {
    "Accept": "application/json",
    "Content-Type": "application/json",
    "User-Agent": "dexter-py",
}

# Request headers whose values are credentials: a provider that echoes one back in a rejection
# ("Incorrect API key provided: sk-…") must not get it into an error message.
_CREDENTIAL_HEADER = ("authorization", "key", "token", "secret")
REDACTED = b"[redacted secret]"
# Maps a failure to send (or to read a rejection's body) to a ModelError.
TransportErrorMapper = Callable[[BaseException], ModelError]
# Maps a non-2xx reply (status, headers, body) to a ModelError.
StatusErrorMapper = Callable[[int, Mapping[str, str], bytes], ModelError]


class JsonPost:
    """A connection pool, built on first use, that POSTs JSON bodies for one model and raises
    its failures as that protocol's `ModelError`s."""

    def __init__(
        self,
        *,
        timeout: float,
        transport_error: TransportErrorMapper,
        status_error: StatusErrorMapper,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        self._timeout = timeout
        self._transport_error = transport_error
        self._status_error = status_error
        self._http_client = http_client
        self._client: httpx2.AsyncClient | None = None

    def _http(self) -> httpx2.AsyncClient:
        if self._http_client is not None:
            return self._http_client
        if self._client is None:
            import httpx2

            from dexter.httpclient import async_client

            self._client = async_client(
                timeout=httpx2.Timeout(self._timeout), follow_redirects=True
            )
        return self._client

    async def aclose(self) -> None:
        """Release the connection pool. An injected `http_client` belongs to its owner."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def send(
        self, url: str, headers: Mapping[str, str], params: Mapping[str, Any], *, stream: bool
    ) -> httpx2.Response:
        """POST `params` with the JSON headers under `headers`; a non-2xx reply is read, closed
        and raised as a `ModelError`.

        With `stream` the caller owns the returned response and must close it.
        """
        import httpx2

        client = self._http()
        request = client.build_request(
            "POST",
            url,
            headers=merged_headers(_JSON_HEADERS, headers),
            content=json.dumps(params).encode(),
            timeout=httpx2.Timeout(self._timeout),
        )
        try:
            response = await client.send(request, stream=stream)
        except httpx2.HTTPError as exc:
            raise self._transport_error(exc) from exc
        if response.is_success:
            return response
        try:
            content = await response.aread()
        except httpx2.HTTPError as exc:
            raise self._transport_error(exc) from exc
        finally:
            await response.aclose()
        content = without_credentials(content, request.headers.items())
        raise self._status_error(response.status_code, response.headers, content)


def without_credentials(body: bytes, headers: Iterable[tuple[str, str]]) -> bytes:
    """`body` with every credential the request carried (`Authorization: Bearer KEY`,
    `x-api-key: KEY` …) replaced, so an error quoting it cannot leak the key."""
    for name, value in headers:
        if not any(part in name.lower() for part in _CREDENTIAL_HEADER):
            continue
        scheme, _, rest = value.strip().partition(" ")
        for secret in {value.strip(), rest.strip() if scheme.isalpha() else ""}:
            if len(secret) >= 8:
                body = body.replace(secret.encode(), REDACTED)
    return body


def merged_headers(*layers: Mapping[str, str] | None) -> dict[str, str]:
    """Later layers win, whatever the case of the names (a provider's `Authorization` replaces
    ours instead of going out next to it)."""
    merged: dict[str, tuple[str, str]] = {}
    for layer in layers:
        for name, value in (layer or {}).items():
            merged[name.lower()] = (name, value)
    return dict(merged.values())


def json_object(data: str) -> Mapping[str, Any]:
    """One event's data as a JSON object; ValueError when it is not one (a broken stream)."""
    value = json.loads(data)
    if not isinstance(value, Mapping):
        raise ValueError(f"expected a JSON object, got {data[:80]!r}")
    return value


async def sse_events(response: httpx2.Response) -> AsyncIterator[tuple[str | None, str]]:
    """(event name, data) for each complete server-sent event, per the SSE spec."""
    event: str | None = None
    data: list[str] = []
    async for line in response.aiter_lines():
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = None, []
            continue
        if line.startswith(":"):
            continue  # a comment, used by some hosts as a keep-alive
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value or None


_Sent = TypeVar("_Sent")


async def send_past_a_dropped_connection(send: Callable[[], Awaitable[_Sent]]) -> _Sent:
    """`send()`, and once more if the connection broke before any answer came.

    A server may close a kept-alive connection right after a reply (uvicorn does after
    llama-cpp-python's empty stream), and the pool hands it out again before noticing; the
    broken connection leaves the pool, so the second try goes out on a fresh one."""
    try:
        return await send()
    except ModelError as error:
        if error.kind is not ErrorKind.CONNECTION:
            raise
        return await send()
