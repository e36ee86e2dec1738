"""A small deterministic embedder for memory tests: hashed bag of stemmed words + synonyms.

Words are lower-cased, crudely stemmed and mapped through a tiny finance synonym table (so
"nvidia position size" and "I hold 200 NVDA shares" share dimensions without sharing a single
keyword), then hashed into `dims` buckets and L2-normalised. Character trigrams add a weaker
signal so spelling variants stay close. No network, no model files, same output every run.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("a an and i in is my of on the to we what how much many do does at".split())
SYNONYMS = {
    "nvidia": "nvda",
    "position": "holding",
    "size": "holding",
    "hold": "holding",
    "own": "holding",
    "share": "holding",
    "stake": "holding",
    "apple": "aapl",
    "careful": "conservative",
    "cautious": "conservative",
    "prudent": "conservative",
    "valuation": "dcf",
    "model": "dcf",
    "assumption": "dcf",
}


def _stem(word: str) -> str:
    for suffix in ("ings", "ing", "ions", "ion", "es", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _bucket(token: str, dims: int) -> tuple[int, float]:
    digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dims, 1.0 if (value >> 40) & 1 else -1.0


def features(text: str) -> list[tuple[str, float]]:
    out: list[tuple[str, float]] = []
    for word in _WORD.findall(text.lower()):
        if word in _STOP:
            continue
        stem = _stem(word)
        term = SYNONYMS.get(word, SYNONYMS.get(stem, stem))
        out.append((f"w:{term}", 1.0))
        padded = f" {word} "
        out.extend((f"t:{padded[i : i + 3]}", 0.15) for i in range(len(padded) - 2))
    return out


class FakeEmbedder:
    """Satisfies `dexter.memory.embeddings.Embedder`; counts the texts it embedded."""

    def __init__(self, model_id: str = "fake:hashed-bow-v1", dims: int = 256) -> None:
        self.model_id = model_id
        self.dims = dims
        self.calls = 0
        self.texts_embedded = 0
        self.fail = False

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if self.fail:
            raise RuntimeError("fake embedder is down")
        self.calls += 1
        self.texts_embedded += len(texts)
        matrix = np.zeros((len(texts), self.dims), dtype=np.float32)
        for row, text in enumerate(texts):
            for token, weight in features(text):
                col, sign = _bucket(token, self.dims)
                matrix[row, col] += sign * weight
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        out: npt.NDArray[np.float32] = np.divide(
            matrix, norms, out=np.zeros_like(matrix), where=norms > 0
        )
        return out
