"""`dexter tools list|run`: use any registered tool directly, without a model."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from rich.console import Console

from dexter.cli.open_runtime import open_runtime
from dexter.config import ConfigError, load_settings
from dexter.permissions.gate import Verdict
from dexter.runtime import AgentSpec, Runtime, channel_named
from dexter.tools.base import Tool, ToolContext
from dexter.tools.invoke import Outcome
from dexter.tools.registry import ToolRegistry


def run_tools_command(args: argparse.Namespace) -> int:
    runtime = open_runtime(load_settings())
    channel = channel_named(getattr(args, "channel", None) or "cli")
    registry = runtime.tools(AgentSpec(channel=channel))
    for error in runtime.mcp_errors.values():
        print(f"dexter: {error}", file=sys.stderr)
    if args.tools_command == "list":
        runtime.close_local()
        return _list(registry, as_json=args.json, channel=channel.name)
    return _run(registry, runtime, args.name, args.args, as_json=args.json)


async def _ask_on_terminal(tool: Tool[Any], arguments: dict[str, Any], verdict: Verdict) -> bool:
    from dexter.cli.approval import ask_once

    shown = f"$ {verdict.command}" if verdict.command else json.dumps(arguments)
    return await ask_once(Console(stderr=True, highlight=False), tool.name, shown)


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
    from dexter.cli.tables import Col, Grid, render

    grid = Grid(
        title=f"Dexter tools (channel {channel})",
        columns=[
            Col("name", key=True, whole=True, style="cyan"),
            Col("what it does", min_width=24),
            Col("parallel", whole=True),
            Col("asks first", whole=True),
        ],
        lines=True,
    )
    for tool in registry:
        grid.add_row(
            tool.name,
            tool.description,
            "yes" if tool.concurrency_safe else "no",
            "yes" if tool.needs_approval else "no",
        )
    render(Console(), grid)
    return 0


def _run(
    registry: ToolRegistry,
    runtime: Runtime,
    name: str,
    raw_args: str,
    *,
    as_json: bool,
) -> int:
    from dexter.tools.invoke import invoke, parse_arguments, validate_arguments

    tool = registry.get(name)
    if tool is None:
        raise ConfigError(f"unknown tool {name!r}. Available: {', '.join(registry.names())}.")
    arguments, problem = parse_arguments(raw_args)
    if problem is not None:
        raise ConfigError(f"--args: {problem}")
    validated, problem = validate_arguments(tool, arguments)
    if validated is None:
        raise ConfigError(problem)

    err = Console(stderr=True, highlight=False, soft_wrap=True)
    ctx = ToolContext(call_id="cli", progress=lambda text: err.print(f"[dim]{text}[/dim]"))
    approve = _ask_on_terminal if sys.stdin.isatty() else None

    async def run() -> Outcome:
        try:
            return await invoke(tool, arguments, ctx, policy=runtime.policy(), approve=approve)
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
    elif result.error is not None:
        err.print(f"dexter: {name}: {result.error}", style="red", markup=False)
    else:
        sys.stdout.write(result.content + ("\n" if not result.content.endswith("\n") else ""))
        if len(ctx.sources):
            sys.stdout.write("\nSources\n")
            for entry in ctx.sources.entries():
                sys.stdout.write(f"  [{entry.id}] {entry.label}\n")
    return 1 if result.is_error else 0
