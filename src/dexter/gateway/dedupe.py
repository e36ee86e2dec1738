"""Platforms redeliver: remember what was handled for 20 minutes so nothing is answered twice."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

DEDUPE_TTL = 20 * 60.0
DEDUPE_MAX = 5000


class Deduper:
    def __init__(
        self,
        *,
        ttl: float = DEDUPE_TTL,
        max_entries: int = DEDUPE_MAX,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl = ttl
        self.max_entries = max_entries
        self._clock = clock
        self._seen: OrderedDict[str, float] = OrderedDict()

    def first_sighting(self, key: str) -> bool:
        """True the first time `key` is seen within the TTL (and records it)."""
        now = self._clock()
        while self._seen:
            oldest, at = next(iter(self._seen.items()))
            if now - at < self.ttl:
                break
            del self._seen[oldest]
        if key in self._seen:
            return False
        self._seen[key] = now
        while len(self._seen) > self.max_entries:
            self._seen.popitem(last=False)
        return True
