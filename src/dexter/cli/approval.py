"""The one terminal approver (`dexter ask`, `dexter tools run`): what wants to run, and the keys.

The prompt is a `rich.text.Text`, never markup, so `[y]` reaches the screen instead of being
read as a style tag.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from rich.console import Console
from rich.text import Text

from dexter.agent.events import ApprovalRequest
from dexter.cli.render import compact_args
from dexter.permissions.gate import ApprovalAnswer

# The keys the README documents; Enter alone denies.
ONCE, SESSION, ALWAYS, DENY = "y", "a", "r", "n"
_ANSWERS = {
    "y": ApprovalAnswer.ALLOW_ONCE,
    "yes": ApprovalAnswer.ALLOW_ONCE,
    "a": ApprovalAnswer.ALLOW_SESSION,
    "s": ApprovalAnswer.ALLOW_SESSION,  # the key older versions showed
    "session": ApprovalAnswer.ALLOW_SESSION,
    "r": ApprovalAnswer.ALLOW_ALWAYS,
    "always": ApprovalAnswer.ALLOW_ALWAYS,
}


def prompt_text(*, session: bool = True, rule: str | None = None) -> str:
    """`[y] once  [a] for this run  [r] always (saves RULE)  [N] deny: `: the keys, in words."""
    parts = [f"[{ONCE}] once"]
    if session:
        parts.append(f"[{SESSION}] for this run")
    if rule:
        parts.append(f"[{ALWAYS}] always (saves {rule})")
    parts.append(f"[{DENY.upper()}] deny")
    return "  " + "  ".join(parts) + ": "


def parse_answer(answer: str, *, session: bool = True, always: bool = False) -> ApprovalAnswer:
    chosen = _ANSWERS.get(answer.strip().lower(), ApprovalAnswer.DENY)
    if chosen is ApprovalAnswer.ALLOW_SESSION and not session:
        return ApprovalAnswer.DENY
    if chosen is ApprovalAnswer.ALLOW_ALWAYS and not always:
        return ApprovalAnswer.DENY
    return chosen


def shown(request: ApprovalRequest) -> str:
    return f"$ {request.command}" if request.command else compact_args(request.args, 200)


def _question(tool: str, what: str) -> Text:
    return Text.assemble(("Allow ", "bold yellow"), f"{tool}: {what}?")


def _prompt_lines(prompt: str, width: int) -> list[str]:
    """The prompt broken between its choices to fit `width`: the terminal would otherwise wrap it
    mid-word ("[N] den" / "y:"). Every line but the last is printed; the last is typed after."""
    if len(prompt) <= width:
        return [prompt]
    lines: list[str] = []
    for part in prompt.split("  ")[1:]:
        choice = "  " + part
        if lines and len(lines[-1]) + len(choice) <= width:
            lines[-1] += choice
        else:
            lines.append(choice)
    return lines


async def _read(console: Console, prompt: str) -> str:
    *before, last = _prompt_lines(prompt, console.width)
    for line in before:
        console.print(Text(line))
    try:
        return await asyncio.to_thread(console.input, Text(last))
    except EOFError:  # stdin closed mid-run: nobody can answer, so nothing runs
        return ""


class TerminalApprover:
    """Asks at the terminal. Calls the model asked for together are listed together first,
    then each is allowed or denied on its own."""

    def __init__(
        self, console: Console, *, before_asking: Callable[[], None] | None = None
    ) -> None:
        self.console = console
        # Stops a spinner, which would otherwise redraw over the prompt being typed into.
        self.before_asking = before_asking

    async def __call__(self, request: ApprovalRequest) -> ApprovalAnswer:
        if self.before_asking is not None:
            self.before_asking()
        self.console.print(_question(request.tool, shown(request)))
        return await self._answer(request)

    async def approve_many(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalAnswer]:
        if self.before_asking is not None:
            self.before_asking()
        self.console.print(Text(f"{len(requests)} calls want to run together:", "bold yellow"))
        for number, request in enumerate(requests, 1):
            self.console.print(Text(f"  {number}. {request.tool}: {shown(request)}"))
        answers: list[ApprovalAnswer] = []
        for request in requests:
            answer = await self(request)
            answers.append(answer)
            if answer is ApprovalAnswer.DENY:
                break  # a denial stops the rest of the response
        return answers

    async def _answer(self, request: ApprovalRequest) -> ApprovalAnswer:
        rule = request.proposed_rule
        answer = await _read(self.console, prompt_text(rule=rule))
        return parse_answer(answer, always=bool(rule))


async def ask_once(console: Console, tool: str, what: str) -> bool:
    """One call outside any run (`dexter tools run`): allow it once, or not."""
    console.print(_question(tool, what))
    answer = await _read(console, prompt_text(session=False))
    return parse_answer(answer, session=False) is ApprovalAnswer.ALLOW_ONCE
