"""`dexter ask`: one question, one streamed answer, a meaningful exit status."""

from __future__ import annotations

import asyncio
import sys

from rich.console import Console

from dexter.agent.events import Done
from dexter.agent.executor import Approver
from dexter.cli.approval import TerminalApprover
from dexter.cli.render import JsonRenderer, PlainRenderer

EXIT_BY_STATUS = {"answered": 0, "error": 1, "denied": 1}


def _terminal_approver(console: Console) -> Approver:
    return TerminalApprover(console)


def run_ask(
    question: str,
    *,
    model: str | None,
    as_json: bool,
    max_iterations: int | None,
    resume: str | None = None,
) -> int:
    from dexter.config import ConfigError, load_settings
    from dexter.runtime import ASK, AgentSpec, Runtime

    if not question.strip():
        raise ConfigError('the question is empty. Usage: dexter ask "your question"')
    if max_iterations is not None and max_iterations < 1:
        raise ConfigError("--max-iterations must be at least 1")
    settings = load_settings()
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    interactive = sys.stdin.isatty() and not as_json
    approver = _terminal_approver(err) if interactive else None
    runtime = Runtime(settings)
    spec = AgentSpec(model=model, channel=ASK, max_iterations=max_iterations, resume=resume)
    try:
        agent = runtime.agent(spec, approver=approver)
    except BaseException:
        runtime.close_local()
        raise
    renderer = (
        JsonRenderer(sys.stdout)
        if as_json
        else PlainRenderer(sys.stdout, err, live=sys.stdout.isatty())
    )

    async def consume() -> Done | None:
        done: Done | None = None
        try:
            async for event in agent.run(question):
                renderer.handle(event)
                if isinstance(event, Done):
                    done = event
        finally:
            await runtime.aclose()
        return done

    try:
        done = asyncio.run(consume())
    except KeyboardInterrupt:
        if as_json:
            print('{"type": "cancelled"}', flush=True)
        raise
    if done is None:
        return 1
    return EXIT_BY_STATUS.get(done.status, 1)
