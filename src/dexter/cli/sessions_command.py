"""`dexter sessions list|show|search|rm`: past conversations, to pick one to resume or to audit."""

from __future__ import annotations

import argparse
import json
import sys

from rich.console import Console
from rich.markdown import Markdown
from rich.text import Text

from dexter.cli.tables import Col, Figure, Grid, render, write_csv
from dexter.cli.usage_command import (
    format_cost,
    format_time,
    format_tokens,
    open_existing,
    print_lookup_error,
    totals_line,
)
from dexter.config import Settings, load_settings
from dexter.figure_marks import marked_answer, verification_from_dict
from dexter.principal import OPERATOR_ID
from dexter.store import Ledger, SessionLookupError, SessionStore
from dexter.store.sessions import SessionInfo, TurnInfo

# A declined confirmation, as `permissions reset` and `principals rm` exit.
EXIT_DECLINED = 1


def run_sessions_command(
    args: argparse.Namespace,
    *,
    settings: Settings | None = None,
    console: Console | None = None,
) -> int:
    settings = settings or load_settings()
    console = console or Console()
    action: str = args.sessions_command
    store = open_existing(settings)
    if store is None:
        if action in ("show", "rm"):
            first = args.id if action == "show" else args.ids[0]
            return print_lookup_error(
                SessionLookupError(f"No session {first!r}: no sessions recorded yet.", [])
            )
        if getattr(args, "json", False):
            print("[]")
        elif not getattr(args, "csv", False):
            console.print("No sessions yet. Start one with `dexter`.")
        return 0
    with store:
        sessions = SessionStore(store)
        if action == "list":
            owner = (getattr(args, "principal", None) or "").strip() or None
            listed = sessions.list(limit=args.limit, include_empty=False, principal_id=owner)
            if owner is not None and not listed and not (args.json or args.csv):
                console.print(f"No sessions of {owner}.", markup=False)
                return 0
            return _list(sessions, console, args, listed)
        if action == "search":
            found = sessions.search(args.text, limit=args.limit)
            if not found and not (args.json or getattr(args, "csv", False)):
                console.print(f"No session mentions {args.text!r}.")
                return 0
            return _list(sessions, console, args, [info for info, _ in found], found)
        if action == "rm":
            return _remove(sessions, console, args.ids, yes=args.yes)
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
        print(json.dumps(payload, indent=2, ensure_ascii=False))
        return 0
    text = session_markdown(info, turns)
    if console.is_terminal:
        console.print(Markdown(text, hyperlinks=False))
        console.print(totals_line(totals))
        console.print(Text(f"Resume with: dexter --resume {info.id}", style="dim"))
    else:
        # Piped or into a file: the Markdown itself, so it can be kept, diffed or converted.
        sys.stdout.write(text.rstrip() + "\n")
        sys.stdout.write(f"\n{totals_line(totals).plain}\n")
    return 0


def _rounds(count: int) -> str:
    return f"{count} round" if count == 1 else f"{count} rounds"


def session_markdown(info: SessionInfo, turns: list[TurnInfo]) -> str:
    """The conversation as Markdown: each question a heading, each answer as the model wrote it."""
    lines = [f"# Session {info.id}", ""]
    if info.title:
        lines += [f"**{info.title}**", ""]
    whose = "" if info.principal_id == OPERATOR_ID else f" · for {info.principal_id}"
    lines += [
        f"{info.model} · started {format_time(info.created_at)} · "
        f"updated {format_time(info.updated_at)}{whose}",
        "",
    ]
    if info.constraints:
        lines += ["Standing constraints:", ""]
        lines += [f"- {constraint}" for constraint in info.constraints]
        lines.append("")
    for number, turn in enumerate(turns, 1):
        question = " ".join(turn.query.split())
        lines += [f"## {number}. {question}", ""]
        lines += [
            f"*{turn.status} · {format_time(turn.started_at)} · {_rounds(turn.iterations)} · "
            f"{turn.duration_ms / 1000:.1f}s · {format_tokens(turn.usage.total_tokens)} tokens*",
            "",
        ]
        if turn.answer.strip():
            # Figures the check could not support are marked, as they were when answered.
            checked = verification_from_dict(turn.verification)
            lines += [marked_answer(turn.answer, checked).strip(), ""]
        elif turn.status == "cancelled":
            lines += ["(cancelled before an answer)", ""]
        else:
            lines += ["(no answer)", ""]
    return "\n".join(lines)


