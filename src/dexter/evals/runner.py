"""Run the benchmark: each question an isolated agent run through the runtime, then graded.

Questions run `concurrency` at a time. Each result is stored the moment it is graded, so an
interrupted run loses only the questions in flight, and resuming runs only what is missing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING

from dexter.evals.dataset import Question
from dexter.evals.judge import JuryMode, grade
from dexter.evals.results import Cost, QuestionResult
from dexter.evals.storage import EvalStore
from dexter.models.base import Model
from dexter.models.recording import ModelCallRecord
from dexter.models.types import Usage

if TYPE_CHECKING:
    from dexter.runtime import Runtime

DEFAULT_MAX_ITERATIONS = 25
DEFAULT_TIMEOUT_S = 900.0


@dataclass(frozen=True)
class EvalOptions:
    model: str | None
    judges: Sequence[str]
    jury: JuryMode = "majority"
    concurrency: int = 2
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    as_of: date | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S


@dataclass(frozen=True)
class QuestionStarted:
    question: Question


@dataclass(frozen=True)
class QuestionFinished:
    result: QuestionResult


EvalEvent = QuestionStarted | QuestionFinished


@dataclass
class _JudgeMeter:
    """Counts the judge's tokens per question and writes every judge call to the ledger."""

    runtime: Runtime
    run_id: str
    usage: dict[str, Usage] = field(default_factory=dict)

    def sink(self, record: ModelCallRecord) -> None:
        self.runtime.ledger.record_model_call(
            None,
            f"eval:{self.run_id}",
            record.provider,
            record.model,
            "judge",
            record.usage,
            ok=record.ok,
            error=record.error,
        )


def judge_models(runtime: Runtime, run_id: str, specs: Sequence[str]) -> dict[str, Model]:
    meter = _JudgeMeter(runtime, run_id)
    return {spec: runtime.model(spec, phase="judge", sink=meter.sink) for spec in specs}


def _judge_cost(runtime: Runtime, usage: dict[str, Usage]) -> Cost:
    from dexter.store.prices import overrides_from_settings, price_for

    overrides = overrides_from_settings(runtime.settings)
    total = Cost()
    for spec, used in usage.items():
        resolved = runtime.resolve(spec)
        price = price_for(resolved.provider.id, resolved.model_name, overrides)
        cost = price.cost(used) if price is not None else None
        total = total + Cost(used.input_tokens, used.output_tokens, cost)
    return total


async def run_question(
    runtime: Runtime,
    question: Question,
    options: EvalOptions,
    judges: dict[str, Model],
) -> QuestionResult:
    from dexter.agent.events import Done
    from dexter.runtime import EVAL, AgentSpec

    started = time.monotonic()
    base = {
        "question_id": question.id,
        "position": question.index,
        "category": question.category,
        "question": question.question,
        "reference": question.answer,
        "total_criteria": len(question.correctness),
    }
    spec = AgentSpec(
        model=options.model,
        channel=EVAL,
        max_iterations=options.max_iterations,
        as_of=options.as_of,
    )
    agent = runtime.agent(spec)
    done: Done | None = None
    failure: tuple[str, str] | None = None
    try:
        async with asyncio.timeout(options.timeout_s):
            async for event in agent.run(question.question):
                if isinstance(event, Done):
                    done = event
    except TimeoutError:
        failure = ("timeout", f"no answer within {options.timeout_s:g} s")
    except Exception as error:  # one question's crash must not end the whole run
        failure = ("agent_error", f"{type(error).__name__}: {error}")
    totals = await asyncio.to_thread(runtime.ledger.totals, session_id=agent.session_id)
    agent_cost = Cost(totals.input_tokens, totals.output_tokens, totals.cost_usd)
    if failure is None and done is None:
        failure = ("agent_error", "the agent produced no final answer")
    if failure is None and done is not None and (done.status != "answered" or not done.answer):
        failure = ("agent_error", done.error or f"the run ended with status {done.status}")
    common = {
        **base,
        "answer": done.answer if done else "",
        "sources": [s.to_dict() for s in done.sources] if done else [],
        "tool_calls": [
            {"tool": c.tool, "args": c.args, "is_error": c.is_error} for c in done.tool_calls
        ]
        if done
        else [],
        "iterations": done.iterations if done else 0,
        "verification": done.verification.summary() if done and done.verification else None,
        "session_id": agent.session_id,
        "agent_cost": agent_cost,
    }
    if failure is not None:
        return QuestionResult(
            **common,  # type: ignore[arg-type]
            status=failure[0],  # type: ignore[arg-type]
            score=None,
            error=failure[1],
            duration_ms=(time.monotonic() - started) * 1000,
        )
    assert done is not None
    graded = await grade(judges, question, done.answer, options.jury)
    texts = {c.id: c.text for c in question.rubric}
    return QuestionResult(
        **common,  # type: ignore[arg-type]
        status="judge_error" if graded.failed else "scored",
        score=graded.score,
        contradiction=graded.contradiction,
        passed_criteria=graded.passed_criteria,
        verdicts=[
            {
                "id": v.id,
                "operator": v.operator,
                "criterion": texts[v.id],
                "passed": v.passed,
                "rationale": v.rationale,
                "votes": list(v.votes),
            }
            for v in graded.verdicts
        ],
        judge={
            "mode": graded.mode,
            "scores": graded.judge_scores,
            "failures": graded.failures,
            "comment": graded.comment,
        },
        judge_cost=_judge_cost(runtime, graded.usage),
        duration_ms=(time.monotonic() - started) * 1000,
        error="; ".join(f"{k}: {v}" for k, v in graded.failures.items()) or None,
    )


async def run_eval(
    runtime: Runtime,
    store: EvalStore,
    run_id: str,
    questions: Sequence[Question],
    options: EvalOptions,
    *,
    on_event: Callable[[EvalEvent], None] | None = None,
) -> list[QuestionResult]:
    """Run every question of `questions` not yet finished in `run_id`; returns the run's
    results (earlier ones included), in dataset order. Cancellation stops new questions and
    leaves the run `interrupted`; everything finished is already stored."""
    finished = await asyncio.to_thread(store.finished_ids, run_id)
    todo = [q for q in questions if q.id not in finished]
    judges = judge_models(runtime, run_id, options.judges)
    gate = asyncio.Semaphore(max(1, options.concurrency))
    emit = on_event or (lambda _event: None)
    await asyncio.to_thread(store.set_status, run_id, "running")

    async def one(question: Question) -> None:
        async with gate:
            emit(QuestionStarted(question))
            result = await run_question(runtime, question, options, judges)
            await asyncio.to_thread(store.save_result, run_id, result)
            emit(QuestionFinished(result))

    try:
        async with asyncio.TaskGroup() as group:
            for question in todo:
                group.create_task(one(question))
    except BaseException:
        await asyncio.to_thread(store.set_status, run_id, "interrupted")
        raise
    await asyncio.to_thread(store.set_status, run_id, "finished")
    return await asyncio.to_thread(store.results, run_id)
