"""Memory for a session, from settings: on unless turned off, local embeddings by default."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dexter.config import Settings
from dexter.settings_model import MemorySettings

if TYPE_CHECKING:
    from dexter.memory.embeddings import Embedder
    from dexter.memory.index import MemoryIndex

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


def open_memory(settings: Settings) -> MemoryIndex | None:
    if not memory_enabled(settings):
        return None
    from dexter.memory.index import MemoryIndex

    return MemoryIndex(settings.home, session_embedder(settings))
