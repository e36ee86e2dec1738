"""A run's events as OpenBB Workspace's Server-Sent Events.

Workspace's custom-agent contract (the JSON shapes of the `openbb-ai` models, written out here
so the product does not depend on that package): `copilotStatusUpdate` for reasoning steps,
`copilotMessageChunk` for the answer's text, `copilotMessageArtifact` for tables and charts,
`copilotCitationCollection` for sources, `copilotFunctionCall` to ask Workspace for widget data.

Workspace appends every chunk it gets and cannot take text back, so the answer is sent once it
is final: text a round streams may still turn into tool calls, be retried, or be sent back by the
figure verifier; it goes out when the run is done, with the figures the data did not support
marked in place and named in a footer (`dexter.figure_marks`), exactly as the terminal prints
it, and nothing in it live (images and HTML the model was steered into writing are made inert,
as in the reports). Until then every step (the model's notes, each tool call, the figure check)
shows as a reasoning step, so the panel is never silent.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from dexter.agent.events import (
    ContextEvent,
    Done,
    Event,
    Retrying,
    Revising,
    RunStarted,
    Thinking,
    ToolDenied,
    ToolEnd,
    ToolError,
    ToolProgress,
    ToolStart,
)
from dexter.figure_marks import footer, mark_in_place, summary_line
from dexter.reports.charts import charts_for
from dexter.reports.figures import figure_rows
from dexter.reports.markup import md_answer, md_inline, web_url
from dexter.reports.model import Table
from dexter.tools.citations import SourceEntry
from dexter.tools.finance.format import CellKind, format_cell

StepKind = Literal["INFO", "WARNING", "ERROR"]

# Reasoning steps show a line; a model's note or a tool's arguments are cut to fit one.
STEP_TEXT = 400
ARGUMENT_TEXT = 200
# The answer goes out in pieces of about this many characters (paragraph by paragraph).
CHUNK = 2000
_ACCESSION = re.compile(r"\bacc(?:ession)?\.?\s*(?:no\.?\s*)?([0-9]{10}-[0-9]{2}-[0-9]{6})")
_UNITS: Mapping[CellKind, str] = {
    "money": "millions",
    "shares": "millions",
    "per_share": "per share",
    "per_share_computed": "per share",
    "percent": "%",
    "multiple": "×",
    "days": "days",
}


@dataclass(frozen=True, slots=True)
class WorkspaceEvent:
    """One SSE: the event name and its JSON data."""

    event: str
    data: dict[str, Any]

    def sse(self) -> dict[str, str]:
        """As `sse-starlette` sends it: `event:` and one `data:` line of JSON."""
        return {"event": self.event, "data": json.dumps(self.data, ensure_ascii=False)}


def reasoning_step(
    message: str, kind: StepKind = "INFO", details: Sequence[Mapping[str, Any] | str] = ()
) -> WorkspaceEvent:
    data: dict[str, Any] = {"eventType": kind, "message": _cut(message, STEP_TEXT)}
    if details:
        data["details"] = [dict(d) if isinstance(d, Mapping) else d for d in details]
    return WorkspaceEvent("copilotStatusUpdate", data)


def message_chunk(text: str) -> WorkspaceEvent:
    return WorkspaceEvent("copilotMessageChunk", {"delta": text})


def table_artifact(name: str, description: str, rows: list[dict[str, Any]]) -> WorkspaceEvent:
    return WorkspaceEvent(
        "copilotMessageArtifact",
        {
            "type": "table",
            "name": name,
            "description": description,
            "uuid": str(uuid.uuid4()),
            "content": rows,
        },
    )


def line_chart_artifact(
    name: str, description: str, rows: list[dict[str, Any]], x_key: str, y_keys: list[str]
) -> WorkspaceEvent:
    return WorkspaceEvent(
        "copilotMessageArtifact",
        {
            "type": "chart",
            "name": name,
            "description": description,
            "uuid": str(uuid.uuid4()),
            "content": rows,
            "chart_params": {"chartType": "line", "xKey": x_key, "yKey": y_keys},
        },
    )


def citations(cited: Iterable[Mapping[str, Any]]) -> WorkspaceEvent:
    return WorkspaceEvent("copilotCitationCollection", {"citations": list(cited)})


def widget_data_request(sources: list[dict[str, Any]]) -> WorkspaceEvent:
    """Ask Workspace for the data of these widgets; it calls `/query` again with the data."""
    return WorkspaceEvent(
        "copilotFunctionCall",
        {"function": "get_widget_data", "input_arguments": {"data_sources": sources}},
    )


def _cut(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _arguments(args: Mapping[str, Any]) -> str:
    return _cut(json.dumps(args, ensure_ascii=False, default=str), ARGUMENT_TEXT)


@dataclass
class WorkspaceStream:
    """Turns one run's events into Workspace events. Streamed text is not sent (the `Done`
    event carries the final answer); `Done` yields the figure check and the answer, marked, with
    its sources listed. Tables, charts and the citation list come from the run's data
    afterwards (`table_events`, `citations`)."""

    scratchpad: str | None = None
    run_id: str | None = None

    def feed(self, event: Event) -> list[WorkspaceEvent]:
        if isinstance(event, RunStarted):
            self.scratchpad, self.run_id = event.scratchpad or None, event.run_id
            return [reasoning_step("Researching", details=[{"model": event.model}])]
        if isinstance(event, Thinking):
            note = md_answer(event.text).strip()
            return [reasoning_step(note)] if note else []
        if isinstance(event, Retrying):
            return [
                reasoning_step(
                    f"The model call failed ({event.error}); retrying in {event.delay:.1f} s "
                    f"(attempt {event.attempt} of {event.max_attempts - 1})",
                    "WARNING",
                )
            ]
        if isinstance(event, Revising):
            named = ", ".join(event.unsupported[:6])
            return [
                reasoning_step(
                    f"Checking figures: {len(event.unsupported)} not found in the data "
                    f"({named}); revising the answer",
                    "WARNING",
                )
            ]
        if isinstance(event, ToolStart):
            return [reasoning_step(f"Calling {event.tool}", details=[_call_detail(event.args)])]
        if isinstance(event, ToolProgress):
            return [reasoning_step(f"{event.tool}: {event.message}")]
        if isinstance(event, ToolEnd):
            took = f"{event.duration_ms / 1000:.1f} s"
            if event.warning:
                return [reasoning_step(f"{event.tool} done in {took}: {event.warning}", "WARNING")]
            return [reasoning_step(f"{event.tool} done in {took}")]
        if isinstance(event, ToolError):
            return [reasoning_step(f"{event.tool} failed: {event.error}", "WARNING")]
        if isinstance(event, ToolDenied):
            reason = event.reason or "denied"
            return [reasoning_step(f"{event.tool} refused: {reason}", "WARNING")]
        if isinstance(event, ContextEvent):
            return [reasoning_step(event.detail)]
        if isinstance(event, Done):
            return self._done(event)
        return []

    def _done(self, done: Done) -> list[WorkspaceEvent]:
        if done.status == "error":
            problem = done.error or "the run failed"
            return [
                reasoning_step(f"Stopped: {problem}", "ERROR"),
                message_chunk(f"Dexter could not answer: {problem}"),
            ]
        if done.status == "denied":
            return [message_chunk("Stopped: a tool call was denied.")]
        out: list[WorkspaceEvent] = []
        checked = summary_line(done.verification)
        if checked:
            rows = figure_rows(done.verification)
            kind: StepKind = "WARNING" if any(r.unsupported for r in rows) else "INFO"
            details = [
                {"figure": r.figure.text, "check": r.status, "evidence": r.detail} for r in rows
            ]
            out.append(reasoning_step(checked.capitalize(), kind, details))
        text = _shown_answer(done)
        if not text:
            return [*out, message_chunk("Dexter finished without writing an answer.")]
        cited = cited_sources(done)
        if cited:
            text += "\n\n**Sources**\n\n" + "\n".join(_source_line(s) for s in cited)
        # The citation list follows the tables, built by the endpoint with theirs.
        out += [message_chunk(piece) for piece in _pieces(text)]
        return out


def _shown_answer(done: Done) -> str:
    """The answer as Workspace renders it: unsupported figures marked in place, then made
    inert (steered by what the run read, it may hold images or HTML that would load on
    display: images become links, tags text), then the footer naming the marked figures."""
    marked = md_answer(mark_in_place(done.answer, done.verification)).strip()
    line = footer(done.verification)
    return f"{marked}\n\n{line}" if line and marked else marked


def _call_detail(args: Mapping[str, Any]) -> dict[str, str]:
    return {"arguments": _arguments(args)}


def cited_sources(done: Done) -> list[SourceEntry]:
    """The sources the answer cites ([S1] …); every source the run saw when it cites none."""
    cited = [s for s in done.sources if f"[{s.id}]" in done.answer]
    return cited or list(done.sources)


def _source_line(source: SourceEntry) -> str:
    # A label comes from data (a company's name, a page title): shown as text, never markup.
    link = web_url(source.url)
    return f"- [{source.id}] {md_inline(source.label)}" + (f" (<{link}>)" if link else "")


def _pieces(text: str) -> list[str]:
    """The answer in paragraph-aligned pieces of about CHUNK characters (joined, exactly it)."""
    pieces: list[str] = []
    current = ""
    for paragraph in re.split(r"(?<=\n\n)", text):
        if current and len(current) + len(paragraph) > CHUNK:
            pieces.append(current)
            current = ""
        current += paragraph
    if current:
        pieces.append(current)
    return pieces


def source_citation(source: SourceEntry) -> dict[str, Any]:
    """A Workspace citation for one of the run's sources ([S1] …): a filing, an XBRL fact set
    or a page, with its accession number when the source names one."""
    return _citation(
        source.label, source.url, f"[{source.id}] in Dexter's answer", {"Cited as": source.id}
    )


def _citation(
    label: str, url: str | None, description: str, detail: Mapping[str, str]
) -> dict[str, Any]:
    details: dict[str, str] = {**detail, "Filed": label}
    found = _ACCESSION.search(label)
    if found:
        details["Accession"] = found.group(1)
    if url:
        details["URL"] = url
    info: dict[str, Any] = {
        "type": "web",
        "name": label,
        "description": description,
        "metadata": {"url": url} if url else {},
        "citable": True,
    }
    return {"id": str(uuid.uuid4()), "source_info": info, "details": [details]}


# --------------------------------------------------------------------------- tables and charts


def _periods_label(table: Table) -> str:
    if not table.periods:
        return ""
    first, last = table.periods[0], table.periods[-1]
    return first if first == last else f"{first}–{last}"


def table_rows(table: Table) -> list[dict[str, Any]]:
    """One row per line item: its label, each period as the reports print it, and the unit."""
    rows: list[dict[str, Any]] = []
    for row in table.rows:
        unit = _UNITS[row.kind]
        if row.kind in ("money", "per_share", "per_share_computed"):
            unit = f"{table.currency} {unit}"
        cells: dict[str, Any] = {"Line item": row.label}
        for period, value in zip(table.periods, row.values, strict=False):
            cells[period] = format_cell(row.kind, value)
        cells["Unit"] = unit
        rows.append(cells)
    return rows


def table_events(table: Table) -> list[WorkspaceEvent]:
    """The statement as a table and its main lines as line charts (the reports' charts, with
    the same numbers), each naming its periods."""
    span = _periods_label(table)
    name = f"{table.title} ({span})" if span else table.title
    filed = sorted({f.label for period in table.period_sources for f in period})
    description = "From " + "; ".join(filed) if filed else "From the run's data"
    out = [table_artifact(name, description, table_rows(table))]
    for chart in charts_for(table):
        labels = [row.label.replace(" (computed)", "") for row in chart.lines]
        points: list[dict[str, Any]] = []
        for index, period in enumerate(chart.periods):
            point: dict[str, Any] = {"Period": period}
            for label, row in zip(labels, chart.lines, strict=True):
                value = chart.scaled(row.values[index])
                point[label] = round(value, 4) if value is not None else None
            points.append(point)
        out.append(
            line_chart_artifact(
                f"{chart.title} ({chart.unit}, {span})",
                f"{chart.title}, {chart.unit}. {description}",
                points,
                "Period",
                labels,
            )
        )
    return out


def filing_citations(
    tables: Sequence[Table], already: Iterable[SourceEntry]
) -> WorkspaceEvent | None:
    """Citations for the filings behind the tables that the answer's own list does not name."""
    seen = {(s.label, s.url) for s in already}
    found: list[dict[str, Any]] = []
    for table in tables:
        for period, filed in table.filed_by_period():
            for item in filed:
                if (item.label, item.url) in seen:
                    continue
                seen.add((item.label, item.url))
                detail = {"Table": table.title, "Period": period}
                found.append(_citation(item.label, item.url, f"Behind {table.title}", detail))
    return citations(found) if found else None


__all__ = [
    "WorkspaceEvent",
    "WorkspaceStream",
    "citations",
    "cited_sources",
    "filing_citations",
    "line_chart_artifact",
    "message_chunk",
    "reasoning_step",
    "source_citation",
    "table_artifact",
    "table_events",
    "table_rows",
    "widget_data_request",
]
