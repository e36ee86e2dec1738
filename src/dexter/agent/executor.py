"""Run one model turn's tool calls: gate, validate, execute, and return results in call order.

Calls are ordered by what they declare they read and write: calls on different things run
together (bounded), conflicting calls run in the order the model gave them.
Every call gets exactly one ToolMessage, whatever happens to it, because providers reject a turn
whose tool calls are not all answered.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from dexter.agent.events import (
    ApprovalRequest,
    Event,
    ToolApproval,
    ToolDenied,
    ToolEnd,
    ToolError,
    ToolProgress,
    ToolStart,
)
from dexter.agent.scratchpad import Scratchpad
from dexter.models.types import ToolCall, ToolMessage
from dexter.permissions.gate import (
    ApprovalAnswer,
    Decision,
    PermissionPolicy,
    SimplePolicy,
    Verdict,
)
from dexter.principal import OPERATOR, Principal
from dexter.tools.base import TOUCHES_EVERYTHING, Resources, Tool, ToolContext
from dexter.tools.citations import SourceLedger
from dexter.tools.invoke import parse_arguments, run_tool, validate_arguments
from dexter.tools.registry import ToolRegistry
from dexter.tools.results import ResultStore
from dexter.tools.untrusted import is_untrusted

DEFAULT_MAX_CONCURRENCY = 10

Approver = Callable[[ApprovalRequest], Awaitable[ApprovalAnswer]]

USER_STOPPED = "Not run: the user denied an earlier call in this turn and stopped the run."


@dataclass
class _Prepared:
    position: int
    call: ToolCall
    tool: Tool[Any]
    args: dict[str, Any]
    validated: Any
    resources: Resources
    verdict: Verdict
    warning: str | None = None
    events: list[Event] = field(default_factory=list)


@dataclass
class ExecutionResult:
    """Emitted last: the ToolMessages in the original call order."""

    messages: list[ToolMessage]
    stopped_by_user: bool = False


class BatchApprover(Protocol):
    """An approver that can put several requests in front of a person at once."""

    async def approve_many(
        self, requests: Sequence[ApprovalRequest]
    ) -> Sequence[ApprovalAnswer]: ...


@dataclass
class ToolExecutor:
    """Runs one response's calls in dependency order.

    Each call declares what it reads and writes (`Tool.resources`). A call waits for every
    earlier call that writes what it reads or writes, or reads what it writes; everything else
    runs together, in waves of ready calls, under `max_concurrency`. Approvals are asked once
    per wave; a denial stops the rest of the response. Results come back in call order.
    """

    registry: ToolRegistry
    scratchpad: Scratchpad
    policy: PermissionPolicy = field(default_factory=SimplePolicy)
    approver: Approver | None = None
    session_approvals: set[str] = field(default_factory=set)
    home: Path = field(default_factory=lambda: Path(".dexter"))
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    sources: SourceLedger = field(default_factory=SourceLedger)
    results: ResultStore | None = None
    # Set once a result carried outside text (web, filings, search, sub-agents): from then on
    # memory writes need approval, so injected instructions cannot become "remembered" facts.
    untrusted_seen: bool = False
    principal: Principal = OPERATOR

    async def execute(self, calls: Sequence[ToolCall]) -> AsyncIterator[Event | ExecutionResult]:
        results: dict[int, ToolMessage] = {}
        waiting: list[_Prepared] = []
        for position, call in enumerate(calls):
            outcome = self._prepare(position, call)
            if isinstance(outcome, _Prepared):
                waiting.append(outcome)
                continue
            events, message = outcome
            for event in events:
                yield event
            results[position] = message
        depends = {
            later.position: {
                earlier.position
                for earlier in waiting
                if earlier.position < later.position
                and later.resources.must_follow(earlier.resources)
            }
            for later in waiting
        }
        finished: set[int] = set(results)
        stopped = False
        group = 0
        while waiting:
            ready = [p for p in waiting if depends[p.position] <= finished]
            waiting = [p for p in waiting if p not in ready]
            runnable: list[_Prepared] = []
            async for item in self._approve(ready):
                if isinstance(item, _Prepared):
                    runnable.append(item)
                elif isinstance(item, tuple):
                    results[item[0]] = item[1]
                    stopped = stopped or item[2]
                else:
                    yield item
            if stopped:
                for prepared in [*runnable, *waiting]:
                    results[prepared.position] = _message(
                        prepared.call, USER_STOPPED, is_error=True
                    )
                break
            group += 1
            # Warnings are decided before any call of the wave records, so parallel
            # duplicates do not warn each other.
            for prepared in runnable:
                prepared.warning = self.scratchpad.limit_warning(
                    prepared.tool.name, prepared.args, repeatable=prepared.tool.repeatable
                )
            async for ran in self._run_batch(runnable, group):
                if isinstance(ran, tuple):
                    results[ran[0]] = ran[1]
                else:
                    yield ran
            finished |= {p.position for p in ready}
        yield ExecutionResult(
            messages=[results[i] for i in range(len(calls))], stopped_by_user=stopped
        )

    def _prepare(
        self, position: int, call: ToolCall
    ) -> _Prepared | tuple[list[Event], ToolMessage]:
        """Parse, validate and check the rules. Returns the call ready for approval, or its
        final outcome (unknown tool, bad arguments, denied by a rule)."""
        tool = self.registry.get(call.name)
        args, parse_error = parse_arguments(call.arguments)
        if tool is None:
            available = ", ".join(self.registry.names()) or "none"
            error = f"unknown tool `{call.name}`. Available tools: {available}."
            return self._failed(call, args, error)
        if parse_error is not None:
            return self._failed(call, args, parse_error)
        validated, problem = validate_arguments(tool, args)
        if validated is None:
            return self._failed(call, args, problem)
        guarded = tool.writes_memory and self.untrusted_seen
        verdict = self.policy.evaluate(
            tool.name, args, needs_approval=tool.requires_approval(args) or guarded
        )
        if guarded and verdict.decision is Decision.ASK:
            verdict = replace(
                verdict,
                reason=(
                    "this run has read outside text (web pages, filings, search results), so "
                    f"`{tool.name}` asks first: the text to remember may come from them"
                ),
                session_key=None,
            )
        if verdict.decision is Decision.DENY:
            reason = verdict.reason or "denied by a permission rule"
            text = f"Error: permission denied: {reason}. Do not retry this call; find another way."
            denied = ToolDenied(call.id, tool.name, args, by="rule", reason=reason)
            return [denied], _message(call, text, is_error=True)
        try:
            resources = tool.resources(validated)
        except Exception:  # a declaration that cannot be computed orders the call against all
            resources = TOUCHES_EVERYTHING
        return _Prepared(position, call, tool, args, validated, resources, verdict)

    def _needs_asking(self, prepared: _Prepared) -> bool:
        verdict = prepared.verdict
        if verdict.decision is not Decision.ASK:
            return False
        return verdict.session_key is None or verdict.session_key not in self.session_approvals

    async def _approve(
        self, ready: list[_Prepared]
    ) -> AsyncIterator[Event | _Prepared | tuple[int, ToolMessage, bool]]:
        """Yield each ready call that may run, or its refusal `(position, message, by_user)`.
        Every call of the wave that needs a person is put to them together."""
        asking = [p for p in ready if self._needs_asking(p)]
        if asking and self.approver is None:
            for prepared in asking:
                reason = f"`{prepared.tool.name}` needs approval and there is no one to ask"
                text = f"Error: permission denied: {reason}. Continue without it."
                yield ToolDenied(
                    prepared.call.id, prepared.tool.name, prepared.args, by="rule", reason=reason
                )
                yield prepared.position, _message(prepared.call, text, is_error=True), False
            asking = []
        answers = await self._ask(asking)
        for prepared in ready:
            if prepared in asking:
                answer = answers.get(prepared.position, ApprovalAnswer.DENY)
                call, tool = prepared.call, prepared.tool
                yield ToolApproval(call.id, tool.name, answer.value)
                if answer is ApprovalAnswer.DENY:
                    yield ToolDenied(call.id, tool.name, prepared.args, by="user")
                    text = "Error: the user denied this call and stopped the run."
                    yield prepared.position, _message(call, text, is_error=True), True
                    continue
                self._remember(prepared.verdict, answer)
            elif self._needs_asking(prepared):  # refused above: nobody to ask
                continue
            yield prepared

    async def _ask(self, asking: list[_Prepared]) -> dict[int, ApprovalAnswer]:
        if not asking or self.approver is None:
            return {}
        requests = [
            ApprovalRequest(
                p.call.id,
                p.tool.name,
                p.args,
                p.verdict.reason,
                proposed_rule=p.verdict.proposed_rule,
                command=p.verdict.command,
            )
            for p in asking
        ]
        many = getattr(self.approver, "approve_many", None)
        if len(requests) > 1 and callable(many):
            given = list(await many(requests))
            return {p.position: a for p, a in zip(asking, given, strict=False)}
        answers: dict[int, ApprovalAnswer] = {}
        for prepared, request in zip(asking, requests, strict=True):
            key = prepared.verdict.session_key
            if key is not None and key in self.session_approvals:
                answers[prepared.position] = ApprovalAnswer.ALLOW_SESSION
                continue
            answer = await self.approver(request)
            answers[prepared.position] = answer
            if answer is ApprovalAnswer.DENY:
                break  # the rest of the response is stopped; don't ask about it
            self._remember(prepared.verdict, answer)
        return answers

    def _remember(self, verdict: Verdict, answer: ApprovalAnswer) -> None:
        if answer is ApprovalAnswer.ALLOW_SESSION and verdict.session_key is not None:
            self.session_approvals.add(verdict.session_key)
        if answer is ApprovalAnswer.ALLOW_ALWAYS and verdict.proposed_rule:
            save = getattr(self.policy, "add_rule", None)
            if callable(save):
                save("allow", verdict.proposed_rule)

    def _failed(
        self, call: ToolCall, args: dict[str, Any], error: str
    ) -> tuple[list[Event], ToolMessage]:
        self.scratchpad.add_tool_call(
            call.name, args, f"Error: {error}", duration_ms=0, error=error
        )
        event = ToolError(call.id, call.name, args, error)
        return [event], _message(call, f"Error: {error}", is_error=True)

    async def _run_batch(
        self, batch: list[_Prepared], group: int
    ) -> AsyncIterator[Event | tuple[int, ToolMessage]]:
        if not batch:
            return
        queue: asyncio.Queue[Event | tuple[int, ToolMessage]] = asyncio.Queue()
        limit = asyncio.Semaphore(max(1, self.max_concurrency))

        async def worker(prepared: _Prepared) -> None:
            try:
                async with limit:
                    message = await self._invoke(prepared, queue.put_nowait, group, len(batch))
            except BaseException:
                queue.put_nowait((prepared.position, _message(prepared.call, "Error: cancelled")))
                raise
            queue.put_nowait((prepared.position, message))

        tasks = [asyncio.create_task(worker(prepared)) for prepared in batch]
        pending = len(tasks)
        try:
            while pending:
                item = await queue.get()
                if isinstance(item, tuple):
                    pending -= 1
                yield item
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _invoke(
        self,
        prepared: _Prepared,
        emit: Callable[[Event | tuple[int, ToolMessage]], None],
        group: int,
        group_size: int,
    ) -> ToolMessage:
        call, tool = prepared.call, prepared.tool
        emit(ToolStart(call.id, tool.name, prepared.args, group=group, group_size=group_size))
        ctx = ToolContext(
            call_id=call.id,
            run_id=self.scratchpad.run_id,
            home=self.home,
            progress=lambda text: emit(ToolProgress(call.id, tool.name, text)),
            sources=self.sources,
            results=self.results,
            principal=self.principal,
        )
        outcome = await run_tool(tool, prepared.validated, ctx)
        if tool.carries_outside_text or is_untrusted(outcome.content):
            self.untrusted_seen = True
        duration = outcome.duration_ms
        if outcome.error is not None:
            self.scratchpad.add_tool_call(
                tool.name, prepared.args, outcome.content, duration_ms=duration, error=outcome.error
            )
            emit(ToolError(call.id, tool.name, prepared.args, outcome.error, duration))
            return _message(call, _with_warning(outcome.content, prepared.warning), is_error=True)
        self.scratchpad.add_tool_call(
            tool.name, prepared.args, outcome.content, duration_ms=duration, data=outcome.data
        )
        emit(
            ToolEnd(call.id, tool.name, prepared.args, outcome.content, duration, prepared.warning)
        )
        return _message(call, _with_warning(outcome.content, prepared.warning))


def _message(call: ToolCall, content: str, *, is_error: bool = False) -> ToolMessage:
    return ToolMessage(tool_call_id=call.id, name=call.name, content=content, is_error=is_error)


def _with_warning(content: str, warning: str | None) -> str:
    return f"{content}\n\n{warning}" if warning else content
