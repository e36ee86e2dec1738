"""The one backoff schedule, shared by model retries and the data HTTP client."""

from __future__ import annotations

import random


def backoff(attempt: int, base_delay: float, max_delay: float | None = None) -> float:
    """Seconds before retry number `attempt` (1-based): doubling from `base_delay`, +-20% jitter
    so parallel clients do not retry in step, capped at `max_delay`."""
    delay = base_delay * 2.0 ** (attempt - 1) * random.uniform(0.8, 1.2)
    return min(delay, max_delay) if max_delay is not None else delay
