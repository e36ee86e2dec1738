"""WhatsApp Web: your personal number through a linked device, with neonize (optional extra).

neonize wraps whatsmeow, a Go library, through a shared library bundled in its platform wheels
(Linux x86_64/arm64, Windows x64). Its import downloads that library from GitHub when the file is
missing, so we check the bundled file first and refuse instead: no run-time downloads.

The linked-device session (neonize's SQLite database) lives under
`$DEXTER_HOME/gateway/whatsapp_web/<account>/`, a 0700 directory of 0600 files: whoever reads it
can act as your WhatsApp account.

This is an unofficial client: WhatsApp may ban a number that uses it. It replies only (no
proactive sends unless `proactive` is turned on) and the Cloud API is the business-grade choice.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import os
import platform
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from dexter.atomicfile import create_private, private_dir
from dexter.config import ConfigError
from dexter.gateway.choices import NumberedApprovals
from dexter.gateway.config import AccountConfig
from dexter.gateway.mention import is_mentioned
from dexter.gateway.records import parse_or_skip, timestamp
from dexter.gateway.text import markdown_to_whatsapp, split_message
from dexter.gateway.types import (
    ChannelError,
    ChannelHooks,
    ContentKind,
    CredentialsRejected,
    InboundMessage,
)
from dexter.install import add_extra_command, missing_extra

log = logging.getLogger("dexter.gateway")

WHATSAPP_LIMIT = 4096
SESSION_FILE = "session.db"
# The dispatcher refreshes "typing…" every 4 s; once a refresh is this late the run is over.
TYPING_LAPSE = 6.0
GROUP_TITLE_TTL = 600.0
NOT_LINKED = (
    "WhatsApp Web is not linked to a phone yet; run `dexter gateway setup whatsapp_web` "
    "and scan the QR code"
)
LOGGED_OUT = (
    "WhatsApp logged this linked device out (removed on the phone, or expired); run "
    "`dexter gateway setup whatsapp_web` to link it again"
)
_WRAPPERS = (
    "ephemeralMessage",
    "viewOnceMessage",
    "viewOnceMessageV2",
    "viewOnceMessageV2Extension",
    "documentWithCaptionMessage",
)
# E2E Message field -> what it carried, and whether its text lives in `caption`.
_MEDIA: tuple[tuple[str, ContentKind], ...] = (
    ("imageMessage", "image"),
    ("videoMessage", "video"),
    ("ptvMessage", "video"),
    ("audioMessage", "audio"),
    ("stickerMessage", "sticker"),
    ("documentMessage", "document"),
    ("locationMessage", "location"),
    ("liveLocationMessage", "location"),
    ("contactMessage", "contact"),
    ("contactsArrayMessage", "contact"),
    ("pollCreationMessage", "other"),
    ("pollCreationMessageV2", "other"),
    ("pollCreationMessageV3", "other"),
)
# Not something a person said: reactions, deletions/edits, key exchange.
_SILENT = ("reactionMessage", "protocolMessage", "senderKeyDistributionMessage")


# ---------------------------------------------------------------------- neonize, loaded lazily


@dataclass(frozen=True)
class NeonizeApi:
    """The neonize names the channel uses, gathered so tests can hand in fakes shaped like them."""

    new_client: Callable[[str], Any]  # NewAClient(<session database path>)
    build_jid: Callable[[str, str], Any]  # neonize.utils.jid.build_jid(user, server)
    connected_ev: type
    message_ev: type
    logged_out_ev: type
    pair_status_ev: type
    disconnected_ev: type
    stream_replaced_ev: type
    temporary_ban_ev: type
    connect_failure_ev: type
    composing: Any  # ChatPresence.CHAT_PRESENCE_COMPOSING
    paused: Any  # ChatPresence.CHAT_PRESENCE_PAUSED
    media_text: Any  # ChatPresenceMedia.CHAT_PRESENCE_MEDIA_TEXT
    receipt_read: Any  # ReceiptType.READ


def bundled_library_name(system: str = "", machine: str = "") -> str:
    """The file name neonize gives its Go library on this platform (see neonize.utils.platform)."""
    os_name = (system or platform.system()).lower()
    arch = (machine or platform.machine()).lower()
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(arch, arch)
    ext = {"windows": "dll", "darwin": "dylib"}.get(os_name, "so")
    return f"neonize-{os_name}-{arch}.{ext}"


def load_neonize() -> NeonizeApi:
    """Import neonize, or say in one line what to do. Never lets it download its library."""
    spec = importlib.util.find_spec("neonize")
    if spec is None or not spec.submodule_search_locations:
        if platform.system() == "Darwin":
            raise ConfigError(
                "WhatsApp Web needs neonize, which has no macOS build (0.5.x ships Linux and "
                "Windows only); use the whatsapp_cloud channel or run the gateway on Linux."
            )
        raise missing_extra("WhatsApp Web messages", "whatsapp", "neonize")
    folder = Path(next(iter(spec.submodule_search_locations)))
    library = bundled_library_name()
    if not (folder / library).is_file():
        raise ConfigError(
            f"neonize is installed without its bundled {library}; importing it would download "
            "one from GitHub at run time. Reinstall it from a platform wheel with "
            f"`{add_extra_command('whatsapp')}`."
        )
    try:
        from neonize.aioze.client import NewAClient
        from neonize.aioze.events import (
            ConnectedEv,
            ConnectFailureEv,
            DisconnectedEv,
            LoggedOutEv,
            MessageEv,
            PairStatusEv,
            StreamReplacedEv,
            TemporaryBanEv,
        )
        from neonize.utils.enum import ChatPresence, ChatPresenceMedia, ReceiptType
        from neonize.utils.jid import build_jid
        from neonize.utils.log import log as neonize_log
    except (ImportError, OSError) as exc:  # e.g. libmagic missing, or a broken wheel
        raise ConfigError(
            f"neonize could not be loaded ({exc}); on Debian/Ubuntu it needs `apt install "
            f"libmagic1`, then `{add_extra_command('whatsapp')}`."
        ) from exc
    # neonize logs at INFO to the root logger and hands that level to whatsmeow: keep it quiet.
    neonize_log.setLevel(logging.WARNING)
    for name in ("whatsmeow", "whatsmeow.Client", "Whatsmeow.Database"):
        logging.getLogger(name).setLevel(logging.WARNING)
    return NeonizeApi(
        new_client=NewAClient,
        build_jid=build_jid,
        connected_ev=ConnectedEv,
        message_ev=MessageEv,
        logged_out_ev=LoggedOutEv,
        pair_status_ev=PairStatusEv,
        disconnected_ev=DisconnectedEv,
        stream_replaced_ev=StreamReplacedEv,
        temporary_ban_ev=TemporaryBanEv,
        connect_failure_ev=ConnectFailureEv,
        composing=ChatPresence.CHAT_PRESENCE_COMPOSING,
        paused=ChatPresence.CHAT_PRESENCE_PAUSED,
        media_text=ChatPresenceMedia.CHAT_PRESENCE_MEDIA_TEXT,
        receipt_read=ReceiptType.READ,
    )


# ---------------------------------------------------------------------- session files


def default_session_path(gateway_dir: Path, account_id: str) -> Path:
    return gateway_dir / "whatsapp_web" / account_id / SESSION_FILE


# The session database and the files SQLite keeps beside it.
_COMPANIONS = ("", "-wal", "-shm", "-journal")


def _session_files(path: Path) -> list[Path]:
    return [path.with_name(path.name + suffix) for suffix in _COMPANIONS]


def secure_session(path: Path, *, create: bool) -> None:
    """The session's files 0600, and its folder 0700 when the folder holds nothing else (the
    default per-account folder; a folder the user chose with `session_path` that holds other
    files is left as it is, and so is everything else in it). With `create`, an empty database
    file is made first with mode 0600, so SQLite (which gives its journal the database's mode)
    never writes the keys world-readable."""
    folder = path.parent
    private_dir(folder)
    if create:
        create_private(path)
    ours = set(_session_files(path))
    if all(item in ours for item in folder.iterdir()):
        os.chmod(folder, 0o700)  # also a folder made earlier, or under a wide umask
    for item in ours:
        if item.is_file():
            os.chmod(item, 0o600)


def session_linked(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError:
        return False


def delete_session(path: Path) -> bool:
    """Remove the session database and its journals; the folder too when nothing else is in it."""
    removed = False
    for item in _session_files(path):
        if item.is_file():
            item.unlink()
            removed = True
    with contextlib.suppress(OSError):
        path.parent.rmdir()
    return removed


# ---------------------------------------------------------------------- protobuf reading


def field_of(message: Any, name: str) -> Any | None:
    """A set sub-message, or None (protobuf returns empty defaults for unset fields)."""
    if message is None:
        return None
    try:
        return getattr(message, name) if message.HasField(name) else None
    except ValueError:  # not a field of this message type
        return None


def jid_string(jid: Any) -> str:
    """`user@server` without the device part: where a reply goes."""
    return f"{jid.User}@{jid.Server}" if jid.User else str(jid.Server)


def _content(message: Any) -> tuple[str, ContentKind, Any] | None:
    """(text, kind, contextInfo) of an E2E message; None for things nobody typed."""
    for _ in range(3):  # wrappers can nest (an ephemeral view-once message)
        inner = next(
            (w.message for name in _WRAPPERS if (w := field_of(message, name)) is not None), None
        )
        if inner is None:
            break
        message = inner
    if message is None:
        return None
    if message.conversation:
        return str(message.conversation), "text", None
    extended = field_of(message, "extendedTextMessage")
    if extended is not None:
        return str(extended.text), "text", field_of(extended, "contextInfo")
    for name, kind in _MEDIA:
        media = field_of(message, name)
        if media is None:
            continue
        if name == "audioMessage" and getattr(media, "PTT", False):
            kind = "voice"
        caption = str(getattr(media, "caption", "") or "")
        return caption, kind, field_of(media, "contextInfo")
    if any(field_of(message, name) is not None for name in _SILENT):
        return None
    return "", "other", None


# ---------------------------------------------------------------------- the channel


class WhatsAppWebChannel(NumberedApprovals):
    """Approval questions are asked with numbers to reply with (`NumberedApprovals`)."""

    def __init__(
        self,
        account_id: str,
        *,
        session_path: Path,
        api: NeonizeApi,
        send_read_receipts: bool = True,
        typing_lapse: float = TYPING_LAPSE,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._account_id = account_id
        self.session_path = session_path
        self.api = api
        self.send_read_receipts = send_read_receipts
        self.typing_lapse = typing_lapse
        self._clock = clock or (lambda: asyncio.get_running_loop().time())
        self._client: Any = None
        self._ended: asyncio.Event | None = None
        self._end_reason: str | None = None
        self._stopping = False
        self.logged_out = False
        # The linked account: "+<phone>" (self-chat, mentions) and its LID.
        self.self_id = ""
        self._self_phone = ""
        self._self_lid = ""
        self._push_name = ""
        self._hooks: ChannelHooks | None = None
        self._sent: OrderedDict[str, None] = OrderedDict()
        self._receipts: OrderedDict[str, tuple[Any, Any]] = OrderedDict()
        self._titles: dict[str, tuple[float, str]] = {}
        self._typing: dict[str, asyncio.TimerHandle] = {}
        self._pausing: set[asyncio.Task[None]] = set()

    @classmethod
    def from_config(
        cls, gateway_dir: Path, account_id: str, account: AccountConfig
    ) -> WhatsAppWebChannel:
        path = (
            Path(account.session_path).expanduser()
            if account.session_path
            else default_session_path(gateway_dir, account_id)
        )
        return cls(
            account_id,
            session_path=path,
            api=load_neonize(),
            send_read_receipts=account.mark_read,
        )

    @property
    def name(self) -> str:
        return "whatsapp_web"

    @property
    def account_id(self) -> str:
        return self._account_id

    # ------------------------------------------------------------------ lifecycle

    async def start(self, hooks: ChannelHooks) -> None:
        # Retrying either cannot help: the device must be linked (again) with setup.
        if self.logged_out:
            raise CredentialsRejected(LOGGED_OUT)
        if not await asyncio.to_thread(session_linked, self.session_path):
            raise CredentialsRejected(NOT_LINKED)
        await asyncio.to_thread(secure_session, self.session_path, create=False)
        self._stopping = False
        self._end_reason = None
        ended = self._ended = asyncio.Event()
        self._hooks = hooks
        client = self._client = self.api.new_client(str(self.session_path))
        self._register(client, ended)
        task: asyncio.Future[Any] | None = None
        try:
            task = await client.connect()
            waiter = asyncio.ensure_future(ended.wait())
            try:
                await asyncio.wait(
                    [waiter, task] if task is not None else [waiter],
                    return_when=asyncio.FIRST_COMPLETED,
                )
            finally:
                waiter.cancel()
        finally:
            await self._shutdown(client, task)
        if self._stopping:
            return
        if self._end_reason:
            raise (CredentialsRejected if self.logged_out else ChannelError)(self._end_reason)
        if task is not None and task.done() and not task.cancelled() and task.exception():
            raise ChannelError(f"WhatsApp connection failed: {task.exception()}")
        raise ChannelError("WhatsApp connection closed")

    def _register(self, client: Any, ended: asyncio.Event) -> None:
        api = self.api

        def end(reason: str) -> None:
            self._end_reason = self._end_reason or reason
            ended.set()

        async def on_qr(_client: Any, _code: bytes) -> None:
            # A QR code means the stored session is gone: linking happens in `gateway setup`.
            end(NOT_LINKED)

        async def on_connected(c: Any, _event: Any) -> None:
            await self._identify(c)
            if self._hooks is not None:
                self._hooks.connected(self.identity)

        async def on_message(_c: Any, event: Any) -> None:
            await self._inbound(event)

        async def on_logged_out(_c: Any, _event: Any) -> None:
            self.logged_out = True
            end(LOGGED_OUT)

        async def on_disconnected(_c: Any, _event: Any) -> None:
            end("WhatsApp disconnected")

        async def on_replaced(_c: Any, _event: Any) -> None:
            end(
                "another program took over this WhatsApp session (stream replaced); stop the "
                "other `dexter gateway run`"
            )

        async def on_ban(_c: Any, event: Any) -> None:
            end(f"WhatsApp temporarily banned this number (code {getattr(event, 'Code', '?')})")

        async def on_failure(_c: Any, event: Any) -> None:
            end(f"WhatsApp refused the connection: {getattr(event, 'Message', '') or 'unknown'}")

        client.qr(on_qr)
        client.event(api.connected_ev)(on_connected)
        client.event(api.message_ev)(on_message)
        client.event(api.logged_out_ev)(on_logged_out)
        client.event(api.disconnected_ev)(on_disconnected)
        client.event(api.stream_replaced_ev)(on_replaced)
        client.event(api.temporary_ban_ev)(on_ban)
        client.event(api.connect_failure_ev)(on_failure)

    async def _identify(self, client: Any) -> None:
        me = await client.get_me()
        jid = field_of(me, "JID")
        lid = field_of(me, "LID")
        self._self_phone = str(jid.User) if jid is not None else ""
        self._self_lid = str(lid.User) if lid is not None else ""
        self.self_id = f"+{self._self_phone}" if self._self_phone else ""
        self._push_name = str(getattr(me, "PushName", "") or "")

    @property
    def identity(self) -> str:
        name = self._push_name
        return f"{self.self_id} ({name})" if name and self.self_id else self.self_id

    async def _shutdown(self, client: Any, task: asyncio.Future[Any] | None) -> None:
        for chat in list(self._typing):
            await self._pause(chat)
        try:
            await asyncio.wait_for(client.stop(), 3.0)
        except Exception as exc:  # closing is best effort; the Go side is stopped either way
            log.debug("stopping the WhatsApp client failed: %s", exc)
        if task is not None and not task.done():
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(task), 2.0)
            task.cancel()
        self._client = None

    async def stop(self) -> None:
        self._stopping = True
        if self._ended is not None:
            self._ended.set()

    # ------------------------------------------------------------------ inbound

    def _phone(self, jid: Any, alt: Any | None) -> str:
        """The phone number behind a JID; LIDs (WhatsApp's hidden ids) through the alternate JID
        WhatsApp sends with them, or the linked account's own LID."""
        if jid is None:
            return ""
        if jid.Server == "lid":
            if self._self_lid and jid.User == self._self_lid:
                return self._self_phone
            if alt is not None and alt.User and alt.Server == "s.whatsapp.net":
                return str(alt.User)
        return str(jid.User)

    def parse(self, event: Any) -> InboundMessage | None:
        """One neonize MessageEv as an InboundMessage; None for what nobody typed to us."""
        if getattr(event, "IsEdit", False):
            return None  # an edit is not a new question
        info = event.Info
        source = info.MessageSource
        chat = source.Chat
        if chat.Server in ("broadcast", "newsletter"):
            return None  # status updates and channels
        if info.ID in self._sent:
            return None  # our own reply, echoed back
        content = _content(field_of(event, "Message"))
        if content is None:
            return None
        text, kind, context = content
        group = bool(source.IsGroup) or chat.Server == "g.us"
        from_me = bool(source.IsFromMe)
        if group:
            sender = self._phone(source.Sender, field_of(source, "SenderAlt"))
        else:
            # A DM's conversation is with the chat's owner, whoever wrote this message: the
            # owner's own message to a friend is theirs to the friend, not a question to Dexter.
            alt = field_of(source, "RecipientAlt" if from_me else "SenderAlt")
            sender = self._phone(chat, alt)
        mentioned_ids: list[str] = []
        replied_to: str | None = None
        if context is not None:
            mentioned_ids = [str(j) for j in context.mentionedJID]
            if context.stanzaID and context.participant:
                replied_to = str(context.participant)
        mentioned = (
            group
            and not from_me
            and is_mentioned(
                text,
                mentioned_ids=mentioned_ids,
                self_ids=[s for s in (self._self_phone, self._self_lid) if s],
                replied_to_id=replied_to,
            )
        )
        self._remember(self._receipts, info.ID, (chat, source.Sender))
        return InboundMessage(
            channel="whatsapp_web",
            account_id=self._account_id,
            message_id=str(info.ID),
            chat_id=jid_string(chat),
            chat_type="group" if group else "direct",
            sender_id=f"+{sender}" if sender else "",
            sender_name=str(info.Pushname or ""),
            text=text,
            kind=kind,
            timestamp=timestamp(int(info.Timestamp) / 1000, "Info.Timestamp"),
            mentioned=mentioned,
            is_from_me=from_me,
        )

    async def _inbound(self, event: Any) -> None:
        # neonize runs each handler as a task nobody awaits: an error raised here would vanish
        # without a word. A message the parser cannot read is one log line instead.
        message = parse_or_skip(
            partial(self.parse, event),
            source=f"whatsapp_web/{self._account_id}",
            what="message event",
        )
        if message is None or self._hooks is None:
            return
        if message.chat_type == "group" and message.mentioned:
            title = await self._group_title(event.Info.MessageSource.Chat)
            if title:
                message = replace(message, chat_title=title)
        await self._hooks.message(message)

    async def _group_title(self, jid: Any) -> str:
        key = jid_string(jid)
        now = self._clock()
        cached = self._titles.get(key)
        if cached is not None and now - cached[0] < GROUP_TITLE_TTL:
            return cached[1]
        title = ""
        try:
            info = await asyncio.wait_for(self._client.get_group_info(jid), 5.0)
            title = str(info.GroupName.Name or "")
        except Exception as exc:  # the name is context, never a reason to drop the message
            log.debug("group info for %s failed: %s", key, exc)
        self._titles[key] = (now, title)
        return title

    @staticmethod
    def _remember(store: OrderedDict[str, Any], key: str, value: Any, limit: int = 2000) -> None:
        store[key] = value
        store.move_to_end(key)
        while len(store) > limit:
            store.popitem(last=False)

    # ------------------------------------------------------------------ outbound

    def _jid(self, chat_id: str) -> Any:
        value = chat_id.removeprefix("whatsapp:")
        if "@" in value:
            user, server = value.rsplit("@", 1)
            return self.api.build_jid(user.split(":", 1)[0], server)
        return self.api.build_jid("".join(ch for ch in value if ch.isdigit()), "s.whatsapp.net")

    def _connected_client(self) -> Any:
        if self._client is None:
            raise ChannelError("WhatsApp Web is not connected")
        return self._client

    async def send_text(self, chat_id: str, text: str, *, thread_id: str | None = None) -> None:
        client = self._connected_client()
        jid = self._jid(chat_id)
        try:
            await self._pause(chat_id)
            for piece in split_message(markdown_to_whatsapp(text), WHATSAPP_LIMIT):
                response = await client.send_message(jid, piece)
                sent_id = str(getattr(response, "ID", "") or "")
                if sent_id:
                    self._remember(self._sent, sent_id, None)
        except ChannelError:
            raise
        except Exception as exc:
            raise ChannelError(f"WhatsApp did not take the message: {exc}") from exc

    async def send_typing(self, chat_id: str, *, thread_id: str | None = None) -> None:
        client = self._connected_client()
        await client.send_chat_presence(self._jid(chat_id), self.api.composing, self.api.media_text)
        # "composing" stays up until told otherwise: when the refreshes stop, say "paused".
        handle = self._typing.pop(chat_id, None)
        if handle is not None:
            handle.cancel()
        loop = asyncio.get_running_loop()

        def lapse() -> None:
            task = loop.create_task(self._pause(chat_id))
            self._pausing.add(task)
            task.add_done_callback(self._pausing.discard)

        self._typing[chat_id] = loop.call_later(self.typing_lapse, lapse)

    async def _pause(self, chat_id: str) -> None:
        handle = self._typing.pop(chat_id, None)
        if handle is None:
            return
        handle.cancel()
        if self._client is None:
            return
        try:
            await self._client.send_chat_presence(
                self._jid(chat_id), self.api.paused, self.api.media_text
            )
        except Exception as exc:  # typing is a courtesy
            log.debug("paused presence failed: %s", exc)

    async def mark_read(self, message: InboundMessage) -> None:
        if not self.send_read_receipts or message.is_from_me or self._client is None:
            return
        jids = self._receipts.get(message.message_id)
        if jids is None:
            return
        chat, sender = jids
        await self._client.mark_read(
            message.message_id, chat=chat, sender=sender, receipt=self.api.receipt_read
        )
