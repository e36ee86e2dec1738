"""WhatsApp through Meta's official Cloud API: a webhook for inbound, the Graph API for replies.

The webhook is a small asyncio HTTP server (standard library only). It answers Meta's
verification handshake (`hub.verify_token`) and accepts a POST only when its
`X-Hub-Signature-256` is the HMAC-SHA256 of the body under the app secret, so nobody else can
inject messages. A request must arrive whole within `READ_TIMEOUT` and at most `MAX_CONNECTIONS`
are open at once, so idle or slow clients cannot use up the process's files. A message of an
unexpected shape is skipped with one log line. Put it behind your HTTPS reverse proxy or tunnel;
Meta needs a public URL.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from dexter.gateway.choices import NumberedApprovals
from dexter.gateway.config import AccountConfig
from dexter.gateway.records import MalformedRecord, Record, parse_or_skip, timestamp
from dexter.gateway.text import markdown_to_whatsapp, split_message
from dexter.gateway.types import (
    ChannelError,
    ChannelHooks,
    ContentKind,
    CredentialsRejected,
    InboundMessage,
    setup_command,
)

if TYPE_CHECKING:
    import httpx2

log = logging.getLogger("dexter.gateway")

GRAPH_BASE = "https://graph.facebook.com/v21.0"
WHATSAPP_LIMIT = 4096
MAX_BODY = 1 << 20
MAX_HEADERS = 100
# A whole request (line, headers, body) must arrive within this; Meta sends one in milliseconds.
READ_TIMEOUT = 15.0
# Open connections at most, far below the usual 1,024 file limit. Past it, the connection that
# has waited longest for its request is closed to make room: idle sockets cannot starve Meta.
MAX_CONNECTIONS = 128
_KINDS: dict[str, ContentKind] = {
    "text": "text",
    "image": "image",
    "video": "video",
    "audio": "voice",
    "sticker": "sticker",
    "document": "document",
    "location": "location",
    "contacts": "contact",
}


def signature_valid(app_secret: str, body: bytes, header: str | None) -> bool:
    if not header or not header.startswith("sha256="):
        return False
    expected = hmac.new(app_secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, header.removeprefix("sha256=").strip().lower())


def parse_webhook(payload: object, account_id: str) -> list[InboundMessage]:
    """Messages in a webhook payload; delivery/read status updates carry none.

    A payload whose envelope (`entry[].changes[].value`) has an unexpected shape is skipped, and
    so is each message that does, with one log line each: the messages beside a bad one are
    still read."""
    source = f"whatsapp_cloud/{account_id}"
    values = parse_or_skip(partial(_values, payload), source=source, what="webhook payload")
    found: list[InboundMessage] = []
    for value in values or []:
        names = parse_or_skip(partial(_names, value), source=source, what=f"{value.path}.contacts")
        messages = parse_or_skip(
            partial(value.items, "messages"), source=source, what=f"{value.path}.messages"
        )
        for raw, path in messages or []:
            message = parse_or_skip(
                partial(_message, raw, path, names or {}, account_id),
                source=source,
                what=f"message {path}",
            )
            if message is not None:
                found.append(message)
    return found


def _values(payload: object) -> list[Record]:
    return [
        value
        for entry in Record(payload, "payload").objects("entry")
        for change in entry.objects("changes")
        if (value := change.maybe_obj("value")) is not None
    ]


def _names(value: Record) -> dict[str, str]:
    names: dict[str, str] = {}
    for contact in value.objects("contacts"):
        profile = contact.maybe_obj("profile")
        names[contact.text("wa_id")] = profile.text("name") if profile else ""
    return names


def _digits(record: Record, key: str) -> str:
    value = record.required_text(key)
    if not value.isascii() or not value.isdigit():
        raise MalformedRecord(f"{record.path}.{key} is not a string of digits")
    return value


def _message(raw: object, path: str, names: dict[str, str], account_id: str) -> InboundMessage:
    record = Record(raw, path)
    sender = _digits(record, "from")
    declared = record.text("type")
    kind = _KINDS.get(declared, "other")
    text = ""
    if kind == "text":
        text = record.obj("text").text("body")
    elif kind != "other":  # media: its caption is the question, if any
        media = record.maybe_obj(declared)
        text = media.text("caption") if media is not None else ""
    return InboundMessage(
        channel="whatsapp_cloud",
        account_id=account_id,
        message_id=record.required_text("id"),
        chat_id=f"+{sender}",
        chat_type="direct",
        sender_id=f"+{sender}",
        sender_name=names.get(sender, ""),
        text=text,
        kind=kind,
        timestamp=timestamp(int(_digits(record, "timestamp")), f"{path}.timestamp"),
    )


class WhatsAppCloudChannel(NumberedApprovals):
    """Approval questions are asked with numbers to reply with (`NumberedApprovals`)."""

    def __init__(
        self,
        account_id: str,
        *,
        access_token: str,
        phone_number_id: str,
        app_secret: str,
        verify_token: str,
        listen: str = "127.0.0.1:8787",
        api_base: str | None = None,
        transport: httpx2.AsyncBaseTransport | None = None,
        read_timeout: float = READ_TIMEOUT,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        missing = [
            name
            for name, value in (
                ("access_token", access_token),
                ("phone_number_id", phone_number_id),
                ("app_secret", app_secret),
                ("verify_token", verify_token),
            )
            if not value
        ]
        if missing:
            raise ChannelError(
                f"WhatsApp Cloud account {account_id!r} needs {', '.join(missing)}; run "
                "`dexter gateway setup`"
            )
        self._account_id = account_id
        self._token = access_token
        self.phone_number_id = phone_number_id
        self._secret = app_secret
        self._verify = verify_token
        host, _, port = listen.rpartition(":")
        self.host, self.port = host or "127.0.0.1", int(port or 8787)
        self._base = (api_base or GRAPH_BASE).rstrip("/")
        self._transport = transport
        self._client: httpx2.AsyncClient | None = None
        self._server: asyncio.Server | None = None
        self._stop = asyncio.Event()
        # Set when the Graph API refused the access token: the webhook closes and start()
        # raises it, so the account stops instead of answering no one.
        self._rejected: CredentialsRejected | None = None
        self._last_inbound: dict[str, str] = {}
        self.on_payload: Callable[[Any], Awaitable[None]] | None = None
        self.read_timeout = read_timeout
        self.max_connections = max_connections
        self._open = 0
        # Connections still sending their request, oldest first: the ones closed to make room.
        self._reading: dict[asyncio.StreamWriter, None] = {}

    @classmethod
    def from_config(cls, account_id: str, account: AccountConfig) -> WhatsAppCloudChannel:
        return cls(
            account_id,
            access_token=account.access_token or "",
            phone_number_id=account.phone_number_id or "",
            app_secret=account.app_secret or "",
            verify_token=account.verify_token or "",
            listen=account.listen,
            api_base=account.api_base,
        )

    @property
    def name(self) -> str:
        return "whatsapp_cloud"

    @property
    def account_id(self) -> str:
        return self._account_id

    @property
    def bound_port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    # ------------------------------------------------------------------ webhook server

    async def start(self, hooks: ChannelHooks) -> None:
        if self._stop.is_set():  # stop() came before this start: the gateway is shutting down
            return

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self._admit(writer)
            messages: list[InboundMessage] = []
            try:
                messages = await self._serve_one(reader, writer)
            except TimeoutError:
                log.debug("webhook connection sent no whole request in time; closed")
            except (ConnectionError, asyncio.IncompleteReadError, ValueError) as exc:
                log.debug("webhook request failed: %s", exc)
            except Exception as exc:  # one bad request must never reach asyncio's traceback
                log.warning("webhook request failed (%s)", type(exc).__name__)
                log.debug("webhook request failed", exc_info=True)
            finally:
                # Closed before the messages are handled: a connection lives for one request.
                self._reading.pop(writer, None)
                self._open -= 1
                writer.close()
                with contextlib.suppress(Exception):
                    await writer.wait_closed()
            for message in messages:
                self._last_inbound[message.chat_id] = message.message_id
                await hooks.message(message)

        try:
            self._server = await asyncio.start_server(serve, self.host, self.port)
        except OSError as exc:
            raise ChannelError(f"cannot listen on {self.host}:{self.port}: {exc}") from exc
        hooks.connected(f"phone number id {self.phone_number_id} on port {self.bound_port}")
        try:
            await self._stop.wait()
        finally:
            self._server.close()
            await self._server.wait_closed()
        if self._rejected is not None:
            raise self._rejected

    def _admit(self, writer: asyncio.StreamWriter) -> None:
        self._open += 1
        self._reading[writer] = None
        if self._open > self.max_connections:
            oldest = next(iter(self._reading))
            self._reading.pop(oldest)
            log.debug("webhook connections at the cap (%d); closed the longest idle", self._open)
            oldest.transport.abort()  # its pending read ends at once; its handler cleans up

    async def _read_request(
        self, reader: asyncio.StreamReader
    ) -> tuple[str, str, dict[str, str], bytes] | None:
        """(method, target, headers, body), or None when the client went away first."""
        request_line = (await reader.readline()).decode("latin-1").strip()
        if not request_line:
            return None
        method, target, _ = [*request_line.split(" ", 2), "", ""][:3]
        headers: dict[str, str] = {}
        while True:
            line = (await reader.readline()).decode("latin-1")
            if line in ("\r\n", "\n", ""):
                break
            if len(headers) >= MAX_HEADERS:
                raise _Refused(431, "too many headers")
            key, _, value = line.partition(":")
            headers[key.strip().lower()] = value.strip()
        length = headers.get("content-length") or "0"
        if not length.isdigit():
            raise _Refused(400, "bad content-length")
        if int(length) > MAX_BODY:
            raise _Refused(413, "too large")
        body = await reader.readexactly(int(length)) if int(length) else b""
        return method, target, headers, body

    async def _serve_one(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> list[InboundMessage]:
        """Answer one request; the messages a signed POST carried, to be handed on after."""
        try:
            async with asyncio.timeout(self.read_timeout):
                request = await self._read_request(reader)
        except _Refused as refused:
            await _respond(writer, refused.status, refused.text)
            return []
        if request is None or writer.transport.is_closing():
            return []  # gone, or closed to make room for a newer connection
        self._reading.pop(writer, None)
        method, target, headers, body = request
        url = urlsplit(target)
        if method == "GET":
            query = parse_qs(url.query)
            mode = (query.get("hub.mode") or [""])[0]
            token = (query.get("hub.verify_token") or [""])[0]
            challenge = (query.get("hub.challenge") or [""])[0]
            if mode == "subscribe" and hmac.compare_digest(token, self._verify):
                await _respond(writer, 200, challenge)
            else:
                await _respond(writer, 403, "verification failed")
            return []
        if method != "POST":
            await _respond(writer, 405, "method not allowed")
            return []
        if not signature_valid(self._secret, body, headers.get("x-hub-signature-256")):
            log.warning("webhook POST with a bad signature refused")
            await _respond(writer, 401, "bad signature")
            return []
        try:
            payload = json.loads(body or b"{}")
        except json.JSONDecodeError:
            await _respond(writer, 400, "bad json")
            return []
        # Answer Meta first (it retries slow webhooks); the messages are handled after.
        await _respond(writer, 200, "ok")
        return parse_webhook(payload, self._account_id)

    async def stop(self) -> None:
        self._stop.set()
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    # ------------------------------------------------------------------ Graph API

    async def _post(self, payload: dict[str, Any]) -> None:
        import httpx2

        if self._client is None:
            self._client = httpx2.AsyncClient(timeout=30.0, transport=self._transport)
        url = f"{self._base}/{self.phone_number_id}/messages"
        try:
            response = await self._client.post(
                url, json=payload, headers={"authorization": f"Bearer {self._token}"}
            )
        except httpx2.TransportError as exc:
            raise ChannelError(
                f"cannot reach the WhatsApp Cloud API ({type(exc).__name__})"
            ) from exc
        if response.status_code >= 400:
            try:
                detail = response.json().get("error", {}).get("message", "")
            except ValueError:
                detail = ""
            if response.status_code == 401:
                self._rejected = CredentialsRejected(
                    f"the WhatsApp Cloud API rejected the access token ({detail or 'HTTP 401'}): "
                    "make a new one in your Meta app and run setup again: "
                    + setup_command("whatsapp_cloud", self._account_id)
                )
                self._stop.set()
                raise self._rejected
            raise ChannelError(
                f"WhatsApp Cloud API refused the message (HTTP {response.status_code}) {detail}"
            )

    async def send_text(self, chat_id: str, text: str, *, thread_id: str | None = None) -> None:
        to = chat_id.lstrip("+")
        for piece in split_message(markdown_to_whatsapp(text), WHATSAPP_LIMIT):
            await self._post(
                {
                    "messaging_product": "whatsapp",
                    "recipient_type": "individual",
                    "to": to,
                    "type": "text",
                    "text": {"body": piece, "preview_url": False},
                }
            )

    async def send_typing(self, chat_id: str, *, thread_id: str | None = None) -> None:
        # The Cloud API ties "typing…" to marking the person's last message read.
        message_id = self._last_inbound.get(chat_id)
        if message_id:
            await self._post(
                {
                    "messaging_product": "whatsapp",
                    "status": "read",
                    "message_id": message_id,
                    "typing_indicator": {"type": "text"},
                }
            )

    async def mark_read(self, message: InboundMessage) -> None:
        await self._post(
            {"messaging_product": "whatsapp", "status": "read", "message_id": message.message_id}
        )


class _Refused(Exception):
    """A request answered with an error status before it is read to the end."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status
        self.text = text


async def _respond(writer: asyncio.StreamWriter, status: int, text: str) -> None:
    reasons = {
        200: "OK",
        400: "Bad Request",
        401: "Unauthorized",
        403: "Forbidden",
        405: "Method Not Allowed",
        413: "Content Too Large",
        431: "Request Header Fields Too Large",
    }
    body = text.encode()
    head = (
        f"HTTP/1.1 {status} {reasons.get(status, 'Error')}\r\ncontent-type: text/plain\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    writer.write(head.encode() + body)
    await writer.drain()
