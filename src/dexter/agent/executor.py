"""Run one model turn's tool calls: gate, validate, execute, and return results in call order.

Adjacent concurrency-safe calls run together (bounded); any other call runs alone, in order.
Every call gets exactly one ToolMessage, whatever happens to it, because providers reject a turn
whose tool calls are not all answered.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

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
from dexter.permissions.gate import ApprovalAnswer, Decision, PermissionPolicy, SimplePolicy
from dexter.tools.base import Tool, ToolContext, ToolFailure, ToolResult
from dexter.tools.citations import SourceLedger
from dexter.tools.registry import ToolRegistry

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
    warning: str | None = None


@dataclass
class ExecutionResult:
    """Emitted last: the ToolMessages in the original call order."""

    messages: list[ToolMessage]
    stopped_by_user: bool = False


@dataclass
class ToolExecutor:
    registry: ToolRegistry
    scratchpad: Scratchpad
    policy: PermissionPolicy = field(default_factory=SimplePolicy)
    approver: Approver | None = None
    session_approvals: set[str] = field(default_factory=set)
    home: Path = field(default_factory=lambda: Path(".dexter"))
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    sources: SourceLedger = field(default_factory=SourceLedger)

    async def execute(self, calls: Sequence[ToolCall]) -> AsyncIterator[Event | ExecutionResult]:
        results: dict[int, ToolMessage] = {}
        stopped = False
        for batch in self._batches(calls):
            runnable: list[_Prepared] = []
            for position, call in batch:
                if stopped:
                    results[position] = _message(call, USER_STOPPED, is_error=True)
                    continue
                outcome = await self._prepare(position, call)
                if isinstance(outcome, _Prepared):
                    runnable.append(outcome)
                    continue
                events, message, user_denied = outcome
                for event in events:
                    yield event
                results[position] = message
                stopped = stopped or user_denied
            if stopped:
                for prepared in runnable:
                    results[prepared.position] = _message(
                        prepared.call, USER_STOPPED, is_error=True
                    )
                continue
            # Warnings are decided before any call of the batch records, so parallel
            # duplicates do not warn each other.
            for prepared in runnable:
                prepared.warning = self.scratchpad.limit_warning(prepared.tool.name, prepared.args)
            async for item in self._run_batch(runnable):
                if isinstance(item, tuple):
                    results[item[0]] = item[1]
                else:
                    yield item
        yield ExecutionResult(
            messages=[results[i] for i in range(len(calls))], stopped_by_user=stopped
        )

    def _batches(self, calls: Sequence[ToolCall]) -> list[list[tuple[int, ToolCall]]]:
        batches: list[list[tuple[int, ToolCall]]] = []
        last_safe = False
        for position, call in enumerate(calls):
            tool = self.registry.get(call.name)
            safe = tool is not None and tool.concurrency_safe
            if safe and last_safe:
                batches[-1].append((position, call))
            else:
                batches.append([(position, call)])
            last_safe = safe
        return batches

    async def _prepare(
        self, position: int, call: ToolCall
    ) -> _Prepared | tuple[list[Event], ToolMessage, bool]:
        """Parse, validate and gate a call. Returns it ready to run, or its final outcome."""
        tool = self.registry.get(call.name)
        args, parse_error = _parse_arguments(call.arguments)
        if tool is None:
            available = ", ".join(self.registry.names()) or "none"
            error = f"unknown tool `{call.name}`. Available tools: {available}."
            return self._failed(call, args, error)
        if parse_error is not None:
            return self._failed(call, args, parse_error)
        try:
            validated = tool.Args.model_validate(args)
        except ValidationError as exc:
            return self._failed(call, args, _describe_validation(call.name, exc))

        verdict = self.policy.evaluate(tool.name, args, needs_approval=tool.needs_approval)
        if verdict.decision is Decision.DENY:
            reason = verdict.reason or "denied by a permission rule"
            text = f"Error: permission denied: {reason}. Do not retry this call; find another way."
            denied = ToolDenied(call.id, tool.name, args, by="rule", reason=reason)
            return [denied], _message(call, text, is_error=True), False
        if verdict.decision is Decision.ASK:
            cached = (
                verdict.session_key is not None and verdict.session_key in self.session_approvals
            )
            if not cached:
                events: list[Event] = []
                if self.approver is None:
                    reason = f"`{tool.name}` needs approval and there is no one to ask"
                    text = f"Error: permission denied: {reason}. Continue without it."
                    denied = ToolDenied(call.id, tool.name, args, by="rule", reason=reason)
                    return [denied], _message(call, text, is_error=True), False
                request = ApprovalRequest(
                    call.id,
                    tool.name,
                    args,
                    verdict.reason,
                    proposed_rule=verdict.proposed_rule,
                    command=verdict.command,
                )
                answer = await self.approver(request)
                events.append(ToolApproval(call.id, tool.name, answer.value))
                if answer is ApprovalAnswer.DENY:
                    events.append(ToolDenied(call.id, tool.name, args, by="user"))
                    text = "Error: the user denied this call and stopped the run."
                    return events, _message(call, text, is_error=True), True
                if answer is ApprovalAnswer.ALLOW_SESSION and verdict.session_key is not None:
                    self.session_approvals.add(verdict.session_key)
                if answer is ApprovalAnswer.ALLOW_ALWAYS and verdict.proposed_rule:
                    save = getattr(self.policy, "add_rule", None)
                    if callable(save):
                        save("allow", verdict.proposed_rule)
                return _PreparedWithEvents(position, call, tool, args, validated, events=events)
        return _Prepared(position, call, tool, args, validated)

    def _failed(
        self, call: ToolCall, args: dict[str, Any], error: str
    ) -> tuple[list[Event], ToolMessage, bool]:
        self.scratchpad.add_tool_call(
            call.name, args, f"Error: {error}", duration_ms=0, error=error
        )
        event = ToolError(call.id, call.name, args, error)
        return [event], _message(call, f"Error: {error}", is_error=True), False

    async def _run_batch(
        self, batch: list[_Prepared]
    ) -> AsyncIterator[Event | tuple[int, ToolMessage]]:
        for prepared in batch:
            if isinstance(prepared, _PreparedWithEvents):
                for event in prepared.events:
                    yield event
        if not batch:
            return
        queue: asyncio.Queue[Event | tuple[int, ToolMessage]] = asyncio.Queue()
        limit = asyncio.Semaphore(max(1, self.max_concurrency))

        async def worker(prepared: _Prepared) -> None:
            try:
                async with limit:
                    message = await self._invoke(prepared, queue.put_nowait)
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
        self, prepared: _Prepared, emit: Callable[[Event | tuple[int, ToolMessage]], None]
    ) -> ToolMessage:
        call, tool = prepared.call, prepared.tool
        emit(ToolStart(call.id, tool.name, prepared.args))
        ctx = ToolContext(
            call_id=call.id,
            home=self.home,
            progress=lambda text: emit(ToolProgress(call.id, tool.name, text)),
            sources=self.sources,
        )
        started = time.perf_counter()
        error: str | None = None
        try:
            outcome = await tool.run(prepared.validated, ctx)
            result = outcome if isinstance(outcome, ToolResult) else ToolResult(str(outcome))
            if result.is_error:
                error = result.content
        except ToolFailure as exc:
            error = str(exc) or type(exc).__name__
        except Exception as exc:  # a tool bug must not kill the run; the model gets told
            error = f"the tool failed unexpectedly ({type(exc).__name__}: {exc})"
        duration = (time.perf_counter() - started) * 1000
        if error is not None:
            content = f"Error: {error}"
            self.scratchpad.add_tool_call(
                tool.name, prepared.args, content, duration_ms=duration, error=error
            )
            emit(ToolError(call.id, tool.name, prepared.args, error, duration))
            return _message(call, _with_warning(content, prepared.warning), is_error=True)
        self.scratchpad.add_tool_call(
            tool.name, prepared.args, result.content, duration_ms=duration
        )
        emit(ToolEnd(call.id, tool.name, prepared.args, result.content, duration, prepared.warning))
        return _message(call, _with_warning(result.content, prepared.warning))


@dataclass
class _PreparedWithEvents(_Prepared):
    events: list[Event] = field(default_factory=list)


def _message(call: ToolCall, content: str, *, is_error: bool = False) -> ToolMessage:
    return ToolMessage(tool_call_id=call.id, name=call.name, content=content, is_error=is_error)


def _with_warning(content: str, warning: str | None) -> str:
    return f"{content}\n\n{warning}" if warning else content


def _parse_arguments(raw: str) -> tuple[dict[str, Any], str | None]:
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return {"_raw": raw}, (
            f"the arguments were not valid JSON ({exc.msg} at position {exc.pos}). "
            "Send them again as one JSON object matching the tool's schema."
        )
    if not isinstance(value, dict):
        return {"_raw": raw}, "the arguments must be a JSON object matching the tool's schema."
    return value, None


def _describe_validation(tool: str, exc: ValidationError) -> str:
    problems = []
    for error in exc.errors()[:5]:
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        problems.append(f"{where}: {error['msg']}")
    return f"invalid arguments for `{tool}`: " + "; ".join(problems) + ". Fix them and call again."
