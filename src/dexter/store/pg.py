"""Connections to Postgres (team mode), through psycopg from the `team` extra.

psycopg is imported here, on first use, so single-user Dexter never loads it; a missing extra
is one ConfigError naming the command that installs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dexter.errors import ConfigError
from dexter.store.database_url import display_url

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresUnavailable", "connect", "psycopg_module"]


class PostgresUnavailable(ConfigError):
    """The configured Postgres server refused or could not be reached."""


def psycopg_module() -> Any:
    try:
        import psycopg
    except ImportError:
        from dexter.install import missing_extra

        raise missing_extra("Team mode (a Postgres database)", "team", "psycopg") from None
    return psycopg


def connect(
    url: str, *, autocommit: bool = True, connect_timeout: float = 10.0
) -> psycopg.Connection[Any]:
    """A connection with dict rows; ConfigError (never a raw traceback) when it cannot be made."""
    pg = psycopg_module()
    from psycopg.rows import dict_row

    try:
        conn: psycopg.Connection[Any] = pg.connect(
            url, autocommit=autocommit, row_factory=dict_row, connect_timeout=int(connect_timeout)
        )
    except pg.OperationalError as exc:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise PostgresUnavailable(
            f"Cannot connect to the database at {display_url(url)}: {detail}. Check that the "
            "server is running and DEXTER_DATABASE_URL (or database.url in settings.json) is right."
        ) from None
    return conn
