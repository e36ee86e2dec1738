"""Our own message and stream types: what every wire protocol maps to and from.

The agent loop, context management and the UIs only ever see these types, never an SDK's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from dexter.models.errors import ModelError


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call as the model asked for it. `arguments` is the raw JSON text it sent."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one call or a sum of calls.

    `estimated` says some of the counts are Dexter's own character estimate, because the server
    reported none (llama.cpp's servers never do); a sum is estimated when any part of it was.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    estimated: bool = False

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            estimated=self.estimated or other.estimated,
        )

    def to_dict(self) -> dict[str, int | bool]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_tokens": self.cached_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "total_tokens": self.total_tokens,
            "estimated": self.estimated,
        }


@dataclass(frozen=True, slots=True)
class SystemMessage:
    content: str
    role: Literal["system"] = "system"


@dataclass(frozen=True, slots=True)
class UserMessage:
    content: str
    role: Literal["user"] = "user"


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    """A model turn.

    `reasoning` is the visible reasoning text (DeepSeek `reasoning_content`, Anthropic thinking).
    `provider_data` is opaque, protocol-specific state that must be echoed back on the next request
    (Anthropic thinking blocks with their signatures, the OpenAI-compatible reasoning field name);
    only the wire module that wrote it reads it.
    """

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning: str = ""
    provider_data: Mapping[str, Any] = field(default_factory=dict)
    role: Literal["assistant"] = "assistant"


@dataclass(frozen=True, slots=True)
class ToolMessage:
    tool_call_id: str
    name: str
    content: str
    is_error: bool = False
    role: Literal["tool"] = "tool"


Message = SystemMessage | UserMessage | AssistantMessage | ToolMessage


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as a model sees it: name, description and a JSON schema for its arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ForcedTool:
    """A tool choice that makes the model call this tool now. Some servers' small models only
    call a tool when told which (llama-cpp-python's `chatml-function-calling` format does not
    even show them the tools otherwise)."""

    name: str


# "none" keeps the tool definitions (some APIs reject tool history without them) but forbids
# new calls; the loop uses it on its last iteration to force a written answer.
ToolChoice = Literal["auto", "none"] | ForcedTool


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One call. `temperature` and `seed`: None leaves the server's default (what every
    interactive run does); evaluations set both so a run can be repeated."""

    messages: Sequence[Message]
    tools: Sequence[ToolSpec] = ()
    tool_choice: ToolChoice = "auto"
    max_output_tokens: int | None = None
    temperature: float | None = None
    seed: int | None = None


# ---- stream chunks -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextChunk:
    text: str


@dataclass(frozen=True, slots=True)
class ReasoningChunk:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallChunk:
    """A fragment of a tool call: name and id arrive first, argument JSON arrives in pieces."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """The finished turn: always the last chunk of a successful stream."""

    message: AssistantMessage
    usage: Usage = Usage()
    stop_reason: str = "stop"


@dataclass(frozen=True, slots=True)
class RetryNotice:
    """Yielded by a retrying model before it streams again: discard what this attempt streamed
    so far (text, reasoning and tool-call fragments)."""

    attempt: int
    max_attempts: int
    delay: float
    error: ModelError


StreamChunk = TextChunk | ReasoningChunk | ToolCallChunk | ModelResponse | RetryNotice


# provider_data keys that carry reasoning state; the loop drops them from old turns.
REASONING_STATE_KEYS = frozenset({"anthropic_thinking"})
