"""Telegram over the Bot API with long polling (`getUpdates`), on httpx2.

The update offset is saved under `$DEXTER_HOME/gateway/telegram/<account>.offset` after each batch
has been handed on, so a restart neither loses nor repeats a message. An update of an unexpected
shape is logged in one line and stepped past (telegram_updates.py reads them). Replies are sent in
Telegram's HTML mode (converted from Markdown) in pieces of at most 4,096 characters. Approval
questions carry an inline keyboard; a press arrives as a `callback_query`, is handed on as a
choice, answered (`answerCallbackQuery`) and the question edited to show what was chosen.
"""

from __future__ import annotations

import asyncio
import html
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dexter.atomicfile import PRIVATE, private_dir, write_text
from dexter.gateway.choices import token
from dexter.gateway.records import parse_or_skip
from dexter.gateway.telegram_updates import BotIdentity, parse_update, update_id_of
from dexter.gateway.text import TELEGRAM_LIMIT, split_message, telegram_pieces
from dexter.gateway.types import (
    ApprovalOption,
    ChannelError,
    ChannelHooks,
    CredentialsRejected,
    InboundMessage,
    setup_command,
)

if TYPE_CHECKING:
    import httpx2

log = logging.getLogger("dexter.gateway")

API_BASE = "https://api.telegram.org"
POLL_TIMEOUT = 25
MAX_RETRY_AFTER = 60.0
MAX_429_RETRIES = 5
# Outbound calls (replies, "typing…") share a few kept-alive connections. Without a bound, a
# burst of chats opens one new connection per call at once, and the connects that overflow
# the server's accept queue wait a whole SYN retransmit (1 s) before "typing…" goes out.
SEND_CONNECTIONS = 8


