"""Memory for a session, from settings: on unless turned off, local embeddings by default."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dexter.config import Settings
from dexter.settings_model import MemorySettings

if TYPE_CHECKING:
    from dexter.memory.backend import MemoryBackend
    from dexter.memory.embeddings import Embedder
    from dexter.principal import Principal

# The index and embedders (numpy, onnxruntime) are imported only when memory is on: a run with
# DEXTER_MEMORY=off should not pay for them at start-up.


def memory_enabled(settings: Settings) -> bool:
    raw = settings.env.get("DEXTER_MEMORY")
    if raw is None:
        return settings.section(MemorySettings).enabled
    return raw.strip().lower() not in {"0", "false", "off", "no"}


def session_embedder(settings: Settings) -> Embedder | None:
    """The local model is created unloaded (it loads on first use, so start-up stays fast);
    other providers are built as configured."""
    from dexter.memory.embeddings import LocalEmbedder, load_embedder

    choice = (
        settings.env.get("DEXTER_EMBEDDINGS")
        or settings.section(MemorySettings).embedding_provider
        or "local"
    )
    if choice.split(":", 1)[0].strip().lower() in {"local", "auto"}:
        return LocalEmbedder()
    embedder, _ = load_embedder(settings)
    return embedder


def open_memory(settings: Settings) -> MemoryBackend | None:
    if not memory_enabled(settings):
        return None
    from dexter.principal import OPERATOR

    return memory_backend(settings, OPERATOR, session_embedder(settings))


def memory_backend(
    settings: Settings,
    principal: Principal,
    embedder: Embedder | None,
    *,
    like: MemoryBackend | None = None,
) -> MemoryBackend:
    """`principal`'s memory where the settings keep it: in team mode (a Postgres database URL)
    the documents and their index in that database, else the files under the principal's home
    with the SQLite index beside them. `like` is an open memory whose database connection the
    new one shares (one connection per process, not one per chat user)."""
    from dexter.store.database_url import database_target

    target = database_target(settings)
    if target.url is not None:
        from dexter.memory.pg_index import PgMemoryIndex
        from dexter.memory.pg_link import PgLink

        link = like.link if isinstance(like, PgMemoryIndex) else PgLink(target.url)
        return PgMemoryIndex(link, principal.id, embedder)
    from dexter.memory.index import MemoryIndex

    return MemoryIndex(principal.home(settings.home), embedder)
