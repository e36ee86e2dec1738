"""Asking and watching: the ask page, starting a run, its event stream, and the page's answers
to it (approvals, clarifying questions, cancel).

The stream sends what the run log holds after the `Last-Event-ID` the browser reconnects with,
then waits for more; the answer being written is sent as one `answer` event of its safe HTML
whenever it changed, so a burst of tokens costs one render, not one per token."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import anyio
from sse_starlette.sse import EventSourceResponse
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from dexter.config import ConfigError
from dexter.store.sessions import SessionLookupError
from dexter.tools.ask_user import Answer
from dexter.web.auth import login_of
from dexter.web.runs import LiveRun, RunBusy, described
from dexter.web.state import web_state
from dexter.web.templating import page
from dexter.web.views.access import owned_run, owned_session

MAX_QUESTION_CHARS = 20_000


def _wants_json(request: Request) -> bool:
    return "application/json" in request.headers.get("accept", "")


async def ask_page(request: Request) -> Response:
    return page(request, "ask.html")


async def start_run(request: Request) -> Response:
    """POST /ask: `question`, and `session` to continue one (else a new session)."""
    state = web_state(request)
    form = await request.form()
    question = str(form.get("question") or "").strip()
    session_id = str(form.get("session") or "").strip() or None
    if not question:
        raise HTTPException(400, "The question is empty: type what you want to know.")
    if len(question) > MAX_QUESTION_CHARS:
        raise HTTPException(400, f"The question is over {MAX_QUESTION_CHARS:,} characters.")
    if session_id is not None:
        await owned_session(request, session_id, to_continue=True)
    try:
        live = await state.hub.start(login_of(request).principal, question, session_id)
    except RunBusy:
        raise HTTPException(409, "This session is still answering; wait or cancel it.") from None
    except (ConfigError, SessionLookupError) as error:
        raise HTTPException(400, described(error)) from None
    where = f"/sessions/{live.session_id}?run={live.id}"
    if not _wants_json(request):
        return RedirectResponse(where, status_code=303)
    return JSONResponse(
        {
            "run": live.id,
            "session": live.session_id,
            "url": where,
            "events": f"/runs/{live.id}/events",
        }
    )


def run_view(live: LiveRun) -> dict[str, Any]:
    """What a page needs to attach to a run (the session page embeds it)."""
    return {"id": live.id, "question": live.question, "events": f"/runs/{live.id}/events"}


async def run_events(request: Request) -> Response:
    live = await owned_run(request, request.path_params["run_id"])
    try:
        start = int(request.headers.get("last-event-id", "-1")) + 1
    except ValueError:
        start = 0

    async def stream() -> AsyncIterator[dict[str, Any]]:
        sent, text_seen = max(0, start), -1
        while True:
            if await request.is_disconnected():
                return
            new, sent = live.log[sent:], len(live.log)
            for offset, item in enumerate(new):
                yield {
                    "event": item["type"],
                    "id": str(sent - len(new) + offset),
                    "data": json.dumps(item, ensure_ascii=False),
                }
            if live.text_version != text_seen:
                text_seen = live.text_version
                yield {"event": "answer", "data": json.dumps({"html": await live.text_html()})}
            if live.finished and sent == len(live.log):
                yield {"event": "end", "data": "{}"}
                return
            if not await _either(live.wait(sent, text_seen), stopping.wait()):
                return  # the server is stopping: end the stream cleanly

    stopping = anyio.Event()
    return EventSourceResponse(
        stream(),
        ping=15,
        headers={"cache-control": "no-store"},
        shutdown_event=stopping,
        shutdown_grace_period=1.0,
    )


async def _either(first: Awaitable[None], second: Awaitable[None]) -> bool:
    """Wait for whichever ends first; True when it was `first`."""
    one, two = asyncio.ensure_future(first), asyncio.ensure_future(second)
    await asyncio.wait((one, two), return_when=asyncio.FIRST_COMPLETED)
    for task in (one, two):
        task.cancel()
    return one.done() and not one.cancelled()


async def cancel_run(request: Request) -> Response:
    live = await owned_run(request, request.path_params["run_id"])
    cancelled = await web_state(request).hub.request_cancel(live)
    return JSONResponse({"cancelled": cancelled})


async def answer_approval(request: Request) -> Response:
    live = await owned_run(request, request.path_params["run_id"])
    form = await request.form()
    taken = await live.answer_approval(request.path_params["key"], str(form.get("answer") or ""))
    if not taken:
        raise HTTPException(409, "That approval is no longer open, or the answer is not offered.")
    return JSONResponse({"ok": True})


async def answer_question(request: Request) -> Response:
    live = await owned_run(request, request.path_params["run_id"])
    form = await request.form()
    answer = Answer(
        selected=tuple(str(v) for v in form.getlist("selected")),
        text=str(form.get("text") or "").strip(),
        declined=bool(form.get("declined")),
    )
    if not await live.answer_question(request.path_params["key"], answer):
        raise HTTPException(409, "That question is no longer open.")
    return JSONResponse({"ok": True})


routes = [
    Route("/", ask_page, methods=["GET"]),
    Route("/ask", start_run, methods=["POST"]),
    Route("/runs/{run_id}/events", run_events, methods=["GET"]),
    Route("/runs/{run_id}/cancel", cancel_run, methods=["POST"]),
    Route("/runs/{run_id}/approvals/{key}", answer_approval, methods=["POST"]),
    Route("/runs/{run_id}/questions/{key}", answer_question, methods=["POST"]),
]
