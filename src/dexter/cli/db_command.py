"""`dexter db migrate|status|copy`: the configured database (the SQLite file in the home, or
Postgres in team mode), its schema, and moving a home's data into Postgres.

Only the standard library at module level (`dexter --help` stays fast).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

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
    return EXIT_OK
