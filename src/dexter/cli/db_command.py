"""`dexter db migrate|status|copy`: the configured database (the SQLite file in the home, or
Postgres in team mode), its schema, and moving a home's data into Postgres.

Only the standard library at module level (`dexter --help` stays fast).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from pathlib import Path

EXIT_OK = 0
EXIT_PENDING = 1


def add_db_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "db",
        help="the database: schema migrations, status, copying a home into Postgres",
        description="Dexter keeps sessions, the usage ledger, principals, jobs and gateway "
        "state in one database: dexter.db in the Dexter home, or the Postgres server named by "
        "DEXTER_DATABASE_URL (or database.url in settings.json) in team mode.",
    )
    parser.set_defaults(command_run=run_db_command)
    actions = parser.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    actions.add_parser("migrate", help="apply pending schema migrations (safe to repeat)")
    actions.add_parser("status", help="which database, and its schema version")
    copy = actions.add_parser(
        "copy",
        help="copy a home's SQLite database into Postgres, every table, counts checked",
        description="Copy every table of a SQLite database into Postgres in one transaction, "
        "checking each table's row count; on any failure the target is left as it was.",
    )
    copy.add_argument(
        "--from",
        dest="source",
        required=True,
        metavar="sqlite:PATH",
        help="the dexter.db file, or a Dexter home folder (e.g. sqlite:~/.dexter)",
    )
    copy.add_argument(
        "--to",
        dest="target",
        metavar="postgresql://…",
        help="the Postgres database (default: DEXTER_DATABASE_URL or database.url)",
    )
    copy.add_argument(
        "--replace",
        action="store_true",
        help="empty the target's Dexter tables first when they hold data (their rows are lost)",
    )


def run_db_command(args: argparse.Namespace, *, out: TextIO | None = None) -> int:
    from dexter.config import load_settings
    from dexter.store.database_url import database_target

    out = out or sys.stdout
    settings = load_settings()
    if args.db_command == "copy":
        return _copy(args, database_target(settings).url, out)
    url = database_target(settings).url
    if args.db_command == "migrate":
        from dexter.store.manage import migrate_database

        status, applied = migrate_database(settings.home, url)
        print(f"Database: {status.where}", file=out)
        if applied:
            names = {m.number: m.name for m in status.known}
            for number in applied:
                print(f"  applied migration {number}: {names[number]}", file=out)
        else:
            print("  nothing to apply", file=out)
        print(f"Schema version {status.version} (up to date).", file=out)
        if url is not None:
            _migrate_memory(url, out)
            _install_queue(url, out)
        return EXIT_OK
    from dexter.store.manage import database_status

    status = database_status(settings.home, url)
    kind = "Postgres (team mode)" if status.backend == "postgres" else "SQLite"
    print(f"Database: {kind} {status.where}", file=out)
    if not status.exists:
        print("Not created yet: the first command that records anything creates it.", file=out)
        return EXIT_OK
    if status.version > status.newest:
        print(
            f"Schema version {status.version}, newer than this Dexter knows "
            f"({status.newest}): upgrade Dexter.",
            file=out,
        )
        return EXIT_PENDING
    pending = status.pending
    if pending:
        print(
            f"Schema version {status.version}; {len(pending)} migration(s) pending "
            f"(up to {status.newest}): run `dexter db migrate`.",
            file=out,
        )
        return EXIT_PENDING
    print(f"Schema version {status.version} (up to date).", file=out)
    return EXIT_OK


def _copy(args: argparse.Namespace, configured: str | None, out: TextIO) -> int:
    from dexter.errors import ConfigError
    from dexter.store.copy import CopiedTable, copy_to_postgres, sqlite_source
    from dexter.store.database_url import POSTGRES_SCHEMES, display_url

    target = (args.target or configured or "").strip()
    if not target:
        raise ConfigError("Say where to copy to: --to postgresql://… (or set DEXTER_DATABASE_URL).")
    if target.split(":", 1)[0].lower() not in POSTGRES_SCHEMES:
        raise ConfigError(f"--to must be a postgresql:// URL, not {display_url(target)!r}.")
    source = sqlite_source(args.source)
    print(f"Copying {source} into {display_url(target)}", file=out)

    def show(table: CopiedTable) -> None:
        print(f"  {table.name:<18} {table.source_rows:>8} rows -> {table.target_rows}", file=out)

    copied = copy_to_postgres(source, target, replace=args.replace, progress=show)
    total = sum(t.target_rows for t in copied)
    print(f"Copied {total} rows in {len(copied)} tables; every count matches.", file=out)
    _copy_memory(source.parent, target, out)
    return EXIT_OK


def _install_queue(url: str, out: TextIO) -> None:
    """The work queue's tables (procrastinate's schema and the reply outbox), which workers and
    front doors would otherwise create when the first of them starts."""
    import asyncio

    from dexter.work.engine import install

    asyncio.run(install(url))
    print("Queue tables ready (procrastinate and the reply outbox).", file=out)


def _migrate_memory(url: str, out: TextIO) -> None:
    """Team-mode memory keeps its own numbered migrations (`dexter.memory.pg_migrations`)."""
    from dexter.memory.pg_migrations import MEMORY_PG_MIGRATIONS, apply_memory_migrations
    from dexter.store.pg import connect

    with connect(url) as conn:
        applied = apply_memory_migrations(conn)
    names = {m.number: m.name for m in MEMORY_PG_MIGRATIONS}
    for number in applied:
        print(f"  applied memory migration {number}: {names[number]}", file=out)
    print(f"Memory schema version {max(names)} (up to date).", file=out)


def _copy_memory(home: Path, url: str, out: TextIO) -> None:
    """The home's memory files (the operator's and each principal's) into the team database,
    where team mode keeps memory; nothing is created when there are none."""
    import sqlite3

    from dexter.memory.files import MemoryFiles
    from dexter.principal import OPERATOR_ID, PRINCIPALS_DIR, principal_slug
    from dexter.store.copy import sqlite_source

    homes = {OPERATOR_ID: home}
    conn = sqlite3.connect(sqlite_source(f"sqlite:{home}"))
    try:
        ids = [str(r[0]) for r in conn.execute("SELECT id FROM principals")]
    except sqlite3.Error:  # a database from before principals: the operator's memory only
        ids = []
    finally:
        conn.close()
    for principal_id in ids:
        if principal_id != OPERATOR_ID:
            homes[principal_id] = home / PRINCIPALS_DIR / principal_slug(principal_id)
    found = {pid: MemoryFiles(h) for pid, h in homes.items() if MemoryFiles(h).list()}
    if not found:
        return
    from dexter.memory.pg_documents import PgMemoryDocuments, copy_files_into
    from dexter.memory.pg_link import PgLink

    link = PgLink(url)
    try:
        for principal_id, files in found.items():
            names = copy_files_into(files, PgMemoryDocuments(link, principal_id))
            print(f"  memory of {principal_id:<12} {len(names):>4} files", file=out)
    finally:
        link.close()
