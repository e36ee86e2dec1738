"""Decisions about tool calls: allow, ask a person, or deny.

The loop only knows this small interface. The full rules engine (patterns, shell parsing,
settings-file rules) implements `PermissionPolicy` later without the loop changing.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol


class Decision(StrEnum):
    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


class ApprovalAnswer(StrEnum):
    ALLOW_ONCE = "allow_once"
    ALLOW_SESSION = "allow_session"
    # Save `Verdict.proposed_rule` as an allow rule, then run (like ALLOW_ONCE when there is none).
    ALLOW_ALWAYS = "allow_always"
    DENY = "deny"


@dataclass(frozen=True, slots=True)
class Verdict:
    decision: Decision
    reason: str = ""
    # Approvals "for this session" are remembered under this key; None means never cache.
    session_key: str | None = None
    # A narrow rule that "allow always" may save (never one that could also cover a write).
    proposed_rule: str | None = None
    # For shell calls: the exact command the decision is about (shown when asking).
    command: str | None = None


class PermissionPolicy(Protocol):
    def evaluate(self, tool: str, args: Mapping[str, Any], *, needs_approval: bool) -> Verdict: ...


class SimplePolicy:
    """Tools that need approval ask; named tools can be always-allowed or denied outright."""

    def __init__(self, *, allow: Collection[str] = (), deny: Collection[str] = ()) -> None:
        self._allow = frozenset(allow)
        self._deny = frozenset(deny)

    def evaluate(self, tool: str, args: Mapping[str, Any], *, needs_approval: bool) -> Verdict:
        if tool in self._deny:
            return Verdict(Decision.DENY, reason=f"`{tool}` is denied by your permission settings")
        if tool in self._allow or not needs_approval:
            return Verdict(Decision.ALLOW)
        return Verdict(Decision.ASK, reason=f"`{tool}` needs approval", session_key=f"tool:{tool}")
