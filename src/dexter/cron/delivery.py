"""The delivery interface: a scheduled job's alert, and what a channel implements to carry it.

The runner owns a `Mapping[str, Deliverer]` keyed by target scheme ("telegram", "slack",
"whatsapp", "desktop", "file"). The gateway passes its channels' deliverers; `dexter daemon`
passes the local ones. Every alert is written to the outbox first, so a failed or missing
deliverer never loses it, and a retry re-sends the stored text without re-running the research.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


@dataclass(frozen=True)
class Alert:
    job_id: str
    job_name: str
    text: str
    created_at: datetime  # aware, UTC
    # "telegram:CHAT" | "slack:CHANNEL" | "whatsapp:NUMBER" | "desktop" | "file:PATH" | "outbox"
    target: str


class DeliveryError(Exception):
    """A deliverer could not hand the alert over; the message says why (never a secret)."""


class Deliverer(Protocol):
    scheme: str  # "telegram", "slack", "whatsapp", "desktop", "file"

    async def deliver(self, alert: Alert) -> None:
        """Hand `alert` to the channel; raise DeliveryError on failure."""
        ...


def target_scheme(target: str) -> str:
    """The scheme of a target string: "telegram:123" -> "telegram", "desktop" -> "desktop"."""
    return target.split(":", 1)[0].strip().lower()


def target_address(target: str) -> str:
    """What follows the scheme ("telegram:123" -> "123"); empty when there is none."""
    _, _, rest = target.partition(":")
    return rest.strip()
