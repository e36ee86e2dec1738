"""Which conversation a message belongs to: a stable session key per channel, account and peer."""

from __future__ import annotations

from dexter.gateway.types import InboundMessage


def session_key(message: InboundMessage) -> str:
    """`<channel>:<account>:<direct|group>:<peer>[:<thread>]`; a Slack thread is its own chat."""
    peer = message.peer_id.strip().lower()
    key = f"{message.channel}:{message.account_id}:{message.chat_type}:{peer}"
    if message.thread_id:
        key += f":{message.thread_id}"
    return key


def delivery_target(message: InboundMessage) -> str:
    """The alert target naming this chat, e.g. `telegram:12345` (see cron delivery): the group,
    or for a direct chat the person (a Slack member id is delivered as a DM, and is what
    `allow_from` lists)."""
    scheme = message.channel.split("_", 1)[0]
    return f"{scheme}:{message.peer_id}"
