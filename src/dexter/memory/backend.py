"""What the rest of Dexter needs of long-term memory, whichever database holds it.

Two backends satisfy these protocols and pass one contract suite (tests/test_memory_backends.py):

- `dexter.memory.index.MemoryIndex` (one user): markdown files under the home are the truth,
  mirrored into a SQLite index beside them (FTS5 + vectors scanned with numpy);
- `dexter.memory.pg_index.PgMemoryIndex` (team mode, `DEXTER_DATABASE_URL=postgresql://…`): the
  documents themselves live in Postgres, indexed there with full-text search (tsvector + GIN) and
  pgvector, so every worker on every machine reads and writes the same memory.

Both rank through `dexter.memory.search.rank_candidates`, so a search returns the same `Hit`s in
the same order for the same documents, and both keep each principal's memory apart.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from dexter.memory.embeddings import Embedder
    from dexter.memory.index import SyncStats
    from dexter.memory.search import Hit

__all__ = ["MemoryBackend", "MemoryDocuments"]


class MemoryDocuments(Protocol):
    """MEMORY.md and the daily notes of one principal (`dexter.memory.files` names them)."""

    def daily_name(self, day: date | None = None) -> str: ...

    def list(self) -> list[str]: ...

    def read(self, name: str) -> str: ...

    def write(self, name: str, text: str) -> None: ...

    def append(self, name: str, text: str) -> None: ...

    def replace_text(self, name: str, old: str, new: str) -> bool: ...

    def delete_text(self, name: str, old: str) -> bool: ...

    def location(self, name: str | None = None) -> str:
        """Where the memory (or the document `name`) lives, said for a person."""
        ...


class MemoryBackend(Protocol):
    """One principal's memory: its documents and the index that searches them."""

    @property
    def files(self) -> MemoryDocuments: ...

    @property
    def embedder(self) -> Embedder | None: ...

    @property
    def last_warning(self) -> str | None: ...

    @property
    def keyword_only(self) -> bool: ...

    async def sync(self, *, force: bool = False) -> SyncStats: ...

    async def search(
        self,
        query: str,
        *,
        limit: int = 5,
        paths: Iterable[str] | None = None,
        since: date | None = None,
        until: date | None = None,
        min_score: float | None = None,
        vector_weight: float = ...,
        text_weight: float = ...,
        decay: bool = True,
        half_life_days: float = 30.0,
        mmr: bool = True,
        mmr_lambda: float = 0.7,
        now: date | None = None,
    ) -> list[Hit]: ...

    def stats(self) -> dict[str, Any]:
        """Files, chunks, vectors by model and where the index lives (blocking: call it from a
        worker thread inside the event loop)."""
        ...

    def close(self) -> None: ...
