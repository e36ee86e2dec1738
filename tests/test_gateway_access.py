"""Access control and outbound rules: every policy combination of the reference, plus the fixes
for its weak points (outbound `*`, group ids, inherited allowlists)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from dexter.gateway.access import (
    AccessPolicy,
    decide_inbound,
    decide_outbound,
    is_self_chat,
    normalize_id,
)
from dexter.gateway.config import GatewayConfig
from dexter.gateway.types import InboundMessage

ME = "+15550000001"
ALICE = "+15551234567"
BOB = "+15559876543"
GROUP = "120363000000@g.us"


def dm(sender: str = ALICE, *, channel: str = "whatsapp_web", **kw: object) -> InboundMessage:
    return InboundMessage(
        channel=channel,
        account_id="default",
        message_id="m1",
        chat_id=sender,
        chat_type="direct",
        sender_id=sender,
        text="hi",
        **kw,  # type: ignore[arg-type]
    )


def grp(sender: str = ALICE, chat: str = GROUP, channel: str = "whatsapp_web") -> InboundMessage:
    return InboundMessage(
        channel=channel,
        account_id="default",
        message_id="m2",
        chat_id=chat,
        chat_type="group",
        sender_id=sender,
        text="hi",
    )


# dm_policy, allow_from, approved, sender -> (allowed, reason, pairing)
DM_TABLE = [
    ("open", (), (), ALICE, True, None, False),
    ("open", (BOB,), (), ALICE, True, None, False),
    ("disabled", ("*",), (), ALICE, False, "dm_policy_disabled", False),
    ("allowlist", (), (), ALICE, False, "dm_sender_not_allowlisted", False),
    ("allowlist", (ALICE,), (), ALICE, True, None, False),
    ("allowlist", ("+1 (555) 123-4567",), (), ALICE, True, None, False),
    ("allowlist", ("*",), (), ALICE, True, None, False),
    ("allowlist", (BOB,), (), ALICE, False, "dm_sender_not_allowlisted", False),
    ("allowlist", (), (ALICE,), ALICE, True, None, False),
    ("pairing", (), (), ALICE, False, "dm_sender_not_allowlisted", True),
    ("pairing", (BOB,), (), ALICE, False, "dm_sender_not_allowlisted", True),
    ("pairing", (ALICE,), (), ALICE, True, None, False),
    ("pairing", ("*",), (), ALICE, True, None, False),
    ("pairing", (), (ALICE,), ALICE, True, None, False),
]


@pytest.mark.parametrize(
    ("dm_policy", "allow", "approved", "sender", "allowed", "reason", "pairing"), DM_TABLE
)
def test_direct_messages(
    dm_policy: str,
    allow: tuple[str, ...],
    approved: tuple[str, ...],
    sender: str,
    allowed: bool,
    reason: str | None,
    pairing: bool,
) -> None:
    policy = AccessPolicy(dm_policy=dm_policy, allow_from=allow)  # type: ignore[arg-type]
    decision = decide_inbound(policy, dm(sender), approved=approved)
    assert (decision.allowed, decision.reason, decision.request_pairing) == (
        allowed,
        reason,
        pairing,
    )
    assert decision.mark_read == allowed


# group_policy, group_allow_from, sender, chat -> (allowed, reason)
GROUP_TABLE = [
    ("disabled", ("*",), ALICE, GROUP, False, "group_policy_disabled"),
    ("open", (), ALICE, GROUP, True, None),
    ("allowlist", (), ALICE, GROUP, False, "group_allowlist_empty"),
    ("allowlist", ("*",), ALICE, GROUP, True, None),
    ("allowlist", (ALICE,), ALICE, GROUP, True, None),
    ("allowlist", (BOB,), ALICE, GROUP, False, "group_not_allowlisted"),
    # Weak point 22: group ids work as well as sender ids.
    ("allowlist", (GROUP,), BOB, GROUP, True, None),
    ("allowlist", ("999@g.us",), BOB, GROUP, False, "group_not_allowlisted"),
]


@pytest.mark.parametrize(
    ("group_policy", "allow", "sender", "chat", "allowed", "reason"), GROUP_TABLE
)
def test_group_messages(
    group_policy: str,
    allow: tuple[str, ...],
    sender: str,
    chat: str,
    allowed: bool,
    reason: str | None,
) -> None:
    policy = AccessPolicy(group_policy=group_policy, group_allow_from=allow)  # type: ignore[arg-type]
    decision = decide_inbound(policy, grp(sender, chat))
    assert (decision.allowed, decision.reason) == (allowed, reason)


def test_self_chat_mode_is_fail_closed() -> None:
    policy = AccessPolicy(dm_policy="open", group_policy="open", allow_from=(ME,))
    mine = decide_inbound(policy, dm(ME, is_from_me=True), self_id=ME)
    assert mine.allowed and mine.self_chat
    assert decide_inbound(policy, dm(ALICE), self_id=ME).reason == (
        "sender_not_self_in_self_chat_mode"
    )
    assert decide_inbound(policy, grp(ME), self_id=ME).reason == "group_blocked_self_chat_mode"


def test_own_outgoing_dm_to_someone_else_is_not_a_question() -> None:
    policy = AccessPolicy(dm_policy="open")
    decision = decide_inbound(policy, dm(ALICE, is_from_me=True), self_id=ME)
    assert decision.reason == "outbound_dm_to_non_self"


def test_backlog_from_before_connecting_gets_no_pairing_code() -> None:
    connected = datetime(2026, 1, 1, 12, tzinfo=UTC)
    old = dm(ALICE, timestamp=connected - timedelta(minutes=5))
    fresh = dm(ALICE, timestamp=connected - timedelta(seconds=5))
    policy = AccessPolicy(dm_policy="pairing")
    assert not decide_inbound(policy, old, connected_at=connected).request_pairing
    assert decide_inbound(policy, fresh, connected_at=connected).request_pairing


def test_self_chat_detection() -> None:
    assert not is_self_chat("whatsapp_web", None, [ME])
    assert not is_self_chat("whatsapp_web", ME, [])
    assert not is_self_chat("whatsapp_web", ME, ["*"])
    assert is_self_chat("whatsapp_web", ME, ["15550000001"])


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        ("+1 (555) 123-4567", ALICE),
        ("whatsapp:+15551234567", ALICE),
        ("++15551234567", ALICE),
        ("15551234567:12@s.whatsapp.net", ALICE),
        (GROUP, GROUP),
        ("*", "*"),
    ],
)
def test_whatsapp_ids_normalise(raw: str, want: str) -> None:
    assert normalize_id("whatsapp_web", raw) == want


# Outbound: (dm_policy, allow_from, kind) -> allowed. Replies follow inbound; alerts are strict.
OUT_TABLE = [
    ("open", (), "reply", True),
    ("pairing", ("*",), "reply", True),  # weak point 15: `*` admits, so the reply goes out
    ("allowlist", (ALICE,), "reply", True),
    ("disabled", (ALICE,), "reply", False),
    ("open", (), "proactive", False),
    ("allowlist", ("*",), "proactive", False),
    ("allowlist", (BOB,), "proactive", False),
    ("allowlist", (ALICE,), "proactive", True),
    ("pairing", ("+1 555 123 4567",), "proactive", True),
]


@pytest.mark.parametrize(("dm_policy", "allow", "kind", "allowed"), OUT_TABLE)
def test_outbound_direct(dm_policy: str, allow: tuple[str, ...], kind: str, allowed: bool) -> None:
    policy = AccessPolicy(dm_policy=dm_policy, allow_from=allow)  # type: ignore[arg-type]
    got = decide_outbound(
        policy,
        channel="whatsapp_web",
        chat_id=ALICE,
        chat_type="direct",
        kind=kind,  # type: ignore[arg-type]
    )
    assert got.allowed == allowed, got.reason


@pytest.mark.parametrize(
    ("group_policy", "allow", "kind", "allowed"),
    [
        ("disabled", (GROUP,), "reply", False),
        ("open", (), "reply", True),
        ("allowlist", ("*",), "reply", True),
        ("open", (), "proactive", False),
        ("allowlist", ("*",), "proactive", False),
        ("allowlist", (GROUP,), "proactive", True),
    ],
)
def test_outbound_group(
    group_policy: str, allow: tuple[str, ...], kind: str, allowed: bool
) -> None:
    policy = AccessPolicy(group_policy=group_policy, group_allow_from=allow)  # type: ignore[arg-type]
    got = decide_outbound(
        policy,
        channel="whatsapp_web",
        chat_id=GROUP,
        chat_type="group",
        kind=kind,  # type: ignore[arg-type]
    )
    assert got.allowed == allowed, got.reason


def test_proactive_refusal_says_why() -> None:
    got = decide_outbound(
        AccessPolicy(allow_from=("*",)),
        channel="telegram",
        chat_id="42",
        chat_type="direct",
        kind="proactive",
    )
    assert "'*' does not count" in got.reason


def test_personal_whatsapp_is_reply_only_by_default() -> None:
    config = GatewayConfig.model_validate(
        {"channels": {"whatsapp_web": {"allow_from": [ALICE], "accounts": {"default": {}}}}}
    )
    policy = config.access("whatsapp_web", "default")
    reply = decide_outbound(
        policy, channel="whatsapp_web", chat_id=ALICE, chat_type="direct", kind="reply"
    )
    alert = decide_outbound(
        policy, channel="whatsapp_web", chat_id=ALICE, chat_type="direct", kind="proactive"
    )
    assert reply.allowed and not alert.allowed and "reply-only" in alert.reason


def test_account_inherits_channel_lists_unless_it_sets_its_own() -> None:
    # Weak point 23: an account without allow_from used to shadow the channel's list with [].
    config = GatewayConfig.model_validate(
        {
            "channels": {
                "telegram": {
                    "dm_policy": "allowlist",
                    "allow_from": ["42"],
                    "accounts": {"a": {}, "b": {"allow_from": ["7"], "dm_policy": "open"}},
                }
            }
        }
    )
    a = config.access("telegram", "a")
    b = config.access("telegram", "b")
    assert (a.dm_policy, a.allow_from) == ("allowlist", ("42",))
    assert (b.dm_policy, b.allow_from) == ("open", ("7",))
    unknown = config.access("telegram", "nope")
    assert unknown.allow_from == ("42",)
    assert config.access("slack", "x").dm_policy == "disabled"
