"""`dexter tools list|run`: use any registered tool directly, without a model."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from dexter.config import ConfigError, load_settings
from dexter.permissions.gate import Decision, PermissionPolicy
from dexter.runtime import AgentSpec, Runtime, channel_named
from dexter.tools.base import Tool, ToolContext, ToolFailure, ToolResult
from dexter.tools.registry import ToolRegistry


def run_tools_command(args: argparse.Namespace) -> int:
    runtime = Runtime(load_settings())
    channel = channel_named(getattr(args, "channel", None) or "cli")
    registry = runtime.tools(AgentSpec(channel=channel))
    if args.tools_command == "list":
        runtime.close_local()
        return _list(registry, as_json=args.json, channel=channel.name)
    return _run(registry, runtime, args.name, args.args, as_json=args.json)


def _permitted(policy: PermissionPolicy, tool: Tool[Any], arguments: dict[str, Any]) -> str | None:
    """The same gate as an agent run: None when the call may go ahead, else why not."""
    verdict = policy.evaluate(tool.name, arguments, needs_approval=tool.needs_approval)
    if verdict.decision is Decision.ALLOW:
        return None
    if verdict.decision is Decision.DENY:
        return f"denied: {verdict.reason or 'a permission rule denies it'}."
    if not sys.stdin.isatty():
        return (
            f"{tool.name} needs approval and there is no one to ask (stdin is not a terminal). "
            "Run it from a terminal, or allow it with `dexter permissions allow RULE`."
        )
    shown = f"$ {verdict.command}" if verdict.command else json.dumps(arguments)
    answer = Console(stderr=True).input(f"Allow {tool.name}: {shown}? [y/N] ").strip().lower()
    return None if answer in {"y", "yes"} else "denied by you."


def _list(registry: ToolRegistry, *, as_json: bool, channel: str) -> int:
    if as_json:
        rows = [
            {
                "name": tool.name,
                "summary": tool.summary,
                "description": tool.description,
                "concurrency_safe": tool.concurrency_safe,
                "needs_approval": tool.needs_approval,
                "parameters": tool.spec().parameters,
            }
            for tool in registry
        ]
        print(json.dumps(rows, indent=2))
        return 0
    table = Table(title=f"Dexter tools (channel {channel})", show_lines=True)
    table.add_column("name", style="cyan", no_wrap=True)
    table.add_column("what it does")
    table.add_column("parallel", justify="center")
    table.add_column("asks first", justify="center")
    for tool in registry:
        table.add_row(
            tool.name,
            tool.description,
            "yes" if tool.concurrency_safe else "no",
            "yes" if tool.needs_approval else "no",
        )
    Console().print(table)
    return 0


def _run(
    registry: ToolRegistry,
    runtime: Runtime,
    name: str,
    raw_args: str,
    *,
    as_json: bool,
) -> int:
    tool = registry.get(name)
    if tool is None:
        raise ConfigError(f"unknown tool {name!r}. Available: {', '.join(registry.names())}.")
    try:
        arguments: Any = json.loads(raw_args)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--args is not valid JSON: {exc.msg} at position {exc.pos}") from None
    if not isinstance(arguments, dict):
        raise ConfigError('--args must be a JSON object, e.g. \'{"expression": "1+1"}\'')
    try:
        validated = tool.Args.model_validate(arguments)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(f"invalid arguments for {name}: {problems}") from None

    refusal = _permitted(runtime.policy(), tool, arguments)
    err = Console(stderr=True, highlight=False)
    if refusal is not None:
        err.print(f"dexter: {name} was not run: {refusal}", markup=False)
        return 1
    ctx = ToolContext(call_id="cli", progress=lambda text: err.print(f"[dim]{text}[/dim]"))

    async def run() -> ToolResult:
        try:
            outcome = await tool.run(validated, ctx)
            return outcome if isinstance(outcome, ToolResult) else ToolResult(str(outcome))
        except ToolFailure as exc:
            return ToolResult(str(exc), is_error=True)
        finally:
            await runtime.aclose()

    result = asyncio.run(run())
    if as_json:
        payload = {
            "tool": name,
            "content": result.content,
            "is_error": result.is_error,
            "data": result.data,
        }
        print(json.dumps(payload, indent=2, default=str))
    elif result.is_error:
        err.print(f"Error: {result.content}", style="red", markup=False)
    else:
        sys.stdout.write(result.content + ("\n" if not result.content.endswith("\n") else ""))
        if len(ctx.sources):
            sys.stdout.write("\nSources\n")
            for entry in ctx.sources.entries():
                sys.stdout.write(f"  [{entry.id}] {entry.label}\n")
    return 1 if result.is_error else 0
