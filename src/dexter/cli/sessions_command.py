"""`dexter sessions list|show`: past conversations, to pick one to resume or to audit."""

from __future__ import annotations

import argparse
import json

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from dexter.cli.usage_command import (
    format_cost,
    format_time,
    format_tokens,
    open_existing,
    print_lookup_error,
    totals_line,
)
from dexter.config import Settings, load_settings
from dexter.store import Ledger, SessionLookupError, SessionStore

_PREVIEW_CHARS = 300


def run_sessions_command(
    args: argparse.Namespace,
    *,
    settings: Settings | None = None,
    console: Console | None = None,
) -> int:
    settings = settings or load_settings()
    console = console or Console()
    store = open_existing(settings)
    if store is None:
        if args.sessions_command == "show":
            return print_lookup_error(
                SessionLookupError(f"No session {args.id!r}: no sessions recorded yet.", [])
            )
        if args.json:
            console.print_json("[]")
        else:
            console.print("No sessions yet. Start one with `dexter`.")
        return 0
    with store:
        sessions = SessionStore(store)
        if args.sessions_command == "list":
            return _list(sessions, console, limit=args.limit, as_json=args.json)
        try:
            info = sessions.get(args.id)
        except SessionLookupError as error:
            return print_lookup_error(error)
        turns = sessions.turns(info.id)
        totals = Ledger(store).totals(info.id)
    if args.json:
        payload = {
            **info.to_dict(),
            "turns": [turn.to_dict() for turn in turns],
            "usage": totals.to_dict(),
        }
        console.print_json(json.dumps(payload))
        return 0
    console.print(Text.assemble(("Session ", "bold"), (info.id, "bold cyan"), f"  {info.model}"))
    if info.title:
        console.print(Text(info.title))
    console.print(
        Text(
            f"started {format_time(info.created_at)} · updated {format_time(info.updated_at)}",
            style="dim",
        )
    )
    if info.constraints:
        console.print(Text("Standing constraints:", style="bold"))
        for constraint in info.constraints:
            console.print(Text(f"  • {constraint}"))
    for number, turn in enumerate(turns, 1):
        console.print()
        status_style = "green" if turn.status == "answered" else "red"
        console.print(
            Text.assemble(
                (f"#{number} ", "bold"),
                (turn.status, status_style),
                (
                    f"  {format_time(turn.started_at)} · {turn.iterations} rounds · "
                    f"{turn.duration_ms / 1000:.1f}s · "
                    f"{format_tokens(turn.usage.total_tokens)} tokens",
                    "dim",
                ),
            )
        )
        console.print(Text.assemble(("Q: ", "bold"), turn.query))
        answer = " ".join(turn.answer.split())
        if len(answer) > _PREVIEW_CHARS:
            answer = answer[: _PREVIEW_CHARS - 1].rstrip() + "…"
        console.print(Text.assemble(("A: ", "bold"), answer or "(no answer)"))
    console.print()
    console.print(totals_line(totals))
    console.print(Text(f"Resume with: dexter --resume {info.id}", style="dim"))
    return 0


def _list(sessions: SessionStore, console: Console, *, limit: int, as_json: bool) -> int:
    infos = sessions.list(limit=limit)
    if as_json:
        console.print_json(json.dumps([info.to_dict() for info in infos]))
        return 0
    if not infos:
        console.print("No sessions yet. Start one with `dexter`.")
        return 0
    table = Table(title="Sessions", title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("ID", style="cyan", no_wrap=True)
    table.add_column("Updated", no_wrap=True)
    table.add_column("Turns", justify="right")
    table.add_column("Tokens", justify="right")
    table.add_column("Cost", justify="right")
    table.add_column("Title", overflow="ellipsis", no_wrap=True, ratio=1)
    for info in infos:
        table.add_row(
            info.id,
            format_time(info.updated_at),
            str(info.turns),
            format_tokens(info.total_tokens),
            format_cost(info.cost_usd),
            info.title or "",
        )
    console.print(table)
    return 0
