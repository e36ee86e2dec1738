"""`dexter memory search|add|index|stats`: long-term memory from the terminal, no model needed.

Only the standard library is imported at module level: `add_memory_parser` runs on every CLI start.
The handler imports numpy, SQLite and the embedding model when a memory command actually runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from dexter.cli.open_runtime import open_runtime

if TYPE_CHECKING:
    from dexter.memory.backend import MemoryBackend

__all__ = ["add_memory_parser", "run_memory_command"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def add_memory_parser(commands: Any) -> argparse.ArgumentParser:
    """Add `memory` to the `dexter` subcommands; dispatch with `args.memory_run(args)`."""
    memory: argparse.ArgumentParser = commands.add_parser(
        "memory",
        help="search, add to and index what Dexter remembers about you",
        description="Long-term memory: markdown files under DEXTER_HOME/memory (MEMORY.md and "
        "YYYY-MM-DD.md daily notes) with a local search index. Works offline with no key.",
    )
    memory.set_defaults(memory_run=run_memory_command)
    actions = memory.add_subparsers(dest="memory_command", metavar="ACTION", required=True)

    search = actions.add_parser("search", help="search memory by meaning and keywords")
    search.add_argument("query", nargs="+", help="what to look for (quote it or pass words)")
    search.add_argument("--limit", type=int, default=5, metavar="N", help="results (default 5)")
    search.add_argument("--json", action="store_true", help="print JSON")

    add = actions.add_parser("add", help="remember one fact (MEMORY.md unless --daily)")
    add.add_argument("text", nargs="+", help='the fact, e.g. "I hold 200 NVDA at $410"')
    add.add_argument("--daily", action="store_true", help="add to today's daily note instead")
    add.add_argument("--json", action="store_true", help="print JSON")

    index = actions.add_parser("index", help="bring the search index up to date, then stats")
    index.add_argument("--force", action="store_true", help="re-read and re-index every file")
    index.add_argument("--json", action="store_true", help="print JSON")

    stats = actions.add_parser("stats", help="memory files, index size and embedding model")
    stats.add_argument("--json", action="store_true", help="print JSON")
    return memory


def _err(message: str) -> None:
    print(f"dexter: {message}", file=sys.stderr)


def run_memory_command(args: argparse.Namespace) -> int:
    from dexter.config import load_settings
    from dexter.store.migrations import StoreError

    action: str = args.memory_command
    if action == "search" and args.limit < 1:
        _err("--limit must be at least 1")
        return EXIT_USAGE
    from dexter.memory.setup import memory_enabled

    settings = load_settings()
    if not memory_enabled(settings):
        _err(
            "memory is off (DEXTER_MEMORY=off, or memory.enabled false in settings.json); "
            "turn it on to use `dexter memory`."
        )
        return EXIT_USAGE
    from dexter.store.database_url import database_target

    team = database_target(settings).is_postgres
    if action == "search" and not team and not (settings.home / "memory").exists():
        # Nothing was ever remembered: say so without creating an index to search.
        if args.json:
            _print_json({"query": " ".join(args.query), "results": []})
        else:
            print("No memories yet. Add one with `dexter memory add TEXT`.")
        return EXIT_OK
    index, how = open_runtime(settings).memory_for_commands()
    if index.embedder is None:
        # Plainly, and on stderr so --json output stays parseable.
        print(f"memory: {how}; search matches keywords only.", file=sys.stderr)
    try:
        import asyncio  # here, not at the top: every CLI start imports this module

        return asyncio.run(_dispatch(args, index, how))
    except StoreError as error:
        _err(str(error))
        return EXIT_FAILED
    finally:
        index.close()


async def _dispatch(args: argparse.Namespace, index: MemoryBackend, how: str) -> int:
    action: str = args.memory_command
    if action == "search":
        return await _search(index, " ".join(args.query), args.limit, args.json, how)
    if action == "add":
        return await _add(index, " ".join(args.text), daily=args.daily, as_json=args.json)
    if action == "index":
        return await _index(index, force=args.force, as_json=args.json, how=how)
    return await _stats(index, as_json=args.json, how=how)


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


async def _search(index: MemoryBackend, query: str, limit: int, as_json: bool, how: str) -> int:
    from dexter.memory.tools import expand_query, hit_dict

    if not query.strip():
        _err("the search query is empty")
        return EXIT_USAGE
    hits = await index.search(expand_query(query), limit=limit)
    if index.last_warning:
        print(f"memory: {index.last_warning}", file=sys.stderr)
    mode = "keyword-only" if index.keyword_only else "hybrid"
    if as_json:
        _print_json(
            {
                "query": query,
                "mode": mode,
                "embedder": how,
                "results": [hit_dict(hit) for hit in hits],
            }
        )
        return EXIT_OK
    if not hits:
        import asyncio

        files = await asyncio.to_thread(index.files.list)
        where = f"{len(files)} memory files" if files else "no memory files yet"
        print(f"No memories match {query!r} ({where}, {mode} search).")
        return EXIT_OK
    for rank, hit in enumerate(hits, 1):
        when = hit.date.isoformat() if hit.date else "long-term"
        print(f"{rank}. {hit.path}:{hit.start_line}-{hit.end_line}  {when}  score {hit.score:.3f}")
        for line in hit.text.strip().splitlines():
            print(f"   {line}")
    return EXIT_OK


async def _add(index: MemoryBackend, text: str, *, daily: bool, as_json: bool) -> int:
    from dexter.memory.files import EVERGREEN_NAME
    from dexter.memory.tools import add_entry
    from dexter.tools.base import ToolFailure

    files = index.files
    name = files.daily_name() if daily else EVERGREEN_NAME
    try:
        outcome = await add_entry(files, index, text, name)
    except ToolFailure as refusal:
        if as_json:
            _print_json({"written": False, "file": name, "error": str(refusal)})
        else:
            _err(f"{refusal} (To keep it anyway, edit {files.location(name)} by hand.)")
        return EXIT_USAGE
    if as_json:
        _print_json({**outcome.to_dict(), "message": outcome.message, "path": files.location(name)})
    else:
        print(outcome.message)
    return EXIT_OK


def _stats_lines(stats: dict[str, Any], how: str, on_disk: int) -> list[str]:
    size = int(stats.get("db_bytes") or 0)
    if stats.get("keyword_only"):
        vectors = f"none — keyword-only ({how})"
    else:
        vectors = f"{stats['embedded_chunks']} of {stats['chunks']} chunks, {how}"
        vectors += f" [{stats['model_id']}, {stats['dims']} dims]"
    lines = [
        f"Memory files: {on_disk} {'in the database' if stats.get('team') else 'on disk'}, "
        f"{stats['files']} indexed",
        f"Chunks:       {stats['chunks']}",
        f"Vectors:      {vectors}",
        f"Index:        {stats['db_path']} ({size / 1024:.0f} KiB)",
    ]
    if stats.get("last_warning"):
        lines.append(f"Warning:      {stats['last_warning']}")
    return lines


async def _index(index: MemoryBackend, *, force: bool, as_json: bool, how: str) -> int:
    import asyncio

    result = await index.sync(force=force)
    stats = await asyncio.to_thread(index.stats)
    on_disk = len(await asyncio.to_thread(index.files.list))
    if as_json:
        sync = {
            "files_seen": result.files_seen,
            "files_indexed": result.files_indexed,
            "files_removed": result.files_removed,
            "chunks_added": result.chunks_added,
            "chunks_removed": result.chunks_removed,
            "chunks_embedded": result.chunks_embedded,
            "passages_embedded": result.passages_embedded,
            "seconds": round(result.seconds, 3),
        }
        _print_json({"sync": sync, "stats": {**stats, "files_on_disk": on_disk}, "embedder": how})
        return EXIT_OK
    print(
        f"Indexed {result.files_indexed} changed files ({result.chunks_added} chunks added, "
        f"{result.chunks_removed} removed, {result.chunks_embedded} embedded "
        f"({result.passages_embedded} entries); "
        f"{result.files_removed} files gone) in {result.seconds:.2f}s."
    )
    print("\n".join(_stats_lines(stats, how, on_disk)))
    return EXIT_OK


async def _stats(index: MemoryBackend, *, as_json: bool, how: str) -> int:
    import asyncio

    stats = await asyncio.to_thread(index.stats)
    on_disk = len(await asyncio.to_thread(index.files.list))
    if as_json:
        _print_json({**stats, "files_on_disk": on_disk, "embedder": how})
        return EXIT_OK
    print("\n".join(_stats_lines(stats, how, on_disk)))
    if stats["files"] != on_disk:
        print("The index is behind the files; `dexter memory index` (or any search) updates it.")
    return EXIT_OK
