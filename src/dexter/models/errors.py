"""Model errors, classified from the SDK's status codes and error types, not by substring."""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from enum import StrEnum

from dexter.errors import DexterError


class ErrorKind(StrEnum):
    AUTH = "auth"
    BILLING = "billing"
    BAD_REQUEST = "bad_request"
    NOT_FOUND = "not_found"
    CONTEXT_OVERFLOW = "context_overflow"
    RATE_LIMIT = "rate_limit"
    OVERLOADED = "overloaded"
    SERVER = "server"
    TIMEOUT = "timeout"
    CONNECTION = "connection"
    STREAM = "stream"
    UNKNOWN = "unknown"


RETRYABLE_KINDS = frozenset(
    {
        ErrorKind.RATE_LIMIT,
        ErrorKind.OVERLOADED,
        ErrorKind.SERVER,
        ErrorKind.TIMEOUT,
        ErrorKind.CONNECTION,
        ErrorKind.STREAM,
    }
)


class ModelError(DexterError):
    """A failed model call, with enough structure for the loop to decide what to do next."""

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        provider: str = "",
        status_code: int | None = None,
        retry_after: float | None = None,
        request_id: str | None = None,
        context_window: int | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.provider = provider
        self.status_code = status_code
        self.retry_after = retry_after
        self.request_id = request_id
        # The window an overflow error stated ("maximum context length is 8192 tokens").
        self.context_window = context_window

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE_KINDS

    def _window_note(self) -> str:
        return f" ({self.context_window:,} tokens)" if self.context_window else ""

    def user_message(self) -> str:
        """What happened and what to do, in one or two sentences for a person."""
        who = self.provider or "The model provider"
        hints = {
            ErrorKind.AUTH: f"{who} rejected the API key. Check the key (run `dexter doctor`).",
            ErrorKind.BILLING: f"{who} says the account is out of credit. Check billing or use "
            "another key or model.",
            ErrorKind.NOT_FOUND: f"{who} does not know this model or endpoint. Check --model and "
            "the base URL (run `dexter doctor`).",
            ErrorKind.CONTEXT_OVERFLOW: "The conversation is too large for this model's context "
            f"window{self._window_note()}. Start a new conversation or use a model with a larger "
            "window.",
            ErrorKind.RATE_LIMIT: f"{who} rate limit reached. Wait a moment and try again.",
            ErrorKind.OVERLOADED: f"{who} is overloaded right now. Try again shortly.",
            ErrorKind.SERVER: f"{who} had a server error. Try again shortly.",
            ErrorKind.TIMEOUT: f"The request to {who} timed out. Try again.",
            ErrorKind.CONNECTION: f"Could not reach {who}. Check the network and the base URL.",
            ErrorKind.STREAM: f"The response stream from {who} broke off. Try again.",
            ErrorKind.BAD_REQUEST: f"{who} rejected the request.",
            ErrorKind.UNKNOWN: f"{who} call failed.",
        }
        text = hints[self.kind]
        # "the server at 127.0.0.1:8080 had a server error" starts a sentence.
        text = text[:1].upper() + text[1:]
        detail = self.message.strip()
        if detail:
            if len(detail) > 300:
                detail = detail[:300] + "..."
            text += f" ({detail})"
        if self.request_id:
            text += f" [request_id: {self.request_id}]"
        return text


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait, from `retry-after-ms`, `retry-after` seconds or a `retry-after` date."""
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            value = float(millis) / 1000
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value >= 0:
            return value
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        try:
            when = parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return max(0.0, (when - datetime.now(UTC)).total_seconds())
    return value if math.isfinite(value) and value >= 0 else None
