"""How full the context window is, measured before each request rather than a round late.

The provider's reported input tokens for the previous call are exact but stale: they do not include
the assistant turn and the tool results appended since, which in a financial run can be tens of
thousands of tokens. So the next request is measured as that report plus an estimate of what was
appended after it. Without a report (first call, or a provider that reports no usage) everything is
estimated, tool schemas included.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from dexter.models.estimate import (
    CHARS_PER_TOKEN,
    MESSAGE_OVERHEAD_TOKENS,
    TOOL_CALL_OVERHEAD_TOKENS,
    estimate_message,
    estimate_messages,
    estimate_request,
    estimate_tokens,
    estimate_tools,
)
from dexter.models.types import Message, ToolSpec

# Room kept free for the model's answer: a request must leave it or the reply gets cut off.
MAX_OUTPUT_RESERVE = 8_000

Level = Literal["ok", "clear", "compact"]

# The estimators live with the models (the wire clients estimate usage a server did not
# report); they are re-exported here, where the context code has always found them.
__all__ = [
    "CHARS_PER_TOKEN",
    "MAX_OUTPUT_RESERVE",
    "MESSAGE_OVERHEAD_TOKENS",
    "TOOL_CALL_OVERHEAD_TOKENS",
    "ContextBudget",
    "Level",
    "estimate_message",
    "estimate_messages",
    "estimate_request",
    "estimate_tokens",
    "estimate_tools",
]


class ContextBudget:
    """Thresholds for one model's window: clear old results at `clear_at`, compact at `compact_at`.

    `hard_limit` is the most a request may ever hold; the rest of the window is the answer's room.
    """

    def __init__(self, window: int, clear_at: float = 0.70, compact_at: float = 0.85) -> None:
        if window <= 0:
            raise ValueError(f"context window must be positive, got {window}")
        if not 0 < clear_at <= compact_at <= 1:
            raise ValueError("need 0 < clear_at <= compact_at <= 1")
        self.window = window
        self.clear_at = clear_at
        self.compact_at = compact_at

    @property
    def output_reserve(self) -> int:
        return min(MAX_OUTPUT_RESERVE, self.window // 10)

    @property
    def hard_limit(self) -> int:
        return self.window - self.output_reserve

    @property
    def clear_threshold(self) -> int:
        return int(self.window * self.clear_at)

    @property
    def compact_threshold(self) -> int:
        return int(self.window * self.compact_at)

    def measure(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        *,
        last_reported_input: int | None,
        messages_at_last_report: int,
    ) -> int:
        """Tokens the next request with `messages` and `tools` will hold.

        `last_reported_input` is the input tokens the provider reported for the latest call and
        `messages_at_last_report` the number of messages that call sent. Pass None after the
        message list was rewritten (compaction, truncation): the old report no longer describes it.
        """
        if (
            last_reported_input is not None
            and last_reported_input > 0
            and 0 <= messages_at_last_report <= len(messages)
        ):
            return last_reported_input + estimate_messages(messages[messages_at_last_report:])
        # A zero report means the provider gave no usage; trusting it would hide the whole context.
        return estimate_messages(messages) + estimate_tools(tools)

    def level(self, tokens: int) -> Level:
        if tokens >= self.compact_threshold:
            return "compact"
        if tokens >= self.clear_threshold:
            return "clear"
        return "ok"

    def fits(self, tokens: int) -> bool:
        return tokens <= self.hard_limit
