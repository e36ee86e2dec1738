"""Dexter as an MCP server: every data call and `calculate` as a typed, read-only tool, plus
`research`, which runs a whole question through the agent and reports progress as it goes.

The tool list is generated from the tools themselves (name, schema, description), so a data call
added to the registry is served here without a second list. Calls go through the same steps as
inside Dexter: validate, permission rules (nobody can be asked here, so anything that would ask
is refused), run under a timeout, normalise, and list the sources the output cites.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, ValidationError

from dexter.agent.events import (
    Done,
    Event,
    Revising,
    ToolEnd,
    ToolError,
    ToolProgress,
    ToolStart,
)
from dexter.figure_marks import marked_answer
from dexter.permissions.gate import PermissionPolicy
from dexter.skills.discovery import Skill
from dexter.tools.base import Tool, ToolContext
from dexter.tools.citations import SourceEntry
from dexter.tools.invoke import invoke

if TYPE_CHECKING:
    import mcp_types
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server

SERVER_NAME = "dexter"
RESEARCH_TOOL = "research"

INSTRUCTIONS = (
    "Dexter serves financial data from SEC EDGAR (and Financial Datasets when configured): "
    "statements, ratios, XBRL facts, filings and their sections, insider trades, 13F holdings "
    "and screens, plus exact arithmetic with `calculate`. Outputs carry source ids like [S1] "
    "with the sources listed at the end; cite them. `research` answers a whole question with "
    "Dexter's own agent (slower; use it for multi-step questions)."
)

# Events of a research run, as a callable the server can drive; the runtime supplies it.
ResearchRun = Callable[[str, int | None], AsyncIterator[Event]]


class ResearchArgs(BaseModel):
    question: str = Field(
        description="The research question in plain words, e.g. 'How did Apple's gross margin "
        "change from FY2023 to FY2025, and why?'"
    )
    max_iterations: int | None = Field(
        None, ge=1, le=30, description="Model rounds before answering (default: Dexter's)."
    )


@dataclass(frozen=True)
class Served:
    """What the server offers: tools (already chosen for the mcp channel) and research."""

    tools: Sequence[Tool[Any]]
    policy: PermissionPolicy
    research: ResearchRun | None = None
    # Built-in and user skills (DCF, memo …), offered to hosts as prompts.
    skills: Sequence[Skill] = ()
    # The one folder research may read files in; None: research reads no files.
    workspace: Path | None = None


def _title(tool: Tool[Any]) -> str:
    explicit = getattr(tool, "title", None)
    if isinstance(explicit, str) and explicit:
        return explicit
    words = tool.name.replace("_", " ")
    return words[:1].upper() + words[1:]


def tool_definitions(served: Served) -> list[mcp_types.Tool]:
    import mcp_types as types

    tools = [
        types.Tool(
            name=tool.name,
            title=_title(tool),
            description=tool.description,
            input_schema=tool.spec().parameters,
            annotations=types.ToolAnnotations(
                title=_title(tool),
                read_only_hint=True,
                destructive_hint=False,
                idempotent_hint=True,
                # Data calls reach SEC EDGAR or a data provider; calculate reaches nothing.
                open_world_hint=tool.name != "calculate",
            ),
        )
        for tool in served.tools
    ]
    if served.research is not None:
        schema = ResearchArgs.model_json_schema()
        tools.append(
            types.Tool(
                name=RESEARCH_TOOL,
                title="Research a question with Dexter",
                description=(
                    "Answer a financial research question end to end: Dexter plans, fetches "
                    "filings and data, computes exactly, and answers with cited sources. Sends "
                    "progress notifications while it works; takes from seconds to minutes. "
                    + _files_note(served.workspace)
                ),
                input_schema=schema,
                annotations=types.ToolAnnotations(
                    title="Research a question with Dexter",
                    read_only_hint=True,
                    destructive_hint=False,
                    idempotent_hint=False,
                    open_world_hint=True,
                ),
            )
        )
    return tools


def _files_note(workspace: Path | None) -> str:
    if workspace is None:
        return "It reads no local files (the server was started without a workspace)."
    return f"It may read files in {workspace} (and nowhere else) when a question needs them."


def _problems(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()[:5]
    )


def _error(text: str) -> mcp_types.CallToolResult:
    import mcp_types as types

    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def _sources_text(sources: Sequence[SourceEntry]) -> str:
    lines = [f"[{s.id}] {s.label}" + (f" <{s.url}>" if s.url else "") for s in sources]
    return "Sources\n" + "\n".join(lines) if lines else ""


def _json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


async def call_data_tool(
    served: Served, tool: Tool[Any], arguments: dict[str, Any]
) -> mcp_types.CallToolResult:
    """Through the one invocation path (validate, gate with nobody to ask, run under the tool's
    timeout, normalise), exactly as inside Dexter; the answer links its sources."""
    import mcp_types as types

    ctx = ToolContext(call_id="mcp")
    outcome = await invoke(tool, arguments, ctx, policy=served.policy, approve=None)
    sources = ctx.sources.entries()
    text = outcome.content
    # The output already names its sources; hosts also get the links to open them.
    links = [f"[{s.id}] {s.url}" for s in sources if s.url]
    if links:
        text = f"{text.rstrip()}\n\nSource links\n" + "\n".join(links)
    return types.CallToolResult(
        content=[types.TextContent(text=text)],
        structured_content={
            "content": outcome.content,
            "data": _json_safe(outcome.data),
            "sources": [s.to_dict() for s in sources],
        },
        is_error=outcome.is_error,
    )


ProgressFn = Callable[[float, str], Awaitable[None]]


def _progress_line(event: Event) -> str | None:
    if isinstance(event, Revising):
        return f"checking figures: revising {len(event.unsupported)} not found in the data"
    if isinstance(event, ToolStart):
        return f"running {event.tool}"
    if isinstance(event, ToolEnd):
        return f"{event.tool} done ({event.duration_ms / 1000:.1f} s)"
    if isinstance(event, ToolError):
        return f"{event.tool} failed: {event.error[:200]}"
    if isinstance(event, ToolProgress):
        return f"{event.tool}: {event.message[:200]}"
    return None


async def run_research(
    research: ResearchRun, arguments: dict[str, Any], progress: ProgressFn
) -> mcp_types.CallToolResult:
    import mcp_types as types

    try:
        args = ResearchArgs.model_validate(arguments)
    except ValidationError as exc:
        return _error(f"invalid arguments for research: {_problems(exc)}")
    if not args.question.strip():
        return _error("the question is empty")
    done: Done | None = None
    step = 0
    await progress(step, "starting research")
    # Cancellation from the client arrives here as CancelledError and stops the run mid-step.
    async for event in research(args.question, args.max_iterations):
        line = _progress_line(event)
        if line is not None:
            step += 1
            await progress(step, line)
        if isinstance(event, Done):
            done = event
    if done is None:
        return _error("the research run ended without an answer")
    text = marked_answer(done.answer, done.verification).strip() or "(no answer)"
    if done.sources:
        text = f"{text}\n\n{_sources_text(done.sources)}"
    if done.status != "answered":
        text = f"Research {done.status}: {done.error or 'no answer'}\n\n{text}"
    return types.CallToolResult(
        content=[types.TextContent(text=text)],
        structured_content={
            "answer": done.answer,
            "status": done.status,
            "error": done.error,
            "iterations": done.iterations,
            "tool_calls": len(done.tool_calls),
            "sources": [s.to_dict() for s in done.sources],
            **_checked(done),
        },
        is_error=done.status != "answered",
    )


def _checked(done: Done) -> dict[str, Any]:
    """The figure check, as in `dexter ask --json`'s done event (absent when it is off)."""
    checked = done.verification
    if checked is None:
        return {}
    return {
        "figures": [figure.to_dict() for figure in checked.figures],
        "verification": checked.summary(),
    }


