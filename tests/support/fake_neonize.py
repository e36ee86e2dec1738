"""A fake of the neonize objects the WhatsApp Web channel uses, shaped like the real ones.

Messages and events mirror neonize's protobufs (`neonize/proto/Neonize.proto` and
`waE2E/WAWebProtobufsE2E.proto`): the same attribute names (`Info.MessageSource.Chat.User`,
`Message.extendedTextMessage.contextInfo.mentionedJID`, …) and `HasField` for sub-messages.
`FakeClient` mirrors `neonize.aioze.client.NewAClient`: `event(EvType)(handler)`, `qr(handler)`,
`connect()` returning the connection task, `send_message`, `send_chat_presence`, `mark_read`,
`get_me`, `get_group_info`, `PairPhone`, `logout`, `stop`. Handlers are awaited inline, so tests
are deterministic (neonize schedules them on the loop from its Go thread).
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dexter.gateway.whatsapp_web import NeonizeApi


class _Proto:
    def HasField(self, name: str) -> bool:
        names = {f.name for f in dataclasses.fields(self)}  # type: ignore[arg-type]
        if name not in names:
            raise ValueError(f"Protocol message has no non-repeated field {name!r}")
        return getattr(self, name) is not None


@dataclass
class JID(_Proto):
    User: str = ""
    RawAgent: int = 0
    Device: int = 0
    Integrator: int = 0
    Server: str = "s.whatsapp.net"
    IsEmpty: bool = False


@dataclass
class MessageSource(_Proto):
    Chat: JID
    Sender: JID
    IsFromMe: bool = False
    IsGroup: bool = False
    SenderAlt: JID | None = None
    RecipientAlt: JID | None = None


@dataclass
class MessageInfo(_Proto):
    MessageSource: MessageSource
    ID: str
    Pushname: str = ""
    Timestamp: int = 0  # milliseconds, as neonize encodes it
    Type: str = "text"


@dataclass
class ContextInfo(_Proto):
    stanzaID: str = ""
    participant: str = ""
    mentionedJID: list[str] = field(default_factory=list)


@dataclass
class ExtendedTextMessage(_Proto):
    text: str = ""
    contextInfo: ContextInfo | None = None


@dataclass
class ImageMessage(_Proto):
    caption: str = ""
    mimetype: str = "image/jpeg"
    contextInfo: ContextInfo | None = None


@dataclass
class AudioMessage(_Proto):
    PTT: bool = False
    seconds: int = 3
    contextInfo: ContextInfo | None = None


@dataclass
class StickerMessage(_Proto):
    isAnimated: bool = False
    contextInfo: ContextInfo | None = None


@dataclass
class ReactionMessage(_Proto):
    text: str = "👍"


@dataclass
class E2EMessage(_Proto):
    conversation: str = ""
    extendedTextMessage: ExtendedTextMessage | None = None
    imageMessage: ImageMessage | None = None
    audioMessage: AudioMessage | None = None
    stickerMessage: StickerMessage | None = None
    reactionMessage: ReactionMessage | None = None
    ephemeralMessage: FutureProofMessage | None = None


@dataclass
class FutureProofMessage(_Proto):
    message: E2EMessage | None = None


@dataclass
class MessageEv(_Proto):
    Info: MessageInfo
    Message: E2EMessage | None = None
    IsEphemeral: bool = False
    IsViewOnce: bool = False
    IsEdit: bool = False


@dataclass
class ConnectedEv(_Proto):
    status: bool = True


@dataclass
class LoggedOutEv(_Proto):
    OnConnect: bool = False
    Reason: int = 401


@dataclass
class PairStatusEv(_Proto):
    ID: JID | None = None
    BusinessName: str = ""
    Platform: str = "android"
    Status: int = 2  # PStatus.SUCCESS
    Error: str = ""


@dataclass
class DisconnectedEv(_Proto):
    status: bool = True


@dataclass
class StreamReplacedEv(_Proto):
    pass


@dataclass
class TemporaryBanEv(_Proto):
    Code: int = 1
    Expire: int = 3600


@dataclass
class ConnectFailureEv(_Proto):
    Reason: int = 0
    Message: str = ""


@dataclass
class Device(_Proto):
    JID: JID | None = None
    LID: JID | None = None
    Platform: str = ""
    BussinessName: str = ""
    PushName: str = ""
    Initialized: bool = True


@dataclass
class SendResponse(_Proto):
    Timestamp: int = 0
    ID: str = ""
    ServerID: int = 0


@dataclass
class GroupName(_Proto):
    Name: str = ""


@dataclass
class GroupInfo(_Proto):
    JID: JID | None = None
    GroupName: GroupName | None = None


Handler = Callable[[Any, Any], Awaitable[None]]


class _Events:
    def __init__(self) -> None:
        self.handlers: dict[type, Handler] = {}

    def __call__(self, event: type) -> Callable[[Handler], None]:
        def register(func: Handler) -> None:
            self.handlers[event] = func

        return register


class FakeClient:
    def __init__(self, world: FakeWhatsApp, name: str) -> None:
        self.world = world
        self.name = name
        self.event = _Events()
        self._qr: Handler | None = None
        self.connect_task: asyncio.Task[None] | None = None
        self._stopped = asyncio.Event()
        self.stopped = False
        self.logged_out = False

    def qr(self, func: Handler) -> None:
        self._qr = func

    async def connect(self) -> asyncio.Task[None]:
        self.world.connects += 1
        if self.world.connect_error:
            raise RuntimeError(self.world.connect_error)
        self.connect_task = asyncio.get_running_loop().create_task(self._run())
        return self.connect_task

    async def _run(self) -> None:
        await asyncio.sleep(0)
        if self.world.linked:
            await self.emit(ConnectedEv())
        elif self._qr is not None:
            await self._qr(self, b"2@fakeQRref,publickey,identity,advsecret")
            if self.world.scan_on_qr:
                await self.scan()
        await self._stopped.wait()

    async def emit(self, event: Any) -> None:
        handler = self.event.handlers.get(type(event))
        if handler is not None:
            await handler(self, event)

    async def scan(self) -> None:
        """The person scans the QR (or enters the pair code) on their phone."""
        self.world.linked = True
        await asyncio.to_thread(Path(self.name).write_bytes, b"SQLite format 3\x00linked")
        await self.emit(PairStatusEv(ID=self.world.me.JID))
        await self.emit(ConnectedEv())

    async def get_me(self) -> Device:
        return self.world.me

    async def send_message(self, to: JID, message: str) -> SendResponse:
        if self.world.send_error:
            raise RuntimeError(self.world.send_error)
        self.world.log.append(("send", f"{to.User}@{to.Server}", message))
        return SendResponse(ID=f"3EB0{next(self.world.ids):06d}")

    async def send_chat_presence(self, jid: JID, state: Any, media: Any) -> None:
        self.world.log.append(("presence", f"{jid.User}@{jid.Server}", state))

    async def mark_read(
        self, *message_ids: str, chat: JID, sender: JID, receipt: Any, timestamp: int | None = None
    ) -> None:
        self.world.log.append(("read", f"{chat.User}@{chat.Server}", " ".join(message_ids)))

    async def get_group_info(self, jid: JID) -> GroupInfo:
        return GroupInfo(JID=jid, GroupName=GroupName(self.world.groups.get(jid.User, "")))

    async def PairPhone(
        self, phone: str, show_push_notification: bool, client_name: Any = None
    ) -> str:
        self.world.paired_phone = phone
        return "ABCD-1234"

    async def logout(self) -> None:
        self.logged_out = True
        self.world.linked = False

    async def stop(self) -> None:
        self.stopped = True
        self._stopped.set()


class FakeWhatsApp:
    """The phone, the account and WhatsApp's servers, as the channel's clients see them."""

    def __init__(self, phone: str = "15550001111", *, linked: bool = True) -> None:
        self.me = Device(JID=JID(phone), LID=JID("208340000000001", Server="lid"), PushName="Owner")
        self.linked = linked
        self.clients: list[FakeClient] = []
        self.log: list[tuple[str, str, Any]] = []
        self.groups: dict[str, str] = {}
        self.ids = itertools.count(1)
        self.connects = 0
        self.connect_error = ""
        self.send_error = ""
        self.paired_phone = ""
        # The person scans the first QR code shown (for runs of the CLI wizard).
        self.scan_on_qr = False

    @property
    def client(self) -> FakeClient:
        return self.clients[-1]

    def new_client(self, name: str) -> FakeClient:
        client = FakeClient(self, name)
        self.clients.append(client)
        return client

    def api(self) -> NeonizeApi:
        return NeonizeApi(
            new_client=self.new_client,
            build_jid=lambda user, server: JID(user, Server=server),
            connected_ev=ConnectedEv,
            message_ev=MessageEv,
            logged_out_ev=LoggedOutEv,
            pair_status_ev=PairStatusEv,
            disconnected_ev=DisconnectedEv,
            stream_replaced_ev=StreamReplacedEv,
            temporary_ban_ev=TemporaryBanEv,
            connect_failure_ev=ConnectFailureEv,
            composing="composing",
            paused="paused",
            media_text="text",
            receipt_read="read",
        )

    def sent(self) -> list[tuple[str, str]]:
        return [(to, text) for kind, to, text in self.log if kind == "send"]

    def presence(self) -> list[tuple[str, Any]]:
        return [(to, state) for kind, to, state in self.log if kind == "presence"]


_ids = itertools.count(1)


def text_message(
    text: str, *, mentioned: list[str] | None = None, reply_to: str = "", **where: Any
) -> MessageEv:
    """A text message as neonize delivers it: plain `conversation`, or `extendedTextMessage`
    when it carries mentions or quotes a message. `where` as for `event_for`."""
    if mentioned or reply_to:
        context = ContextInfo(
            stanzaID="3EB0QUOTED" if reply_to else "",
            participant=reply_to,
            mentionedJID=mentioned or [],
        )
        body = E2EMessage(extendedTextMessage=ExtendedTextMessage(text=text, contextInfo=context))
    else:
        body = E2EMessage(conversation=text)
    return event_for(body, **where)


def event_for(
    body: E2EMessage,
    *,
    chat: JID,
    sender: JID | None = None,
    from_me: bool = False,
    group: bool = False,
    sender_alt: JID | None = None,
    push_name: str = "Bob",
    timestamp_ms: int | None = None,
    message_id: str | None = None,
) -> MessageEv:
    import time

    source = MessageSource(
        Chat=chat,
        Sender=sender or chat,
        IsFromMe=from_me,
        IsGroup=group,
        SenderAlt=sender_alt,
    )
    info = MessageInfo(
        MessageSource=source,
        ID=message_id or f"ABCDEF{next(_ids):08d}",
        Pushname=push_name,
        Timestamp=timestamp_ms if timestamp_ms is not None else int(time.time() * 1000),
    )
    return MessageEv(Info=info, Message=body)
