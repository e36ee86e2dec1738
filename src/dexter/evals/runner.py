"""Run the benchmark: each question an isolated agent run through the runtime, then graded.

Questions run `concurrency` at a time, each `epochs` times. Each result is stored the moment it
is graded, so an interrupted run loses only the questions in flight, and resuming runs only
what is missing. While a run works it beats a heartbeat into its row, so a run whose process
died is told apart from one still running (storage.py). `rescore` grades a stored run's answers
again with other judges without running the agent.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, is_dataclass, replace
from datetime import date
from typing import TYPE_CHECKING, Any

from dexter.evals.dataset import Question
from dexter.evals.judge import Grade, JuryMode, grade
from dexter.evals.results import Cost, QuestionResult
from dexter.evals.storage import HEARTBEAT_S, EvalStore
from dexter.models.base import Model
from dexter.models.cache import CacheTally, tally
from dexter.models.recording import ModelCallRecord
from dexter.models.tuning import Sampling
from dexter.models.types import Usage

if TYPE_CHECKING:
    from dexter.agent.events import Done
    from dexter.runtime import Runtime
    from dexter.store.ledger import UsageTotals

DEFAULT_MAX_ITERATIONS = 25
DEFAULT_TIMEOUT_S = 900.0
# What a transcript keeps of each tool result; the whole result stays in the session.
TRANSCRIPT_RESULT_CHARS = 4000


@dataclass(frozen=True)
class EvalOptions:
    """How a run is made. `temperature`/`seed` go to the agent's every model call (None: the
    server's default); epoch e runs with seed + e - 1, so repeats differ where sampling can.
    Judges sample at `judge_temperature` with the run's `seed`. `cache`: answer identical
    requests from the response cache."""

    model: str | None
    judges: Sequence[str]
    jury: JuryMode = "majority"
    concurrency: int = 2
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    as_of: date | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    epochs: int = 1
    temperature: float | None = None
    judge_temperature: float | None = None
    seed: int | None = None
    cache: bool = False

    def seed_for(self, epoch: int) -> int | None:
        return None if self.seed is None else self.seed + epoch - 1

    @property
    def judge_sampling(self) -> Sampling:
        return Sampling(self.judge_temperature, self.seed)


@dataclass(frozen=True)
class QuestionStarted:
    question: Question
    epoch: int = 1


@dataclass(frozen=True)
class QuestionFinished:
    result: QuestionResult


EvalEvent = QuestionStarted | QuestionFinished


@dataclass
class _JudgeMeter:
    """Writes every judge call to the ledger under the run."""

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


def judge_models(
    runtime: Runtime,
    run_id: str,
    specs: Sequence[str],
    sampling: Sampling | None = None,
    cached: bool = False,
) -> dict[str, Model]:
    meter = _JudgeMeter(runtime, run_id)
    return {
        spec: runtime.model(spec, phase="judge", sink=meter.sink, sampling=sampling, cached=cached)
        for spec in specs
    }


def _judge_cost(runtime: Runtime, usage: dict[str, Usage]) -> Cost:
    from dexter.store.prices import overrides_from_settings, price_for

    overrides = overrides_from_settings(runtime.settings)
    total = Cost()
    for spec, used in usage.items():
        resolved = runtime.resolve(spec)
        price = price_for(resolved.provider.id, resolved.model_name, overrides)
        spent = used.input_tokens or used.output_tokens
        cost = price.cost(used) if price is not None else (None if spent else 0.0)
        total = total + Cost(used.input_tokens, used.output_tokens, cost)
    return total


def agent_cost(totals: UsageTotals) -> Cost:
    """The session's tokens and cost; unknown (None) when any call had no known price."""
    known = totals.unpriced_calls == 0
    cost = (totals.cost_usd or 0.0) if known else None
    return Cost(totals.input_tokens, totals.output_tokens, cost)


def _plain(value: Any) -> Any:
    """A figure or verification from the verifier as JSON data, whatever shape it comes in."""
    if isinstance(value, dict):
        return value
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    return {"text": str(value)}


