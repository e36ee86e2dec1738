"""`dexter usage`: where tokens went (by model, tool, phase, day or session) and what they cost."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from dexter.cli.open_runtime import open_runtime
from dexter.cli.tables import Cell, Col, Figure, Grid, render, write_csv
from dexter.config import Settings, load_settings
from dexter.store import Ledger, SessionLookupError, SessionStore, UsageRow, UsageTotals
from dexter.store.ledger import REPORT_KEYS

if TYPE_CHECKING:
    from dexter.store import Store

EXIT_USAGE = 2

_BY_LABEL = {
    "model": "Model",
    "tool": "Tool",
    "phase": "Phase",
    "day": "Day (UTC)",
    "principal": "Principal",
}


def format_cost(cost: float | None, unpriced: int = 0) -> str:
    """ "—" for unknown; a trailing "+" when some calls in the sum had no price."""
    if cost is None:
        return "—"
    text = f"${cost:.4f}" if cost < 0.01 else f"${cost:,.2f}"
    return text + ("+" if unpriced else "")


def format_tokens(count: int) -> str:
    if count >= 1_000_000:
        return f"{count / 1_000_000:.1f}M"
    if count >= 10_000:
        return f"{count / 1000:.0f}k"
    return f"{count:,}"


def format_time(iso: str) -> str:
    """A stored UTC timestamp in local time, to the minute."""
    try:
        return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return iso


def estimated_tokens(count: int, estimated: bool) -> str:
    """A token count, marked "~" when some of it is Dexter's estimate rather than a server's."""
    return ("~" if estimated else "") + format_tokens(count)


def totals_line(totals: UsageTotals) -> Text:
    calls = f"{totals.calls} model call{'s' if totals.calls != 1 else ''}"
    notes = []
    if totals.failed_calls:
        notes.append(f"{totals.failed_calls} failed")
    estimates = [
        f"~{format_tokens(count)} {what}"
        for count, what in (
            (totals.estimated_input_tokens, "input"),
            (totals.estimated_output_tokens, "output"),
        )
        if count
    ]
    if estimates:
        # Calls the server never reported usage for; these counts are our own estimate.
        notes.append(f"{', '.join(estimates)} estimated")
    if notes:
        calls += f" ({', '.join(notes)})"
    counted = totals.counted
    parts = [
        calls,
        f"in {estimated_tokens(counted.input_tokens, bool(totals.estimated_input_tokens))} "
        f"(cached {format_tokens(totals.cached_tokens)})",
        f"out {estimated_tokens(counted.output_tokens, bool(totals.estimated_output_tokens))}",
        f"cost {format_cost(totals.cost_usd, totals.unpriced_calls)}",
    ]
    if totals.tool_calls:
        failed = f", {totals.failed_tool_calls} failed" if totals.failed_tool_calls else ""
        plural = "s" if totals.tool_calls != 1 else ""
        parts.append(f"{totals.tool_calls} tool call{plural}{failed}")
    return Text.assemble(("Total  ", "bold"), " · ".join(parts))


def open_existing(settings: Settings) -> Store | None:
    """The database, or None when nothing was ever recorded (don't create one just to read)."""

    return open_runtime(settings).existing_store()


def print_lookup_error(error: SessionLookupError) -> int:
    Console(stderr=True, highlight=False, soft_wrap=True).print(
        f"dexter: {error}", style="red", markup=False
    )
    return EXIT_USAGE


def run_usage_command(
    args: argparse.Namespace,
    *,
    settings: Settings | None = None,
    console: Console | None = None,
) -> int:
    settings = settings or load_settings()
    console = console or Console()
    by = getattr(args, "by", None) or "phase"
    if by not in REPORT_KEYS:
        raise ValueError(f"unknown --by {by!r}")
    store = open_existing(settings)
    session_id: str | None = None
    if store is None:
        rows: list[UsageRow] = []
        totals = UsageTotals()
    else:
        with store:
            if args.session:
                try:
                    session_id = SessionStore(store).get(args.session).id
                except SessionLookupError as error:
                    return print_lookup_error(error)
            ledger = Ledger(store)
            rows = ledger.report(by, session_id)
            totals = ledger.totals(session_id)
    if args.json:
        payload = {
            "by": by,
            "session": session_id,
            "rows": [row.to_dict() for row in rows],
            "totals": totals.to_dict(),
        }
        console.print_json(json.dumps(payload))
        return 0
    if getattr(args, "csv", False):
        write_csv(_table(rows, by, session_id), sys.stdout)
        return 0
    if not rows:
        console.print(f"No usage recorded{f' for session {session_id}' if session_id else ''} yet.")
        return 0
    render(console, _table(rows, by, session_id))
    console.print(totals_line(totals))
    if totals.unpriced_calls:
        console.print(
            Text(
                f'{totals.unpriced_calls} call(s) have no known price; set "prices" in '
                f"{settings.settings_path} to include them. Costs are estimates.",
                style="dim",
            )
        )
    else:
        console.print(Text("Costs are estimates from list prices.", style="dim"))
    return 0


def _table(rows: list[UsageRow], by: str, session_id: str | None) -> Grid:
    title = f"Usage by {by}" + (f" · session {session_id}" if session_id else "")
    with_tools = by in ("tool", "day", "session", "principal")
    columns = [
        Col(_BY_LABEL.get(by, by.capitalize()), key=True, style="cyan"),
        *[
            Col(name, figure=True)
            for name in ("Calls", "Failed", "Input", "Cached", "Output", "Reasoning", "Cost")
        ],
    ]
    if with_tools:
        columns.append(Col("Tool calls", figure=True))
    grid = Grid(title=title, columns=columns)
    for row in rows:
        # Calls a server reported no usage for count with Dexter's estimate, marked "~".
        counted = row.counted
        cells: list[Cell] = [
            row.key,
            Figure(str(row.calls), row.calls),
            Figure(str(row.failed_calls) if row.failed_calls else "", row.failed_calls),
            Figure(
                estimated_tokens(counted.input_tokens, bool(row.estimated_input_tokens)),
                counted.input_tokens,
            ),
            Figure(format_tokens(row.cached_tokens), row.cached_tokens),
            Figure(
                estimated_tokens(counted.output_tokens, bool(row.estimated_output_tokens)),
                counted.output_tokens,
            ),
            Figure(format_tokens(row.reasoning_tokens), row.reasoning_tokens),
            Figure(
                format_cost(row.cost_usd, row.unpriced_calls),
                "" if row.cost_usd is None else row.cost_usd,
            ),
        ]
        if with_tools:
            failed = f" ({row.failed_tool_calls} failed)" if row.failed_tool_calls else ""
            cells.append(
                Figure(f"{row.tool_calls}{failed}" if row.tool_calls else "", row.tool_calls)
            )
        grid.add_row(*cells)
    return grid
