"""The ASGI app of `dexter web`: the views behind the auth gate, static files, error pages.

`create_app(state)` is all a server needs; `dexter.cli.web_command` builds the state from the
runtime and serves it with uvicorn. Other front doors mount beside the views through `mounts`
(the OpenBB Workspace endpoint, which authenticates its own callers, is one: `own_auth`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles

from dexter.web.auth import AuthGate
from dexter.web.state import WebState
from dexter.web.templating import page
from dexter.web.views import ask, jobs, login, sessions, sources, usage

STATIC = Path(__file__).with_name("static")


async def _http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    wants_html = "text/html" in request.headers.get("accept", "")
    if wants_html and getattr(request.state, "login", None) is not None:
        return page(request, "error.html", status_code=error.status_code, message=error.detail)
    return JSONResponse({"error": error.detail}, status_code=error.status_code)


def create_app(
    state: WebState,
    *,
    mounts: Sequence[BaseRoute] = (),
    own_auth: Sequence[str] = (),
    hosts: Sequence[str] | None = None,
) -> Starlette:
    """The app; `hosts`: the host names it answers to (None: any; `dexter web` on loopback
    passes the loopback names)."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await state.hub.aclose()
            await state.runtime.aclose()

    routes: list[BaseRoute] = [
        *login.routes,
        *ask.routes,
        *sessions.routes,
        *sources.routes,
        *jobs.routes,
        *usage.routes,
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
        *mounts,
    ]
    app = Starlette(
        routes=routes,
        middleware=[
            Middleware(
                AuthGate,
                logins=state.logins,
                cookie=state.cookie,
                own_auth=tuple(own_auth),
                hosts=tuple(hosts) if hosts is not None else None,
            )
        ],
        exception_handlers={HTTPException: _http_error},
        lifespan=lifespan,
    )
    app.state.web = state
    return app


__all__ = ["create_app"]
