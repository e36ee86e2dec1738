"""What one question's evaluation produced, and a run's header: plain data, stored as JSON."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Status = Literal["scored", "agent_error", "timeout", "judge_error"]
FAILURE_LABELS = {
    "agent_error": "agent error",
    "timeout": "timed out",
    "judge_error": "judge failure",
}


@dataclass(frozen=True, slots=True)
class Cost:
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None  # None: some call had no known price

    def __add__(self, other: Cost) -> Cost:
        cost = (
            None
            if self.cost_usd is None and other.cost_usd is None
            else (self.cost_usd or 0.0) + (other.cost_usd or 0.0)
        )
        return Cost(
            self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens, cost
        )

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True, slots=True)
class QuestionResult:
    question_id: str
    position: int
    category: str
    question: str
    reference: str
    status: Status
    score: float | None
    answer: str = ""
    contradiction: bool = False
    passed_criteria: int = 0
    total_criteria: int = 0
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    judge: dict[str, Any] = field(default_factory=dict)
    sources: list[dict[str, Any]] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    iterations: int = 0
    session_id: str | None = None
    agent_cost: Cost = field(default_factory=Cost)
    judge_cost: Cost = field(default_factory=Cost)
    duration_ms: float = 0.0
    error: str | None = None
    # The answer's figure check: checked, verified, derived, unsupported, repaired (None: the
    # check was off, or there was no answer).
    verification: dict[str, int] | None = None

    @property
    def total_cost(self) -> Cost:
        return self.agent_cost + self.judge_cost

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QuestionResult:
        values = dict(data)
        values["agent_cost"] = Cost(**values.get("agent_cost") or {})
        values["judge_cost"] = Cost(**values.get("judge_cost") or {})
        return cls(**values)


@dataclass(frozen=True, slots=True)
class RunInfo:
    id: str
    created_at: str
    updated_at: str
    dataset: str
    dataset_hash: str
    model: str
    judges: list[str]
    options: dict[str, Any]
    question_ids: list[str]
    status: str  # running, finished, interrupted
    finished: int = 0
