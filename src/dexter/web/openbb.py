"""Dexter as a custom agent in OpenBB Workspace: `/agents.json` and a streaming `/query`.

Workspace (https://pro.openbb.co) calls the agent from the user's browser: it reads
`<base>/agents.json` when the agent is added, then POSTs each chat message to the query
endpoint named there and shows the Server-Sent Events it gets back (`openbb_events`).

Every run acts for one principal (default `web:openbb`): its own sessions, memory and usage
rows, only the public research tools, and nobody to approve anything, so a tool call that needs
approval is refused with a reasoning step saying so. Widget data shared from a dashboard goes to
the model as untrusted context (`openbb_request`) and can never unlock a tool.

Access: the query endpoint needs the key from settings (`openbb.apiKey`, or
DEXTER_OPENBB_API_KEY) as `Authorization: Bearer <key>`, `X-API-Key: <key>`, or the agent's
"Dexter API key" option in Workspace; without a key configured it refuses every query.
Browsers may call it only from the allowed origins (`openbb.allowOrigins`, default Workspace's
own); preflights are answered, including Chrome's private-network preflight for an agent on
127.0.0.1 (`openbb_access`).

Mount it with `openbb_mount(runtime, openbb_config(settings))`; the runtime is the only thing
it uses, through `BuildsAgents`.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from dexter.config import ConfigError, Settings, get_secret, is_placeholder
from dexter.errors import DexterError
from dexter.principal import Principal
from dexter.web.openbb_access import (
    API_KEY_LABEL,
    API_KEY_OPTION,
    KEY_ENV,
    ASGIApp,
    CorsGuard,
    KeyGuard,
)

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Mount

    from dexter.agent.events import Done, Event
    from dexter.reports.model import Table
    from dexter.runtime import AgentSpec
    from dexter.web.openbb_events import WorkspaceEvent
    from dexter.web.openbb_request import Prompt, Widget

log = logging.getLogger("dexter.web.openbb")

WORKSPACE_ORIGIN = "https://pro.openbb.co"
AGENT_ID = "dexter"
MOUNT_PATH = "/openbb"
MIN_KEY = 16
_ORIGIN = re.compile(r"https?://[A-Za-z0-9.-]+(:\d{1,5})?|https?://\[[0-9A-Fa-f:.]+\](:\d{1,5})?")
# A QueryRequest with a few widgets' data is well under this; more is refused before parsing.
MAX_BODY = 8 * 1024 * 1024
# A comment line this often keeps proxies from closing a stream while a tool runs.
PING_SECONDS = 15
OPENBB_PRINCIPAL = Principal("web:openbb", "web", "OpenBB Workspace")
DESCRIPTION = (
    "Dexter, an open financial research agent: it answers from SEC filings and XBRL data "
    "(and the web), checks every figure of its answer against that data, and cites each "
    "source. Statement tables and charts come with the answer; widgets you share are read "
    "as data."
)


@dataclass(frozen=True)
class OpenBBConfig:
    """How the endpoint is reached and whom its runs act for."""

    # The key Workspace must send; None: every query is refused until one is set.
    api_key: str | None
    allow_origins: tuple[str, ...] = (WORKSPACE_ORIGIN,)
    # The model runs use (None: the settings' model).
    model: str | None = None
    principal: Principal = OPENBB_PRINCIPAL


def openbb_config(settings: Settings) -> OpenBBConfig:
    """The endpoint's settings: `openbb` in settings.json, DEXTER_OPENBB_API_KEY over its key.
    ConfigError for a key too short to be one or an origin that is not `scheme://host[:port]`."""
    from dexter.settings_model import OpenBBSettings

    section = settings.section(OpenBBSettings)
    written = section.api_key if not is_placeholder(section.api_key) else None
    key = (get_secret(settings, KEY_ENV) or written or "").strip() or None
    if key is not None and len(key) < MIN_KEY:
        raise ConfigError(f"the OpenBB API key ({KEY_ENV}) is too short: use {MIN_KEY}+ characters")
    origins: list[str] = []
    for given in section.allow_origins:
        origin = given.strip().rstrip("/")
        if origin != "*" and not _ORIGIN.fullmatch(origin):
            raise ConfigError(
                f'"openbb.allowOrigins": {given!r} is not an origin; write it like '
                f"{WORKSPACE_ORIGIN} (scheme, host and port only) or * for any"
            )
        origins.append(origin)
    return OpenBBConfig(api_key=key, allow_origins=tuple(origins), model=section.model)


class RunsQuestions(Protocol):
    def run(self, query: str) -> AsyncIterator[Event]: ...


class BuildsAgents(Protocol):
    """What the endpoint needs of the runtime: an agent for a spec (`Runtime.agent`)."""

    def agent(self, spec: AgentSpec, /) -> RunsQuestions: ...


# --------------------------------------------------------------------------- the app


def openbb_mount(agents: BuildsAgents, config: OpenBBConfig, *, path: str = MOUNT_PATH) -> Mount:
    """The endpoint as a Starlette `Mount` at `path`: Workspace's base URL is
    `http://HOST:PORT{path}`. It carries its own CORS and key checks, so the app it is mounted
    in must not put cookie sessions or CSRF checks in front of it."""
    from starlette.routing import Mount

    return Mount(path, app=openbb_app(agents, config))


def openbb_app(agents: BuildsAgents, config: OpenBBConfig) -> ASGIApp:
    """The endpoint as an ASGI app: GET /agents.json, POST /query."""
    try:
        from starlette.routing import Route, Router
    except ImportError:
        from dexter.install import missing_extra

        raise missing_extra("The OpenBB Workspace endpoint", "web", "starlette") from None

    async def agents_json(request: Request) -> Response:
        from starlette.responses import JSONResponse

        # Beside this file, wherever the app is mounted (a name lookup would not cross the
        # guards around the router).
        path = request.url.path.removesuffix("agents.json") + "query"
        return JSONResponse(agent_description(str(request.url.replace(path=path, query=""))))

    async def query(request: Request) -> Response:
        return await answer_query(request, agents, config)

    router = Router(
        [
            Route("/agents.json", agents_json, methods=["GET"], name="openbb_agents"),
            Route("/query", query, methods=["POST"], name="openbb_query"),
        ]
    )
    guarded = KeyGuard(router, config.api_key, max_body=MAX_BODY)
    return CorsGuard(guarded, config.allow_origins)


def agent_description(query_url: str) -> dict[str, Any]:
    """`/agents.json`: who Dexter is to Workspace and what it supports."""
    return {
        AGENT_ID: {
            "name": "Dexter",
            "description": DESCRIPTION,
            "endpoints": {"query": query_url},
            "features": {
                "streaming": True,
                # The widgets the user selects: their data is fetched and read as data.
                "widget-dashboard-select": True,
                # The dashboard's other widgets: their names and parameters are read too.
                "widget-dashboard-search": True,
                # Where Workspace cannot send a header, the key is entered here instead.
                API_KEY_OPTION: {
                    "label": API_KEY_LABEL,
                    "type": "text",
                    "default": "",
                    "placeholder": f"the key set as {KEY_ENV} or openbb.apiKey",
                    "description": "Sent with every question; Dexter answers only with it.",
                },
            },
        }
    }


async def answer_query(request: Request, agents: BuildsAgents, config: OpenBBConfig) -> Response:
    from sse_starlette import EventSourceResponse
    from starlette.responses import JSONResponse

    from dexter.web.openbb_events import widget_data_request
    from dexter.web.openbb_request import QueryError, build_prompt, parse_query, widgets_to_fetch

    body = await _body(request)
    if body is None:
        return JSONResponse(
            {"error": "too_large", "message": f"the request is over {MAX_BODY:,} bytes"}, 413
        )
    try:
        parsed = parse_query(body)
    except QueryError as error:
        return JSONResponse({"error": "bad_request", "message": str(error)}, 422)
    fetch = widgets_to_fetch(parsed)
    if fetch:
        # Workspace runs the call and comes back with the data in a new request.
        asked = widget_data_request([w.data_source() for w in fetch])
        return EventSourceResponse(_replay([asked.sse()]), ping=PING_SECONDS)
    prompt = build_prompt(parsed)
    return EventSourceResponse(_research(agents, config, prompt), ping=PING_SECONDS)


async def _body(request: Request) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


async def _replay(events: Iterable[dict[str, str]]) -> AsyncIterator[dict[str, str]]:
    for event in events:
        yield event


async def _research(
    agents: BuildsAgents, config: OpenBBConfig, prompt: Prompt
) -> AsyncIterator[dict[str, str]]:
    """The run's events as Workspace events, then its tables, charts and citations."""
    from dexter.agent.events import Done
    from dexter.runtime import OPENBB, AgentSpec
    from dexter.web.openbb_events import WorkspaceStream, message_chunk, reasoning_step

    spec = AgentSpec(
        model=config.model,
        channel=OPENBB,
        principal=config.principal,
        untrusted_context=prompt.untrusted,
    )
    stream = WorkspaceStream()
    done: Done | None = None
    try:
        agent = agents.agent(spec)
        events = agent.run(prompt.text)
        try:
            async for event in events:
                for out in stream.feed(event):
                    yield out.sse()
                if isinstance(event, Done):
                    done = event
        finally:
            # Workspace closed the panel or the stream: the run stops with it.
            close = getattr(events, "aclose", None)
            if close is not None:
                await close()
    except DexterError as error:
        # A missing key, an unknown model: said in the chat panel, where the user looks.
        yield reasoning_step(f"Dexter could not run: {error}", "ERROR").sse()
        yield message_chunk(f"Dexter could not run: {error}").sse()
        return
    except Exception as error:  # a bug: the panel says so; the log keeps the traceback
        log.exception("an OpenBB Workspace run failed")
        problem = f"{type(error).__name__}: {error}"
        yield reasoning_step(f"Dexter stopped unexpectedly ({problem})", "ERROR").sse()
        yield message_chunk(f"Dexter stopped unexpectedly ({problem}).").sse()
        return
    if done is None or done.status != "answered":
        return
    for out in await _closing(done, stream.scratchpad, prompt.widgets):
        yield out.sse()


