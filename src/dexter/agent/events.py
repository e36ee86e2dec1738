"""The events an agent run streams: the one contract the CLI, gateway, cron and evals consume.

Every event is a frozen dataclass with a `type` tag and `to_dict()` for `--json` output.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Literal

from dexter.figures.types import Verification
from dexter.models.types import Usage
from dexter.tools.citations import SourceEntry


@dataclass(frozen=True, slots=True)
class Event:
    type: ClassVar[str] = "event"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        return {"type": self.type, **data}


@dataclass(frozen=True, slots=True)
class RunStarted(Event):
    type: ClassVar[str] = "run_started"
    run_id: str
    query: str
    model: str
    tools: list[str]
    scratchpad: str


@dataclass(frozen=True, slots=True)
class TextDelta(Event):
    """Text as the model streams it. Provisional until its round ends: if the round turns into
    tool calls, the same text comes again as `Thinking` (same `round`); otherwise it is the
    answer."""

    type: ClassVar[str] = "text"
    text: str
    # The model round (1, 2, …) that wrote it.
    round: int = 0


@dataclass(frozen=True, slots=True)
class Reasoning(Event):
    """Reasoning/thinking text streamed by the model (DeepSeek reasoning, Claude thinking)."""

    type: ClassVar[str] = "reasoning"
    text: str


@dataclass(frozen=True, slots=True)
class Thinking(Event):
    """Text the model wrote alongside tool calls: a plan or interim note, not the answer."""

    type: ClassVar[str] = "thinking"
    text: str
    # The round whose streamed text this was.
    round: int = 0


@dataclass(frozen=True, slots=True)
class Retrying(Event):
    """A transient model failure; the stream restarts, so consumers drop partial text."""

    type: ClassVar[str] = "retrying"
    attempt: int
    max_attempts: int
    delay: float
    error: str


@dataclass(frozen=True, slots=True)
class ToolStart(Event):
    type: ClassVar[str] = "tool_start"
    call_id: str
    tool: str
    args: dict[str, Any]
    # Calls that started in the same wave of one response share `group` (1, 2, …); `group_size`
    # says how many ran together.
    group: int = 1
    group_size: int = 1


@dataclass(frozen=True, slots=True)
class ToolProgress(Event):
    type: ClassVar[str] = "tool_progress"
    call_id: str
    tool: str
    message: str


@dataclass(frozen=True, slots=True)
class ToolEnd(Event):
    type: ClassVar[str] = "tool_end"
    call_id: str
    tool: str
    args: dict[str, Any]
    result: str
    duration_ms: float
    warning: str | None = None


@dataclass(frozen=True, slots=True)
class ToolError(Event):
    type: ClassVar[str] = "tool_error"
    call_id: str
    tool: str
    args: dict[str, Any]
    error: str
    duration_ms: float = 0.0


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What the gate asks a person: run this tool with these arguments?"""

    call_id: str
    tool: str
    args: dict[str, Any]
    reason: str = ""
    # The rule "allow always" would save (None: that answer is not offered), and the exact
    # shell command when there is one, to show the person what they are approving.
    proposed_rule: str | None = None
    command: str | None = None


@dataclass(frozen=True, slots=True)
class ToolApproval(Event):
    type: ClassVar[str] = "tool_approval"
    call_id: str
    tool: str
    answer: str


@dataclass(frozen=True, slots=True)
class ToolDenied(Event):
    type: ClassVar[str] = "tool_denied"
    call_id: str
    tool: str
    args: dict[str, Any]
    by: Literal["rule", "user"]
    reason: str = ""


@dataclass(frozen=True, slots=True)
class ContextEvent(Event):
    """Context management happened (e.g. old rounds dropped to recover from an overflow)."""

    type: ClassVar[str] = "context"
    action: str
    detail: str
    removed_messages: int = 0


@dataclass(frozen=True, slots=True)
class QueueDrained(Event):
    type: ClassVar[str] = "queue_drained"
    count: int
    text: str


@dataclass(frozen=True, slots=True)
class Revising(Event):
    """The answer of `round` had figures its data does not support; the model is asked once to
    correct, explain or remove them. That round's text is superseded: the next round's text is
    the answer (consumers drop what they showed of it, as after `retrying`)."""

    type: ClassVar[str] = "revising"
    round: int
    # The figures as the answer wrote them, e.g. "$391,305 million".
    unsupported: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    tool: str
    args: dict[str, Any]
    result: str
    is_error: bool = False


DoneStatus = Literal["answered", "error", "denied"]


@dataclass(frozen=True, slots=True)
class Done(Event):
    """Always the last event of a run (except when the run is cancelled, which raises)."""

    type: ClassVar[str] = "done"
    answer: str
    status: DoneStatus
    iterations: int
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    duration_ms: float = 0.0
    error: str | None = None
    # Sources the answer cites ([S1] …); every source the run's tools showed when it cites none.
    sources: list[SourceEntry] = field(default_factory=list)
    # How the answer's figures were checked (None: verification off, or no answer).
    verification: Verification | None = None

    def to_dict(self) -> dict[str, Any]:
        checked = self.verification
        return {
            "type": self.type,
            "answer": self.answer,
            "status": self.status,
            "iterations": self.iterations,
            "tool_calls": [asdict(record) for record in self.tool_calls],
            "usage": self.usage.to_dict(),
            "duration_ms": round(self.duration_ms, 1),
            "error": self.error,
            "sources": [source.to_dict() for source in self.sources],
            "figures": [f.to_dict() for f in checked.figures] if checked is not None else None,
            "verification": checked.summary() if checked is not None else None,
        }
