"""`dexter ask`: one question, one streamed answer, a meaningful exit status."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from dexter.agent.events import Done, RunStarted
from dexter.agent.executor import Approver
from dexter.cli.approval import TerminalApprover
from dexter.cli.open_runtime import open_runtime
from dexter.cli.render import JsonRenderer, PlainRenderer

if TYPE_CHECKING:
    from dexter.runtime import Runtime

EXIT_BY_STATUS = {"answered": 0, "error": 1, "denied": 1}
EMPTY_ANSWER = "the model returned an empty answer, so there is nothing to print"


def _terminal_approver(console: Console, before_asking: Callable[[], None]) -> Approver:
    return TerminalApprover(console, before_asking=before_asking)


def read_question(words: Sequence[str]) -> str:
    """The question from the arguments, or from stdin when there are none or just `-`."""
    from dexter.config import ConfigError

    if words and list(words) != ["-"]:
        return " ".join(words)
    if sys.stdin is None or sys.stdin.isatty():
        raise ConfigError(
            'no question. Usage: dexter ask "your question", or pipe it: echo "…" | dexter ask'
        )
    from dexter.cli.stdin import read_utf8

    return read_utf8("the question")


def run_ask(
    question: str,
    *,
    model: str | None,
    as_json: bool,
    max_iterations: int | None,
    resume: str | None = None,
    output: str | None = None,
    research: bool = False,
    as_of: str | None = None,
    verify: bool | None = None,
) -> int:
    """`verify=False` skips the figure check (`--no-verify`); None follows the settings."""
    from dexter.config import ConfigError, load_settings
    from dexter.data.errors import DataError
    from dexter.data.settings import parse_as_of
    from dexter.runtime import ASK, AgentSpec

    if not question.strip():
        raise ConfigError('the question is empty. Usage: dexter ask "your question"')
    if max_iterations is not None and max_iterations < 1:
        raise ConfigError("--max-iterations must be at least 1")
    if output:
        from dexter.outputfile import refuse_link
        from dexter.reports.render import format_for, require_format

        # A bad file name, or a format this installation cannot render, fails before the run;
        # `ask` has no --format to suggest.
        require_format(format_for(Path(output), None, how_to_ask=""))
        refuse_link(Path(output).expanduser())  # and so does a symlink there
        folder = Path(output).expanduser().resolve().parent
        if not folder.is_dir() or not os.access(folder, os.W_OK):
            raise ConfigError(
                f"cannot write {output}: {folder} is not a writable folder (checked before asking, "
                "so no tokens are spent)."
            )
    try:
        day = parse_as_of(as_of)
    except DataError as error:
        raise ConfigError(f"--as-of: {error}") from None
    settings = load_settings()
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    interactive = sys.stdin.isatty() and not as_json
    # Progress and the text being written show on whichever of stderr and stdout is a terminal
    # (stderr first: `ask … > answer.md` still shows them), and never in a file or a pipe.
    status = err
    if not err.is_terminal and sys.stdout.isatty():
        status = Console(highlight=False, soft_wrap=True)
    plain = PlainRenderer(sys.stdout, err, status=status)
    approver = _terminal_approver(err, plain.waiting.stop) if interactive else None
    runtime = open_runtime(settings)
    # The research profile is the eval channel's answer format, offered to one-off questions.
    channel = replace(ASK, prompt="research") if research else ASK
    spec = AgentSpec(
        model=model,
        channel=channel,
        max_iterations=max_iterations,
        resume=resume,
        as_of=day,
        verify="off" if verify is False else None,
    )
    try:
        agent = runtime.agent(spec, approver=approver)
    except BaseException:
        runtime.close_local()
        raise
    from dexter.cli import process

    process.resume()  # start-up is over: collect garbage again (see dexter.cli.process)
    renderer: JsonRenderer | PlainRenderer = (
        JsonRenderer(sys.stdout, session_id=lambda: agent.session_id or None) if as_json else plain
    )

    run_ids: list[str] = []

    async def consume() -> Done | None:
        done: Done | None = None
        try:
            async for event in agent.run(question):
                renderer.handle(event)
                if isinstance(event, RunStarted):
                    run_ids.append(event.run_id)
                if isinstance(event, Done):
                    done = event
        finally:
            renderer.close()
            await runtime.aclose()
        return done

    try:
        done = asyncio.run(consume())
    except KeyboardInterrupt:
        if as_json:
            print('{"type": "cancelled"}', flush=True)
        raise
    _report_unsaved(runtime, settings.home)
    if done is None:
        return 1
    if done.status == "answered" and not done.answer.strip():
        # Exit 0 with nothing on stdout would pass for an answer in a script.
        unwritten = f" ({output} was not written)" if output else ""
        print(
            f"dexter: {EMPTY_ANSWER}{unwritten}. Ask again, or try another model with -m.",
            file=sys.stderr,
        )
        return 1
    if output and run_ids and done.status == "answered":
        from dexter.cli.report_command import export

        reports = open_runtime(settings)
        store = reports.existing_store()
        try:
            if store is not None:
                as_of_day = day.isoformat() if day else None  # the report states it
                export(
                    settings.home,
                    store,
                    run_ids[0],
                    output,
                    None,
                    as_of_day,
                    how_to_ask="",
                    err=err,
                )
        finally:
            reports.close_local()
    return EXIT_BY_STATUS.get(done.status, 1)


def _report_unsaved(runtime: Runtime, home: Path) -> None:
    """Say what a full disk kept out of the session history; the answer itself was printed."""
    if not runtime.unsaved:
        return
    error = runtime.unsaved_error
    reason = (error.strerror or str(error)) if error is not None else "the disk refused it"
    if any(write.kind == "turn" for write in runtime.unsaved):
        what = "this answer was not saved to the session history"
        after = "the output above is its only copy"
    else:
        what = (
            f"{len(runtime.unsaved)} record(s) of this run (token use, tool calls) were not saved"
        )
        after = "`dexter usage` will count less than was spent"
    print(f"dexter: {what} in {home} ({reason}); {after}.", file=sys.stderr)
