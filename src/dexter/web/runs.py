"""Runs asked from the browser: each executes through the runtime, as `dexter ask` does, and keeps
what it streamed so a page (or a page reloaded mid-run) can follow it over Server-Sent Events.

A run belongs to the principal who asked; only they may follow it, answer its approvals and
questions, or cancel it. One run at a time per session (a second question waits for the first
to finish). The agent of a session is kept between questions, so a follow-up continues the
conversation without reloading it; building one is blocking work (the store, tools, skills) and
happens on one builder thread, off the event loop.

In team mode `dexter.web.queued.QueuedRunHub` replaces `RunHub`: the team's workers answer, and
the views reach runs through `find`, `find_running` and `request_cancel` either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from dexter.agent.events import (
    ApprovalRequest,
    Done,
    Event,
    Retrying,
    Revising,
    RunStarted,
    TextDelta,
    Thinking,
    ToolDenied,
    ToolEnd,
    ToolError,
    ToolProgress,
    ToolStart,
)
from dexter.permissions.gate import ApprovalAnswer
from dexter.principal import Principal
from dexter.tools.ask_user import Answer, Question
from dexter.web.render import (
    answer_with_marks,
    figures_note,
    markdown_html,
    shown,
    sources_list,
)

if TYPE_CHECKING:
    from dexter.runtime import Runtime
    from dexter.session import Session

T = TypeVar("T")

# How long an approval or a question waits for the page before it counts as "no".
ANSWER_TIMEOUT = 600.0
# Finished runs kept for a page that reconnects late; session agents kept warm.
KEPT_RUNS = 64
KEPT_AGENTS = 32

APPROVAL_CHOICES: dict[str, ApprovalAnswer] = {
    "once": ApprovalAnswer.ALLOW_ONCE,
    "run": ApprovalAnswer.ALLOW_SESSION,
    "always": ApprovalAnswer.ALLOW_ALWAYS,
    "deny": ApprovalAnswer.DENY,
}


class RunBusy(Exception):
    """The session is still answering its previous question."""


@dataclass
class LiveRun:
    """One question being answered (or answered): the log of what the page has to show."""

    id: str
    principal_id: str
    session_id: str
    question: str
    # Discrete things the page shows in order (tool rows, approvals, notes, the end).
    log: list[dict[str, Any]] = field(default_factory=list)
    # The answer being written, as Markdown, and a counter the stream watches for changes.
    text: str = ""
    text_round: int = 0
    text_version: int = 0
    finished: bool = False
    run_id: str = ""
    task: asyncio.Task[None] | None = None
    _approvals: dict[str, tuple[asyncio.Future[ApprovalAnswer], bool]] = field(default_factory=dict)
    _questions: dict[str, asyncio.Future[Answer]] = field(default_factory=dict)
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    _rendering: asyncio.Lock = field(default_factory=asyncio.Lock)
    _rendered: tuple[int, str] = (-1, "")

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def add(self, item: dict[str, Any]) -> None:
        self.log.append(item)
        await self._notify()

    async def wait(self, seen_log: int, seen_text: int) -> None:
        """Until there is something after `seen_log` items and text version `seen_text`."""
        async with self._changed:
            await self._changed.wait_for(
                lambda: len(self.log) > seen_log or self.text_version != seen_text or self.finished
            )

    async def text_html(self) -> str:
        """The answer so far as safe HTML: rendered once per change for every page following
        the run, off the loop (a long answer's Markdown takes tens of milliseconds)."""
        async with self._rendering:
            version, text = self.text_version, self.text
            if self._rendered[0] != version:
                self._rendered = (version, await asyncio.to_thread(markdown_html, text))
            return self._rendered[1]

    # ------------------------------------------------------------------ the page answers

    async def approve(self, request: ApprovalRequest) -> ApprovalAnswer:
        """The `Approver` of this run: the question goes to the page, which answers it with the
        terminal's choices (once, for this run, always when a rule can be saved, deny)."""
        key = secrets.token_hex(8)
        always = bool(request.proposed_rule)
        future: asyncio.Future[ApprovalAnswer] = asyncio.get_running_loop().create_future()
        self._approvals[key] = (future, always)
        choices = ["once", "run", *(["always"] if always else []), "deny"]
        await self.add(
            {
                "type": "approval",
                "id": key,
                "tool": request.tool,
                "args": shown(request.args),
                "command": request.command,
                "reason": request.reason,
                "rule": request.proposed_rule,
                "choices": choices,
            }
        )
        try:
            answer = await asyncio.wait_for(asyncio.shield(future), ANSWER_TIMEOUT)
        except TimeoutError:
            answer = ApprovalAnswer.DENY
        finally:
            self._approvals.pop(key, None)
        await self.add({"type": "approval_settled", "id": key, "answer": answer.value})
        return answer

    def settle_approval(self, key: str, choice: str) -> bool:
        pending = self._approvals.get(key)
        answer = APPROVAL_CHOICES.get(choice)
        if pending is None or answer is None or pending[0].done():
            return False
        future, always = pending
        if answer is ApprovalAnswer.ALLOW_ALWAYS and not always:
            return False
        future.set_result(answer)
        return True

    async def ask(self, question: Question) -> Answer:
        """The clarifying-question callback of this run's `ask_user_question` tool."""
        key = secrets.token_hex(8)
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._questions[key] = future
        await self.add(
            {
                "type": "question",
                "id": key,
                "question": question.question,
                "options": [
                    {"label": o.label, "description": o.description} for o in question.options
                ],
                "multi": question.multi_select,
            }
        )
        try:
            answer = await asyncio.wait_for(asyncio.shield(future), ANSWER_TIMEOUT)
        except TimeoutError:
            answer = Answer(declined=True)
        finally:
            self._questions.pop(key, None)
        await self.add({"type": "question_settled", "id": key})
        return answer

    def settle_question(self, key: str, answer: Answer) -> bool:
        future = self._questions.get(key)
        if future is None or future.done():
            return False
        future.set_result(answer)
        return True

    async def answer_approval(self, key: str, choice: str) -> bool:
        """The page's answer to an approval; False when it is not open or not offered (a run
        on a worker takes it through the database: `dexter.web.queued`)."""
        return self.settle_approval(key, choice)

    async def answer_question(self, key: str, answer: Answer) -> bool:
        return self.settle_question(key, answer)

    # ------------------------------------------------------------------ events

    async def take(self, event: Event) -> None:
        """Turn one run event into what the page shows."""
        if isinstance(event, RunStarted):
            self.run_id = event.run_id
            await self.add({"type": "started", "run_id": event.run_id, "model": event.model})
        elif isinstance(event, TextDelta):
            if event.round != self.text_round:
                self.text, self.text_round = "", event.round
            self.text += event.text
            self.text_version += 1
            await self._notify()
        elif isinstance(event, Thinking):
            # That round's text was a plan before tool calls, not the answer.
            self._clear_text()
            await self.add({"type": "thinking", "text": shown(event.text)})
        elif isinstance(event, Retrying | Revising):
            self._clear_text()
            note = (
                f"Retrying (attempt {event.attempt} of {event.max_attempts}): {event.error}"
                if isinstance(event, Retrying)
                else "Some figures were not supported by the data; the answer is being revised."
            )
            await self.add({"type": "note", "text": note})
        elif isinstance(event, ToolStart):
            await self.add(
                {"type": "tool_start", "call_id": event.call_id, "tool": event.tool,
                 "args": shown(event.args)}
            )  # fmt: skip
        elif isinstance(event, ToolProgress):
            await self.add(
                {"type": "tool_progress", "call_id": event.call_id, "text": event.message}
            )
        elif isinstance(event, ToolEnd):
            await self.add(
                {"type": "tool_end", "call_id": event.call_id, "tool": event.tool,
                 "args": shown(event.args), "result": shown(event.result),
                 "ms": round(event.duration_ms), "warning": event.warning}
            )  # fmt: skip
        elif isinstance(event, ToolError):
            await self.add(
                {"type": "tool_error", "call_id": event.call_id, "tool": event.tool,
                 "args": shown(event.args), "error": shown(event.error),
                 "ms": round(event.duration_ms)}
            )  # fmt: skip
        elif isinstance(event, ToolDenied):
            await self.add(
                {"type": "tool_denied", "call_id": event.call_id, "tool": event.tool,
                 "args": shown(event.args), "by": event.by, "reason": event.reason}
            )  # fmt: skip
        elif isinstance(event, Done):
            await self.add(done_item(event, self.session_id, self.run_id))

    def _clear_text(self) -> None:
        self.text = ""
        self.text_version += 1


def done_item(done: Done, session_id: str, run_id: str) -> dict[str, Any]:
    return {
        "type": "done",
        "status": done.status,
        "error": done.error,
        "html": answer_with_marks(done.answer, done.verification, run_id),
        "figures": figures_note(done.verification),
        "sources": sources_list(done.sources, run_id),
        "session_id": session_id,
        "run_id": run_id,
        "tokens": done.usage.input_tokens + done.usage.output_tokens,
        "seconds": round(done.duration_ms / 1000, 1),
    }


@dataclass
class _SessionAgent:
    session: Session
    principal_id: str
    # The run being answered; its approver and question callback are this agent's.
    current: LiveRun | None = None

    async def approve(self, request: ApprovalRequest) -> ApprovalAnswer:
        if self.current is None:
            return ApprovalAnswer.DENY
        return await self.current.approve(request)

    async def ask(self, question: Question) -> Answer:
        if self.current is None:
            return Answer(declined=True)
        return await self.current.ask(question)


async def answer_into(session: Session, live: LiveRun) -> None:
    """Run `live.question` in `session`, every event into `live`; a cancel or a failure ends
    the log with what happened."""
    try:
        async for event in session.run(live.question):
            await live.take(event)
    except asyncio.CancelledError:
        await live.add({"type": "cancelled"})
    except Exception as error:  # the page says what happened; the server keeps serving
        await live.add({"type": "failed", "error": described(error)})
    finally:
        # The page offers the answer's export next: its turn must be in the database.
        with contextlib.suppress(Exception):
            await session.recorder.settled(5.0)


def described(error: Exception) -> str:
    """What the page says about an error: a DexterError's own message; anything else is a bug,
    logged with its traceback and named only by its type."""
    from dexter.errors import DexterError
    from dexter.log import log_path, redact

    if isinstance(error, DexterError):
        return redact(str(error))
    logging.getLogger("dexter.web").error("unexpected error in a run", exc_info=error)
    return f"unexpected error ({type(error).__name__}); details in {log_path()}"


class RunHub:
    """Every live and recent run of this `dexter web`, and the agents of open sessions."""

    def __init__(self, runtime: Runtime, *, model: str | None = None) -> None:
        self.runtime = runtime
        self.model = model
        self.runs: OrderedDict[str, LiveRun] = OrderedDict()
        self._agents: OrderedDict[str, _SessionAgent] = OrderedDict()
        self._pool: ThreadPoolExecutor | None = None
        # Sessions whose next run is being set up (its agent built off the loop): a second
        # question sent meanwhile (a double click) is busy too, not a second run beside it.
        self._starting: set[str] = set()

    async def blocking(self, work: Callable[[], T]) -> T:
        """Run store and build work on the one builder thread, in arrival order."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="dexter-web")
        return await asyncio.get_running_loop().run_in_executor(self._pool, work)

    def get(self, run_id: str) -> LiveRun | None:
        return self.runs.get(run_id)

    def running_in(self, session_id: str) -> LiveRun | None:
        found = [r for r in self.runs.values() if r.session_id == session_id and not r.finished]
        return found[-1] if found else None

    async def start(self, principal: Principal, question: str, session_id: str | None) -> LiveRun:
        """Begin answering `question` in `session_id` (None: a new session) for `principal`.
        ConfigError when the session cannot be resumed; RunBusy while it is answering."""
        if session_id is not None:
            if session_id in self._starting or self.running_in(session_id) is not None:
                raise RunBusy(session_id)
            self._starting.add(session_id)
        try:
            holder = await self.blocking(lambda: self._agent(principal, session_id))
            live = LiveRun(
                secrets.token_urlsafe(12), principal.id, holder.session.session_id, question
            )
            holder.current = live
            live.task = asyncio.create_task(self._drive(holder, live), name=f"dexter-web-{live.id}")
            self.runs[live.id] = live
        finally:
            if session_id is not None:
                self._starting.discard(session_id)
        while len(self.runs) > KEPT_RUNS:
            oldest = next(iter(self.runs.values()))
            if not oldest.finished:
                break
            self.runs.popitem(last=False)
        return live

    def _agent(self, principal: Principal, session_id: str | None) -> _SessionAgent:
        from dexter.runtime import WEB, AgentSpec

        if session_id is not None:
            kept = self._agents.get(session_id)
            if kept is not None and kept.principal_id == principal.id:
                self._agents.move_to_end(session_id)
                return kept
        holder: _SessionAgent | None = None

        def approve(request: ApprovalRequest) -> Any:
            assert holder is not None
            return holder.approve(request)

        def ask(question: Question) -> Any:
            assert holder is not None
            return holder.ask(question)

        spec = AgentSpec(model=self.model, channel=WEB, resume=session_id, principal=principal)
        session = self.runtime.agent(spec, approver=approve, ask_user=ask)
        holder = _SessionAgent(session, principal.id)
        self._agents[session.session_id] = holder
        while len(self._agents) > KEPT_AGENTS:
            _, dropped = self._agents.popitem(last=False)
            if dropped.current is not None and not dropped.current.finished:
                self._agents[dropped.session.session_id] = dropped  # never drop a live one
                break
        return holder

    async def _drive(self, holder: _SessionAgent, live: LiveRun) -> None:
        try:
            await answer_into(holder.session, live)
        finally:
            holder.current = None
            live.finished = True
            await live._notify()

    def cancel(self, live: LiveRun) -> bool:
        if live.finished or live.task is None:
            return False
        live.task.cancel()
        return True

    # What the views call; a hub whose runs are on the team's workers (`dexter.web.queued`)
    # finds them in the database and cancels them there.

    async def find(self, run_id: str) -> LiveRun | None:
        return self.get(run_id)

    async def find_running(self, session_id: str) -> LiveRun | None:
        return self.running_in(session_id)

    async def request_cancel(self, live: LiveRun) -> bool:
        return self.cancel(live)

    async def aclose(self) -> None:
        for live in list(self.runs.values()):
            if live.task is not None and not live.finished:
                live.task.cancel()
                with contextlib.suppress(BaseException):
                    await live.task
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


__all__ = ["APPROVAL_CHOICES", "LiveRun", "RunBusy", "RunHub", "answer_into", "done_item"]
