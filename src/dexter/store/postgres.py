"""The store on Postgres (team mode): the same SQL as SQLite, over one psycopg connection.

`pg_sql` is the one place SQLite's `?` placeholders become psycopg's `%s`. Rows answer both
`row[0]` and `row["name"]`, like sqlite3.Row. A write transaction first takes one
transaction-scoped advisory lock, so writers queue as they do on SQLite (BEGIN IMMEDIATE): every
read-then-write written for SQLite stays atomic across processes and machines. The connection is
made again after the server went away, so a long-running process recovers by itself once the
server is back (the store writer journals what it could not write meanwhile).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeVar

from dexter.store.backend import Store
from dexter.store.database_url import display_url
from dexter.store.migrations import Migration, StoreError
from dexter.store.pg import connect, psycopg_module
from dexter.store.pg_migrations import PG_MIGRATIONS

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "PgRow",
    "PostgresStore",
    "apply_pg_migrations",
    "open_postgres",
    "pg_sql",
    "schema_version",
]

_T = TypeVar("_T")

# pg_advisory_xact_lock keys: one for every write transaction, one for migrating.
WRITE_LOCK = 0x64657874  # "dext"
MIGRATE_LOCK = 0x64657875


@lru_cache(maxsize=1024)
def pg_sql(sql: str) -> str:
    """`sql` with `?` placeholders (outside quotes) as `%s`, and every `%` doubled so psycopg
    reads it as a literal percent sign."""
    out: list[str] = []
    quote = ""
    for char in sql:
        if quote:
            if char == quote:
                quote = ""
        elif char in ("'", '"'):
            quote = char
        elif char == "?":
            out.append("%s")
            continue
        out.append("%%" if char == "%" else char)
    return "".join(out)


def _params(params: Sequence[Any]) -> tuple[Any, ...]:
    # Flags are 0/1 integer columns (as in SQLite); Postgres will not put a boolean in one.
    return tuple(int(p) if isinstance(p, bool) else p for p in params)


class PgRow(tuple[Any, ...]):
    """A row by position or by column name."""

    _names: dict[str, int]

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            try:
                key = self._names[key]
            except KeyError:
                raise IndexError(f"No item with that key: {key!r}") from None
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._names)


def _row_factory(cursor: Any) -> Any:
    names = {column.name: i for i, column in enumerate(cursor.description or ())}

    def make(values: Sequence[Any]) -> PgRow:
        row = PgRow(values)
        row._names = names
        return row

    return make


class _Connection:
    """A transaction's connection: SQLite-style SQL in, psycopg cursors out."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def execute(self, sql: str, parameters: Sequence[Any] = ()) -> Any:
        cursor = self._conn.cursor(row_factory=_row_factory)
        return cursor.execute(pg_sql(sql), _params(parameters))

    def executemany(self, sql: str, seq_of_parameters: Any) -> Any:
        cursor = self._conn.cursor(row_factory=_row_factory)
        rows = [_params(p) for p in seq_of_parameters]
        cursor.executemany(pg_sql(sql), rows)
        return cursor


class PostgresStore(Store):
    backend = "postgres"

    def __init__(self, url: str) -> None:
        self.url = url
        self.errors = (psycopg_module().Error,)
        self._lock = threading.RLock()
        self._conn: psycopg.Connection[Any] | None = None
        self._closed = False
        self.applied_now: list[int] = []

    def _connection(self) -> psycopg.Connection[Any]:
        """The open connection, made again if the server dropped the last one."""
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            if self._closed:
                raise StoreError("This database handle was closed.")
            if conn is not None:
                conn.close()
            self._conn = None
            conn = self._conn = connect(self.url)
        return conn

    def _retrying(self, first: Callable[[psycopg.Connection[Any]], _T]) -> _T:
        """`first(conn)`, tried once more on a new connection when the server had dropped the
        old one (restarted, or closed it while idle). Only for work that may run twice."""
        conn = self._connection()
        try:
            return first(conn)
        except psycopg_module().OperationalError:
            if not (conn.broken or conn.closed):
                raise
        return first(self._connection())

    @contextmanager
    def transaction(self) -> Iterator[_Connection]:
        with self._lock:

            def begin(conn: psycopg.Connection[Any]) -> tuple[Any, psycopg.Connection[Any]]:
                block = conn.transaction()
                block.__enter__()
                try:
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
                except BaseException as error:
                    block.__exit__(type(error), error, error.__traceback__)
                    raise
                return block, conn

            block, conn = self._retrying(begin)
            try:
                yield _Connection(conn)
            except BaseException as error:
                if not block.__exit__(type(error), error, error.__traceback__):
                    raise
            else:
                block.__exit__(None, None, None)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        def read(conn: psycopg.Connection[Any]) -> list[Any]:
            cursor = _Connection(conn).execute(sql, params)
            return list(cursor.fetchall()) if cursor.description is not None else []

        with self._lock:
            return self._retrying(read)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def describe(self) -> str:
        return f"Postgres {display_url(self.url)}"


def open_postgres(url: str, *, migrate: bool = True) -> PostgresStore:
    """The store at `url`, its schema brought up to date (unless `migrate` is False)."""
    store = PostgresStore(url)
    if migrate:
        try:
            with store._lock:
                store.applied_now = apply_pg_migrations(store._connection(), url)
        except BaseException:
            store.close()
            raise
    return store


def _done(conn: psycopg.Connection[Any]) -> set[int]:
    exists = conn.execute("SELECT to_regclass('_migrations') IS NOT NULL").fetchone()
    if not exists or not next(iter(exists.values())):
        return set()
    return {row["number"] for row in conn.execute("SELECT number FROM _migrations")}


def schema_version(conn: psycopg.Connection[Any]) -> tuple[int, ...]:
    """The migration numbers recorded in the database at `conn` (a `dexter.store.pg` one)."""
    return tuple(sorted(_done(conn)))


def apply_pg_migrations(
    conn: psycopg.Connection[Any], url: str, migrations: tuple[Migration, ...] = PG_MIGRATIONS
) -> list[int]:
    """Bring the schema up to date; returns the numbers applied now (empty when current).
    `conn` is in autocommit mode (as `dexter.store.pg.connect` makes it)."""
    known = {m.number for m in migrations}
    newest = max(known, default=0)

    def refuse_newer(done: set[int]) -> None:
        unknown = sorted(done - known)
        if unknown and unknown[-1] > newest:
            raise StoreError(
                f"The database at {display_url(url)} was written by a newer version of Dexter "
                f"(Postgres schema migration {unknown[-1]}; this version knows up to {newest}). "
                "Upgrade Dexter; it will not downgrade the database."
            )

    # Reading alone settles the usual case, so opening never waits on a migrating process.
    done = _done(conn)
    refuse_newer(done)
    if known <= done:
        return []
    applied: list[int] = []
    with conn.transaction():
        # One migrator at a time: a second process waits here, then finds the work done.
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS _migrations ("
            "number INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        done = _done(conn)
        refuse_newer(done)
        for migration in sorted(migrations, key=lambda m: m.number):
            if migration.number in done:
                continue
            for statement in migration.statements:
                conn.execute(statement.encode())
            conn.execute(
                "INSERT INTO _migrations (number, name, applied_at) VALUES (%s, %s, %s)",
                (migration.number, migration.name, datetime.now(UTC).isoformat()),
            )
            applied.append(migration.number)
    return applied
