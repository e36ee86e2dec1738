"""What one kind of server accepts and how it fails: a per-server profile (pydantic-ai's
`ModelProfile` idea).

The wire modules speak one protocol each, but the servers behind a base URL disagree on the
details: llama-cpp-python answers HTTP 500 to an assistant tool-call turn whose `content` is
null, Ollama's templates render `""` differently from null, llama.cpp wants `system` as a plain
string where Anthropic takes blocks, OpenAI's reasoning models refuse `max_tokens`, llama.cpp
reports no usage and tells of an over-long prompt with an empty 200 stream. A `ServerProfile`
holds those answers as data; the provider layer picks one (by probing the server once, see
`dexter.providers.probe`) and the wire modules read it on every request.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from dexter.models.errors import ModelError

ServerKind = Literal[
    "openai", "anthropic", "llamacpp", "vllm", "ollama", "lmstudio", "litellm", "generic"
]
SERVER_KINDS: tuple[ServerKind, ...] = (
    "openai",
    "anthropic",
    "llamacpp",
    "vllm",
    "ollama",
    "lmstudio",
    "litellm",
    "generic",
)
OutputLimitParam = Literal["max_tokens", "max_completion_tokens"]

# How servers word "the prompt does not fit", lowercased. Only consulted for rejections that
# are not already something more specific (a key, a rate limit): "tokens per minute" prose in a
# 429 is never read as an overflow.
VENDOR_OVERFLOW_PHRASES: tuple[str, ...] = (
    "maximum context length",  # OpenAI, vLLM, llama-cpp-python
    "context length",
    "context window",
    "context_length_exceeded",
    "prompt is too long",  # Anthropic
    "exceeded model token limit",  # Moonshot
    "exceeds the maximum number of tokens",  # Gemini
)
LOCAL_OVERFLOW_PHRASES: tuple[str, ...] = (
    *VENDOR_OVERFLOW_PHRASES,
    "exceeds the available context size",  # llama-server: exceed_context_size_error
    "exceed_context_size_error",
    "exceed context window",  # llama-cpp-python's raw ValueError
    "input exceeds context length",  # Ollama
    "exceeds the context length",
    "context length of only",  # LM Studio: "loaded with context length of only N tokens"
    "greater than the context length",  # LM Studio
    "contextwindowexceedederror",  # LiteLLM's exception name, kept in its messages
    "input length and `max_tokens` exceed context limit",  # Anthropic-wire servers
)


@dataclass(frozen=True, slots=True)
class OverflowSignals:
    """How a server says the prompt did not fit its window.

    `empty_stream`: a 200 stream that closes without a single chunk (llama-cpp-python) may be an
    overflow; the wire module then asks once more without streaming, where such servers answer
    with a clean 400, instead of retrying a request that can never fit. `statuses` always mean
    overflow (413: request too large); `phrases` turn a code-less 4xx rejection into one, and
    with `phrases_anywhere` any 4xx or 5xx (local servers and proxies put the news in prose,
    under any status).
    """

    empty_stream: bool = True
    statuses: frozenset[int] = frozenset({413})
    phrases: tuple[str, ...] = LOCAL_OVERFLOW_PHRASES
    phrases_anywhere: bool = True

    def matches(self, text: str) -> bool:
        lowered = text.lower()
        return any(phrase in lowered for phrase in self.phrases)


@dataclass(frozen=True, slots=True)
class ServerProfile:
    """One server's quirks as data. Every field has a sensible value for a server we know
    nothing about (`generic`); a probe or the settings replace what they know better.

    - `assistant_tool_call_content`: what an assistant turn that only calls tools carries as
      `content`: `""` (llama.cpp refuses null) or None (JSON null: OpenAI's own shape, and what
      Ollama's templates expect).
    - `system_as_string`: on the Anthropic wire, `system` as a plain string (third-party servers,
      LiteLLM in front of llama.cpp) instead of text blocks with a cache breakpoint.
    - `output_limit_param`: the request field that limits the answer's length.
    - `default_output_tokens`: the answer allowance sent when the caller sets none (None: send
      nothing and let the server's own limit apply, as OpenAI's endpoint does sensibly); it is
      scaled down to the window, see `output_limit`.
    - `reports_usage_in_stream`: whether to ask for a usage chunk (`stream_options`); missing or
      zero counts are estimated whatever this says.
    - `overflow_signals`: how the server says a prompt is too long.
    - `context_window`: the window the server reported (None: not known from the server).
    """

    server_kind: ServerKind = "generic"
    assistant_tool_call_content: str | None = ""
    system_as_string: bool = True
    output_limit_param: OutputLimitParam = "max_tokens"
    default_output_tokens: int | None = 4096
    reports_usage_in_stream: bool = True
    overflow_signals: OverflowSignals = field(default_factory=OverflowSignals)
    context_window: int | None = None

    def to_dict(self) -> dict[str, object]:
        """The profile in the settings' own spelling (what `profile` in a provider takes)."""
        return {
            "serverKind": self.server_kind,
            "assistantToolCallContent": self.assistant_tool_call_content,
            "systemAsString": self.system_as_string,
            "outputLimitParam": self.output_limit_param,
            "defaultOutputTokens": self.default_output_tokens,
            "reportsUsageInStream": self.reports_usage_in_stream,
            "overflowSignals": {
                "emptyStream": self.overflow_signals.empty_stream,
                "statuses": sorted(self.overflow_signals.statuses),
                "phrases": list(self.overflow_signals.phrases),
                "phrasesAnywhere": self.overflow_signals.phrases_anywhere,
            },
            "contextWindow": self.context_window,
        }


_VENDOR_SIGNALS = OverflowSignals(
    empty_stream=False, phrases=VENDOR_OVERFLOW_PHRASES, phrases_anywhere=False
)

# OpenAI's own endpoint (and the hosted vendors that copy its dialect faithfully): null content
# next to tool calls, `max_completion_tokens` (its reasoning models refuse `max_tokens`), and no
# default allowance: the model's own output cap is right there, and an empty stream is a broken
# connection, worth retrying.
OPENAI = ServerProfile(
    server_kind="openai",
    assistant_tool_call_content=None,
    system_as_string=False,
    output_limit_param="max_completion_tokens",
    default_output_tokens=None,
    overflow_signals=_VENDOR_SIGNALS,
)
# Anthropic's own endpoint: system blocks carry the cache breakpoint; max_tokens is required.
ANTHROPIC = ServerProfile(
    server_kind="anthropic",
    assistant_tool_call_content=None,
    system_as_string=False,
    default_output_tokens=16_000,
    overflow_signals=_VENDOR_SIGNALS,
)
GENERIC = ServerProfile()

_BY_KIND: dict[ServerKind, ServerProfile] = {
    "openai": OPENAI,
    "anthropic": ANTHROPIC,
    # llama-cpp-python answers HTTP 500 to null content and an over-long prompt with an empty
    # 200 stream (a 400 context_length_exceeded without streaming); its usage is always zero and
    # is estimated. llama-server counts usage when asked.
    "llamacpp": replace(GENERIC, server_kind="llamacpp"),
    # vLLM follows the OpenAI schema (null is fine) and refuses a max_tokens that does not fit
    # next to the prompt, which `output_limit` prevents.
    "vllm": replace(GENERIC, server_kind="vllm", assistant_tool_call_content=None),
    # Ollama's templates render "" in a tool-call turn as text and small models then switch to
    # writing tool calls as text; null keeps them in structured tool calls.
    "ollama": replace(GENERIC, server_kind="ollama", assistant_tool_call_content=None),
    "lmstudio": replace(GENERIC, server_kind="lmstudio"),
    # LiteLLM passes requests on to whatever is behind it, often a local server: the local
    # defaults are the safe ones.
    "litellm": replace(GENERIC, server_kind="litellm"),
    "generic": GENERIC,
}


def profile_for_kind(kind: ServerKind) -> ServerProfile:
    """The built-in profile of a server kind."""
    return _BY_KIND[kind]


# A wire module's mapping of a non-2xx reply (status, headers, body, who to name, the server's
# overflow signals) to a ModelError.
StatusClassifier = Callable[
    [int, Mapping[str, str], bytes, str, "OverflowSignals | None"], "ModelError"
]


class FollowsProfile:
    """What a wire client keeps about its server: the profile it follows (replaced once the
    server was probed), the window it sizes requests for, and a window an overflow refusal
    stated, passed on to whoever keeps such findings (`on_window_learned`)."""

    profile: ServerProfile
    on_window_learned: Callable[[int], None] | None

    def _follow(
        self,
        profile: ServerProfile,
        context_window: int | None,
        classify: StatusClassifier,
        label: str,
    ) -> None:
        self.profile = profile
        self._configured_window = context_window
        self._classify = classify
        self._label = label
        self.on_window_learned = None

    def _status_error(self, status: int, headers: Mapping[str, str], content: bytes) -> ModelError:
        """A rejection as the wire module classifies it, read with the profile in force now
        (it may have been replaced since the client was built)."""
        error = self._classify(status, headers, content, self._label, self.profile.overflow_signals)
        self._learn_window(error)
        return error

    def use_profile(self, profile: ServerProfile) -> None:
        """Switch to what a probe (or the settings) found the server to accept."""
        self.profile = profile

    @property
    def context_window(self) -> int | None:
        """The window requests are sized for: the server's own word first."""
        return self.profile.context_window or self._configured_window

    def _learn_window(self, error: ModelError) -> None:
        """An overflow refusal that states the window (llama-cpp-python states it nowhere
        else): size the next requests for it, and tell whoever keeps such findings."""
        window = error.context_window
        if window is None or window == self.profile.context_window:
            return
        self.profile = replace(self.profile, context_window=window)
        if self.on_window_learned is not None:
            self.on_window_learned(window)


# ---- output limits -------------------------------------------------------------------------

# A default allowance is never below this share of a window, nor below this many tokens, so a
# small model still has room to write a paragraph.
MIN_DEFAULT_OUTPUT = 1024
WINDOW_SHARE = 4
# Never ask for less than this, even when the prompt estimate leaves less room: the estimate
# (characters / 3.5) overcounts, and when the prompt really does not fit the server refuses it
# and that refusal is recovered as an overflow, which a too-small answer never would be.
MIN_OUTPUT_ROOM = 256


def output_limit(
    requested: int | None,
    default: int | None,
    window: int | None,
    prompt_tokens: int,
) -> int | None:
    """The answer allowance to send, or None to send none.

    The caller's own limit (a summary's 2,000 tokens) wins over the profile's `default`; a
    default is also held to a quarter of the window (at least `MIN_DEFAULT_OUTPUT`), so an 8k
    model answers in at most 2,048 tokens instead of generating until its context is full. Either
    is held to what the window leaves after the prompt (at least `MIN_OUTPUT_ROOM`).
    """
    limit = requested
    if limit is None:
        if default is None:
            return None
        limit = default
        if window:
            limit = min(limit, max(MIN_DEFAULT_OUTPUT, window // WINDOW_SHARE))
    if window:
        limit = min(limit, max(MIN_OUTPUT_ROOM, window - prompt_tokens))
    return max(1, limit)


# ---- what an overflow error says about the window ------------------------------------------

_WINDOW_PATTERNS = (
    re.compile(r"maximum context length is (\d+)", re.IGNORECASE),  # OpenAI, vLLM, llama-cpp-py
    re.compile(r"available context size \((\d+) tokens?\)", re.IGNORECASE),  # llama-server
    re.compile(r"exceed context window of (\d+)", re.IGNORECASE),  # llama-cpp-python, raw
    re.compile(r"context length of only (\d+)", re.IGNORECASE),  # LM Studio
)


def window_from_error(text: str) -> int | None:
    """The window an overflow message states ("This model's maximum context length is 8192
    tokens"), or None."""
    for pattern in _WINDOW_PATTERNS:
        match = pattern.search(text)
        if match:
            value = int(match.group(1))
            if value > 0:
                return value
    return None


__all__ = [
    "ANTHROPIC",
    "GENERIC",
    "LOCAL_OVERFLOW_PHRASES",
    "MIN_DEFAULT_OUTPUT",
    "MIN_OUTPUT_ROOM",
    "OPENAI",
    "SERVER_KINDS",
    "VENDOR_OVERFLOW_PHRASES",
    "FollowsProfile",
    "OutputLimitParam",
    "OverflowSignals",
    "ServerKind",
    "ServerProfile",
    "output_limit",
    "profile_for_kind",
    "window_from_error",
]
