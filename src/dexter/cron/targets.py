"""Where a job's alerts may go, decided by whose job it is.

- The operator's jobs: any target; `file[:PATH]` only inside the alerts folder (`alerts_file`).
- A chat principal's jobs: its own chat (`Principal.reply_target`) and nothing else, which is
  also where they go when no target is named.
- A principal without a chat (an MCP host): the outbox, where the operator reads them.
- `file` and `desktop` write on the operator's computer: only the operator's own jobs use them,
  even when the operator edits someone else's job. The runner checks this again when an alert
  goes out, so a row changed behind the tools' back still cannot write a file.
"""

from __future__ import annotations

import re
from pathlib import Path

from dexter.cron.alerts_file import alerts_parts, check_alerts_path
from dexter.cron.delivery import target_address, target_scheme
from dexter.cron.model import DEFAULT_TARGET
from dexter.cron.schedule import ScheduleError
from dexter.principal import OPERATOR_ID, Principal

TARGET_SCHEMES = ("outbox", "desktop", "file", "telegram", "slack", "whatsapp")
# Targets that write on the operator's computer rather than message a chat.
OPERATOR_ONLY_SCHEMES = frozenset({"file", "desktop"})
# A phone number, or a group's id (where a job made in a WhatsApp group answers).
_WHATSAPP = re.compile(r"\+?[\d ()-]{6,20}|\d{6,30}(-\d{6,20})?@g\.us")
_ASK = "ask the operator of this Dexter to deliver them anywhere else"


def validate_target(target: str | None) -> str:
    """`telegram:CHAT`, `slack:CHANNEL`, `whatsapp:NUMBER`, `desktop`, `file[:PATH]`, `outbox`."""
    if target is None or not target.strip():
        return DEFAULT_TARGET
    text = target.strip()
    scheme, _, address = text.partition(":")
    scheme = scheme.lower()
    if scheme not in TARGET_SCHEMES:
        raise ScheduleError(
            f"Unknown delivery target {target!r}: use outbox, desktop, file[:PATH], "
            "telegram:CHAT_ID, slack:CHANNEL or whatsapp:NUMBER."
        )
    if scheme in ("telegram", "slack", "whatsapp") and not address.strip():
        raise ScheduleError(f"A {scheme} target needs an address, like {scheme}:123456.")
    if scheme in ("outbox", "desktop") and address:
        raise ScheduleError(f"The {scheme} target takes no address (write just {scheme}).")
    if scheme == "whatsapp" and not _WHATSAPP.fullmatch(address.strip()):
        raise ScheduleError(
            f"{address!r} is not a phone number (write it like +15551234567) or a WhatsApp "
            "group id (like 120363012345678901@g.us)."
        )
    if scheme == "file":
        alerts_parts(address)
    return f"{scheme}:{address.strip()}" if address.strip() else scheme


def target_for(
    requested: str | None,
    *,
    by: Principal,
    owner: str | None = None,
    default: str | None = None,
    home: Path | None = None,
) -> str:
    """The target a job of `owner` (default: `by`'s own) gets when `by` asks for `requested`.

    `default` is where the conversation's alerts go when none is named (the operator's chat);
    `home` lets a `file:` target be checked against the disk (links in the alerts folder).
    """
    if not by.is_operator:
        return _own_chat(by, requested, default)
    target = validate_target(requested if requested and requested.strip() else default)
    refusal = delivery_refusal(owner or by.id, target)
    if refusal is not None:
        raise ScheduleError(refusal)
    if target_scheme(target) == "file" and home is not None:
        check_alerts_path(home, target_address(target))
    return target


def _own_chat(principal: Principal, requested: str | None, default: str | None) -> str:
    allowed = principal.reply_target or default or DEFAULT_TARGET
    if requested is None or not requested.strip() or _same(requested, allowed):
        return allowed
    if allowed == DEFAULT_TARGET:
        raise ScheduleError(
            f"Alerts of your jobs go to the operator's outbox only, so {requested.strip()!r} "
            f"is refused; {_ASK}."
        )
    raise ScheduleError(
        f"Alerts of jobs made in this chat go to this chat ({allowed}) and nowhere else, so "
        f"{requested.strip()!r} is refused; {_ASK}."
    )


def _same(a: str, b: str) -> bool:
    def key(target: str) -> tuple[str, str]:
        return target_scheme(target), target_address(target)

    return key(a) == key(b)


def delivery_refusal(owner: str, target: str) -> str | None:
    """Why a job of `owner` may not deliver to `target` (None: it may)."""
    scheme = target_scheme(target)
    if owner == OPERATOR_ID or scheme not in OPERATOR_ONLY_SCHEMES:
        return None
    return (
        f"{scheme} delivery writes on this computer, so it is only for the operator's own jobs "
        f"(this one belongs to {owner})."
    )


__all__ = [
    "OPERATOR_ONLY_SCHEMES",
    "TARGET_SCHEMES",
    "delivery_refusal",
    "target_for",
    "validate_target",
]