async def _closing(
    done: Done, scratchpad: str | None, widgets: tuple[Widget, ...]
) -> list[WorkspaceEvent]:
    """Tables and charts of the statements the run fetched, then one citation list: the
    sources the answer cites, the filings behind the tables, the widgets it read."""
    from dexter.web.openbb_events import (
        citations,
        cited_sources,
        filing_citations,
        source_citation,
        table_events,
    )
    from dexter.web.openbb_request import widget_citation

    tables = await asyncio.to_thread(_tables, scratchpad)
    out = [event for table in tables for event in table_events(table)]
    cited = cited_sources(done)
    entries = [source_citation(s) for s in cited]
    filings = filing_citations(tables, cited)
    if filings is not None:
        entries += filings.data["citations"]
    entries += [widget_citation(w) for w in widgets]
    if entries:
        out.append(citations(entries))
    return out


def _tables(scratchpad: str | None) -> list[Table]:
    """The statement tables the run's tool calls fetched, from its scratchpad (as reports
    build them); none when it cannot be read."""
    if not scratchpad:
        return []
    from dexter.reports.build import read_scratchpad, tables_from_calls

    try:
        return tables_from_calls(read_scratchpad(Path(scratchpad)))
    except OSError as error:
        log.warning("could not read the run's scratchpad %s: %s", scratchpad, error)
        return []


__all__ = [
    "AGENT_ID",
    "KEY_ENV",
    "MOUNT_PATH",
    "OPENBB_PRINCIPAL",
    "WORKSPACE_ORIGIN",
    "BuildsAgents",
    "OpenBBConfig",
    "RunsQuestions",
    "agent_description",
    "openbb_app",
    "openbb_config",
    "openbb_mount",
]
