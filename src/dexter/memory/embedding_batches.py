"""Embedding a sync's new chunks, by passage: the half of indexing that every backend shares.

Everything to embed in one sync goes to the embedder sorted by length, all files together, so a
batch holds texts of about the same length and little of the work is padding. An embedding
failure never loses text: the chunk gets no vectors (keyword search still finds it),
`last_warning` says what happened, and the next sync tries again.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dexter.memory.passages import passages

if TYPE_CHECKING:
    from dexter.memory.embeddings import Embedder

__all__ = ["EMBED_BATCH", "ChunkVectors", "PassageEmbedding", "short_hash"]

_log = logging.getLogger("dexter.memory.index")

# Texts per call to the embedder: a failure loses at most this much of a sync's work.
EMBED_BATCH = 256


def short_hash(text: str) -> str:
    """A passage's identity for reusing its vector: 64 bits of its sha256."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class ChunkVectors:
    """What a chunk stores about its vectors (see `dexter.memory.migrations`)."""

    passages: str  # the passages' short hashes, space-separated, in order
    centroid: bytes  # float32 normalised mean of the passage vectors
    vector: bytes  # float16 rows, one per passage


class PassageEmbedding:
    """Needs `embedder`, `last_warning` and the `_passages_total` counter of its subclass."""

    embedder: Embedder | None
    last_warning: str | None
    _passages_total: int

    async def _embed_chunks(
        self, texts: dict[Any, str], known: dict[str, bytes]
    ) -> dict[Any, ChunkVectors | None]:
        """Each chunk's vectors, by passage; passages in `known` are not embedded again. A chunk
        any of whose passages failed to embed gets None (keyword-only until a later sync)."""
        plan = {key: [(short_hash(p), p) for p in passages(text)] for key, text in texts.items()}
        wanted = {h: p for parts in plan.values() for h, p in parts if h not in known}
        rows = await self._embed(list(wanted.values()))
        vectors = dict(known)
        vectors.update({h: row for h, row in zip(wanted, rows, strict=True) if row is not None})
        import numpy as np

        out: dict[Any, ChunkVectors | None] = {}
        for key, parts in plan.items():
            if not parts or any(h not in vectors for h, _ in parts):
                out[key] = None
                continue
            blob = b"".join(vectors[h] for h, _ in parts)
            matrix = np.frombuffer(blob, dtype="<f2").reshape(len(parts), -1).astype(np.float32)
            mean = matrix.mean(axis=0)
            norm = float(np.linalg.norm(mean))
            centroid = (mean / norm if norm > 0 else mean).astype("<f4")
            out[key] = ChunkVectors(" ".join(h for h, _ in parts), centroid.tobytes(), blob)
        return out

    async def _embed(self, texts: Sequence[str]) -> list[bytes | None]:
        """Each text's vector as float16 bytes, or None for those a failure left unembedded
        (a warning is kept). All texts go out sorted by length, in batches of `EMBED_BATCH`, so
        the texts batched together are about the same length whatever file they came from."""
        out: list[bytes | None] = [None] * len(texts)
        embedder = self.embedder
        if embedder is None or not texts:
            return out
        import numpy as np  # only once there is something to embed

        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), EMBED_BATCH):
            batch = order[start : start + EMBED_BATCH]
            try:
                matrix = np.asarray(await embedder.embed([texts[i] for i in batch]))
                if matrix.shape != (len(batch), embedder.dims):
                    raise ValueError(
                        f"embedder returned shape {matrix.shape}, expected "
                        f"({len(batch)}, {embedder.dims})"
                    )
            except Exception as exc:  # degrade to keyword search, retry on the next sync
                _log.debug("embedding during sync failed", exc_info=True)
                self.last_warning = (
                    f"Embedding with {embedder.model_id} failed ({exc}); those memories are "
                    "searchable by keyword only until the next successful sync."
                )
                return out
            for i, row in zip(batch, matrix.astype("<f2"), strict=True):
                out[i] = row.tobytes()
            self._passages_total += len(batch)
        return out
