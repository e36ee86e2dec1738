"""What the rest of Dexter depends on: a `Store` with `query` and `transaction`, on SQLite (the
file in DEXTER_HOME) or Postgres (team mode).

SQL is written once, in SQLite's `?` style and in the subset both databases share (`ON CONFLICT`
upserts, `WHERE 1=1`, `CASE` instead of summing booleans). The Postgres backend translates the
placeholders in one place (`dexter.store.postgres.pg_sql`); where the dialects must differ (the id
of a new row) the difference lives here, in one function per need.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any, Protocol, Self

__all__ = ["Connection", "Cursor", "Row", "Store", "insert_id"]


class Row(Protocol):
    """A result row: by position (`row[0]`) or by column name (`row["id"]`), like sqlite3.Row."""

    def __getitem__(self, key: int | str, /) -> Any: ...

    def keys(self) -> list[str]: ...

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Any]: ...


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Connection(Protocol):
    """What a transaction hands out: statements run inside it."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Cursor: ...

    def executemany(self, sql: str, seq_of_parameters: Any, /) -> Cursor: ...


class Store(abc.ABC):
    """One process's handle on the database; safe to share between threads.

    `transaction()` is a write transaction that other writers wait for (SQLite's BEGIN
    IMMEDIATE; on Postgres a transaction-scoped advisory lock), so a read-then-write inside one
    is never interleaved with another process's."""

    #: "sqlite" or "postgres".
    backend: str
    #: The driver's exceptions for a database that failed a statement or went away.
    errors: tuple[type[BaseException], ...]
    #: The schema migrations opening this handle applied (empty when it was current).
    applied_now: list[int]

    @abc.abstractmethod
    def transaction(self) -> AbstractContextManager[Connection]: ...

    @abc.abstractmethod
    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

    @abc.abstractmethod
    def close(self) -> None: ...

    @abc.abstractmethod
    def describe(self) -> str:
        """Where the data is, for people (a Postgres password is never shown)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def insert_id(conn: Any, sql: str, params: Sequence[Any]) -> int:
    """Run an INSERT into a table with an integer `id` and return the new row's id.

    SQLite reports it as `lastrowid` (RETURNING needs SQLite 3.35, newer than some systems'
    Python has); Postgres has no lastrowid, so the statement returns it."""
    import sqlite3

    if isinstance(conn, sqlite3.Connection):
        return int(conn.execute(sql, params).lastrowid or 0)
    row = conn.execute(sql + " RETURNING id", params).fetchone()
    return int(row[0])
