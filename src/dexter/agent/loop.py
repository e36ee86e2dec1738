"""The agent loop: prepare context, call the model, run tools, repeat, answer.

The loop orchestrates and nothing more. Tool execution, permissions, the scratchpad, prompts and
context recovery each live in their own module and hand plain data back.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path

from dexter.agent.constraints import Constraints, extract_constraints
from dexter.agent.context.manager import ContextManager
from dexter.agent.context.overflow import drop_for_overflow
from dexter.agent.events import (
    ContextEvent,
    Done,
    DoneStatus,
    Event,
    QueueDrained,
    Reasoning,
    Retrying,
    Revising,
    RunStarted,
    TextDelta,
    Thinking,
    ToolCallRecord,
    ToolEnd,
    ToolError,
)
from dexter.agent.executor import DEFAULT_MAX_CONCURRENCY, Approver, ExecutionResult, ToolExecutor
from dexter.agent.hooks import RunHooks
from dexter.agent.prompts import build_system_prompt, load_rules, load_soul
from dexter.agent.queue import MessageQueue
from dexter.agent.scratchpad import Scratchpad
from dexter.agent.verification import (
    EarlierEvidence,
    FigureCheck,
    VerifyMode,
    keeps_revision,
    tool_evidence,
)
from dexter.figure_marks import verification_to_dict
from dexter.figures.types import Verification
from dexter.models.base import Model
from dexter.models.errors import ErrorKind, ModelError
from dexter.models.types import (
    REASONING_STATE_KEYS,
    AssistantMessage,
    Message,
    ModelRequest,
    ModelResponse,
    ReasoningChunk,
    RetryNotice,
    SystemMessage,
    TextChunk,
    ToolCall,
    ToolSpec,
    Usage,
    UserMessage,
)
from dexter.permissions.gate import PermissionPolicy, SimplePolicy
from dexter.permissions.secrets import redact
from dexter.principal import OPERATOR, Principal
from dexter.tools.citations import SourceLedger
from dexter.tools.registry import ToolRegistry

DEFAULT_MAX_ITERATIONS = 10
MAX_OVERFLOW_RECOVERIES = 2
# Rounds kept on the first and second overflow recovery.
OVERFLOW_KEEP_ROUNDS = (3, 1)
REASONING_KEPT_TURNS = 2

NO_ANSWER_AT_CAP = (
    "The model was still asking for tools after {n} rounds and wrote no answer. Try a higher "
    "--max-iterations or a narrower question."
)
FINAL_ROUND_NOTE = (
    "You have reached the step limit for this question. Do not call tools. Answer now from the "
    "data gathered so far, and say briefly what you could not verify."
)


@dataclass
class AgentConfig:
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    channel: str = "cli"
    # The prompt profile (see prompts.PROFILES); the runtime sets it from the channel.
    profile: str = "cli"
    # Research as of this date (None: today); the prompt states it.
    today: date | None = None
    home: Path = field(default_factory=lambda: Path(".dexter"))
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    # Used verbatim instead of the assembled prompt (sub-agents, evals).
    system_prompt: str | None = None
    # The question carries text written by others (a group's recent messages): every run
    # starts as one that has read outside text, so memory writes ask first.
    untrusted_context: bool = False
    # Whose data the run's tools may touch (handed to every call's ToolContext).
    principal: Principal = OPERATOR
    # The main model's context window, and the fast model's (for bounding summaries).
    context_window: int = 128_000
    fast_context_window: int | None = None
    # Whether questions may add standing instructions (sub-agents follow their task only).
    learn_constraints: bool = True
    # Whether the answer's figures are checked against the run's data before it is sent, and
    # whether the model is asked once to fix unsupported ones (see `agent.verification`). The
    # runtime sets it from settings (default "repair"); sub-agents never check (their parent
    # checks the answer they feed).
    verify: VerifyMode = "off"


@dataclass(frozen=True)
class AgentModels:
    """The models an Agent calls and the windows they have; replaced as one by `use_models`."""

    main: Model
    # Summaries (and constraint extraction, without a constraint model); None: the main model.
    fast: Model | None = None
    # Picks standing instructions out of questions; None: the fast model.
    constraints: Model | None = None
    context_window: int = 128_000
    fast_context_window: int | None = None


class Agent:
    """One research agent. `run(query)` streams events and always ends with `Done`.

    The conversation (questions and final answers) carries across runs of the same Agent, so an
    interactive session keeps context between turns. Cancelling the consuming task cancels the
    run: in-flight tools are cancelled and nothing is retried.
    """

    def __init__(
        self,
        model: Model,
        tools: ToolRegistry,
        *,
        config: AgentConfig | None = None,
        policy: PermissionPolicy | None = None,
        approver: Approver | None = None,
        queue: MessageQueue | None = None,
        fast_model: Model | None = None,
        constraint_model: Model | None = None,
        prompt_sections: Sequence[str] = (),
        hooks: Sequence[RunHooks] = (),
    ) -> None:
        # Models are called as given: retries are the model's own (see `models.retry`); the
        # runtime wraps every phase model once.
        self.model = model
        # Summaries and constraint extraction use a cheaper model when one is given.
        self.fast_model = fast_model
        # Picks standing instructions out of questions; defaults to the fast model.
        self.constraint_model = constraint_model
        # Sections the caller adds (skills, a chat's context), after the tool policy.
        self.prompt_sections: tuple[str, ...] = tuple(prompt_sections)
        self.hooks: tuple[RunHooks, ...] = tuple(hooks)
        self.tools = tools
        self.config = config or AgentConfig()
        self.policy = policy or SimplePolicy()
        self.approver = approver
        self.queue = queue if queue is not None else MessageQueue()
        # Conversation state, carried across runs.
        self.constraints = Constraints()
        self.history: list[Message] = []
        # What earlier runs saw, for checking a follow-up's figures.
        self.earlier = EarlierEvidence()
        self.session_approvals: set[str] = set()

    @property
    def models(self) -> AgentModels:
        return AgentModels(
            self.model,
            self.fast_model,
            self.constraint_model,
            self.config.context_window,
            self.config.fast_context_window,
        )

    def use_models(self, models: AgentModels) -> None:
        """Switch every model and window at once (a mid-session `/model`, a probed window);
        the conversation, constraints and approvals carry on."""
        self.model = models.main
        self.fast_model = models.fast
        self.constraint_model = models.constraints
        self.config = replace(
            self.config,
            context_window=models.context_window,
            fast_context_window=models.fast_context_window,
        )

    def clone(
        self,
        *,
        model: Model | None = None,
        tools: ToolRegistry | None = None,
        config: AgentConfig | None = None,
        approver: Approver | None = None,
        hooks: Sequence[RunHooks] = (),
    ) -> Agent:
        """A fresh agent on this one's models, policy and prompt sections, with no history or
        constraints of its own, its own queue and approvals, no approver and no hooks unless
        given (a sub-agent: nobody watches it, nothing of it is recorded as a session turn)."""
        return Agent(
            model or self.model,
            tools if tools is not None else self.tools,
            config=config or self.config,
            policy=self.policy,
            approver=approver,
            fast_model=self.fast_model,
            constraint_model=self.constraint_model,
            prompt_sections=self.prompt_sections,
            hooks=hooks,
        )

    def system_prompt(self) -> str:
        if self.config.system_prompt is not None:
            return self.config.system_prompt
        home = self.config.home
        return build_system_prompt(
            list(self.tools),
            on_request=self.tools.on_request,
            channel=self.config.profile,
            today=self.config.today,
            soul=load_soul(home),
            rules=load_rules(home),
            constraints=self.constraints.to_prompt(),
            extra=[
                *self.prompt_sections,
                *(section for hook in self.hooks for section in hook.prompt_sections()),
            ],
        )

    def clear(self) -> None:
        self.history.clear()
        self.constraints.clear()
        self.earlier.clear()

    async def run(self, query: str, *, queue: MessageQueue | None = None) -> AsyncIterator[Event]:
        """Answer `query`. Follow-ups typed meanwhile arrive through `queue` (default: the
        agent's own; a chat passes the queue of the turn being answered)."""
        for hook in self.hooks:
            await hook.on_run_start(self, query)
        run_id: str | None = None
        finished = False
        try:
            if self.config.learn_constraints:
                extractor = self.constraint_model or self.fast_model
                found = await extract_constraints(query, extractor)
                added = [c for c in found if self.constraints.add(c)]
                if added:
                    yield ContextEvent("constraints", "noted: " + "; ".join(added))
            run = _Run(self, query, queue if queue is not None else self.queue)
            async for event in run.events():
                if isinstance(event, RunStarted):
                    run_id = event.run_id
                    for hook in self.hooks:
                        await hook.on_run_started(self, event)
                elif isinstance(event, ToolEnd | ToolError):
                    for hook in self.hooks:
                        await hook.on_tool_end(self, event)
                elif isinstance(event, Done):
                    finished = True
                    if run.answered:
                        self.history += [UserMessage(query), AssistantMessage(content=run.answer)]
                        run.remember_evidence()
                    for hook in self.hooks:
                        event = await hook.on_run_end(self, query, event)
                yield event
        finally:
            if not finished:
                for hook in self.hooks:
                    # Best effort: a failed write must not replace the cancellation being raised.
                    with contextlib.suppress(Exception):
                        await hook.on_run_cancelled(self, query, run_id)

    async def _before_compaction(self, messages: Sequence[Message]) -> None:
        for hook in self.hooks:
            await hook.before_compaction(self, messages)


class _Run:
    """The state of one run; kept out of Agent so runs never share mutable state by accident."""

    def __init__(self, agent: Agent, query: str, queue: MessageQueue) -> None:
        self.agent = agent
        self.query = query
        self.queue = queue
        self.config = agent.config
        self.started = time.perf_counter()
        self.scratchpad = Scratchpad.create(self.config.home / "scratchpad", query)
        self.usage = Usage()
        self.iteration = 0
        self.answer = ""
        self.answered = False
        self.messages: list[Message] = [
            SystemMessage(agent.system_prompt()),
            *agent.history,
            UserMessage(query),
        ]
        self.query_index = len(self.messages) - 1
        self.sources = SourceLedger()
        self.seen_call_ids: set[str] = set()
        read_only = {tool.name for tool in agent.tools if tool.concurrency_safe}
        self.context = ContextManager(
            home=self.config.home,
            run_id=self.scratchpad.run_id,
            window=self.config.context_window,
            compactable=lambda name: name in read_only,
            constraints=lambda: agent.constraints.items,
            fast_model=agent.fast_model or agent.model,
            fast_window=self.config.fast_context_window,
            before_compaction=agent._before_compaction if agent.hooks else None,
        )
        self.executor = ToolExecutor(
            registry=agent.tools,
            scratchpad=self.scratchpad,
            policy=agent.policy,
            approver=agent.approver,
            session_approvals=agent.session_approvals,
            home=self.config.home,
            max_concurrency=self.config.max_concurrency,
            sources=self.sources,
            results=self.context.store,
            untrusted_seen=self.config.untrusted_context,
            principal=self.config.principal,
        )

    @property
    def specs(self) -> list[ToolSpec]:
        # Asked before each call: tools held on request join once the run loads them.
        return self.agent.tools.offered_specs(self.scratchpad.run_id)

    async def events(self) -> AsyncIterator[Event]:
        yield RunStarted(
            run_id=self.scratchpad.run_id,
            query=self.query,
            model=self.agent.model.name,
            tools=self.agent.tools.names(),
            scratchpad=str(self.scratchpad.path),
        )
        try:
            async for event in self._iterate():
                yield event
        except asyncio.CancelledError:
            self.scratchpad.add_note("cancelled", f"cancelled at iteration {self.iteration}")
            raise
        finally:
            await self._release_tools()

    async def _release_tools(self) -> None:
        run_id = self.scratchpad.run_id
        for tool in self.agent.tools:
            try:
                await asyncio.shield(tool.run_finished(run_id))
            except Exception:  # releasing must never turn a finished run into a failure
                continue
            except asyncio.CancelledError:
                continue

    async def _iterate(self) -> AsyncIterator[Event]:
        max_iterations = max(1, self.config.max_iterations)
        while self.iteration < max_iterations:
            self.iteration += 1
            final_round = self.iteration == max_iterations
            prepared = await self.context.prepare(self.messages, self.query_index, self.specs)
            self.messages, self.query_index = prepared.messages, prepared.query_index
            self.usage = self.usage + prepared.usage
            for event in prepared.events:
                self.scratchpad.add_note("context", f"{event.action}: {event.detail}")
                yield event
            if final_round and self.iteration > 1:
                self.messages.append(UserMessage(FINAL_ROUND_NOTE))
            response: ModelResponse | None = None
            async for item in self._call_model(final_round):
                if isinstance(item, ModelResponse):
                    response = item
                elif isinstance(item, _CallFailed):
                    yield self._done("", "error", error=item.error)
                    return
                else:
                    yield item
            assert response is not None

            message = _with_call_ids(response.message, self.iteration, self.seen_call_ids)
            if message.reasoning:
                self.scratchpad.add_reasoning(message.reasoning)
            if final_round and message.tool_calls and not message.content.strip():
                # Some OpenAI-compatible servers ignore tool_choice="none".
                yield self._done("", "error", error=NO_ANSWER_AT_CAP.format(n=self.iteration))
                return
            if not message.tool_calls or final_round:
                async for answered in self._answer(message):
                    yield answered
                return

            if message.content.strip():
                self.scratchpad.add_thinking(message.content.strip())
                yield Thinking(message.content.strip(), self.iteration)
            self.messages.append(message)
            self.context.record_calls(message)
            # A tool on request called by name without loading it is offered from now on.
            self.agent.tools.load(self.scratchpad.run_id, (c.name for c in message.tool_calls))

            result: ExecutionResult | None = None
            async for outcome in self.executor.execute(message.tool_calls):
                if isinstance(outcome, ExecutionResult):
                    result = outcome
                else:
                    yield outcome
            assert result is not None
            self.messages.extend(self.context.after_tools(result.messages))
            if result.stopped_by_user:
                yield self._done("", "denied")
                return

            drained = self.queue.drain()
            if drained:
                text = "\n\n".join(item.text for item in drained)
                self.messages.append(UserMessage(text))
                self.scratchpad.add_note("queued_message", text)
                yield QueueDrained(count=len(drained), text=text)

    async def _answer(self, message: AssistantMessage) -> AsyncIterator[Event]:
        """The final round answered: check its figures, ask once for a repair when the mode
        says so and some are unsupported, and end the run with the answer that stands."""
        answer = message.content
        check = FigureCheck.for_run(
            self.config.verify, self.query, self.scratchpad.records, self.agent.earlier.items()
        )
        if check is None or not answer.strip():
            yield self._done(answer, "answered")
            return
        verification = check.verify(answer)
        if check.wants_repair(verification):
            unsupported = [figure.text for figure in verification.unsupported]
            self.scratchpad.add_note("figures_unsupported", "; ".join(unsupported))
            yield Revising(round=self.iteration, unsupported=unsupported)
            revised: str | None = None
            request = check.repair_request(answer, verification)
            async for event in self._repair_round(message, request):
                if isinstance(event, str):
                    revised = event
                else:
                    yield event
            if revised is not None:
                second = check.recheck(verification, revised)
                if keeps_revision(answer, verification, revised, second):
                    verification, answer = second, revised
                else:
                    self.scratchpad.add_note(
                        "repair_rejected", "the revision dropped most of the answer or more"
                    )
        yield self._done(answer, "answered", verification=verification)

    async def _repair_round(
        self, message: AssistantMessage, request: str
    ) -> AsyncIterator[Event | str]:
        """One more model call, without tools, asking for the unsupported figures to be fixed;
        yields its events, then the revised answer (nothing when the call failed or came back
        empty: the first answer then stands, marked)."""
        answered = AssistantMessage(content=message.content)  # its tool calls ran nowhere
        self.messages += [answered, UserMessage(request)]
        self.iteration += 1
        response: ModelResponse | None = None
        async for item in self._call_model(final_round=True):
            if isinstance(item, ModelResponse):
                response = item
            elif isinstance(item, _CallFailed):
                self.scratchpad.add_note("repair_failed", item.error)
                return
            else:
                yield item
        revised = response.message.content if response is not None else ""
        if not revised.strip():
            self.scratchpad.add_note("repair_failed", "the model returned no revised answer")
            return
        yield revised

    def remember_evidence(self) -> None:
        """Keep what this run saw for the conversation's next answers."""
        if self.config.verify != "off":
            self.agent.earlier.add(self.query, tool_evidence(self.scratchpad.records))

    async def _call_model(
        self, final_round: bool
    ) -> AsyncIterator[Event | ModelResponse | _CallFailed]:
        recoveries = 0
        while True:
            specs = self.specs
            request = ModelRequest(
                messages=_strip_old_reasoning(self.messages),
                tools=specs,
                tool_choice="none" if final_round and specs else "auto",
            )
            try:
                async for chunk in self.agent.model.stream(request):
                    if isinstance(chunk, TextChunk):
                        yield TextDelta(chunk.text, self.iteration)
                    elif isinstance(chunk, ReasoningChunk):
                        yield Reasoning(chunk.text)
                    elif isinstance(chunk, RetryNotice):
                        yield Retrying(
                            attempt=chunk.attempt,
                            max_attempts=chunk.max_attempts,
                            delay=chunk.delay,
                            error=redact(chunk.error.user_message()),
                        )
                    elif isinstance(chunk, ModelResponse):
                        self.usage = self.usage + chunk.usage
                        self.context.note_usage(chunk.usage, len(request.messages))
                        yield chunk
                return
            except ModelError as error:
                if error.kind is ErrorKind.CONTEXT_OVERFLOW and error.context_window:
                    self._learn_window(error.context_window)
                if (
                    error.kind is ErrorKind.CONTEXT_OVERFLOW
                    and recoveries < MAX_OVERFLOW_RECOVERIES
                ):
                    keep = OVERFLOW_KEEP_ROUNDS[recoveries]
                    recoveries += 1
                    trimmed, removed, self.query_index = drop_for_overflow(
                        self.messages, query_index=self.query_index, keep_rounds=keep
                    )
                    if removed:
                        self.messages = trimmed
                        detail = f"context overflow: dropped {removed} older messages"
                        self.scratchpad.add_note("context", detail)
                        yield ContextEvent("overflow_recovery", detail, removed)
                        continue
                yield _CallFailed(error.user_message())
                return
            except Exception as error:  # an adapter bug must still end the run with Done
                message = f"model call failed unexpectedly ({type(error).__name__}: {error})"
                yield _CallFailed(message)
                return

    def _learn_window(self, window: int) -> None:
        """The server stated its window while refusing a prompt (llama-cpp-python states it
        nowhere else): budget this run and the agent's next ones for it."""
        models = self.agent.models
        if window >= models.context_window:
            return
        # A fast model with the main model's window is the same server's (a custom endpoint
        # does every phase with one model).
        fast = window if models.fast_context_window == models.context_window else None
        self.agent.use_models(
            replace(
                models,
                context_window=window,
                fast_context_window=fast or models.fast_context_window,
            )
        )
        self.config = self.agent.config
        self.context.use_window(window, fast_window=fast)

    def _done(
        self,
        answer: str,
        status: DoneStatus,
        *,
        error: str | None = None,
        verification: Verification | None = None,
    ) -> Done:
        if error is not None:
            # A provider's message may quote a key; the run's record and the user see it without.
            error = redact(error)
        self.answer = answer
        self.answered = status == "answered"
        sources = self.sources.cited_in(answer) or (self.sources.entries() if answer else [])
        self.scratchpad.add_answer(
            answer if error is None else error,
            status,
            [s.to_dict() for s in sources],
            verification=verification_to_dict(verification) if verification else None,
        )
        records = [
            ToolCallRecord(r.tool, r.args, r.result, r.is_error) for r in self.scratchpad.records
        ]
        return Done(
            answer=answer,
            status=status,
            iterations=self.iteration,
            tool_calls=records,
            usage=self.usage,
            duration_ms=(time.perf_counter() - self.started) * 1000,
            error=error,
            sources=sources,
            verification=verification,
        )


@dataclass(frozen=True, slots=True)
class _CallFailed:
    """A model call that failed for good (after retries and overflow recovery)."""

    error: str


def _with_call_ids(message: AssistantMessage, iteration: int, seen: set[str]) -> AssistantMessage:
    """Give every tool call an id unique within the run.

    Some local servers omit ids, and some reuse "call_0" every round; results are stored and
    read back by id, so a reused id would point at the wrong data.
    """
    calls = []
    changed = False
    for index, call in enumerate(message.tool_calls):
        call_id = call.id
        if not call_id or call_id in seen:
            call_id = f"call_{iteration}_{index}_{uuid.uuid4().hex[:6]}"
            changed = True
        seen.add(call_id)
        calls.append(ToolCall(call_id, call.name, call.arguments) if call_id != call.id else call)
    return replace(message, tool_calls=tuple(calls)) if changed else message


def _strip_old_reasoning(messages: Sequence[Message]) -> list[Message]:
    """Keep reasoning (and the state providers need to continue it) on the last two turns only."""
    assistant_positions = [i for i, m in enumerate(messages) if isinstance(m, AssistantMessage)]
    old = set(assistant_positions[:-REASONING_KEPT_TURNS])
    stripped: list[Message] = []
    for index, message in enumerate(messages):
        if (
            index in old
            and isinstance(message, AssistantMessage)
            and (
                message.reasoning
                or any(key in message.provider_data for key in REASONING_STATE_KEYS)
            )
        ):
            data = {k: v for k, v in message.provider_data.items() if k not in REASONING_STATE_KEYS}
            message = replace(message, reasoning="", provider_data=data)
        stripped.append(message)
    return stripped