def figures_of(done: Done | None) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The verifier's figures and counts from a done event, when it carries them (read by
    name: a done event without them gives nothing)."""
    if done is None:
        return [], None
    figures = [_plain(f) for f in getattr(done, "figures", None) or ()]
    verification = getattr(done, "verification", None)
    counts: dict[str, Any] | None = None
    if isinstance(verification, dict):
        counts = {k: v for k, v in verification.items() if k != "figures"}
        if not figures:
            figures = [_plain(f) for f in verification.get("figures") or ()]
    elif verification is not None:
        summary = getattr(verification, "summary", None)
        counts = summary() if callable(summary) else _plain(verification)
        if not figures:
            figures = [_plain(f) for f in getattr(verification, "figures", None) or ()]
    return figures, counts


def _excerpt(text: str) -> str:
    if len(text) <= TRANSCRIPT_RESULT_CHARS:
        return text
    more = len(text) - TRANSCRIPT_RESULT_CHARS
    return f"{text[:TRANSCRIPT_RESULT_CHARS]}\n… ({more:,} more characters in the session)"


def _transcript_entry(event: object) -> dict[str, Any] | None:
    from dexter.agent.events import ToolDenied, ToolEnd, ToolError

    if isinstance(event, ToolEnd):
        return {
            "tool": event.tool,
            "args": event.args,
            "result": _excerpt(event.result),
            "duration_ms": round(event.duration_ms, 1),
        }
    if isinstance(event, ToolError):
        return {
            "tool": event.tool,
            "args": event.args,
            "error": event.error,
            "duration_ms": round(event.duration_ms, 1),
        }
    if isinstance(event, ToolDenied):
        return {"tool": event.tool, "args": event.args, "denied": event.reason or event.by}
    return None


async def run_question(
    runtime: Runtime,
    question: Question,
    options: EvalOptions,
    judges: dict[str, Model],
    epoch: int = 1,
) -> QuestionResult:
    answered = await _answer(runtime, question, options, epoch)
    if answered.status != "scored":
        return answered
    return await grade_result(runtime, question, answered, judges, options.jury)


async def _answer(
    runtime: Runtime, question: Question, options: EvalOptions, epoch: int
) -> QuestionResult:
    """The agent's part: its answer, transcript and cost; status `scored` means "answered,
    to be graded"."""
    from dexter.agent.events import Done
    from dexter.runtime import EVAL, AgentSpec

    started = time.monotonic()
    spec = AgentSpec(
        model=options.model,
        channel=EVAL,
        max_iterations=options.max_iterations,
        as_of=options.as_of,
        temperature=options.temperature,
        seed=options.seed_for(epoch),
        cache_responses=options.cache,
    )
    agent = runtime.agent(spec)
    system_sha = hashlib.sha256(agent.agent.system_prompt().encode("utf-8")).hexdigest()
    done: Done | None = None
    failure: tuple[str, str] | None = None
    transcript: list[dict[str, Any]] = []
    counter = CacheTally()
    token = tally.set(counter)
    try:
        async with asyncio.timeout(options.timeout_s):
            async for event in agent.run(question.question):
                entry = _transcript_entry(event)
                if entry is not None:
                    transcript.append(entry)
                if isinstance(event, Done):
                    done = event
    except TimeoutError:
        failure = ("timeout", f"no answer within {options.timeout_s:g} s")
    except Exception as error:  # one question's crash must not end the whole run
        failure = ("agent_error", f"{type(error).__name__}: {error}")
    finally:
        tally.reset(token)
    totals = await asyncio.to_thread(runtime.ledger.totals, session_id=agent.session_id)
    if failure is None and done is None:
        failure = ("agent_error", "the agent produced no final answer")
    if failure is None and done is not None and (done.status != "answered" or not done.answer):
        failure = ("agent_error", done.error or f"the run ended with status {done.status}")
    figures, verification = figures_of(done)
    return QuestionResult(
        question_id=question.id,
        position=question.index,
        category=question.category,
        question=question.question,
        reference=question.answer,
        status=failure[0] if failure else "scored",  # type: ignore[arg-type]
        score=None,
        answer=done.answer if done else "",
        total_criteria=len(question.correctness),
        sources=[s.to_dict() for s in done.sources] if done else [],
        tool_calls=[
            {"tool": c.tool, "args": c.args, "is_error": c.is_error} for c in done.tool_calls
        ]
        if done
        else [],
        iterations=done.iterations if done else 0,
        session_id=agent.session_id,
        agent_cost=agent_cost(totals),
        duration_ms=(time.monotonic() - started) * 1000,
        error=failure[1] if failure else None,
        epoch=epoch,
        transcript=transcript,
        figures=figures,
        verification=verification,
        system_prompt_sha256=system_sha,
        cache={"hits": counter.hits, "misses": counter.misses} if options.cache else {},
    )


def _verdict_records(question: Question, graded: Grade) -> list[dict[str, Any]]:
    texts = {c.id: c.text for c in question.rubric}
    records = []
    for i, v in enumerate(graded.verdicts):
        records.append(
            {
                "id": v.id,
                "operator": v.operator,
                "criterion": texts[v.id],
                "severity": v.severity,
                "must_pass": v.must_pass,
                "passed": v.passed,
                "rationale": v.rationale,
                "votes": list(v.votes),
                # Each judge's verdict on this criterion in its own words, and the item of its
                # reply that said so (its whole exchange is in the result's judge_calls).
                "judges": [
                    {
                        "judge": name,
                        "passed": own[i].passed,
                        "rationale": own[i].rationale,
                        "raw": own[i].raw,
                    }
                    for name, own in graded.by_judge.items()
                ],
            }
        )
    return records


