"""Approvals from a chat: the person who asked answers in their own chat.

What reaches a chat approver has already passed the principal's grants (`PrincipalPolicy`
refuses anything outside them with "ask the operator"), so what is asked here is inside the
asker's own scope: their memory, their jobs, delivering to their own chat. The question goes to
the chat the run answers (buttons on Telegram and Slack, a numbered reply on WhatsApp); only the
sender who started the run may answer, anyone else pressing a button is told so; no answer
within `APPROVAL_TIMEOUT` is a denial. "Always" is offered in direct chats only, and saves the
person's own answer (`PrincipalPolicy.add_rule`), never an operator rule: in a group it would
bind every other member.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field

from dexter.agent.events import ApprovalRequest
from dexter.gateway.choices import ANSWERS, options, replied_number
from dexter.gateway.types import ApprovalOption, Channel, InboundMessage
from dexter.permissions.gate import ApprovalAnswer

log = logging.getLogger("dexter.gateway")

APPROVAL_TIMEOUT = 300.0
ARGS_SHOWN = 500
NO_LONGER_OPEN = "This question is no longer open."
_OUTCOMES = {
    ApprovalAnswer.ALLOW_ONCE: "Allowed once",
    ApprovalAnswer.ALLOW_SESSION: "Allowed for this conversation",
    ApprovalAnswer.ALLOW_ALWAYS: "Always allowed",
    ApprovalAnswer.DENY: "Denied",
}

ChatKey = tuple[str, str, str, str]


def chat_key(message: InboundMessage) -> ChatKey:
    """The conversation a question was asked in (a Slack thread is its own)."""
    return (message.channel, message.account_id, message.chat_id, message.thread_id or "")


@dataclass(eq=False)
class PendingApproval:
    id: str
    chat: ChatKey
    # The sender who started the run: the only one whose answer counts.
    asker: str
    asker_name: str
    offered: tuple[ApprovalOption, ...]
    future: asyncio.Future[ApprovalAnswer] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )

    def settle(self, answer: ApprovalAnswer) -> None:
        if not self.future.done():
            self.future.set_result(answer)

    @property
    def who(self) -> str:
        return self.asker_name or "the person who asked"


class PendingApprovals:
    """The questions chats are waiting on, by id and by chat (for numbered replies)."""

    def __init__(self) -> None:
        self._open: dict[str, PendingApproval] = {}

    def __len__(self) -> int:
        return len(self._open)

    def open(self, asker: InboundMessage, offered: tuple[ApprovalOption, ...]) -> PendingApproval:
        pending = PendingApproval(
            secrets.token_hex(8), chat_key(asker), asker.sender_id, asker.sender_name, offered
        )
        self._open[pending.id] = pending
        return pending

    def close(self, pending: PendingApproval) -> None:
        self._open.pop(pending.id, None)
        if not pending.future.done():
            pending.future.cancel()

    def waiting_in(self, message: InboundMessage) -> PendingApproval | None:
        """The latest question open in this message's conversation."""
        key = chat_key(message)
        found = [p for p in self._open.values() if p.chat == key]
        return found[-1] if found else None

    def choose(self, message: InboundMessage) -> str:
        """Settle the question a button press answers. Returns a note for the person who
        pressed it ("" when their answer was taken)."""
        choice = message.choice
        pending = self._open.get(choice.approval_id) if choice is not None else None
        # A press from another chat is treated like one for a question that does not exist.
        if choice is None or pending is None or pending.chat[:3] != chat_key(message)[:3]:
            return NO_LONGER_OPEN
        return self._answer(pending, message, choice.answer)

    def reply(self, message: InboundMessage) -> str | None:
        """A numbered reply from the asker to the question open in their chat: settle it and
        return a note ("" when taken). None when the message is not one (it is then handled
        as anything else they say)."""
        pending = self.waiting_in(message)
        if pending is None or message.sender_id != pending.asker:
            return None
        number = replied_number(message.text)
        if number is None:
            return None
        option = next((o for o in pending.offered if o.number == number), None)
        if option is None:
            numbers = ", ".join(str(o.number) for o in pending.offered)
            return f"Please reply with one of {numbers}."
        return self._answer(pending, message, option.answer)

    def _answer(self, pending: PendingApproval, message: InboundMessage, answer: str) -> str:
        if message.sender_id != pending.asker:
            return f"Only {pending.who} can answer this."
        option = next((o for o in pending.offered if o.answer == answer), None)
        if option is None:
            return "That answer is not offered for this question."
        if pending.future.done():
            return NO_LONGER_OPEN
        pending.settle(ANSWERS[option.answer])
        return ""


