"""Who may talk to Dexter, and to whom it may write: pure decisions, no IO.

Inbound and replies follow one decision, so `*` or an `open` policy that admits a message also
lets its answer out (the original admitted such messages and then blocked the reply). Only
proactive sends (scheduled alerts) need the recipient listed explicitly.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from dexter.gateway.types import ChatType, InboundMessage

DmPolicy = Literal["pairing", "allowlist", "open", "disabled"]
GroupPolicy = Literal["open", "allowlist", "disabled"]
WILDCARD = "*"
# A stranger's message older than this before we connected is backlog: no pairing reply to it.
PAIRING_GRACE = timedelta(seconds=30)

DenyReason = Literal[
    "group_blocked_self_chat_mode",
    "sender_not_self_in_self_chat_mode",
    "group_policy_disabled",
    "group_allowlist_empty",
    "group_not_allowlisted",
    "dm_policy_disabled",
    "outbound_dm_to_non_self",
    "dm_sender_not_allowlisted",
]


@dataclass(frozen=True, slots=True)
class AccessPolicy:
    """The access settings of one account, after channel defaults were applied."""

    dm_policy: DmPolicy = "pairing"
    group_policy: GroupPolicy = "disabled"
    allow_from: tuple[str, ...] = ()
    # Group ids and sender ids, either of which admits a group message.
    group_allow_from: tuple[str, ...] = ()
    # Proactive sends (alerts); WhatsApp personal numbers are reply-only by default.
    proactive: bool = True


@dataclass(frozen=True, slots=True)
class AccessDecision:
    allowed: bool
    reason: DenyReason | None = None
    # Send the stranger a pairing code (only in pairing mode, never for backlog).
    request_pairing: bool = False
    self_chat: bool = False

    @property
    def mark_read(self) -> bool:
        return self.allowed


def normalize_id(channel: str, raw: str) -> str:
    """Canonical form of a user or chat id, so `+1 (555) 123-4567` matches `+15551234567`."""
    value = raw.strip()
    if value == WILDCARD:
        return value
    if channel.startswith("whatsapp"):
        value = value.removeprefix("whatsapp:")
        if "@" in value:
            base = value.split("@", 1)[0].split(":", 1)[0]
            if value.endswith("@g.us"):
                return value
            value = base
        digits = re.sub(r"\D", "", value)
        return f"+{digits}" if digits else value
    return value


def normalize_list(channel: str, entries: Collection[str]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for entry in entries:
        value = normalize_id(channel, str(entry))
        if value:
            seen.setdefault(value, None)
    return tuple(seen)


def _listed(channel: str, entry: str, allow: Collection[str], *, wildcard: bool) -> bool:
    if wildcard and WILDCARD in allow:
        return True
    return normalize_id(channel, entry) in normalize_list(channel, allow)


def is_self_chat(channel: str, self_id: str | None, allow_from: Collection[str]) -> bool:
    """A personal number whose allowlist names itself talks only to its owner."""
    if not self_id:
        return False
    me = normalize_id(channel, self_id)
    return any(e != WILDCARD and normalize_id(channel, e) == me for e in allow_from)


def decide_inbound(
    policy: AccessPolicy,
    message: InboundMessage,
    *,
    approved: Collection[str] = (),
    self_id: str | None = None,
    connected_at: datetime | None = None,
) -> AccessDecision:
    """Admit or refuse one inbound message. `approved` holds senders paired from the CLI."""
    channel = message.channel
    group = message.chat_type == "group"
    same_person = bool(self_id) and normalize_id(channel, message.sender_id) == normalize_id(
        channel, self_id or ""
    )
    if is_self_chat(channel, self_id, policy.allow_from):
        # Fail closed whatever the other policies say: the owner's own chat only.
        if group:
            return AccessDecision(False, "group_blocked_self_chat_mode", self_chat=True)
        if not same_person:
            return AccessDecision(False, "sender_not_self_in_self_chat_mode", self_chat=True)
        return AccessDecision(True, self_chat=True)
    if group:
        return _decide_group(policy, message)
    if policy.dm_policy == "disabled":
        return AccessDecision(False, "dm_policy_disabled")
    if message.is_from_me and not same_person:
        # The owner writing to someone else from the linked phone is not a question for Dexter.
        return AccessDecision(False, "outbound_dm_to_non_self")
    if policy.dm_policy == "open" or same_person:
        return AccessDecision(True)
    allow = (*policy.allow_from, *approved)
    if _listed(channel, message.sender_id, allow, wildcard=True):
        return AccessDecision(True)
    backlog = connected_at is not None and message.timestamp < connected_at - PAIRING_GRACE
    pairing = policy.dm_policy == "pairing" and not backlog
    return AccessDecision(False, "dm_sender_not_allowlisted", request_pairing=pairing)


def _decide_group(policy: AccessPolicy, message: InboundMessage) -> AccessDecision:
    if policy.group_policy == "disabled":
        return AccessDecision(False, "group_policy_disabled")
    if policy.group_policy == "open":
        return AccessDecision(True)
    allow = policy.group_allow_from
    if not allow:
        return AccessDecision(False, "group_allowlist_empty")
    channel = message.channel
    if _listed(channel, message.chat_id, allow, wildcard=True) or _listed(
        channel, message.sender_id, allow, wildcard=True
    ):
        return AccessDecision(True)
    return AccessDecision(False, "group_not_allowlisted")


OutboundKind = Literal["reply", "proactive"]


@dataclass(frozen=True, slots=True)
class OutboundDecision:
    allowed: bool
    reason: str = ""


def decide_outbound(
    policy: AccessPolicy,
    *,
    channel: str,
    chat_id: str,
    chat_type: ChatType,
    kind: OutboundKind,
    approved: Collection[str] = (),
) -> OutboundDecision:
    """May Dexter write to this chat? Replies follow the inbound policy (so `*` works both
    ways); proactive sends need the chat listed by name, never by `*` or an open policy."""
    group = chat_type == "group"
    if group and policy.group_policy == "disabled":
        return OutboundDecision(False, f"groups are disabled for this {channel} account")
    if kind == "reply":
        if group:
            # The message was admitted by the same policy; a reply goes back to that group.
            return OutboundDecision(True)
        if policy.dm_policy == "disabled":
            return OutboundDecision(
                False, f"direct messages are disabled for this {channel} account"
            )
        return OutboundDecision(True)
    if not policy.proactive:
        return OutboundDecision(
            False,
            f'this {channel} account is reply-only; set "proactive": true in gateway.json '
            "to send alerts through it",
        )
    explicit = policy.group_allow_from if group else (*policy.allow_from, *approved)
    listed = [e for e in explicit if e != WILDCARD]
    key = "group_allow_from" if group else "allow_from"
    if not listed:
        return OutboundDecision(
            False, f"no recipient is listed explicitly in {key} ('*' does not count for alerts)"
        )
    if not _listed(channel, chat_id, listed, wildcard=False):
        return OutboundDecision(False, f"{chat_id} is not listed in {key}")
    return OutboundDecision(True)
