"""Sessions: the list (with search), one session's transcript with a box to continue it, and
any answer exported in every report format as a download."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from dexter.config import ConfigError
from dexter.figure_marks import verification_from_dict
from dexter.store.sessions import SessionInfo, SessionStore, TurnInfo
from dexter.tools.citations import SourceEntry
from dexter.web.auth import login_of
from dexter.web.runs import described
from dexter.web.state import web_state
from dexter.web.templating import page
from dexter.web.views.access import is_own, owned_session
from dexter.web.views.ask import run_view

LISTED = 50
EXPORTS: dict[str, tuple[str, str]] = {
    "md": ("Markdown", "text/markdown; charset=utf-8"),
    "html": ("HTML", "text/html; charset=utf-8"),
    "pdf": ("PDF", "application/pdf"),
    "xlsx": ("Excel", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
}


def _row(info: SessionInfo, snippet: str = "") -> dict[str, Any]:
    return {
        "id": info.id,
        "title": info.title or "(no question yet)",
        "updated": info.updated_at[:16].replace("T", " "),
        "turns": info.turns,
        "tokens": info.total_tokens,
        "cost": info.cost_usd,
        "owner": info.principal_id,
        "snippet": snippet,
    }


async def session_list(request: Request) -> Response:
    state = web_state(request)
    principal = login_of(request).principal
    query = request.query_params.get("q", "").strip()
    owner = None if principal.is_operator else principal.id

    def rows() -> list[dict[str, Any]]:
        store = state.runtime.existing_store()
        if store is None:
            return []
        sessions = SessionStore(store)
        if query:
            found = sessions.search(query, limit=LISTED, principal_id=owner)
            return [_row(info, snippet) for info, snippet in found]
        listed = sessions.list(LISTED, include_empty=False, principal_id=owner)
        return [_row(info) for info in listed]

    return page(request, "sessions.html", rows=await state.hub.blocking(rows), query=query)


def _turn(turn: TurnInfo, home: Path) -> dict[str, Any]:
    """One question and answer of the transcript, with the tool calls and sources its run's
    scratchpad recorded (none when the scratchpad was cleaned up)."""
    from dexter.reports.build import read_scratchpad, scratchpad_path
    from dexter.web.render import answer_with_marks, figures_note, shown, sources_list
    from dexter.web.svg_charts import run_tables

    checked = verification_from_dict(turn.verification)
    records = read_scratchpad(scratchpad_path(home, turn.run_id)) if turn.run_id else []
    calls = [
        {
            "tool": str(r.get("tool") or ""),
            "args": shown(r.get("args") or {}),
            "result": shown(r.get("error") or r.get("result") or ""),
            "failed": bool(r.get("error")),
            "ms": round(float(r.get("duration_ms") or 0)),
        }
        for r in records
        if r.get("type") == "tool_call"
    ]
    answer: dict[str, Any] = next((r for r in reversed(records) if r.get("type") == "answer"), {})
    sources = [
        SourceEntry(str(s["id"]), str(s.get("label") or ""), s.get("url") or None)
        for s in answer.get("sources") or []
        if isinstance(s, dict) and s.get("id")
    ]
    return {
        "run_id": turn.run_id,
        "question": turn.query,
        "html": answer_with_marks(turn.answer, checked, turn.run_id) if turn.answer else "",
        "status": turn.status,
        "figures": figures_note(checked),
        "when": turn.started_at[:16].replace("T", " "),
        "calls": calls,
        "sources": sources_list(sources, turn.run_id),
        "tables": run_tables(records, turn.run_id) if turn.run_id else [],
    }


async def session_page(request: Request) -> Response:
    state = web_state(request)
    info = await owned_session(request, request.path_params["session_id"])
    home = state.runtime.settings.home

    def transcript() -> list[dict[str, Any]]:
        return [_turn(t, home) for t in SessionStore(state.runtime.store).turns(info.id)]

    turns = await state.hub.blocking(transcript)
    asked = request.query_params.get("run", "")
    live = (await state.hub.find(asked) if asked else None) or await state.hub.find_running(info.id)
    if live is not None and (live.session_id != info.id or live.finished):
        live = None
    return page(
        request,
        "session.html",
        session=_row(info),
        turns=turns,
        live=run_view(live) if live is not None else None,
        own=is_own(request, info.principal_id),
        exports=EXPORTS,
    )


async def export_answer(request: Request) -> Response:
    """GET /sessions/{id}/runs/{run}/export.{fmt}: one answer's report, as a download."""
    from dexter.reports.build import report_for
    from dexter.reports.render import require_format, to_html, to_markdown, to_pdf, to_xlsx

    state = web_state(request)
    info = await owned_session(request, request.path_params["session_id"])
    run_id, fmt = request.path_params["run_id"], request.path_params["fmt"]
    if fmt not in EXPORTS:
        raise HTTPException(404, f"No export as {fmt!r}; choose one of {', '.join(EXPORTS)}.")

    def build() -> Any:
        store = state.runtime.store
        turns = [t for t in SessionStore(store).turns(info.id) if t.run_id == run_id]
        if not turns:
            raise HTTPException(404, "That answer is not in this session.")
        require_format(fmt)
        return report_for(store, state.runtime.settings.home, run_id)

    def render(report: Any) -> bytes:
        if fmt == "md":
            return to_markdown(report).encode("utf-8")
        if fmt == "html":
            return to_html(report).encode("utf-8")
        return to_pdf(report) if fmt == "pdf" else to_xlsx(report)

    try:
        # Read on the store's thread; laid out (seconds for a PDF) on a thread of its own, so
        # other pages are not kept waiting.
        body = await asyncio.to_thread(render, await state.hub.blocking(build))
    except ConfigError as error:
        raise HTTPException(400, described(error)) from None
    name = f"dexter-report-{run_id[-8:]}.{fmt}"
    return Response(
        body,
        media_type=EXPORTS[fmt][1],
        headers={
            "content-disposition": f'attachment; filename="{name}"',
            "cache-control": "no-store",
        },
    )


routes = [
    Route("/sessions", session_list, methods=["GET"]),
    Route("/sessions/{session_id}", session_page, methods=["GET"]),
    Route("/sessions/{session_id}/runs/{run_id}/export.{fmt}", export_answer, methods=["GET"]),
]