def _remove(sessions: SessionStore, console: Console, ids: list[str], *, yes: bool) -> int:
    targets: list[SessionInfo] = []
    for key in ids:
        try:
            targets.append(sessions.get(key))
        except SessionLookupError as error:
            return print_lookup_error(error)
    targets = list({info.id: info for info in targets}.values())
    if not yes and _on_a_terminal():
        # Asked on a terminal, as `permissions reset` and `principals rm` ask; a script that
        # names the ids (stdin not a terminal) means it, as with `rm`.
        for info in targets:
            console.print(
                Text(f"  {info.id}  {info.title or '(untitled)'} · {_questions(info.turns)}")
            )
        one = len(targets) == 1
        what = "this session" if one else f"these {len(targets)} sessions"
        cost = "its" if one else "their"
        console.print(
            f"Delete {what}? The usage ledger keeps {cost} cost. [y/N] ", end="", markup=False
        )
        answer = sys.stdin.readline()
        if answer.strip().lower() not in ("y", "yes"):
            console.print("Nothing deleted.")
            return EXIT_DECLINED
    for info in targets:
        sessions.delete(info.id)
        console.print(
            Text(f"Removed session {info.id}" + (f" ({info.title})" if info.title else ""))
        )
    return 0


def _questions(count: int) -> str:
    return f"{count} question" if count == 1 else f"{count} questions"


def _on_a_terminal() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except ValueError:  # closed
        return False


def _list(
    sessions: SessionStore,
    console: Console,
    args: argparse.Namespace,
    infos: list[SessionInfo],
    found: list[tuple[SessionInfo, str]] | None = None,
) -> int:
    if args.json:
        rows = [info.to_dict() for info in infos]
        if found is not None:
            for row, (_, snippet) in zip(rows, found, strict=True):
                row["match"] = snippet
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    short = sessions.short_ids()
    # Once Dexter has acted for others (chat users, groups, MCP hosts), each row says whose.
    owners = sessions.shared()
    columns = [
        Col("ID", whole=True, key=True, style="cyan", csv_header="id"),
        Col("Updated", whole=True),
        *([Col("Principal", whole=True)] if owners else []),
        Col("Title" if found is None else "Match", min_width=16),
        Col("Turns", figure=True, optional=True),
        Col("Tokens", figure=True, optional=True),
        Col("Cost", figure=True, optional=True),
    ]
    grid = Grid(
        title="Sessions" if found is None else f"Sessions mentioning {args.text!r}", columns=columns
    )
    snippets = dict((info.id, snippet) for info, snippet in found or [])
    for info in infos:
        grid.add_row(
            # Full ids in CSV; on screen the shortest prefix `--resume` accepts.
            Figure(short.get(info.id, info.id), info.id),
            format_time(info.updated_at),
            *([info.principal_id] if owners else []),
            snippets.get(info.id, info.title or "") if found is not None else info.title or "",
            Figure(str(info.turns), info.turns),
            Figure(format_tokens(info.total_tokens), info.total_tokens),
            Figure(format_cost(info.cost_usd), "" if info.cost_usd is None else info.cost_usd),
        )
    if getattr(args, "csv", False):
        write_csv(grid, sys.stdout)
        return 0
    if not infos:
        console.print("No sessions yet. Start one with `dexter`.")
        return 0
    render(console, grid)
    console.print(Text("Resume one with: dexter --resume ID", style="dim"))
    return 0
