"""`dexter web` in team mode: each question goes on the team's queue and a `dexter worker`
answers it, as the web user's principal, in their session, exactly as `RunHub` does in process.

The worker turns the run's events into the page's items (`PublishingRun`, the same `LiveRun`
translation) and appends them to the run log in Postgres (`dexter.work.runlog`); the web app
follows them there (`FollowedRun`, woken by NOTIFY, polling as a fallback), so a reloaded
page or a second `dexter web` process shows the same run. Approvals and clarifying questions
are items; the page's answer is a row the worker polls for, with the same timeout as in
process. Cancel is a flag on the run's row that the worker checks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dexter.agent.events import Event, TextDelta
from dexter.principal import Grants, Principal
from dexter.tools.ask_user import Answer
from dexter.web.runs import APPROVAL_CHOICES, KEPT_RUNS, LiveRun, RunBusy, RunHub, answer_into
from dexter.work.queue import WEB, Handler, RunRequest
from dexter.work.runlog import CHANNEL, RunLog, connect

if TYPE_CHECKING:
    from dexter.runtime import Runtime
    from dexter.work.engine import PgQueue

log = logging.getLogger("dexter.web")

# The page follows a run from NOTIFY; this is only how late a missed notification is noticed.
FOLLOW_POLL = 1.0
# How often the worker looks for the page's answers and a cancel.
WATCH_POLL = 0.2
QUEUED_NOTE = "Queued: a team worker (`dexter worker`) answers this question."
WORKER_LOST = "The worker answering this stopped before it finished; ask again."


def principal_payload(principal: Principal) -> dict[str, Any]:
    return {
        "id": principal.id,
        "kind": principal.kind,
        "display_name": principal.display_name,
        "grants": principal.grants.to_dict(),
        "reply_target": principal.reply_target,
    }


def principal_from(data: Mapping[str, Any]) -> Principal:
    return Principal(
        data["id"],
        data["kind"],
        data["display_name"],
        Grants.from_dict(data["grants"]),
        data.get("reply_target"),
    )


# --------------------------------------------------------------------------- the web side


@dataclass
class FollowedRun(LiveRun):
    """A run on a worker, as the page sees it: its log read back from the database."""

    runlog: RunLog | None = None
    last_item: int = 0
    # Open approvals (their offered choices) and questions, from the items so far.
    open_approvals: dict[str, list[str]] = field(default_factory=dict)
    open_questions: set[str] = field(default_factory=set)
    woken: asyncio.Event = field(default_factory=asyncio.Event)

    async def apply(self, item: dict[str, Any]) -> None:
        kind = item.get("type")
        if kind == "text":
            self.text = item["set"] if "set" in item else self.text + item["append"]
            self.text_version += 1
            await self._notify()
            return
        if kind == "finished":
            self.finished = True
            await self._notify()
            return
        if kind == "started":
            self.run_id = item.get("run_id", "")
        elif kind == "approval":
            self.open_approvals[item["id"]] = list(item.get("choices", []))
        elif kind == "approval_settled":
            self.open_approvals.pop(item["id"], None)
        elif kind == "question":
            self.open_questions.add(item["id"])
        elif kind == "question_settled":
            self.open_questions.discard(item["id"])
        await self.add(item)

    async def answer_approval(self, key: str, choice: str) -> bool:
        offered = self.open_approvals.get(key)
        if offered is None or choice not in offered or choice not in APPROVAL_CHOICES:
            return False
        assert self.runlog is not None
        return await self.runlog.answer(self.id, key, {"choice": choice})

    async def answer_question(self, key: str, answer: Answer) -> bool:
        if key not in self.open_questions:
            return False
        assert self.runlog is not None
        body = {"selected": list(answer.selected), "text": answer.text, "declined": answer.declined}
        return await self.runlog.answer(self.id, key, body)


class QueuedRunHub(RunHub):
    """`RunHub` for team mode: runs are enqueued, followed and cancelled through Postgres."""

    def __init__(self, runtime: Runtime, url: str, *, model: str | None = None) -> None:
        super().__init__(runtime, model=model)
        self.url = url
        self._queue: PgQueue | None = None
        self._runlog: RunLog | None = None
        self._listener: asyncio.Task[None] | None = None
        self._opening = asyncio.Lock()
        self._follows: dict[str, asyncio.Task[None]] = {}

    async def _open(self) -> RunLog:
        async with self._opening:
            if self._runlog is None:
                from dexter.work.engine import PgQueue

                queue = PgQueue(self.url, max_connections=2)
                await queue.__aenter__()  # installs the queue's and the run log's tables
                self._queue = queue
                self._runlog = RunLog(await connect(self.url))
                self._listener = asyncio.create_task(self._listen(), name="dexter-web-listen")
                with contextlib.suppress(Exception):
                    await self._runlog.prune()
            return self._runlog

    async def _listen(self) -> None:
        try:
            conn = await connect(self.url)
        except Exception as exc:  # polling alone still shows the runs
            log.warning("no notifications from the run log (%s); polling", exc)
            return
        try:
            await conn.execute(f"LISTEN {CHANNEL}")
            async for note in conn.notifies():
                live = self.runs.get(note.payload)
                if isinstance(live, FollowedRun):
                    live.woken.set()
        finally:
            await conn.close()

    async def start(self, principal: Principal, question: str, session_id: str | None) -> LiveRun:
        runlog = await self._open()
        if session_id is None:
            session_id = await self.blocking(lambda: self._new_session(principal))
        run_id = secrets.token_urlsafe(12)
        if not await runlog.open_run(run_id, WEB, principal.id, session_id, question):
            raise RunBusy(session_id)
        await runlog.append(run_id, [{"type": "note", "text": QUEUED_NOTE}])
        assert self._queue is not None
        await self._queue.enqueue(
            RunRequest(
                kind=WEB,
                run_id=run_id,
                principal_id=principal.id,
                key=session_id,
                payload={
                    "question": question,
                    "session_id": session_id,
                    "model": self.model,
                    "principal": principal_payload(principal),
                },
            )
        )
        return self._follow(FollowedRun(run_id, principal.id, session_id, question))

    def _new_session(self, principal: Principal) -> str:
        """The session the first question of a conversation is answered in: created here, so
        the page can open it before a worker has taken the question."""
        from dexter.session import SessionRecorder

        runtime = self.runtime
        recorder = SessionRecorder(runtime.store, runtime.ledger, "", principal=principal)
        return recorder.create_session(runtime.client(self.model).name)

    def _follow(self, live: FollowedRun) -> FollowedRun:
        live.runlog = self._runlog
        self.runs[live.id] = live
        self._follows[live.id] = asyncio.create_task(self._read(live), name=f"follow-{live.id}")
        while len(self.runs) > KEPT_RUNS:
            oldest_id, oldest = next(iter(self.runs.items()))
            if not oldest.finished:
                break
            self.runs.popitem(last=False)
            self._follows.pop(oldest_id, None)
        return live

    async def _read(self, live: FollowedRun) -> None:
        assert self._runlog is not None
        while not live.finished:
            live.woken.clear()
            try:
                for item_id, item in await self._runlog.items_after(live.id, live.last_item):
                    live.last_item = item_id
                    await live.apply(item)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the database away for a moment: the next round reads
                log.warning("reading run %s failed: %s", live.id, exc)
            if not live.finished:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(live.woken.wait(), FOLLOW_POLL)

    async def find(self, run_id: str) -> LiveRun | None:
        kept = self.runs.get(run_id)
        if kept is not None or not run_id:
            return kept
        found = await (await self._open()).run(run_id)
        if found is None or found.kind != WEB:
            return None
        return self._follow(
            FollowedRun(found.run_id, found.principal_id, found.key, found.question)
        )

    async def find_running(self, session_id: str) -> LiveRun | None:
        found = await (await self._open()).open_in(session_id)
        return None if found is None else await self.find(found.run_id)

    async def request_cancel(self, live: LiveRun) -> bool:
        if live.finished:
            return False
        return await (await self._open()).request_cancel(live.id)

    async def aclose(self) -> None:
        tasks = [*self._follows.values(), *([self._listener] if self._listener else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._follows.clear()
        if self._runlog is not None:
            await self._runlog.conn.close()
            self._runlog = None
        if self._queue is not None:
            await self._queue.__aexit__(None, None, None)
            self._queue = None
        await super().aclose()


# --------------------------------------------------------------------------- the worker side


@dataclass
class PublishingRun(LiveRun):
    """A run answered on a worker: every item the page would show goes to the run log, in
    order, batched while the previous batch is being written."""

    runlog: RunLog | None = None
    _pending: list[dict[str, Any]] = field(default_factory=list)
    _writing: asyncio.Task[None] | None = None

    async def add(self, item: dict[str, Any]) -> None:
        await super().add(item)
        self.publish(item)

    async def take(self, event: Event) -> None:
        round_before, version_before = self.text_round, self.text_version
        await super().take(event)
        if self.text_version != version_before:
            if isinstance(event, TextDelta) and self.text_round == round_before:
                self.publish({"type": "text", "append": event.text})
            else:
                self.publish({"type": "text", "set": self.text})

    def publish(self, item: dict[str, Any]) -> None:
        self._pending.append(item)
        if self._writing is None or self._writing.done():
            self._writing = asyncio.create_task(self._write())

    async def _write(self) -> None:
        assert self.runlog is not None
        while self._pending:
            batch, self._pending = self._pending, []
            try:
                await self.runlog.append(self.id, batch)
            except Exception as exc:  # the page misses these; the turn is still recorded
                log.warning("publishing run %s failed: %s", self.id, exc)

    async def published(self) -> None:
        while self._writing is not None and not self._writing.done():
            await self._writing


def web_handler(runtime: Runtime, url: str) -> Handler:
    """What a worker does with a question asked in `dexter web`."""
    building = threading.Lock()

    async def handle(request: RunRequest) -> None:
        conn = await connect(url)
        try:
            await _answer(runtime, building, RunLog(conn), request)
        finally:
            await conn.close()

    return handle


async def _answer(
    runtime: Runtime, building: threading.Lock, runlog: RunLog, request: RunRequest
) -> None:
    from dexter.runtime import WEB as WEB_CHANNEL
    from dexter.runtime import AgentSpec

    found = await runlog.run(request.run_id)
    if found is None or found.finished:
        return
    payload = request.payload
    principal = principal_from(payload["principal"])
    live = PublishingRun(request.run_id, principal.id, payload["session_id"], payload["question"])
    live.runlog = runlog
    try:
        if principal.id != request.principal_id or principal.id != found.principal_id:
            await live.add({"type": "failed", "error": "This run's principal does not match."})
        elif request.attempt > 0:
            # Its events so far are on the page; a second run would repeat them differently.
            await live.add({"type": "failed", "error": WORKER_LOST})
        elif found.cancel_requested:
            await live.add({"type": "cancelled"})
        else:
            spec = AgentSpec(
                model=payload.get("model"),
                channel=WEB_CHANNEL,
                resume=payload["session_id"],
                principal=principal,
            )

            def build() -> Any:
                with building:  # one agent built at a time, as `RunHub` does
                    return runtime.agent(spec, approver=live.approve, ask_user=live.ask)

            try:
                session = await asyncio.to_thread(build)
            except Exception as error:
                from dexter.web.runs import described

                await live.add({"type": "failed", "error": described(error)})
            else:
                task = asyncio.create_task(answer_into(session, live))
                watcher = asyncio.create_task(_watch(runlog, live, task))
                try:
                    await asyncio.shield(task)
                finally:
                    watcher.cancel()
                    await asyncio.gather(watcher, return_exceptions=True)
                await runtime.writer.drain(30.0)
    finally:
        live.publish({"type": "finished"})
        await live.published()
        await runlog.finish(request.run_id)


async def _watch(runlog: RunLog, live: PublishingRun, task: asyncio.Task[None]) -> None:
    """Hand the page's answers to the run and cancel it when the page asks to."""
    while not task.done():
        await asyncio.sleep(WATCH_POLL)
        try:
            found = await runlog.run(live.id)
            if found is not None and found.cancel_requested:
                task.cancel()
                return
            if live._approvals or live._questions:
                for key, answer in (await runlog.answers(live.id)).items():
                    if key in live._approvals:
                        live.settle_approval(key, str(answer.get("choice", "")))
                    elif key in live._questions:
                        live.settle_question(
                            key,
                            Answer(
                                selected=tuple(answer.get("selected", ())),
                                text=str(answer.get("text", "")),
                                declined=bool(answer.get("declined")),
                            ),
                        )
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the next round looks again
            log.warning("watching run %s failed: %s", live.id, exc)


__all__ = ["FollowedRun", "PublishingRun", "QueuedRunHub", "web_handler"]
