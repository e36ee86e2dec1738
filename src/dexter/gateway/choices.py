"""The answers an approval question offers in a chat, and how they travel.

Buttons (Telegram's inline keyboard, Slack's Block Kit) carry `dxa:<approval id>:<answer>`;
where there are no buttons (WhatsApp) the person replies with the option's number. Both end in
the pending approval's registry (`approvals.py`), never as a new question.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from dexter.gateway.types import ApprovalOption, ChoiceAnswer, InboundMessage
from dexter.permissions.gate import ApprovalAnswer

ONCE = ApprovalOption("once", "Allow once", 1)
SESSION = ApprovalOption("session", "Allow for this conversation", 2)
ALWAYS = ApprovalOption("always", "Always allow", 3)
DENY = ApprovalOption("deny", "Deny", 4)

ANSWERS: dict[ChoiceAnswer, ApprovalAnswer] = {
    "once": ApprovalAnswer.ALLOW_ONCE,
    "session": ApprovalAnswer.ALLOW_SESSION,
    "always": ApprovalAnswer.ALLOW_ALWAYS,
    "deny": ApprovalAnswer.DENY,
}
# How a numbered reply names each option: "Reply 1 to allow once, 2 for this conversation …".
_REPLY_WORDS: dict[ChoiceAnswer, str] = {
    "once": "to allow once",
    "session": "for this conversation",
    "always": "always",
    "deny": "to deny",
}
_TOKEN = re.compile(r"^dxa:([0-9a-f]{8,32}):(once|session|always|deny)$")
_NUMBER = re.compile(r"^\s*([1-9])\s*[.)]?\s*$")


def options(*, always: bool) -> tuple[ApprovalOption, ...]:
    """What a chat offers: once, this conversation, always (only where an answer can be saved
    for the person alone), deny."""
    return (ONCE, SESSION, ALWAYS, DENY) if always else (ONCE, SESSION, DENY)


def token(approval_id: str, option: ApprovalOption) -> str:
    """What a button carries (well under Telegram's 64-byte callback data)."""
    return f"dxa:{approval_id}:{option.answer}"


def read_token(data: str) -> tuple[str, str] | None:
    """(approval id, answer) from a button's data; None when it is not one of ours."""
    found = _TOKEN.match(data.strip())
    return (found.group(1), found.group(2)) if found else None


def numbered_prompt(offered: Sequence[ApprovalOption]) -> str:
    """`Reply 1 to allow once, 2 for this conversation, 3 always, 4 to deny.`"""
    parts = [f"{option.number} {_REPLY_WORDS[option.answer]}" for option in offered]
    return "Reply " + ", ".join(parts) + "."


def replied_number(text: str) -> int | None:
    """The option number a message is, if it is nothing but one ("2", " 3. ")."""
    found = _NUMBER.match(text)
    return int(found.group(1)) if found else None


class _SendsText(Protocol):
    async def send_text(self, chat_id: str, text: str, *, thread_id: str | None = None) -> None: ...


class NumberedApprovals:
    """Approval questions for a channel without buttons (WhatsApp), over its `send_text`: the
    question ends with the numbers to reply with, and the reply is the answer."""

    async def send_approval(
        self: _SendsText,
        chat_id: str,
        text: str,
        approval_id: str,
        options: Sequence[ApprovalOption],
        *,
        thread_id: str | None = None,
    ) -> str:
        """Nothing to edit later, so no reference."""
        await self.send_text(chat_id, f"{text}\n\n{numbered_prompt(options)}", thread_id=thread_id)
        return ""

    async def settle_approval(
        self, chat_id: str, ref: str, text: str, *, thread_id: str | None = None
    ) -> None:
        """Never called without a reference: the person's own reply shows the answer."""
        return None

    async def answer_choice(self: _SendsText, choice: InboundMessage, note: str = "") -> None:
        """A numbered reply needs no acknowledgement; a note (a number not offered) is sent."""
        if note:
            await self.send_text(choice.chat_id, note, thread_id=choice.thread_id)


__all__ = [
    "ALWAYS",
    "ANSWERS",
    "DENY",
    "ONCE",
    "SESSION",
    "NumberedApprovals",
    "numbered_prompt",
    "options",
    "read_token",
    "replied_number",
    "token",
]
