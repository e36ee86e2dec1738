"""`dexter principals list|show|rm`: who Dexter has acted for (the operator, chat users, groups,
MCP hosts), what each has (sessions, jobs, memory) and what each was granted.

Only the standard library is imported at module level (`dexter --help` stays fast); `list` and
`show` only read, and create nothing where nothing was recorded yet.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from rich.console import Console

    from dexter.cli.principal_lookup import Configured
    from dexter.config import Settings
    from dexter.principal import Principal
    from dexter.store import Store
    from dexter.store.principals import PrincipalRow

EXIT_OK = 0
EXIT_CANCELLED = 1
EXIT_USAGE = 2
RECENT_SESSIONS = 5


def add_principals_parser(commands: Any) -> None:
    """Register `dexter principals` on the top-level subparsers (stdlib only)."""
    parser = commands.add_parser(
        "principals",
        help="who Dexter acts for: the operator, chat users, groups, MCP hosts",
        description="Everyone Dexter has acted for, each with their own sessions, memory and "
        "jobs: the operator (you), chat users and groups from the gateway, MCP hosts. Grant "
        'more per principal under "principals" in gateway.json.',
    )
    parser.set_defaults(command_run=run_principals_command)
    actions = parser.add_subparsers(dest="principals_command", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="every principal with sessions, jobs, last seen")
    listing.add_argument("--json", action="store_true", help="print JSON")
    show = actions.add_parser("show", help="one principal: memory, grants, recent sessions")
    show.add_argument("id", help="principal id, e.g. telegram:222 or mcp:claude-desktop")
    show.add_argument("--json", action="store_true", help="print JSON")
    remove = actions.add_parser(
        "rm", help="forget a principal: its sessions, jobs and memory folder"
    )
    remove.add_argument("id", help="principal id")
    remove.add_argument("--yes", action="store_true", help="don't ask for confirmation")


def run_principals_command(
    args: argparse.Namespace,
    *,
    settings: Settings | None = None,
    console: Console | None = None,
    stdin: TextIO | None = None,
) -> int:
    from rich.console import Console

    from dexter.cli.usage_command import open_existing
    from dexter.config import load_settings

    settings = settings or load_settings()
    console = console or Console(highlight=False)
    store = open_existing(settings)
    try:
        if args.principals_command == "list":
            return _list(store, console, as_json=args.json)
        if args.principals_command == "show":
            return _show(settings, store, console, args.id, as_json=args.json)
        return _remove(settings, store, console, args.id, yes=args.yes, stdin=stdin or sys.stdin)
    finally:
        if store is not None:
            store.close()


# --------------------------------------------------------------------------- list


def _list(store: Store | None, console: Console, *, as_json: bool) -> int:
    from dexter.cli.tables import Col, Figure, Grid, render
    from dexter.cli.usage_command import format_time
    from dexter.store.principals import PrincipalStore

    rows = PrincipalStore(store).list() if store is not None else []
    if as_json:
        print(json.dumps([row.to_dict() for row in rows], indent=2, ensure_ascii=False))
        return EXIT_OK
    if not rows:
        console.print("Nothing recorded yet: Dexter has not run for anyone.")
        return EXIT_OK
    grid = Grid(
        title="Principals",
        columns=[
            Col("ID", key=True, whole=True, style="cyan", csv_header="id"),
            Col("Kind", whole=True),
            Col("Name", min_width=8, optional=True),
            Col("Sessions", figure=True),
            Col("Jobs", figure=True),
            Col("Last seen", whole=True),
        ],
    )
    for row in rows:
        grid.add_row(
            row.id,
            row.kind,
            row.display_name,
            Figure(str(row.sessions), row.sessions),
            Figure(str(row.jobs), row.jobs),
            format_time(row.last_seen_at),
        )
    render(console, grid)
    from rich.text import Text

    console.print(Text("Details: dexter principals show ID", style="dim"))
    return EXIT_OK


# --------------------------------------------------------------------------- show


def _folder_bytes(folder: Path) -> int:
    import os

    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += (Path(root) / name).lstat().st_size
            except OSError:
                continue
    return total


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} B"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KB"
    return f"{count / (1024 * 1024):.1f} MB"


def _lookup(
    settings: Settings, store: Store | None, principal_id: str
) -> tuple[Principal, Configured, PrincipalRow | None]:
    from dexter.cli.principal_lookup import principal_for
    from dexter.principal import OPERATOR_ID
    from dexter.store.principals import PrincipalRow, PrincipalStore

    principal, configured = principal_for(settings.home, principal_id, store)
    row = PrincipalStore(store).get(principal_id.strip()) if store is not None else None
    if row is None and principal.is_operator and principal_id.strip() == OPERATOR_ID:
        row = PrincipalRow(OPERATOR_ID, "operator", "the operator", "", "")
    return principal, configured, row


def _unknown(store: Store | None, principal_id: str) -> int:
    import difflib

    from dexter.store.principals import PrincipalStore

    known = [row.id for row in PrincipalStore(store).list()] if store is not None else []
    close = difflib.get_close_matches(principal_id, known, n=1)
    hint = f" Did you mean {close[0]}?" if close else " See `dexter principals list`."
    print(f"dexter: no principal {principal_id!r}.{hint}", file=sys.stderr)
    return EXIT_USAGE


def _memory_folder(settings: Settings, principal: Principal) -> Path:
    from dexter.memory.files import MEMORY_DIR_NAME

    return principal.home(settings.home) / MEMORY_DIR_NAME


def _grants_lines(principal: Principal, configured: Configured) -> list[tuple[str, str]]:
    if principal.is_operator:
        return [("Grants", "everything (the operator)")]
    files = principal.grants.files
    read = ", ".join(str(p) for p in files.read) or "none"
    write = ", ".join(str(p) for p in files.write) or "none"
    extra = ", ".join(sorted(principal.grants.tools)) or "none"
    lines = [("Files read", read), ("Files write", write), ("Extra tools", extra)]
    if principal.kind == "mcp":
        lines[0] = ("Files read", "the folder its host passes to `dexter mcp serve --workspace`")
    lines.append(("Always", "public research tools (data, filings, web), its own memory, jobs"))
    return lines


def _show(
    settings: Settings, store: Store | None, console: Console, principal_id: str, *, as_json: bool
) -> int:
    from rich.text import Text

    from dexter.cli.usage_command import format_time
    from dexter.store import SessionStore

    principal, configured, row = _lookup(settings, store, principal_id)
    if row is None:
        return _unknown(store, principal_id.strip())
    memory = _memory_folder(settings, principal)
    memory_bytes = _folder_bytes(memory) if memory.is_dir() else 0
    sessions = (
        SessionStore(store).list(
            limit=RECENT_SESSIONS, include_empty=False, principal_id=principal.id
        )
        if store is not None
        else []
    )
    if as_json:
        payload = {
            **row.to_dict(),
            "memory": {"path": str(memory), "bytes": memory_bytes, "exists": memory.is_dir()},
            "grants": None if principal.is_operator else principal.grants.to_dict(),
            "operator_in_gateway": configured.operator,
            "problem": configured.problem,
            "recent_sessions": [info.to_dict() for info in sessions],
        }
        print(json.dumps(payload, indent=2, ensure_ascii=False))
        return EXIT_OK
    name = f" ({row.display_name})" if row.display_name else ""
    console.print(Text.assemble((row.id, "bold cyan"), name, f" · {row.kind}"))
    fields: list[tuple[str, str]] = []
    if configured.operator:
        fields.append(("Acts as", "the operator (listed under operators in gateway.json)"))
    if row.created_at:
        fields.append(("First seen", format_time(row.created_at)))
        fields.append(("Last seen", format_time(row.last_seen_at)))
    fields += [("Sessions", str(row.sessions)), ("Jobs", str(row.jobs))]
    shown = f"{memory} ({_size(memory_bytes)})" if memory.is_dir() else f"{memory} (none yet)"
    fields.append(("Memory", shown))
    fields += _grants_lines(principal, configured)
    _print_fields(console, fields)
    if configured.problem:
        console.print(Text(f"warning: {configured.problem}", style="yellow"))
    if sessions:
        console.print(Text("Recent sessions", style="bold"))
        short = SessionStore(store).short_ids() if store is not None else {}
        _print_fields(
            console,
            [
                (
                    f"  {short.get(info.id, info.id)}",
                    f"{format_time(info.updated_at)}  {info.title}",
                )
                for info in sessions
            ],
        )
    return EXIT_OK


def _print_fields(console: Console, fields: list[tuple[str, str]]) -> None:
    from rich.text import Text

    from dexter.cli.tables import labelled

    console.print(Text(labelled(fields, console.width)), soft_wrap=True)


# --------------------------------------------------------------------------- rm


def _remove(
    settings: Settings,
    store: Store | None,
    console: Console,
    principal_id: str,
    *,
    yes: bool,
    stdin: TextIO,
) -> int:
    import shutil

    from dexter.principal import OPERATOR_ID
    from dexter.store.principals import PrincipalStore

    if principal_id.strip() == OPERATOR_ID:
        print(
            "dexter: the operator cannot be removed (use `dexter sessions rm` or `dexter memory` "
            "for your own data).",
            file=sys.stderr,
        )
        return EXIT_USAGE
    principal, configured, row = _lookup(settings, store, principal_id)
    if principal.is_operator:
        print(
            f"dexter: {principal_id.strip()} acts as the operator (listed under operators in "
            "gateway.json) and cannot be removed.",
            file=sys.stderr,
        )
        return EXIT_USAGE
    folder = principal.home(settings.home)
    if row is None and not folder.exists():
        return _unknown(store, principal.id)
    sessions, jobs = (row.sessions, row.jobs) if row is not None else (0, 0)
    size = _folder_bytes(folder) if folder.is_dir() else 0
    what = (
        f"{_count(sessions, 'session')}, {_count(jobs, 'job')} and its folder {folder} "
        f"({_size(size)})"
        if folder.exists()
        else f"{_count(sessions, 'session')} and {_count(jobs, 'job')}"
    )
    if not yes:
        print(f"Remove {principal.label}: {what}? [y/N] ", end="", flush=True)
        answer = stdin.readline()
        if not answer or not stdin.isatty():
            print()  # the answer was not echoed (closed or piped input)
        if answer.strip().lower() not in ("y", "yes"):
            print("Nothing removed.")
            return EXIT_CANCELLED
    if store is not None and row is not None:
        PrincipalStore(store).remove(principal.id)
    from dexter.store.database_url import database_target

    team_url = database_target(settings).url
    if team_url is not None:  # team mode keeps memory in the database, not in the folder
        from dexter.memory.pg_documents import forget_principal

        forgotten = forget_principal(team_url, principal.id)
        what += f", {_count(forgotten, 'memory document')}"
    if folder.is_symlink():
        folder.unlink()
    elif folder.exists():
        shutil.rmtree(folder)
    console.print(f"Removed {principal.label}: {what}.", markup=False, soft_wrap=True)
    if configured.listed:
        console.print(
            f'Its grants under "principals" in {settings.home / "gateway.json"} stay until you '
            "remove them there.",
            markup=False,
            soft_wrap=True,
        )
    return EXIT_OK


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"
