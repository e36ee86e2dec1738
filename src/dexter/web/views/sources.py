"""A cited source, opened from the citation in an answer: the passage of the filing the run read
(highlighted), the XBRL facts it used (concept, period, form, accession, filing link) or the web
page; and a run's statement tables and charts, for the page to put beside a streamed answer.

Both read the run's scratchpad (what its tools returned), found through the turn that recorded
the run; only whoever may see that session may open them."""

from __future__ import annotations

from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from dexter.store.sessions import SessionInfo
from dexter.web.state import web_state
from dexter.web.templating import environment, page
from dexter.web.views.access import owned_session


async def _run(request: Request) -> tuple[SessionInfo, str, list[dict[str, Any]]]:
    """The session, answer and scratchpad records of the run in the path, if this login may
    see its session."""
    from dexter.reports.build import read_scratchpad, scratchpad_path

    state = web_state(request)
    run_id = request.path_params["run_id"]

    def turn() -> tuple[str, str] | None:
        store = state.runtime.existing_store()
        if store is None:
            return None
        rows = store.query(
            "SELECT session_id, answer FROM turns WHERE run_id = ? ORDER BY id DESC LIMIT 1",
            (run_id,),
        )
        return (str(rows[0]["session_id"]), str(rows[0]["answer"] or "")) if rows else None

    found = await state.hub.blocking(turn)
    if found is None:
        raise HTTPException(404, "No answer of that run is recorded.")
    info = await owned_session(request, found[0])
    path = scratchpad_path(state.runtime.settings.home, run_id)
    records = await state.hub.blocking(lambda: read_scratchpad(path))
    return info, found[1], records


async def source_page(request: Request) -> Response:
    from dexter.reports.markup import web_url
    from dexter.web.evidence import source_view

    info, answer, records = await _run(request)
    source_id = request.path_params["source_id"]
    raw = request.query_params.get("c", "")
    occurrence = int(raw) if raw.isdigit() else None
    view = source_view(records, answer, source_id, occurrence)
    if view is None and not records:
        raise HTTPException(
            404,
            "This run's record of what its tools read (its scratchpad) is gone, so its sources "
            "can no longer be opened; the sources listed under the answer still link out.",
        )
    if view is None:
        raise HTTPException(404, f"This answer lists no source {source_id}.")
    return page(
        request,
        "source.html",
        source=view,
        link=web_url(view.url),
        session={"id": info.id, "title": info.title or "(untitled)"},
        run_id=request.path_params["run_id"],
    )


async def run_evidence(request: Request) -> Response:
    """The run's tables and charts as a fragment the page inserts beside a finished answer."""
    from starlette.responses import HTMLResponse

    from dexter.web.svg_charts import run_tables

    _, _, records = await _run(request)
    html = (
        environment()
        .get_template("_evidence.html")
        .render(tables=run_tables(records, request.path_params["run_id"]))
    )
    return HTMLResponse(html, headers={"cache-control": "no-store"})


routes = [
    Route("/sources/{run_id}/{source_id}", source_page, methods=["GET"]),
    Route("/evidence/{run_id}", run_evidence, methods=["GET"]),
]