async def grade_result(
    runtime: Runtime,
    question: Question,
    answered: QuestionResult,
    judges: dict[str, Model],
    jury: JuryMode,
) -> QuestionResult:
    """`answered` graded by `judges`: its verdicts, score and judge cost replaced."""
    started = time.monotonic()
    counter = CacheTally()
    token = tally.set(counter)
    try:
        graded = await grade(judges, question, answered.answer, jury)
    finally:
        tally.reset(token)
    cache = dict(answered.cache)
    if cache:
        cache = {"hits": cache["hits"] + counter.hits, "misses": cache["misses"] + counter.misses}
    return replace(
        answered,
        status="judge_error" if graded.failed else "scored",
        score=graded.score,
        contradiction=graded.contradiction,
        must_pass_failed=graded.must_pass_failed,
        passed_criteria=graded.passed_criteria,
        total_criteria=graded.total_criteria,
        verdicts=_verdict_records(question, graded),
        judge={
            "mode": graded.mode,
            "scores": graded.judge_scores,
            "failures": graded.failures,
            "comment": graded.comment,
        },
        judge_calls=[call.to_dict() for call in graded.calls.values()],
        judge_cost=_judge_cost(runtime, graded.usage),
        duration_ms=answered.duration_ms + (time.monotonic() - started) * 1000,
        error="; ".join(f"{k}: {v}" for k, v in graded.failures.items()) or None,
        cache=cache,
    )


async def _beat(store: EvalStore, run_id: str) -> None:
    while True:
        await asyncio.sleep(HEARTBEAT_S)
        await asyncio.to_thread(store.heartbeat, run_id)


async def _supervised(
    store: EvalStore, run_id: str, work: Callable[[], Any]
) -> list[QuestionResult]:
    """Run `work` with the run marked running and beating; interrupted if it is cancelled."""
    await asyncio.to_thread(store.set_status, run_id, "running")
    beat = asyncio.ensure_future(_beat(store, run_id))
    try:
        await work()
    except BaseException:
        await asyncio.to_thread(store.set_status, run_id, "interrupted")
        raise
    finally:
        beat.cancel()
    await asyncio.to_thread(store.set_status, run_id, "finished")
    return await asyncio.to_thread(store.results, run_id)


async def run_eval(
    runtime: Runtime,
    store: EvalStore,
    run_id: str,
    questions: Sequence[Question],
    options: EvalOptions,
    *,
    on_event: Callable[[EvalEvent], None] | None = None,
) -> list[QuestionResult]:
    """Run every (question, epoch) of `run_id` not yet finished; returns the run's results
    (earlier ones included), in dataset order. Cancellation stops new questions and leaves
    the run `interrupted`; everything finished is already stored."""
    finished = await asyncio.to_thread(store.finished_keys, run_id)
    todo = [
        (q, epoch)
        for epoch in range(1, max(1, options.epochs) + 1)
        for q in questions
        if (q.id, epoch) not in finished
    ]
    judges = judge_models(
        runtime, run_id, options.judges, options.judge_sampling, cached=options.cache
    )
    gate = asyncio.Semaphore(max(1, options.concurrency))
    emit = on_event or (lambda _event: None)

    async def one(question: Question, epoch: int) -> None:
        async with gate:
            emit(QuestionStarted(question, epoch))
            result = await run_question(runtime, question, options, judges, epoch)
            await asyncio.to_thread(store.save_result, run_id, result)
            emit(QuestionFinished(result))

    async def work() -> None:
        async with asyncio.TaskGroup() as group:
            for question, epoch in todo:
                group.create_task(one(question, epoch))

    return await _supervised(store, run_id, work)


async def rescore(
    runtime: Runtime,
    store: EvalStore,
    source: Sequence[QuestionResult],
    source_run: str,
    run_id: str,
    questions: Sequence[Question],
    options: EvalOptions,
    *,
    on_event: Callable[[EvalEvent], None] | None = None,
) -> list[QuestionResult]:
    """Grade the answers of `source` (a stored run's results) again with `options.judges`
    into run `run_id`; the agent does not run. Questions the agent failed are copied as they
    were (there is no answer to grade). Costs are this run's own: judges only."""
    finished = await asyncio.to_thread(store.finished_keys, run_id)
    by_id = {q.id: q for q in questions}
    judges = judge_models(
        runtime, run_id, options.judges, options.judge_sampling, cached=options.cache
    )
    gate = asyncio.Semaphore(max(1, options.concurrency))
    emit = on_event or (lambda _event: None)

    async def one(old: QuestionResult) -> None:
        question = by_id[old.question_id]
        async with gate:
            emit(QuestionStarted(question, old.epoch))
            base = replace(
                old,
                agent_cost=Cost(),
                judge_cost=Cost(),
                answer_from=old.answer_from or source_run,
                duration_ms=0.0,
                cache={},
            )
            if old.status in ("scored", "judge_error"):
                result = await grade_result(runtime, question, base, judges, options.jury)
            else:
                result = base
            await asyncio.to_thread(store.save_result, run_id, result)
            emit(QuestionFinished(result))

    async def work() -> None:
        async with asyncio.TaskGroup() as group:
            for old in source:
                if old.key not in finished and old.question_id in by_id:
                    group.create_task(one(old))

    return await _supervised(store, run_id, work)
