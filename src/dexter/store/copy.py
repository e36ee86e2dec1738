"""`dexter db copy`: an existing home's SQLite database moved into Postgres, without loss.

Everything happens in one Postgres transaction: a failure (a table Postgres has no place for, a
value its column refuses, counts that differ) leaves the target exactly as it was. Rows keep
their ids (identities are moved past them afterwards), sessions keep their order, and every
table's row count is compared before the commit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dexter.errors import ConfigError
from dexter.store.database_url import display_url
from dexter.store.db import DB_FILE_NAME, open_sqlite
from dexter.store.migrations import StoreError
from dexter.store.pg import connect, psycopg_module
from dexter.store.postgres import WRITE_LOCK, open_postgres
from dexter.store.writer import JOURNAL_NAME, replay_journal

if TYPE_CHECKING:
    import psycopg

__all__ = ["CopiedTable", "copy_to_postgres", "sqlite_source"]

# The row every new database starts with: its presence alone does not make a target non-empty.
_SEEDED = {"principals": "id = 'operator'"}


@dataclass(frozen=True, slots=True)
class CopiedTable:
    name: str
    source_rows: int
    target_rows: int


def sqlite_source(text: str) -> Path:
    """The database file named by `sqlite:PATH` (PATH a file, or a Dexter home folder)."""
    if not text.startswith("sqlite:"):
        raise ConfigError(
            f"--from must be sqlite:PATH (a dexter.db file or a Dexter home), not {text!r}."
        )
    path = Path(text.removeprefix("sqlite:")).expanduser()
    if path.is_dir():
        path = path / DB_FILE_NAME
    if not path.is_file():
        raise ConfigError(f"There is no Dexter database at {path}.")
    return path


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _parents_first(conn: psycopg.Connection[Any], tables: list[str]) -> list[str]:
    """`tables` ordered so a row's foreign keys point at rows already copied."""
    edges: dict[str, set[str]] = {table: set() for table in tables}
    for row in conn.execute(
        "SELECT conrelid::regclass::text AS child, confrelid::regclass::text AS parent "
        "FROM pg_constraint WHERE contype = 'f'"
    ):
        child, parent = str(row["child"]).strip('"'), str(row["parent"]).strip('"')
        if child in edges and parent in edges and parent != child:
            edges[child].add(parent)
    ordered: list[str] = []
    while edges:
        ready = sorted(t for t, parents in edges.items() if not parents - set(ordered))
        if not ready:  # a cycle: copy the rest in name order and let the server judge
            ready = sorted(edges)
        for table in ready:
            ordered.append(table)
            del edges[table]
    return ordered


def _pg_columns(conn: psycopg.Connection[Any]) -> dict[str, list[str]]:
    columns: dict[str, list[str]] = {}
    for row in conn.execute(
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position"
    ):
        columns.setdefault(row["table_name"], []).append(row["column_name"])
    return columns


def copy_to_postgres(
    source: Path,
    url: str,
    *,
    replace: bool = False,
    progress: Callable[[CopiedTable], None] | None = None,
) -> list[CopiedTable]:
    """Copy every table of the SQLite database `source` into the Postgres database at `url`
    (migrated first). Refuses a target holding Dexter data unless `replace`, which empties its
    tables first. Returns each table's counts, which matched.

    Records a busy database made Dexter journal beside `source` are written into it first."""
    with open_sqlite(source, create=False) as lite:
        if (source.parent / JOURNAL_NAME).is_file():
            replay_journal(lite, source.parent)
        tables = [
            str(row[0])
            for row in lite.query(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite_%' AND name != '_migrations' ORDER BY name"
            )
        ]
        open_postgres(url).close()
        with connect(url) as conn:
            pg_columns = _pg_columns(conn)
            missing = [t for t in tables if t not in pg_columns]
            if missing:
                raise StoreError(
                    f"The database at {display_url(url)} has no table for {', '.join(missing)}; "
                    "is this Dexter older than the one that wrote "
                    f"{source}? Nothing was copied."
                )
            plan: dict[str, list[str]] = {}
            for table in tables:
                lite_columns = [str(r["name"]) for r in lite.query(f"PRAGMA table_info({table})")]
                lost = [c for c in lite_columns if c not in pg_columns[table]]
                if lost:
                    raise StoreError(
                        f"Postgres table {table} has no column {', '.join(lost)}; nothing was "
                        "copied. Upgrade Dexter on both sides to the same version."
                    )
                # SQLite's implicit rowid orders sessions; Postgres keeps it as a column.
                if "rowid" in pg_columns[table] and "rowid" not in lite_columns:
                    lite_columns.append("rowid")
                plan[table] = lite_columns
            if not replace:
                _refuse_non_empty(conn, url, tables)
            copied: list[CopiedTable] = []
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
                conn.execute(
                    f"TRUNCATE {', '.join(_ident(t) for t in tables)} RESTART IDENTITY".encode()
                )
                for table in _parents_first(conn, tables):
                    columns = plan[table]
                    expected = int(lite.query(f"SELECT COUNT(*) FROM {_ident(table)}")[0][0])
                    _copy_table(lite.conn, conn, table, columns)
                    got = conn.execute(f"SELECT COUNT(*) AS n FROM {_ident(table)}".encode())
                    count = int(got.fetchone()["n"])  # type: ignore[index]
                    if count != expected:
                        raise StoreError(
                            f"Copying {table} gave {count} rows in Postgres for {expected} in "
                            f"{source}; nothing was copied."
                        )
                    copied.append(CopiedTable(table, expected, count))
                    if progress is not None:
                        progress(copied[-1])
                _move_identities(conn, tables)
    return copied


def _copy_table(lite: Any, conn: psycopg.Connection[Any], table: str, columns: list[str]) -> None:
    names = ", ".join(_ident(c) for c in columns)
    rows = lite.execute(f"SELECT {names} FROM {_ident(table)}")
    try:
        with conn.cursor().copy(f"COPY {_ident(table)} ({names}) FROM STDIN".encode()) as copy:
            for row in rows:
                copy.write_row(tuple(row))
    except psycopg_module().DataError as error:
        detail = str(error).strip().splitlines()[0]
        raise StoreError(
            f"Postgres refused a row of {table} ({detail}); nothing was copied."
        ) from None


def _move_identities(conn: psycopg.Connection[Any], tables: list[str]) -> None:
    """Identities continue after the copied ids, so new rows never collide with them."""
    for row in conn.execute(
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND is_identity = 'YES'"
    ).fetchall():
        table, column = row["table_name"], row["column_name"]
        if table not in tables:
            continue
        conn.execute(
            f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), "
            f"COALESCE((SELECT MAX({_ident(column)}) FROM {_ident(table)}), 0) + 1, false)".encode()
        )


def _refuse_non_empty(conn: psycopg.Connection[Any], url: str, tables: list[str]) -> None:
    held = []
    for table in tables:
        seeded = _SEEDED.get(table)
        where = f" WHERE NOT ({seeded})" if seeded else ""
        row = conn.execute(f"SELECT COUNT(*) AS n FROM {_ident(table)}{where}".encode()).fetchone()
        if row is not None and row["n"]:
            held.append(f"{table} ({row['n']})")
    if held:
        raise StoreError(
            f"The database at {display_url(url)} already holds Dexter data: {', '.join(held)}. "
            "Nothing was copied. Copy into an empty database, or pass --replace to empty these "
            "tables first (their rows are lost)."
        )
