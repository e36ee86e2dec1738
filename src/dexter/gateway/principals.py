"""Who a chat message acts for: each person, group and channel is a principal of its own.

- A direct message acts for its sender: `telegram:222`, `slack:T01/U02`, `whatsapp:+4412…`;
  unless gateway.json lists that id under `operators`, when it acts for the operator.
- A group or channel message acts for the group (`telegram:group:-100…`, `slack:T01/C03`,
  `whatsapp:group:…@g.us`; a Slack thread shares its channel's), limited to what the asker may do
  on their own: a member never gets more through a group than alone.

Grants come from gateway.json's `principals` section, read afresh for every message, so an edit
applies from the next message on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from dexter.gateway.access import normalize_id
from dexter.gateway.config import GatewayConfig
from dexter.gateway.routing import delivery_target
from dexter.gateway.types import InboundMessage
from dexter.principal import OPERATOR, Principal, PrincipalError

# The platform a channel module speaks for, as principal ids and delivery targets name it.
_PLATFORMS = {"whatsapp_cloud": "whatsapp", "whatsapp_web": "whatsapp"}


class UnknownSender(PrincipalError):
    """A message whose sender cannot be told apart from others (no usable id)."""


@dataclass(frozen=True)
class ChatPrincipals:
    """`run`: whose data the run touches; `asker`: the person who wrote the message."""

    run: Principal
    asker: Principal


def platform_of(channel: str) -> str:
    return _PLATFORMS.get(channel, channel)


def person_id(channel: str, sender_id: str, *, workspace: str = "") -> str:
    """The principal id of a person on a platform (`slack` ids carry the workspace)."""
    platform = platform_of(channel)
    sender = normalize_id(channel, sender_id) if platform == "whatsapp" else sender_id.strip()
    if not sender or sender == "+":
        raise UnknownSender(f"a {platform} message without a sender id")
    if platform == "slack":
        return f"slack:{workspace}/{sender}"
    return f"{platform}:{sender}"


def group_id(channel: str, chat_id: str, *, workspace: str = "") -> str:
    """The principal id of a group or channel conversation (threads share their channel's)."""
    platform = platform_of(channel)
    chat = chat_id.strip()
    if not chat:
        raise UnknownSender(f"a {platform} group message without a chat id")
    if platform == "slack":
        return f"slack:{workspace}/{chat}"
    return f"{platform}:group:{chat}"


def resolve(
    message: InboundMessage, config: GatewayConfig, *, workspace: str = ""
) -> ChatPrincipals:
    """The principals of one inbound message. Raises `PrincipalError` for a sender or chat id
    that cannot name a principal (the message is then refused)."""
    target = delivery_target(message)
    asker_id = person_id(message.channel, message.sender_id, workspace=workspace)
    asker = (
        OPERATOR
        if config.is_operator(asker_id)
        else Principal(
            asker_id,
            "user",
            message.sender_name,
            config.grants_for(asker_id),
            reply_target=target if message.chat_type == "direct" else None,
        )
    )
    if message.chat_type == "direct":
        return ChatPrincipals(asker, asker)
    chat_id = group_id(message.channel, message.chat_id, workspace=workspace)
    group = Principal(
        chat_id, "group", message.chat_title, config.grants_for(chat_id), reply_target=target
    )
    return ChatPrincipals(group.limited_to(asker), asker)


def job_principals(
    recorded: Callable[[str], Principal], config: Callable[[], GatewayConfig]
) -> Callable[[str], Principal]:
    """Who a job's unattended run acts for: `recorded(owner)` (the principals table), with the
    grants gateway.json gives that person now. A group's job gets no grants: the member who
    made it is not known when it runs, and a group run is never more than its asker's."""

    def principal_for(owner: str) -> Principal:
        found = recorded(owner)
        if found.kind != "user":
            return found
        return replace(found, grants=config().grants_for(owner))

    return principal_for


__all__ = [
    "ChatPrincipals",
    "UnknownSender",
    "group_id",
    "job_principals",
    "person_id",
    "platform_of",
    "resolve",
]
