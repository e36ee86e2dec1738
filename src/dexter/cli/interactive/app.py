"""The interactive session: a chat log, live tool rows, an approval prompt and an input box.

The app runs inline under the shell prompt so the scrollback survives. Agent runs execute in a
textual worker on the app's own event loop, so the UI keeps drawing while tools and the model
work, and cancelling the worker cancels the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import ClassVar

from rich.console import Console
from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.events import Resize
from textual.widgets import Input, Markdown, Static
from textual.worker import Worker, WorkerState

from dexter.agent.events import ApprovalRequest, QueueDrained
from dexter.agent.loop import Agent
from dexter.cli.interactive.approval import ApprovalPrompt
from dexter.cli.interactive.commands import (
    VERIFY_MEANING,
    Command,
    UnknownCommand,
    help_text,
    parse_command,
    skills_text,
)
from dexter.cli.interactive.format import with_link_targets
from dexter.cli.interactive.questions import QuestionBridge, parse_answer, render_question
from dexter.cli.interactive.transcript import Entry, entries_of, print_transcript, resume_hint
from dexter.cli.interactive.turn import TurnView
from dexter.cli.interactive.widgets import HistoryInput, Note, WorkingIndicator
from dexter.config import ConfigError
from dexter.figure_marks import marked_answer, verification_from_dict
from dexter.models.base import Model
from dexter.permissions.gate import ApprovalAnswer
from dexter.session import Session
from dexter.tools.ask_user import Answer, Question

_log = logging.getLogger(__name__)

SwitchModel = Callable[[str], Model]

TICK_SECONDS = 0.1
ALERT_CHECK_SECONDS = 30.0
# A second ctrl+c this soon after cancelling is a double-tap, not a request to quit.
QUIT_GRACE_SECONDS = 1.0
MIN_LOG_HEIGHT = 3
PLACEHOLDER = "Ask about a company, a filing or a number…  (/help for commands)"


class DexterApp(App[None]):
    """One interactive session over one Agent; the conversation lives in `agent.history`."""

    TITLE = "Dexter"
    ENABLE_COMMAND_PALETTE = False

    CSS = """
    Screen { layout: vertical; }
    Screen.-leaving, Screen.-leaving:inline, Screen.-leaving:ansi:inline { border: none; }
    #header { height: 1; padding: 0 1; }
    #log { height: auto; padding: 0 1; scrollbar-size-vertical: 1; }
    #log > Note { padding: 0 0 0 2; }
    #log > .question { margin: 1 0 0 0; padding: 0; text-style: bold; }
    #log > .command { margin: 1 0 0 0; padding: 0; color: $text-muted; }
    #log > Markdown { padding: 0 0 0 2; margin: 0; }
    #log > Markdown.interim, #log > Markdown.segment { color: $text-muted; }
    #log > .thinking, #log > .notice, #log > .stats, #log > .queued, #log > .sources {
        color: $text-muted;
    }
    /* A plan the model wrote before calling tools was read as it streamed: folded to a row. */
    #log > Note.thinking { text-wrap: nowrap; text-overflow: ellipsis; }
    #log > .delivered, #log > .dropped { color: $text-muted; text-style: italic; }
    #log > .help, #log > .info { color: $text; }
    #log > .error { color: $error; }
    #log > .stopped, #log > .cancelled { color: $warning; }
    #prompt { margin: 0; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+c", "interrupt", "Cancel / quit", show=False, priority=True),
        Binding("ctrl+d", "end_of_input", "Quit", show=False, priority=True),
        Binding("pageup", "scroll_log(-1)", "Scroll up", show=False),
        Binding("pagedown", "scroll_log(1)", "Scroll down", show=False),
    ]

    def __init__(
        self,
        agent: Agent | Session,
        *,
        switch_model: SwitchModel | None = None,
        model_label: str = "",
        questions: QuestionBridge | None = None,
    ) -> None:
        super().__init__()
        self.agent = agent
        # The loop itself (a stored session holds one).
        self.core: Agent = agent.agent if isinstance(agent, Session) else agent
        self.questions = questions
        self._question: tuple[Question, asyncio.Future[Answer]] | None = None
        self.switch_model = switch_model
        self.model_label = model_label or agent.model.name
        self.turn: TurnView | None = None
        self._worker: Worker[None] | None = None
        self._cancelling = False
        self._cancelled_at = -QUIT_GRACE_SECONDS
        self._queued: list[tuple[Note, str]] = []
        self._approval_lock = asyncio.Lock()
        # What the session showed, in order (see `transcript.py`): printed to the normal screen
        # after exit so the whole conversation stays in the scrollback. `_kept` counts the log's
        # widgets already copied into it.
        self.transcript: list[Entry] = []
        self._kept = 0
        # Whether the current stored session has a turn, so leaving can say how to resume it.
        self.has_turns = False

    # ----------------------------------------------------------------- layout

    def compose(self) -> ComposeResult:
        yield Static(self._header_text(), id="header")
        yield VerticalScroll(id="log")
        yield ApprovalPrompt(id="approval")
        yield WorkingIndicator(id="working")
        yield HistoryInput(placeholder=PLACEHOLDER, id="prompt")

    async def on_mount(self) -> None:
        self.core.approver = _AppApprover(self)
        if self.questions is not None:
            self.questions.handler = self._ask_user
        self.log_view.anchor()
        self.prompt.focus()
        self.set_interval(TICK_SECONDS, self._tick)
        if isinstance(self.agent, Session) and self.agent.history:
            await self._show_earlier(self.agent)  # started with --resume
        if isinstance(self.agent, Session):
            await self._show_alerts()
            self.set_interval(ALERT_CHECK_SECONDS, self._show_alerts)
        self._fit_log()
        self._keep_shown()

    async def _show_alerts(self) -> None:
        """A line for alerts scheduled jobs produced since anything last showed them."""
        if not isinstance(self.agent, Session):
            return
        from dexter.cron.notices import take_notice
        from dexter.cron.store import CronStore

        try:
            notice = take_notice(CronStore(self.agent.recorder.store))
        except Exception:  # a notice must never break the session (old or locked database)
            return
        if notice:
            await self._add(Note(notice, classes="info"))
            self._keep_shown()

    async def _show_earlier(self, agent: Session) -> None:
        """A resumed session's turns, as they were asked and answered."""
        turns = agent.recorder.sessions.turns(agent.session_id)
        if turns:
            self.has_turns = True
            await self._add(Note(f"Earlier in session {agent.session_id}:", classes="info"))
        for turn in turns:
            await self._add(Note(f"› {turn.query}", classes="question"))
            if turn.status == "answered" and turn.answer:
                checked = verification_from_dict(turn.verification)
                shown = with_link_targets(marked_answer(turn.answer, checked))
                await self.log_view.mount(Markdown(shown, classes="answer"))
            else:
                await self._add(Note(f"({turn.status})", classes="stopped"))

    def on_resize(self, _: Resize) -> None:
        self._fit_log()

    @property
    def log_view(self) -> VerticalScroll:
        return self.query_one("#log", VerticalScroll)

    @property
    def prompt(self) -> HistoryInput:
        return self.query_one("#prompt", HistoryInput)

    @property
    def working(self) -> WorkingIndicator:
        return self.query_one("#working", WorkingIndicator)

    @property
    def approval(self) -> ApprovalPrompt:
        return self.query_one("#approval", ApprovalPrompt)

    @property
    def busy(self) -> bool:
        """True while a question (and any follow-ups it picks up) is being answered."""
        return self._worker is not None

    def _header_text(self) -> Text:
        return Text.assemble(
            ("Dexter", "bold"),
            (" · ", "dim"),
            (self.model_label, "cyan"),
            ("   /help · ctrl+c cancel · ctrl+d quit", "dim"),
        )

    def _fit_log(self) -> None:
        # Inline, the screen grows with its content up to the terminal height; capping the log
        # keeps the input on screen once the conversation is taller than the terminal.
        others = sum(
            widget.outer_size.height + widget.styles.margin.height
            for widget in (self.query_one("#header"), self.approval, self.working, self.prompt)
            if widget.display
        )
        available = self.size.height - others - self.screen.styles.gutter.height
        self.log_view.styles.max_height = max(MIN_LOG_HEIGHT, available)

    def _tick(self) -> None:
        if not self.busy:
            return
        self.working.refresh()
        if self.turn is not None:
            for row in self.turn.rows.values():
                row.tick()

    async def _add(self, note: Note) -> Note:
        await self.log_view.mount(note)
        return note

    def _keep_shown(self, *, final: bool = False) -> None:
        """Copy what the log shows and the transcript lacks into it. Only between runs (or at
        the very end): a running answer's rows and text are still changing."""
        if self.busy and not final:
            return
        shown = list(self.log_view.children)
        self.transcript += entries_of(shown[self._kept :])
        self._kept = len(shown)

    async def _empty_log(self) -> None:
        """Clear the log for /clear and /resume; what it showed stays in the transcript."""
        self._keep_shown()
        await self.log_view.remove_children()
        self._kept = 0

    # ------------------------------------------------------------------ input

    @on(Input.Submitted, "#prompt")
    async def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        self.prompt.value = ""
        if not text:
            return
        self.prompt.remember(text)
        if self._question is not None and not self._question[1].done():
            question, future = self._question
            await self._add(Note(f"› {text}", classes="question"))
            future.set_result(parse_answer(question, text))
            return
        # Whatever is sent, its output appears at the bottom, even if the user scrolled up.
        self.log_view.anchor()
        command = parse_command(text)
        if command is not None:
            await self._command(command, text)
        elif self.busy:
            await self._queue_follow_up(text)
        else:
            self.start_run(text)
        self._keep_shown()

    async def _queue_follow_up(self, text: str) -> None:
        self.agent.queue.enqueue(text)
        note = await self._add(Note(f"↳ queued: {text}", classes="queued"))
        self._queued.append((note, text))
        self.working.queued = len(self.agent.queue)

    def _settle_queued(self, status: str, kind: str) -> None:
        for note, text in self._queued:
            note.set_text(f"↳ {status}: {text}")
            note.set_classes(kind)
        self._queued.clear()
        self.working.queued = 0

    # --------------------------------------------------------------- commands

    async def _command(self, command: Command | UnknownCommand, typed: str) -> None:
        if isinstance(command, UnknownCommand):
            await self._add(Note(f"› {typed}", classes="command"))
            await self._add(
                Note(f"Unknown command {command.name}. Type /help for commands.", classes="error")
            )
            return
        if command.name == "/exit":
            self.quit()
            return
        if command.name == "/clear":
            await self._clear()
            return
        await self._add(Note(f"› {typed}", classes="command"))
        if command.name == "/help":
            await self._add(Note(help_text(), classes="help"))
        elif command.name == "/model":
            await self._model_command(command.arg)
        elif command.name == "/resume":
            await self._resume_command(command.arg)
        elif command.name == "/skills":
            await self._add(Note(skills_text(self.agent.config.home), classes="info"))
        elif command.name == "/export":
            await self._export_command(command.arg)
        elif command.name == "/verify":
            await self._verify_command(command.arg)

    async def _verify_command(self, arg: str) -> None:
        from dexter.agent.verification import parse_verify_mode

        core = self.core
        if not arg:
            text = (
                f"Figure check: {core.config.verify} ({VERIFY_MEANING[core.config.verify]}).\n"
                "Switch with /verify off, /verify flag or /verify repair"
            )
            await self._add(Note(text, classes="info"))
            return
        try:
            mode = parse_verify_mode(arg, "/verify")
        except ValueError as exc:
            await self._add(Note(f"{exc}.", classes="error"))
            return
        # From the next question on; a run under way keeps the mode it started with.
        core.config = replace(core.config, verify=mode)
        await self._add(
            Note(f"Figure check: {mode} ({VERIFY_MEANING[mode]}) from now on.", classes="info")
        )

    async def _export_command(self, arg: str) -> None:
        agent = self.agent
        if not isinstance(agent, Session) or not agent.session_id:
            await self._add(
                Note("Sessions are not saved here: nothing to export.", classes="error")
            )
            return
        from dexter.cli.interactive.export import export_session

        await self._add(Note("Writing the report…", classes="info"))
        try:
            # Charts and PDF layout take a while; the session keeps answering keys meanwhile.
            message = await asyncio.to_thread(
                export_session,
                agent.recorder.store,
                agent.config.home,
                agent.session_id,
                arg,
            )
        except ConfigError as exc:
            await self._add(Note(f"Could not export: {exc}", classes="error"))
            return
        await self._add(Note(message, classes="info"))

    async def _resume_command(self, session_id: str) -> None:
        agent = self.agent
        if not isinstance(agent, Session):
            await self._add(Note("Sessions are not saved here.", classes="error"))
            return
        if not session_id:
            sessions = agent.list_sessions(10)
            if not sessions:
                await self._add(Note("No saved sessions yet.", classes="info"))
                return
            current = agent.session_id
            lines = [
                f"{'*' if s.id == current else ' '} {s.id}  {s.updated_at[:16].replace('T', ' ')}  "
                f"{s.turns} {'turn' if s.turns == 1 else 'turns'}  {s.title or ''}"
                + ("  (current)" if s.id == current else "")
                for s in sessions
            ]
            lines.append("Continue one with /resume ID")
            await self._add(Note("\n".join(lines), classes="info"))
            return
        if self.busy:
            await self._add(Note("Wait for the answer or press ctrl+c first.", classes="error"))
            return
        try:
            info = agent.resume(session_id)
        except Exception as exc:  # an unknown id must not end the session
            _log.debug("resume failed", exc_info=True)
            await self._add(Note(f"Could not resume: {exc}", classes="error"))
            return
        await self._empty_log()
        self.turn = None
        self.has_turns = False
        await self._add(
            Note(
                f"Resumed {info.id}: {info.turns} earlier "
                f"{'turn' if info.turns == 1 else 'turns'} · {info.title}",
                classes="info",
            )
        )
        await self._show_earlier(agent)

    async def _clear(self) -> None:
        if self.busy:
            await self._add(
                Note("Wait for the answer or press ctrl+c before /clear.", classes="error")
            )
            return
        if isinstance(self.agent, Session):
            self.agent.new_session()
        else:
            self.core.clear()
        await self._empty_log()
        self.turn = None
        self.has_turns = False
        await self._add(Note("Conversation cleared.", classes="info"))

    async def _model_command(self, spec: str) -> None:
        model = self.agent.model
        if not spec:
            text = f"Model: {self.model_label} ({model.provider} · {model.name})"
            if self.switch_model is not None:
                text += "\nSwitch with /model provider:name"
            await self._add(Note(text, classes="info"))
            return
        if self.busy:
            await self._add(
                Note(
                    "Wait for the answer or press ctrl+c before switching models.", classes="error"
                )
            )
            return
        if self.switch_model is None:
            await self._add(Note("Switching models is not available here.", classes="error"))
            return
        try:
            new_model = self.switch_model(spec)
        except Exception as exc:  # a bad spec or missing key must not end the session
            _log.debug("model switch failed", exc_info=True)
            await self._add(Note(f"Could not switch model: {exc}", classes="error"))
            return
        # A session's switch moved every phase already; a bare agent swaps its main model.
        self.core.use_models(replace(self.core.models, main=new_model))
        self.model_label = spec
        self.query_one("#header", Static).update(self._header_text())
        await self._add(
            Note(f"Switched to {spec} ({new_model.provider} · {new_model.name}).", classes="info")
        )

    # ------------------------------------------------------------------- runs

    def start_run(self, query: str) -> None:
        self._cancelling = False
        self.turn = None
        self.working.begin()
        self.call_after_refresh(self._fit_log)
        self._worker = self.run_worker(
            self._answer(query), name="dexter-run", group="run", exit_on_error=False
        )

    async def _answer(self, query: str) -> None:
        try:
            while True:
                await self._run_one(query)
                follow_ups = self.agent.queue.drain()
                if not follow_ups:
                    return
                # No tool round picked these up, so they become the next question.
                self._settle_queued("asked next", "delivered")
                query = "\n\n".join(item.text for item in follow_ups)
        except asyncio.CancelledError:
            if self.turn is not None:
                await self.turn.cancel()
            self._drop_queued()
            raise
        except Exception as exc:  # a UI bug must not kill the session; show it and carry on
            _log.debug("interactive turn failed", exc_info=True)
            message = f"Internal error: {type(exc).__name__}: {exc}"
            if self.turn is not None:
                await self.turn.fail(message)
            else:
                await self._add(Note(message, classes="error"))
            self._drop_queued()
        finally:
            self._finish_run()

    async def _run_one(self, query: str) -> None:
        await self._add(Note(f"› {query}", classes="question"))
        self.has_turns = True
        self.turn = TurnView(self.log_view, self.working.set_phase)
        self.working.set_phase("thinking")
        async for event in self.agent.run(query):
            if isinstance(event, QueueDrained):
                self._settle_queued("sent with the next step", "delivered")
            await self.turn.handle(event)

    def _drop_queued(self) -> None:
        dropped = self.agent.queue.drain()
        self._settle_queued("not sent", "dropped")
        if dropped and not self.prompt.value:
            # Give unsent follow-ups back so they are not lost with the cancelled run.
            self.prompt.value = "\n\n".join(item.text for item in dropped)
            self.prompt.cursor_position = len(self.prompt.value)

    def _finish_run(self) -> None:
        self._worker = None
        self._cancelling = False
        self.working.end()
        self.call_after_refresh(self._fit_log)
        if not self.approval.is_open:
            self.prompt.focus()
        self._keep_shown()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # A worker cancelled before its first step never runs its own cleanup.
        if event.worker is self._worker and event.state in (
            WorkerState.CANCELLED,
            WorkerState.ERROR,
            WorkerState.SUCCESS,
        ):
            self._finish_run()

    async def _ask_user(self, question: Question) -> Answer:
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._question = (question, future)
        self.working.set_phase("waiting for your answer")
        await self._add(Note(render_question(question), classes="info"))
        self.prompt.focus()
        try:
            return await future
        finally:
            self._question = None

    def cancel_run(self) -> bool:
        if self._question is not None and not self._question[1].done():
            self._question[1].set_result(Answer(declined=True))
        if self._worker is None or self._cancelling:
            return False
        self._cancelling = True
        self._cancelled_at = time.monotonic()
        self._worker.cancel()
        return True

    # --------------------------------------------------------------- approval

    async def _ask_approval(
        self, request: ApprovalRequest, batch: Sequence[ApprovalRequest] = ()
    ) -> ApprovalAnswer:
        async with self._approval_lock:
            future: asyncio.Future[ApprovalAnswer] = asyncio.get_running_loop().create_future()
            prompt = self.approval
            self.working.set_phase(f"waiting for your approval of {request.tool}")
            prompt.open(request, future, batch=batch)
            self.call_after_refresh(self._fit_log)
            try:
                return await future
            finally:
                prompt.close()
                self.working.set_phase("thinking")
                self.prompt.focus()
                self.call_after_refresh(self._fit_log)

    # ---------------------------------------------------------------- actions

    def action_interrupt(self) -> None:
        if self.busy:
            self.cancel_run()
        elif self.prompt.value:
            self.prompt.value = ""
        elif time.monotonic() - self._cancelled_at >= QUIT_GRACE_SECONDS:
            self.quit()

    def action_end_of_input(self) -> None:
        if self.prompt.has_focus and self.prompt.value:
            self.prompt.action_delete_right()
        else:
            self.quit()

    async def action_quit(self) -> None:
        self.quit()

    def quit(self) -> None:
        """Exit; `run_interactive` then prints the conversation to the normal screen."""
        self.cancel_run()
        for widget in (self.prompt, self.approval, self.working):
            widget.display = False
        self.call_after_refresh(self._leave)

    async def _leave(self) -> None:
        worker = self._worker
        if worker is not None:
            # The cancelled run marks its rows and says "Cancelled." before it is copied.
            with contextlib.suppress(Exception):
                await worker.wait()
        self._keep_shown(final=True)
        # Draw an empty region last: a terminal that keeps a cleared screen in its scrollback
        # (tmux does when the region reached the top) then keeps nothing of it, where it used
        # to keep the whole last screen above the printed conversation.
        self.screen.add_class("-leaving")
        for widget in (self.query_one("#header"), self.log_view):
            widget.display = False
        self.call_after_refresh(self.exit)

    def action_scroll_log(self, direction: int) -> None:
        if direction < 0:
            self.log_view.scroll_page_up()
        else:
            self.log_view.scroll_page_down()


