"""The shapes every channel speaks: one normalised inbound message, the channel protocol, status.

Channels (Telegram, WhatsApp, Slack) turn their platform's events into `InboundMessage` and
implement `Channel`; everything above them (access control, routing, runs, delivery) sees only
these types, so a new platform is one module.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal, Protocol

ChatType = Literal["direct", "group"]
# What the message carried. Only "text" is answered; the others get a short note.
ContentKind = Literal[
    "text",
    "image",
    "video",
    "audio",
    "voice",
    "sticker",
    "document",
    "location",
    "contact",
    "other",
]


# The answers a chat offers for an approval, as the terminal does: once, for this conversation,
# always (saved), or deny.
ChoiceAnswer = Literal["once", "session", "always", "deny"]


@dataclass(frozen=True, slots=True)
class ApprovalOption:
    """One answer offered under an approval question: a button, or a number to reply with."""

    answer: ChoiceAnswer
    label: str
    number: int


@dataclass(frozen=True, slots=True)
class Choice:
    """A press on a button under an approval question (Telegram inline keyboard, Slack Block
    Kit). The pipeline hands it to the waiting approval instead of treating it as a question."""

    approval_id: str
    answer: str
    # The platform's handle to acknowledge the press with (Telegram's callback query id).
    ack_id: str = ""


@dataclass(frozen=True, slots=True)
class InboundMessage:
    channel: str
    account_id: str
    message_id: str
    # Where a reply goes: the private chat, the group, the Slack channel.
    chat_id: str
    chat_type: ChatType
    sender_id: str
    text: str = ""
    sender_name: str = ""
    kind: ContentKind = "text"
    timestamp: datetime = field(default_factory=lambda: datetime.now(UTC))
    # Filled by the channel from platform data: explicit @mentions or a reply to the bot.
    mentioned: bool = False
    # Slack threads; replies go into the same thread and it is its own conversation.
    thread_id: str | None = None
    # The linked account's own message (WhatsApp personal number).
    is_from_me: bool = False
    chat_title: str = ""
    # Set when this is a button press answering an approval, not something said.
    choice: Choice | None = None

    @property
    def dedupe_key(self) -> str:
        return f"{self.channel}:{self.account_id}:{self.chat_id}:{self.message_id}"

    @property
    def peer_id(self) -> str:
        """Who the conversation is with: the group for groups, the person for DMs."""
        return self.chat_id if self.chat_type == "group" else self.sender_id


@dataclass(frozen=True, slots=True)
class ChannelStatus:
    """One account's state as `dexter gateway status` shows it."""

    channel: str
    account_id: str
    running: bool = False
    connected: bool = False
    last_error: str | None = None
    last_message_at: datetime | None = None
    last_connected_at: datetime | None = None
    reconnect_attempts: int = 0
    # The platform identity once connected, e.g. "@dexter_bot".
    identity: str = ""

    def to_dict(self) -> dict[str, object]:
        def iso(at: datetime | None) -> str | None:
            return at.isoformat() if at else None

        return {
            "channel": self.channel,
            "account_id": self.account_id,
            "running": self.running,
            "connected": self.connected,
            "last_error": self.last_error,
            "last_message_at": iso(self.last_message_at),
            "last_connected_at": iso(self.last_connected_at),
            "reconnect_attempts": self.reconnect_attempts,
            "identity": self.identity,
        }


class ChannelError(Exception):
    """The connection failed or ended; the manager reconnects with backoff."""


class CredentialsRejected(ChannelError):
    """The platform refused the account's credentials (a 401, a revoked token, a logged-out
    device): retrying cannot help, so the manager stops the account, and its message (which
    says to run setup again) is what `dexter gateway status` shows."""


def setup_command(channel: str, account_id: str) -> str:
    """The command that gives an account new credentials."""
    account = "" if account_id == "default" else f" --account {account_id}"
    return f"`dexter gateway setup {channel}{account}`"


class ChannelHooks(Protocol):
    def connected(self, identity: str = "") -> None: ...

    async def message(self, message: InboundMessage) -> None: ...


class Channel(Protocol):
    """One connected account on one platform.

    `start` connects and then serves until the connection ends: it returns or raises
    `ChannelError`, and the manager reconnects. `stop` closes the connection for real, so a
    pending long poll or socket read ends at once.
    """

    @property
    def name(self) -> str: ...

    @property
    def account_id(self) -> str: ...

    async def start(self, hooks: ChannelHooks) -> None: ...

    async def stop(self) -> None: ...

    async def send_text(self, chat_id: str, text: str, *, thread_id: str | None = None) -> None: ...

    async def send_typing(self, chat_id: str, *, thread_id: str | None = None) -> None: ...

    async def mark_read(self, message: InboundMessage) -> None: ...

    async def send_approval(
        self,
        chat_id: str,
        text: str,
        approval_id: str,
        options: Sequence[ApprovalOption],
        *,
        thread_id: str | None = None,
    ) -> str:
        """Put an approval question to the chat with its options (buttons, or numbers to reply
        with); returns the platform's reference to the message ("" when it cannot be edited)."""
        ...

    async def settle_approval(
        self, chat_id: str, ref: str, text: str, *, thread_id: str | None = None
    ) -> None:
        """Show how the question sent as `ref` was settled, its buttons gone."""
        ...

    async def answer_choice(self, choice: InboundMessage, note: str = "") -> None:
        """Acknowledge a choice; `note` (e.g. "only Ana can answer this") goes to the person
        who made it, where the platform can show it to them alone."""
        ...


OnMessage = Callable[["Channel", InboundMessage], Awaitable[None]]
