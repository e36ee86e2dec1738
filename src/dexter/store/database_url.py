"""Which database Dexter uses: the SQLite file in DEXTER_HOME, or a Postgres server (team mode).

DEXTER_DATABASE_URL (or the file DEXTER_DATABASE_URL_FILE names, e.g. a compose secret) wins over
`"database": {"url": ...}` in settings.json; DEXTER_DATABASE_PASSWORD(_FILE) fills in a password
the URL leaves out. Only `postgresql://` (or `postgres://`) URLs select Postgres; nothing set
means the SQLite file, as always. URLs are shown to people only through `display_url`, which
drops the password.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import quote, urlsplit, urlunsplit

from dexter.errors import ConfigError

if TYPE_CHECKING:
    from dexter.config import Settings

ENV_NAME = "DEXTER_DATABASE_URL"
# The password alone, for a URL written without one: with DEXTER_DATABASE_PASSWORD_FILE, the
# database server and Dexter read one secret file (compose.yaml does this).
PASSWORD_ENV_NAME = "DEXTER_DATABASE_PASSWORD"
POSTGRES_SCHEMES = ("postgresql", "postgres")

__all__ = [
    "ENV_NAME",
    "PASSWORD_ENV_NAME",
    "DatabaseTarget",
    "database_target",
    "display_url",
    "with_password",
]


@dataclass(frozen=True)
class DatabaseTarget:
    """`url` is None for the SQLite file in the Dexter home."""

    url: str | None = None

    @property
    def is_postgres(self) -> bool:
        return self.url is not None

    def describe(self) -> str:
        return display_url(self.url) if self.url else "SQLite (dexter.db in the Dexter home)"


def database_target(
    settings: Settings | None = None, environ: Mapping[str, str] | None = None
) -> DatabaseTarget:
    """The configured database; raises ConfigError for a URL Dexter cannot use."""
    if environ is not None:
        env: Mapping[str, str] = environ
    elif settings is not None:
        # The settings' view: the process environment over `.env`, with `*_FILE` secrets read.
        env = settings.env
    else:
        from dexter.secret_files import read_secret_files

        env = read_secret_files(os.environ)[0]
    url = (env.get(ENV_NAME) or "").strip()
    where = ENV_NAME
    if not url and settings is not None:
        from dexter.settings_model import DatabaseSettings

        url = (settings.section(DatabaseSettings).url or "").strip()
        where = '"database.url" in settings.json'
    if not url:
        return DatabaseTarget()
    scheme = urlsplit(url).scheme.lower()
    if scheme not in POSTGRES_SCHEMES:
        raise ConfigError(
            f"{where} must be a postgresql:// URL (got {display_url(url)!r}); leave it unset to "
            "keep everything in the SQLite file in the Dexter home."
        )
    password = (env.get(PASSWORD_ENV_NAME) or "").strip()
    if password and urlsplit(url).password is None:
        url = with_password(url, password)
    return DatabaseTarget(url)


def with_password(url: str, password: str) -> str:
    """`url` with `password` added (percent-encoded: a generated password may hold `@` or `/`)."""
    parts = urlsplit(url)
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    netloc = f"{user}:{quote(password, safe='')}@{host}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def display_url(url: str) -> str:
    """`url` without its password, for messages, logs and `dexter status`."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    netloc = f"{user}:***@{host}" if user else f"***@{host}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
