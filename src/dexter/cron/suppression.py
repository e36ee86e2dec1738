"""Whether an unattended answer is worth delivering: pure, so every rule has a table test.

Order: blank -> the OK token alone -> the token stripped from either end leaves nothing -> a
"nothing to report" style answer -> the same text as the last delivered alert within 24 hours ->
deliver. State (the last delivered alert) is kept in the job row, so it survives restarts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

HEARTBEAT_OK = "HEARTBEAT_OK"
DUPLICATE_WINDOW = timedelta(hours=24)

Reason = Literal["none", "empty", "ok-token", "no-action", "duplicate"]

# The token alone, optionally bold and followed by one "." or "!": matched exactly.
_TOKEN_ONLY = re.compile(rf"^\s*(\*\*)?{HEARTBEAT_OK}(\*\*)?[.!]?\s*$")
_TOKEN_EDGE = rf"(\*\*)?{HEARTBEAT_OK}(\*\*)?[.!]?"
_TOKEN_START = re.compile(rf"^\s*{_TOKEN_EDGE}\s*", re.IGNORECASE)
_TOKEN_END = re.compile(rf"\s*{_TOKEN_EDGE}\s*$", re.IGNORECASE)

_NO_ACTION = re.compile(
    r"\b("
    r"no (further )?action (is )?(needed|required|necessary)"
    r"|no alerts? (is |are )?(needed|required|warranted)"
    r"|nothing (new |noteworthy |notable |significant )?to report"
    r"|nothing (noteworthy|notable|significant) (happened|occurred|to flag)"
    r"|no (significant |notable |material |meaningful |major )?changes?\b"
    r"|everything (is |looks |seems |appears )?(fine|normal|good|ok|okay|quiet|as expected)"
    r"|all (is |looks |seems )?(quiet|fine|normal|well|good)"
    r")",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Verdict:
    suppress: bool
    reason: Reason
    text: str  # the answer with the OK token removed, what would be delivered


def normalise(text: str) -> str:
    """What duplicate detection compares: whitespace collapsed, case folded."""
    return " ".join(text.split()).casefold()


def evaluate(
    answer: str,
    *,
    last_text: str | None,
    last_at: datetime | None,
    now: datetime,
    window: timedelta = DUPLICATE_WINDOW,
) -> Verdict:
    if not answer.strip():
        return Verdict(True, "empty", "")
    if _TOKEN_ONLY.match(answer):
        return Verdict(True, "ok-token", "")
    cleaned = _TOKEN_END.sub("", _TOKEN_START.sub("", answer, count=1), count=1).strip()
    if not cleaned:
        return Verdict(True, "ok-token", "")
    if _NO_ACTION.search(cleaned):
        return Verdict(True, "no-action", cleaned)
    if (
        last_text is not None
        and last_at is not None
        and now - last_at < window
        and normalise(last_text) == normalise(cleaned)
    ):
        return Verdict(True, "duplicate", cleaned)
    return Verdict(False, "none", cleaned)
