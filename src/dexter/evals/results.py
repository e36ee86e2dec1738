"""What one question's evaluation produced, and a run's header: plain data, stored as JSON."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
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
    # None: some call had no known price, so the sum is not known either (never counted as $0).
    cost_usd: float | None = 0.0

    def __add__(self, other: Cost) -> Cost:
        cost = (
            None
            if self.cost_usd is None or other.cost_usd is None
            else self.cost_usd + other.cost_usd
        )
        return Cost(
            self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens, cost
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Cost:
        values = dict(data or {})
        # Results stored before an unknown price meant an unknown sum: nothing spent is $0.
        if (
            values.get("cost_usd") is None
            and not values.get("input_tokens")
            and not values.get("output_tokens")
        ):
            values["cost_usd"] = 0.0
        return cls(**values)

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
    # Which repeat of the question this is (`--epochs N` runs each question N times).
    epoch: int = 1
    # v2: a must-pass criterion was not met, so the question scores 0.
    must_pass_failed: bool = False
    # Every tool call in order: tool, args, the result (or error) as the agent read it.
    transcript: list[dict[str, Any]] = field(default_factory=list)
    # The figure verifier's findings for the answer (each figure and the counts), when the
    # agent's done event carries them.
    figures: list[dict[str, Any]] = field(default_factory=list)
    verification: dict[str, Any] | None = None
    # Each judge's exchange: the prompt sent and every raw reply (see judge.JudgeCall).
    judge_calls: list[dict[str, Any]] = field(default_factory=list)
    # SHA-256 of the system prompt the agent ran with (it holds the date and the tools bound).
    system_prompt_sha256: str = ""
    # Model calls answered from the response cache, and those that went to a model.
    cache: dict[str, int] = field(default_factory=dict)
    # Set on a result copied from another run by `eval rescore`: that run's id.
    answer_from: str | None = None

    @property
    def total_cost(self) -> Cost:
        return self.agent_cost + self.judge_cost

    @property
    def key(self) -> tuple[str, int]:
        return self.question_id, self.epoch

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QuestionResult:
        known = {f.name for f in fields(cls)}
        # Fields a later version added are left out rather than refused.
        values = {k: v for k, v in data.items() if k in known}
        values["agent_cost"] = Cost.from_dict(values.get("agent_cost"))
        values["judge_cost"] = Cost.from_dict(values.get("judge_cost"))
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
    status: str  # running, finished, interrupted, crashed
    finished: int = 0
    # The process running it: a run whose process is gone is marked crashed (storage.py).
    pid: int | None = None
    host: str | None = None
    heartbeat_at: str | None = None
    group_id: str | None = None

    @property
    def epochs(self) -> int:
        return int(self.options.get("epochs") or 1)

    @property
    def expected(self) -> int:
        """How many results the run has when complete: each question once per epoch."""
        return len(self.question_ids) * self.epochs