class TelegramError(ChannelError):
    def __init__(self, message: str, *, code: int = 0, description: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.description = description


class TelegramTokenRejected(TelegramError, CredentialsRejected):
    """Telegram answered 401 (or 404, its answer for a malformed token) to getMe/getUpdates."""


class OffsetStore:
    """The next update id to ask for, in a small file written atomically."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> int | None:
        try:
            return int(self.path.read_text(encoding="utf-8").strip())
        except (OSError, ValueError):
            return None

    def save(self, offset: int) -> None:
        private_dir(self.path.parent)
        write_text(self.path, f"{offset}\n", mode=PRIVATE)


class TelegramChannel:
    def __init__(
        self,
        account_id: str,
        token: str,
        *,
        offset_path: Path,
        api_base: str | None = None,
        poll_timeout: int = POLL_TIMEOUT,
        transport: httpx2.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if not token.strip():
            raise ChannelError("no Telegram bot token configured; run `dexter gateway setup`")
        self._account_id = account_id
        self._token = token.strip()
        self._base = (api_base or API_BASE).rstrip("/")
        self.poll_timeout = poll_timeout
        self._transport = transport
        self._sleep = sleep
        self.offsets = OffsetStore(offset_path)
        self._poll: httpx2.AsyncClient | None = None
        self._send: httpx2.AsyncClient | None = None
        self._stopped = False
        self.bot_id = ""
        self.username = ""

    @property
    def name(self) -> str:
        return "telegram"

    @property
    def account_id(self) -> str:
        return self._account_id

    # ------------------------------------------------------------------ HTTP

    def _client(self, timeout: float, *, connections: int = 1) -> httpx2.AsyncClient:
        import httpx2

        return httpx2.AsyncClient(
            timeout=httpx2.Timeout(timeout, connect=10.0),
            limits=httpx2.Limits(
                max_connections=connections, max_keepalive_connections=connections
            ),
            transport=self._transport,
        )

    def _sender(self) -> httpx2.AsyncClient:
        if self._send is None:
            self._send = self._client(30.0, connections=SEND_CONNECTIONS)
        return self._send

    async def _call(
        self, method: str, payload: dict[str, Any], *, client: httpx2.AsyncClient | None = None
    ) -> Any:
        import httpx2

        if client is None:
            client = self._sender()
        # The token is part of the path: never put this URL in an error or a log line.
        url = f"{self._base}/bot{self._token}/{method}"
        for attempt in range(MAX_429_RETRIES + 1):
            try:
                response = await client.post(url, json=payload)
            except httpx2.TimeoutException as exc:
                raise TelegramError(f"Telegram {method} timed out") from exc
            except httpx2.TransportError as exc:
                raise TelegramError(
                    f"cannot reach Telegram ({type(exc).__name__}) during {method}"
                ) from exc
            try:
                body = response.json()
            except ValueError:
                body = {}
            if not isinstance(body, dict):
                body = {}
            if response.status_code == 200 and body.get("ok"):
                return body.get("result")
            code = int(body.get("error_code") or response.status_code)
            description = str(body.get("description") or f"HTTP {response.status_code}")
            if code == 429 and attempt < MAX_429_RETRIES:
                retry_after = (body.get("parameters") or {}).get("retry_after", 1)
                await self._sleep(min(MAX_RETRY_AFTER, max(0.0, float(retry_after))))
                continue
            if code == 409:
                raise TelegramError(
                    "Telegram says another program is reading this bot's updates (409 Conflict): "
                    "stop the other `dexter gateway run`, or remove the bot's webhook",
                    code=code,
                    description=description,
                )
            if code in (401, 404) and method in ("getMe", "getUpdates"):
                setup = setup_command("telegram", self._account_id)
                raise TelegramTokenRejected(
                    f"Telegram rejected the bot token ({description}): check it with "
                    f"@BotFather and run setup again: {setup}",
                    code=code,
                    description=description,
                )
            raise TelegramError(
                f"Telegram {method} failed: {description}", code=code, description=description
            )
        raise TelegramError(f"Telegram {method}: still rate limited after retries", code=429)

    # ------------------------------------------------------------------ lifecycle

    async def start(self, hooks: ChannelHooks) -> None:
        if self._stopped:  # stop() came before this start: the gateway is shutting down
            return
        poll = self._poll = self._client(self.poll_timeout + 15.0)
        handled: int | None = None
        saved: int | None = None
        try:
            me = await self._call("getMe", {}, client=poll)
            if not isinstance(me, dict):
                raise TelegramError("Telegram getMe answered something other than an object")
            self.bot_id = str(me.get("id", ""))
            self.username = str(me.get("username", ""))
            source = f"telegram/{self._account_id}"
            # Made now, not on the first reply: creating a client loads the TLS trust store
            # (tens of milliseconds), which the first "typing…" would otherwise wait for.
            self._sender()
            hooks.connected(f"@{self.username}" if self.username else self.bot_id)
            offset = await asyncio.to_thread(self.offsets.load)
            while not self._stopped:
                payload: dict[str, Any] = {
                    "timeout": self.poll_timeout,
                    "allowed_updates": ["message", "callback_query"],
                }
                if offset is not None:
                    payload["offset"] = offset
                updates = await self._call("getUpdates", payload, client=poll)
                if not updates:
                    continue
                if not isinstance(updates, list):
                    raise TelegramError("Telegram getUpdates answered something other than a list")
                before = offset
                for update in updates:
                    update_id = update_id_of(update)
                    if update_id is None:
                        log.warning("%s: skipped an update without a usable update_id", source)
                        continue
                    # A malformed update is logged and stepped over like any other: were it to
                    # raise, the offset would never pass it and nothing after it be answered.
                    message = parse_or_skip(
                        partial(parse_update, update, self.identity),
                        source=source,
                        what=f"update {update_id}",
                    )
                    if message is not None:
                        await hooks.message(message)
                    if offset is None or update_id >= offset:
                        offset = handled = update_id + 1
                if offset is None or offset == before:
                    # Nothing in the batch had an id to move past: asking again at once would
                    # fetch the same batch in a tight loop. The manager backs off instead.
                    raise TelegramError("Telegram sent updates without an update_id")
                await asyncio.to_thread(self.offsets.save, offset)
                saved = offset
        except Exception:
            if self._stopped:  # stop() closed the connection under the pending long poll
                return
            raise
        finally:
            if handled is not None and handled != saved:
                # Stopped between handling and saving: record it now, or a restart repeats it.
                self.offsets.save(handled)
            self._poll = None
            await poll.aclose()

    async def stop(self) -> None:
        self._stopped = True
        for client in (self._poll, self._send):
            if client is not None:
                await client.aclose()
        self._poll = self._send = None

    # ------------------------------------------------------------------ inbound

    @property
    def identity(self) -> BotIdentity:
        return BotIdentity(self._account_id, self.bot_id, self.username)

    def parse(self, update: object) -> InboundMessage | None:
        """See `parse_update`: raises `MalformedRecord` for an update of an unexpected shape."""
        return parse_update(update, self.identity)

    # ------------------------------------------------------------------ outbound

    async def send_text(self, chat_id: str, text: str, *, thread_id: str | None = None) -> None:
        for piece in telegram_pieces(text, TELEGRAM_LIMIT):
            payload: dict[str, Any] = {
                "chat_id": chat_id,
                "text": piece,
                "parse_mode": "HTML",
                "link_preview_options": {"is_disabled": True},
            }
            if thread_id:
                payload["message_thread_id"] = int(thread_id)
            try:
                await self._call("sendMessage", payload)
            except TelegramError as exc:
                if exc.code != 400 or "parse" not in exc.description.lower():
                    raise
                # Our HTML was refused: send the same piece as plain text rather than nothing.
                plain = _plain(piece)
                plain_payload = {k: v for k, v in payload.items() if k != "parse_mode"}
                for part in split_message(plain, TELEGRAM_LIMIT):
                    await self._call("sendMessage", {**plain_payload, "text": part})

    async def send_approval(
        self,
        chat_id: str,
        text: str,
        approval_id: str,
        options: Sequence[ApprovalOption],
        *,
        thread_id: str | None = None,
    ) -> str:
        """The question with one inline button per option (two to a row); the message id."""
        buttons = [
            {"text": option.label, "callback_data": token(approval_id, option)}
            for option in options
        ]
        rows = [buttons[i : i + 2] for i in range(0, len(buttons), 2)]
        payload: dict[str, Any] = {
            "chat_id": chat_id,
            "text": telegram_pieces(text, TELEGRAM_LIMIT)[0],
            "parse_mode": "HTML",
            "link_preview_options": {"is_disabled": True},
            "reply_markup": {"inline_keyboard": rows},
        }
        if thread_id:
            payload["message_thread_id"] = int(thread_id)
        sent = await self._html_call("sendMessage", payload)
        return str((sent or {}).get("message_id", ""))

    async def settle_approval(
        self, chat_id: str, ref: str, text: str, *, thread_id: str | None = None
    ) -> None:
        """The question edited to say how it was settled; without `reply_markup` the buttons
        go."""
        await self._html_call(
            "editMessageText",
            {
                "chat_id": chat_id,
                "message_id": int(ref),
                "text": telegram_pieces(text, TELEGRAM_LIMIT)[0],
                "parse_mode": "HTML",
                "link_preview_options": {"is_disabled": True},
            },
        )

    async def _html_call(self, method: str, payload: dict[str, Any]) -> Any:
        """One message in HTML mode, again as plain text if Telegram refuses our HTML."""
        try:
            return await self._call(method, payload)
        except TelegramError as exc:
            if exc.code != 400 or "parse" not in exc.description.lower():
                raise
        plain = {k: v for k, v in payload.items() if k != "parse_mode"}
        plain["text"] = split_message(_plain(payload["text"]), TELEGRAM_LIMIT)[0]
        return await self._call(method, plain)

    async def answer_choice(self, choice: InboundMessage, note: str = "") -> None:
        """Every button press must be answered, or the person's button keeps spinning; a note
        shows to them alone, as a toast."""
        ack = choice.choice.ack_id if choice.choice is not None else ""
        if ack:
            payload: dict[str, Any] = {"callback_query_id": ack}
            if note:
                payload["text"] = note[:200]
            await self._call("answerCallbackQuery", payload)
        elif note:
            await self.send_text(choice.chat_id, note, thread_id=choice.thread_id)

    async def send_typing(self, chat_id: str, *, thread_id: str | None = None) -> None:
        payload: dict[str, Any] = {"chat_id": chat_id, "action": "typing"}
        if thread_id:
            payload["message_thread_id"] = int(thread_id)
        await self._call("sendChatAction", payload)

    async def mark_read(self, message: InboundMessage) -> None:
        """Bots have no read receipts on Telegram."""
        return None


def _plain(piece: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", piece))