class ChatApprover:
    """The `Approver` of one chat turn: asks `asker`'s chat and waits for their choice.

    `may_send` is the outbound check replies pass (an approval question is a reply)."""

    def __init__(
        self,
        channel: Channel,
        asker: InboundMessage,
        pending: PendingApprovals,
        *,
        may_send: Callable[[], bool],
        timeout: float = APPROVAL_TIMEOUT,
    ) -> None:
        self.channel = channel
        self.asker = asker
        self.pending = pending
        self.may_send = may_send
        self.timeout = timeout
        self.group = asker.chat_type == "group"

    async def __call__(self, request: ApprovalRequest) -> ApprovalAnswer:
        if not self.may_send():
            log.warning("approval for %s not asked: replies to this chat are blocked", request.tool)
            return ApprovalAnswer.DENY
        offered = options(always=bool(request.proposed_rule) and not self.group)
        pending = self.pending.open(self.asker, offered)
        chat, thread = self.asker.chat_id, self.asker.thread_id
        try:
            text = self._question(request)
            try:
                ref = await self.channel.send_approval(
                    chat, text, pending.id, offered, thread_id=thread
                )
            except Exception as exc:  # a question nobody saw is not an answer
                log.warning("could not ask for approval of %s: %s", request.tool, exc)
                return ApprovalAnswer.DENY
            try:
                answer = await asyncio.wait_for(asyncio.shield(pending.future), self.timeout)
                outcome = _OUTCOMES[answer]
            except TimeoutError:
                answer = ApprovalAnswer.DENY
                outcome = f"No answer within {_duration(self.timeout)}: denied"
            if self.group and answer is not ApprovalAnswer.DENY:
                outcome += f" by {pending.who}"
            if ref:
                await self._settle(ref, f"{text}\n\n→ {outcome}.")
            return answer
        finally:
            self.pending.close(pending)

    def _question(self, request: ApprovalRequest) -> str:
        shown = json.dumps(request.args, ensure_ascii=False, default=str)
        if len(shown) > ARGS_SHOWN:
            shown = shown[: ARGS_SHOWN - 1] + "…"
        lines = [
            f"**Approval needed**: Dexter wants to run `{request.tool}` with",
            "`" + shown.replace("`", "'") + "`",
        ]
        if request.reason:
            lines.append(f"Why it asks: {request.reason}")
        if self.group:
            who = self.asker.sender_name or self.asker.sender_id
            lines.append(f"Only {who}, who asked, can answer.")
        return "\n".join(lines)

    async def _settle(self, ref: str, text: str) -> None:
        try:
            await self.channel.settle_approval(
                self.asker.chat_id, ref, text, thread_id=self.asker.thread_id
            )
        except Exception as exc:  # the answer stands even if the question cannot be updated
            log.debug("could not update the approval question: %s", exc)


def _duration(seconds: float) -> str:
    if seconds >= 60 and seconds % 60 == 0:
        minutes = int(seconds // 60)
        return f"{minutes} minute{'s' if minutes != 1 else ''}"
    return f"{seconds:g} seconds"


__all__ = [
    "APPROVAL_TIMEOUT",
    "ChatApprover",
    "PendingApproval",
    "PendingApprovals",
    "chat_key",
]