FILINGS_TEMPLATE = "dexter://filings/{company}"
_FILINGS_PREFIX = "dexter://filings/"
REPORT_FORMS = ("10-K", "10-Q", "8-K", "20-F", "40-F", "6-K")


async def read_filings_resource(served: Served, uri: str) -> mcp_types.ReadResourceResult:
    """`dexter://filings/AAPL`: the company's 20 most recent reports (annual, quarterly,
    current), with links; insider forms and the like are left to the `filings` tool."""
    import mcp_types as types
    from mcp import MCPError
    from mcp_types import INVALID_PARAMS

    filings = next((t for t in served.tools if t.name == "filings"), None)
    company = (
        uri.removeprefix(_FILINGS_PREFIX).strip("/") if uri.startswith(_FILINGS_PREFIX) else ""
    )
    if filings is None or not company:
        raise MCPError(INVALID_PARAMS, f"unknown resource {uri!r}; try {FILINGS_TEMPLATE}")
    result = await call_data_tool(
        served, filings, {"company": company, "forms": list(REPORT_FORMS), "limit": 20}
    )
    if result.is_error:
        raise MCPError(INVALID_PARAMS, result.content[0].text)  # type: ignore[union-attr]
    text = result.content[0].text  # type: ignore[union-attr]
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, mime_type="text/markdown", text=text)]
    )


