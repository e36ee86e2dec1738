"""`dexter ask`: one question, one streamed answer, a meaningful exit status."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape

from dexter.agent.events import ApprovalRequest, Done
from dexter.agent.executor import Approver
from dexter.cli.render import JsonRenderer, PlainRenderer, compact_args
from dexter.permissions.gate import ApprovalAnswer

EXIT_BY_STATUS = {"answered": 0, "error": 1, "denied": 1}


class _TerminalApprover:
    """Asks at the terminal. Calls the model asked for together are listed together first,
    then each is allowed or denied on its own."""

    def __init__(self, console: Console) -> None:
        self.console = console

    async def __call__(self, request: ApprovalRequest) -> ApprovalAnswer:
        self._show(request)
        return await self._answer(request)

    async def approve_many(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalAnswer]:
        self.console.print(
            f"[bold yellow]{len(requests)} calls want to run together:[/bold yellow]"
        )
        for number, request in enumerate(requests, 1):
            self.console.print(f"  {number}. {escape(request.tool)}: {escape(_shown(request))}")
        answers: list[ApprovalAnswer] = []
        for request in requests:
            self._show(request)
            answer = await self._answer(request)
            answers.append(answer)
            if answer is ApprovalAnswer.DENY:
                break  # a denial stops the rest of the response
        return answers

    def _show(self, request: ApprovalRequest) -> None:
        self.console.print(
            f"[bold yellow]Allow[/bold yellow] {escape(request.tool)}: {escape(_shown(request))}?"
        )

    async def _answer(self, request: ApprovalRequest) -> ApprovalAnswer:
        prompt = "  [y] once  [s] for this run  [N] deny: "
        if request.proposed_rule:
            prompt = (
                f"  [y] once  [s] for this run  [r] always (saves {request.proposed_rule})"
                "  [N] deny: "
            )
        answer = (await asyncio.to_thread(self.console.input, prompt)).strip().lower()
        if answer in {"y", "yes"}:
            return ApprovalAnswer.ALLOW_ONCE
        if answer in {"a", "s", "session"}:
            return ApprovalAnswer.ALLOW_SESSION
        if answer in {"r", "always"} and request.proposed_rule:
            return ApprovalAnswer.ALLOW_ALWAYS
        return ApprovalAnswer.DENY


def _shown(request: ApprovalRequest) -> str:
    return f"$ {request.command}" if request.command else compact_args(request.args, 200)


def _terminal_approver(console: Console) -> Approver:
    return _TerminalApprover(console)


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
    err = Console(stderr=True, highlight=False)
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
