"""Follow-up messages a person types while a run is working, injected at the next round."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal

Priority = Literal["next", "later"]
_ORDER: dict[str, int] = {"next": 0, "later": 1}


@dataclass(frozen=True, slots=True)
class QueuedMessage:
    text: str
    priority: Priority = "next"
    enqueued_at: float = field(default_factory=time.monotonic)
    source: str = "cli"


class MessageQueue:
    def __init__(self) -> None:
        self._items: list[QueuedMessage] = []

    def enqueue(self, text: str, *, priority: Priority = "next", source: str = "cli") -> None:
        self._items.append(QueuedMessage(text=text, priority=priority, source=source))

    def drain(self) -> list[QueuedMessage]:
        """Take every message, most urgent first, oldest first within a priority."""
        items = sorted(self._items, key=lambda m: (_ORDER[m.priority], m.enqueued_at))
        self._items.clear()
        return items

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)
