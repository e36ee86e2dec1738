"""The one tool-invocation path: parse, validate, gate, run under a timeout, normalise.

The agent's executor, the routed finance tools, `dexter tools run` and the MCP server all call a
tool through these functions, so a tool behaves the same wherever it is used: the same argument
errors, the same timeout, the same wording when it fails.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from dexter.errors import DexterError
from dexter.permissions.gate import Decision, PermissionPolicy, Verdict
from dexter.permissions.secrets import redact
from dexter.tools.base import Tool, ToolContext, ToolResult

_log = logging.getLogger(__name__)

# Seconds a tool may run when it declares no timeout of its own.
DEFAULT_TOOL_TIMEOUT = 900.0


@dataclass(frozen=True)
class Outcome:
    """What one call produced. `error` is set (and `content` is "Error: …") when it failed."""

    content: str
    error: str | None = None
    data: Any = None
    duration_ms: float = 0.0

    @property
    def is_error(self) -> bool:
        return self.error is not None


def parse_arguments(raw: str | Mapping[str, Any] | None) -> tuple[dict[str, Any], str | None]:
    """The call's arguments as a dict, or an error the model can act on."""
    if raw is None:
        return {}, None
    if isinstance(raw, Mapping):
        return dict(raw), None
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


def validate_arguments(tool: Tool[Any], args: Mapping[str, Any]) -> tuple[BaseModel | None, str]:
    """The validated arguments, or None and what is wrong with them."""
    try:
        return tool.Args.model_validate(dict(args)), ""
    except ValidationError as exc:
        return None, describe_validation(tool.name, exc)


def describe_validation(tool: str, exc: ValidationError) -> str:
    problems = []
    for error in exc.errors()[:5]:
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        problems.append(f"{where}: {error['msg']}")
    return f"invalid arguments for `{tool}`: " + "; ".join(problems) + ". Fix them and call again."


def timeout_of(tool: Tool[Any]) -> float:
    declared = getattr(tool, "timeout", None)
    return (
        float(declared)
        if isinstance(declared, int | float) and declared > 0
        else (DEFAULT_TOOL_TIMEOUT)
    )


async def run_tool(
    tool: Tool[Any], validated: BaseModel, ctx: ToolContext, *, time_limit: float | None = None
) -> Outcome:
    """Run an already validated and permitted call; never raises except on cancellation."""
    limit = time_limit if time_limit is not None else timeout_of(tool)
    started = time.perf_counter()
    error: str | None = None
    content = ""
    data: Any = None
    try:
        async with asyncio.timeout(limit):
            result = await tool.run(validated, ctx)
        normalised = result if isinstance(result, ToolResult) else ToolResult(str(result))
        content, data = normalised.content, normalised.data
        if normalised.is_error:
            error = normalised.content
    except TimeoutError:
        error = f"`{tool.name}` timed out after {limit:g} s"
    except DexterError as exc:
        # A ToolFailure, or another error written for a person (a hand-edited file that cannot
        # be read names itself and what to do): the model is told it as it is.
        error = str(exc) or type(exc).__name__
    except Exception as exc:  # a tool bug must not kill the run; the caller is told
        _log.debug("tool raised unexpectedly", exc_info=True)
        error = f"the tool failed unexpectedly ({type(exc).__name__}: {exc})"
    duration = (time.perf_counter() - started) * 1000
    # Known secret values never reach the model, the scratchpad, the database or logs.
    if error is not None:
        error = redact(error)
        return Outcome(f"Error: {error}", error=error, data=data, duration_ms=duration)
    return Outcome(redact(content), data=data, duration_ms=duration)


Approve = Callable[[Tool[Any], dict[str, Any], Verdict], Awaitable[bool]]


async def invoke(
    tool: Tool[Any],
    raw_args: str | Mapping[str, Any] | None,
    ctx: ToolContext,
    *,
    policy: PermissionPolicy,
    approve: Approve | None = None,
    time_limit: float | None = None,
) -> Outcome:
    """One call from outside an agent run (`dexter tools run`, the MCP server): parse,
    validate, pass the permission gate (asking `approve` where the gate says ask; refusing
    when there is nobody to ask), run, normalise."""
    args, problem = parse_arguments(raw_args)
    if problem is not None:
        return Outcome(f"Error: {problem}", error=problem)
    validated, problem = validate_arguments(tool, args)
    if validated is None:
        return Outcome(f"Error: {problem}", error=problem)
    verdict = policy.evaluate(tool.name, args, needs_approval=tool.needs_approval)
    refusal = await _refusal(tool, args, verdict, approve)
    if refusal is not None:
        return Outcome(f"Error: {refusal}", error=refusal)
    return await run_tool(tool, validated, ctx, time_limit=time_limit)


async def _refusal(
    tool: Tool[Any], args: dict[str, Any], verdict: Verdict, approve: Approve | None
) -> str | None:
    if verdict.decision is Decision.ALLOW:
        return None
    if verdict.decision is Decision.DENY:
        return f"permission denied: {verdict.reason or 'a permission rule denies it'}"
    if approve is None:
        return (
            f"`{tool.name}` needs approval and there is no one to ask. Allow it with "
            "`dexter permissions allow RULE`, or run it where you can answer the prompt."
        )
    return None if await approve(tool, args, verdict) else "denied by you"


__all__ = [
    "DEFAULT_TOOL_TIMEOUT",
    "Approve",
    "Outcome",
    "describe_validation",
    "invoke",
    "parse_arguments",
    "run_tool",
    "timeout_of",
    "validate_arguments",
]
