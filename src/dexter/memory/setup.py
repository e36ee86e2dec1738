"""Memory for a session, from settings: on unless turned off, local embeddings by default."""

from __future__ import annotations

from dexter.config import Settings
from dexter.memory.embeddings import Embedder, LocalEmbedder, load_embedder
from dexter.memory.index import MemoryIndex
from dexter.settings_model import MemorySettings


def memory_enabled(settings: Settings) -> bool:
    raw = settings.env.get("DEXTER_MEMORY")
    if raw is None:
        return settings.section(MemorySettings).enabled
    return raw.strip().lower() not in {"0", "false", "off", "no"}


def session_embedder(settings: Settings) -> Embedder | None:
    """The local model is created unloaded (it loads on first use, so start-up stays fast);
    other providers are built as configured."""
    choice = (
        settings.env.get("DEXTER_EMBEDDINGS")
        or settings.section(MemorySettings).embedding_provider
        or "local"
    )
    if choice.split(":", 1)[0].strip().lower() in {"local", "auto"}:
        return LocalEmbedder()
    embedder, _ = load_embedder(settings)
    return embedder


def open_memory(settings: Settings) -> MemoryIndex | None:
    if not memory_enabled(settings):
        return None
    return MemoryIndex(settings.home, session_embedder(settings))