def run_interactive(
    agent: Agent | Session,
    *,
    switch_model: SwitchModel | None = None,
    model_label: str = "",
    questions: QuestionBridge | None = None,
) -> int:
    """Run the session under the shell prompt; returns the process exit code."""
    app = DexterApp(agent, switch_model=switch_model, model_label=model_label, questions=questions)
    # mouse=False leaves text selection and scrolling to the terminal, as in a shell. The inline
    # region only ever holds one screenful, so it is cleared on exit and the whole conversation
    # is printed to the normal screen instead, where the scrollback keeps it.
    app.run(inline=True, inline_no_clear=False, mouse=False)
    print_conversation(app, Console())
    return app.return_code or 0


def print_conversation(app: DexterApp, console: Console) -> None:
    """The conversation as it was shown, then how to continue it, if it was saved."""
    print_transcript(app.transcript, console)
    agent = app.agent
    if isinstance(agent, Session) and app.has_turns and agent.session_id:
        console.print()
        console.print(resume_hint(agent.session_id))


class _AppApprover:
    """The session's approver: one prompt per call, and calls that would run together are
    shown together (each prompt lists the whole group and says which one it decides)."""

    def __init__(self, app: DexterApp) -> None:
        self.app = app

    async def __call__(self, request: ApprovalRequest) -> ApprovalAnswer:
        return await self.app._ask_approval(request)

    async def approve_many(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalAnswer]:
        answers: list[ApprovalAnswer] = []
        for request in requests:
            answer = await self.app._ask_approval(request, batch=requests)
            answers.append(answer)
            if answer is ApprovalAnswer.DENY:
                break  # a denial stops the rest of the response
        return answers
