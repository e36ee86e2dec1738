"""`dexter workspace map|symbols|refs|related|stale`: the workspace map from the terminal.

Only the standard library is imported at module level (`add_workspace_parser` runs on every CLI
start); the index, the parsers and the data layer load when a command runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dexter.workspace.service import Workspace

__all__ = ["add_workspace_parser", "run_workspace_command"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def add_workspace_parser(commands: Any) -> argparse.ArgumentParser:
    workspace: argparse.ArgumentParser = commands.add_parser(
        "workspace",
        help="map a research folder: ranked outline, symbols, references, stale models",
        description="An incremental index of a folder (code, notebooks, Excel models, memos, "
        "data files) under DEXTER_HOME/workspace/, refreshed on every command: only files "
        "whose content changed are read again. .gitignore is honoured.",
    )
    workspace.set_defaults(command_run=run_workspace_command)
    actions = workspace.add_subparsers(dest="workspace_command", metavar="ACTION", required=True)

    def action(name: str, help_text: str) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = actions.add_parser(name, help=help_text)
        sub.add_argument(
            "--root", metavar="DIR", help="the folder to map (default: the current directory)"
        )
        sub.add_argument("--json", action="store_true", help="print JSON")
        return sub

    mapping = action("map", "a ranked outline that fits a token budget")
    mapping.add_argument("question", nargs="*", help="rank toward the files and names in this")
    mapping.add_argument(
        "--budget",
        type=_budget,
        default=2000,
        metavar="TOKENS",
        help="size (default 2000 tokens, at least 100)",
    )
    symbols = action("symbols", "defined functions, classes, named ranges, sheets, columns")
    symbols.add_argument("pattern", nargs="?", default="", help="only names containing this")
    symbols.add_argument("--limit", type=int, default=200, metavar="N", help="rows (default 200)")
    refs = action("refs", "where a name, ticker or accession is defined and used")
    refs.add_argument("name", help="e.g. wacc, WACC, AAPL, 0000320193-24-000123")
    related = action("related", "what a file uses and what uses it, one hop")
    related.add_argument("path", help="a file of the workspace")
    related.add_argument(
        "--import",
        dest="would_import",
        metavar="MODULE",
        help="warn if importing it closes a cycle",
    )
    action("stale", "models and memos older than their ticker's latest 10-K/10-Q (SEC)")
    return workspace


def _budget(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of tokens") from None
    if value < 100:
        raise argparse.ArgumentTypeError(f"{value} tokens is too small for a map; give 100 or more")
    return value


def _err(message: str) -> None:
    print(f"dexter: {message}", file=sys.stderr)


def run_workspace_command(args: argparse.Namespace) -> int:
    from dexter.config import load_settings
    from dexter.workspace.service import Workspace, check_root, too_wide

    settings = load_settings()
    try:
        root = check_root(Path(args.root) if args.root else settings.cwd)
    except ValueError as error:
        _err(str(error))
        return EXIT_USAGE
    wide = too_wide(root)
    if wide is not None and not args.root:
        # Given by name it is the user's choice; met by chance (a shell in ~) it is not.
        _err(
            f"the current directory {root} is {wide}; run this in a project folder or name "
            "the folder with --root"
        )
        return EXIT_USAGE
    workspace = Workspace(root, settings.home)
    try:
        return _run(args, workspace, settings)
    finally:
        workspace.close()


def _progress() -> Any:
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        end = "\n" if done == total else ""
        print(f"\rIndexing {done:,}/{total:,} files…", end=end, file=sys.stderr, flush=True)

    return show


def _run(args: argparse.Namespace, workspace: Workspace, settings: Any) -> int:
    snapshot = workspace.refresh(_progress())
    done = workspace.last_refresh
    if done is not None and done.truncated:
        _err(f"{workspace.root} holds more files than the index takes; only the first were read")
    command = args.workspace_command
    if command == "map":
        result = snapshot.render_map(" ".join(args.question), args.budget)
        if args.json:
            _print_json(
                {
                    "root": str(workspace.root),
                    "files": result.total_files,
                    "shown": result.shown,
                    "focus": result.focus,
                    "tokens": result.tokens,
                    "map": result.text,
                }
            )
        else:
            print(result.text)
        return EXIT_OK
    if command == "symbols":
        hits = snapshot.symbols(args.pattern, args.limit)
        if args.json:
            _print_json([h.__dict__ for h in hits])
        elif not hits:
            print("No symbols" + (f" containing {args.pattern!r}." if args.pattern else "."))
        for hit in hits if not args.json else []:
            where = f"{hit.path}:{hit.line}" if hit.line else hit.path
            print(f"{where}  {hit.kind}  {hit.detail}")
        return EXIT_OK
    if command == "refs":
        from dexter.workspace.view import hits_json

        found = workspace.find_symbol(args.name)
        if args.json:
            _print_json(hits_json(found))
            return EXIT_OK
        if not found.definitions and not found.references:
            print(f"{args.name!r} is not defined or used in any indexed file.")
            return EXIT_OK
        for title, hits in (("Defined", found.definitions), ("Used", found.references)):
            if hits:
                print(f"{title}:")
            for hit in hits:
                where = f"{hit.path}:{hit.line}" if hit.line else hit.path
                print(f"  {where}  {hit.kind}  {hit.detail}".rstrip())
        return EXIT_OK
    if command == "related":
        return _related(args, snapshot)
    return _stale(args, snapshot, settings)


def _related(args: argparse.Namespace, snapshot: Any) -> int:
    path = snapshot.resolve(args.path)
    if path is None:
        _err(
            f"no indexed file matches {args.path!r}; give a path relative to the root "
            "(`dexter workspace map` lists them)"
        )
        return EXIT_USAGE
    related = snapshot.related(path)
    cycle = None
    if args.would_import:
        target = snapshot.module_target(path, args.would_import)
        cycle = snapshot.would_cycle(path, target) if target else None
    if args.json:
        _print_json(
            {
                "path": path,
                "kind": related.kind,
                "interface": related.interface,
                "uses": [{"path": p, "why": w} for p, w, _ in related.uses],
                "used_by": [{"path": p, "why": w} for p, w, _ in related.used_by],
                "cycle": cycle,
            }
        )
        return EXIT_OK
    print(f"{path} [{related.kind}]")
    for title, side in (("Uses", related.uses), ("Used by", related.used_by)):
        print(f"{title}:" if side else f"{title}: nothing in the workspace")
        for other, why, _ in side:
            print(f"  {other}  ({', '.join(why)})")
    if cycle:
        print("Warning: that import would close a cycle: " + " → ".join(cycle))
    elif args.would_import:
        print(f"Importing {args.would_import} closes no cycle.")
    return EXIT_OK


def _stale(args: argparse.Namespace, snapshot: Any, settings: Any) -> int:
    import asyncio

    from dexter.cli.open_runtime import open_runtime
    from dexter.workspace.stale import find_stale

    async def go() -> Any:
        async with open_runtime(settings) as runtime:
            return await find_stale(snapshot, runtime.data_router)

    report = asyncio.run(go())
    if args.json:
        _print_json(
            {
                "checked": report.checked,
                "notes": report.notes,
                "stale": [
                    {
                        "path": s.path,
                        "ticker": s.ticker,
                        "based_on": s.based_on,
                        "superseded_by": s.latest.model_dump(mode="json"),
                    }
                    for s in report.stale
                ],
            }
        )
        return EXIT_OK
    for stale in report.stale:
        print(stale.describe())
    if not report.stale:
        print(f"Nothing stale among {report.checked} models and memos with a ticker and a date.")
    for note in report.notes:
        _err(note)
    return EXIT_OK


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))