def skill_prompt(skill: Skill, request: str) -> str:
    return (
        f"Follow Dexter's {skill.name!r} workflow below for: {request.strip()}\n\n"
        "Use the Dexter server's tools for data (income_statements, balance_sheets, "
        "cash_flow_statements, financial_metrics, filing_section, filings, insider_trades …) and "
        "`calculate` for every computation; where the steps name get_financials, "
        "get_market_data or read_filings, call the matching data tools instead. Cite the [S#] "
        "source ids the tools return.\n\n"
        f"{skill.body.strip()}"
    )


def build_server(served: Served, *, version: str = "") -> Server[Any]:
    import mcp_types as types
    from mcp.server.lowlevel import Server

    by_name = {tool.name: tool for tool in served.tools}
    definitions = tool_definitions(served)

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=definitions)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        if params.name == RESEARCH_TOOL and served.research is not None:

            async def progress(step: float, message: str) -> None:
                await ctx.session.report_progress(step, None, message)

            try:
                return await run_research(served.research, arguments, progress)
            except Exception as exc:  # e.g. no key for the model: say so, keep serving
                return _error(f"research could not run: {exc}")
        tool = by_name.get(params.name)
        if tool is None:
            return _error(f"unknown tool {params.name!r}; list_tools shows what is served")
        return await call_data_tool(served, tool, arguments)

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[])

    async def list_templates(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        templates = []
        if "filings" in by_name:
            templates.append(
                types.ResourceTemplate(
                    name="recent-filings",
                    title="Recent SEC filings",
                    uri_template=FILINGS_TEMPLATE,
                    description="A company's 20 most recent SEC reports (10-K, 10-Q, 8-K, "
                    "20-F …: form, dates, accession number, link), by ticker, CIK or name.",
                    mime_type="text/markdown",
                )
            )
        return types.ListResourceTemplatesResult(resource_templates=templates)

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        return await read_filings_resource(served, str(params.uri))

    skills = {skill.name: skill for skill in served.skills}

    async def list_prompts(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name=skill.name,
                    description=skill.description,
                    arguments=[
                        types.PromptArgument(
                            name="request",
                            description="What to apply it to, e.g. 'NVIDIA' or 'Apple's FY2025 "
                            "results for a one-page memo'.",
                            required=True,
                        )
                    ],
                )
                for skill in skills.values()
            ]
        )

    async def get_prompt(
        ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        from mcp import MCPError
        from mcp_types import INVALID_PARAMS

        skill = skills.get(params.name)
        if skill is None:
            raise MCPError(INVALID_PARAMS, f"unknown prompt {params.name!r}")
        request = (params.arguments or {}).get("request", "").strip()
        if not request:
            raise MCPError(INVALID_PARAMS, f"prompt {params.name!r} needs a request argument")
        return types.GetPromptResult(
            description=skill.description,
            messages=[
                types.PromptMessage(
                    role="user", content=types.TextContent(text=skill_prompt(skill, request))
                )
            ],
        )

    return Server(
        SERVER_NAME,
        version=version,
        title="Dexter financial research",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )
