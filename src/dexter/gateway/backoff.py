"""Reconnect delays: capped exponential backoff with jitter, and no attempt limit.

The original stopped after 12 attempts and left the channel dead with the process alive.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ReconnectPolicy:
    initial: float = 2.0
    maximum: float = 30.0
    factor: float = 1.8
    jitter: float = 0.25
    # A connection that stayed up this long was healthy: the next failure starts from `initial`.
    healthy_after: float = 60.0

    def clamped(self) -> ReconnectPolicy:
        initial = max(0.25, self.initial)
        return ReconnectPolicy(
            initial=initial,
            maximum=max(initial, self.maximum),
            factor=min(10.0, max(1.1, self.factor)),
            jitter=min(1.0, max(0.0, self.jitter)),
            healthy_after=max(0.0, self.healthy_after),
        )

    def delay(self, attempt: int, rand: Callable[[], float] = random.random) -> float:
        """Seconds to wait before attempt `attempt` (1-based)."""
        policy = self.clamped()
        base = policy.initial * policy.factor ** max(0, attempt - 1)
        return min(policy.maximum, base + base * policy.jitter * rand())
