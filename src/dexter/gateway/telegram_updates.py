"""Telegram's `Update` objects, read into the gateway's InboundMessage.

`parse_update` is the one place an update kind is recognised: a `message` becomes an inbound
message, a `callback_query` from one of our approval buttons becomes a choice; every other kind
(`edited_message`, `my_chat_member` …) is not a new question and is passed over. Fields are read
through `Record`: an update with a field of the wrong type raises `MalformedRecord`, which the
polling loop logs and steps past.
"""

from __future__ import annotations

from dataclasses import dataclass

from dexter.gateway.choices import read_token
from dexter.gateway.mention import is_mentioned
from dexter.gateway.records import Record, timestamp
from dexter.gateway.types import Choice, ContentKind, InboundMessage

MEDIA_KINDS: tuple[tuple[str, ContentKind], ...] = (
    ("photo", "image"),
    ("video", "video"),
    ("video_note", "video"),
    ("animation", "video"),
    ("voice", "voice"),
    ("audio", "audio"),
    ("sticker", "sticker"),
    ("document", "document"),
    ("location", "location"),
    ("venue", "location"),
    ("contact", "contact"),
)


@dataclass(frozen=True, slots=True)
class BotIdentity:
    """Who the bot is (from getMe), to skip its own messages and see mentions of it."""

    account_id: str
    bot_id: str = ""
    username: str = ""


def update_id_of(update: object) -> int | None:
    """The update's id, which the offset advances past; None when it has no usable one."""
    if not isinstance(update, dict):
        return None
    value = update.get("update_id")
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def parse_update(update: object, bot: BotIdentity) -> InboundMessage | None:
    """The message an update carries; None for kinds that are not one (see the module doc).

    Raises `MalformedRecord` when the update, or a field of its message that we read, does not
    have the type the Bot API documents."""
    record = Record(update, "update")
    if "message" in record:
        return _message(record.obj("message"), record, bot)
    if isinstance(record.data.get("callback_query"), dict):
        return _callback(record.obj("callback_query"), bot)
    # edited_message, channel_post, chat member changes …: nothing to answer.
    return None


def _message(raw: Record, update: Record, bot: BotIdentity) -> InboundMessage | None:
    chat = raw.obj("chat")
    sender = raw.obj("from")
    sender_id = str(sender.integer("id"))
    if sender.flag("is_bot") and sender_id == bot.bot_id:
        return None
    text = raw.text("text") or raw.text("caption")
    kind: ContentKind = next((value for key, value in MEDIA_KINDS if key in raw), "text")
    entities = raw.objects("entities") or raw.objects("caption_entities")
    mentioned_ids = [
        str(e.obj("user").integer("id")) for e in entities if e.text("type") == "text_mention"
    ]
    reply = raw.maybe_obj("reply_to_message")
    replied_to = reply.maybe_obj("from") if reply is not None else None
    name = " ".join(p for p in (sender.text("first_name"), sender.text("last_name")) if p)
    thread = raw.integer("message_thread_id") if raw.flag("is_topic_message") else None
    message_id = raw.maybe_integer("message_id")
    if message_id is None:
        message_id = update.integer("update_id")
    return InboundMessage(
        channel="telegram",
        account_id=bot.account_id,
        message_id=str(message_id),
        chat_id=str(chat.integer("id")),
        chat_type="group" if chat.text("type") in ("group", "supergroup") else "direct",
        sender_id=sender_id,
        sender_name=name or sender.text("username"),
        text=text,
        kind=kind,
        timestamp=timestamp(raw.integer("date"), f"{raw.path}.date"),
        mentioned=is_mentioned(
            text,
            mentioned_ids=mentioned_ids,
            self_ids=[bot.bot_id],
            username=bot.username,
            replied_to_id=str(replied_to.integer("id")) if replied_to is not None else None,
        ),
        thread_id=str(thread) if thread is not None else None,
        chat_title=chat.text("title"),
    )


def _callback(query: Record, bot: BotIdentity) -> InboundMessage | None:
    """A press on one of our approval buttons, as a choice; None for any other button (a
    callback can be sent with any data, and one under an inline-mode message has no chat). Only
    a press on ours is read further, so only that can be malformed."""
    parsed = read_token(query.text("data"))
    message = query.maybe_obj("message")
    if parsed is None or message is None:
        return None
    sender, chat = query.obj("from"), message.obj("chat")
    name = " ".join(p for p in (sender.text("first_name"), sender.text("last_name")) if p)
    thread = message.integer("message_thread_id") if message.flag("is_topic_message") else None
    query_id = query.required_text("id")
    return InboundMessage(
        channel="telegram",
        account_id=bot.account_id,
        message_id=f"callback:{query_id}",
        chat_id=str(chat.integer("id")),
        chat_type="group" if chat.text("type") in ("group", "supergroup") else "direct",
        sender_id=str(sender.integer("id")),
        sender_name=name or sender.text("username"),
        thread_id=str(thread) if thread is not None else None,
        chat_title=chat.text("title"),
        choice=Choice(parsed[0], parsed[1], ack_id=query_id),
    )
