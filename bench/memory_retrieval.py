"""Memory retrieval quality, search latency at scale, and indexing throughput.

1. Quality: a generated year of daily notes for one investor plus MEMORY.md
   (`bench/memory_corpus.py`: holdings changes, thesis revisions, preferences, near-duplicate
   recaps, market noise) and 66 labelled queries (keyword, paraphrase with no shared content word,
   and "freshest note wins"), indexed in a temporary home with the REAL local embedder. Prints
   recall@5 and MRR@5 for keyword-only, vector-only, hybrid, hybrid+decay, hybrid+decay+MMR, and
   the full pipeline with the `memory_search` tool's company/ticker query expansion.
2. Latency: search p50/p95 at 10,000 and 100,000 chunks. Embedding 100k texts with the local
   model takes minutes, so these tables are SYNTHESISED directly in SQLite: texts are generated
   notes (FTS rows via the normal triggers) and vectors are perturbed copies of the real corpus
   vectors (normalised). Query vectors are real embeddings computed once; the query-embedding
   cost is reported separately. Targets: p95 <= 20 ms at 10k, <= 60 ms at 100k.
3. Indexing throughput: chunks/s for a full sync of the year corpus with real embeddings.

Prints figures; asserts nothing. Run: uv run python bench/memory_retrieval.py
"""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dexter.memory.embeddings import LocalEmbedder
from dexter.memory.index import MemoryIndex
from dexter.memory.search import Hit, fts_query, hybrid_search
from dexter.memory.tools import expand_query
from memory_corpus import Corpus, Query, generate, noise_line

K = 5
LATENCY_SIZES = (10_000, 100_000)
LATENCY_RUNS = 300
TARGETS_MS = {10_000: 20.0, 100_000: 60.0}


@dataclass(frozen=True)
class Mode:
    name: str
    options: dict[str, Any]
    expand: bool = False


MODES = [
    Mode("keyword-only", {"vector_weight": 0.0, "text_weight": 1.0, "decay": False, "mmr": False}),
    Mode("vector-only", {"vector_weight": 1.0, "text_weight": 0.0, "decay": False, "mmr": False}),
    Mode("hybrid", {"decay": False, "mmr": False}),
    Mode("hybrid+decay", {"decay": True, "mmr": False}),
    Mode("hybrid+decay+MMR", {"decay": True, "mmr": True}),
    Mode("  + query expansion (tool)", {"decay": True, "mmr": True}, expand=True),
    # Sensitivity of the decay half-life (the default is 30 days).
    Mode("hybrid+decay 90d+MMR", {"decay": True, "mmr": True, "half_life_days": 90.0}),
    Mode("hybrid+decay 365d+MMR", {"decay": True, "mmr": True, "half_life_days": 365.0}),
]


def _rank(hits: Sequence[Hit], query: Query) -> int | None:
    for position, hit in enumerate(hits, 1):
        for answer in query.answers:
            if hit.path == answer.file and answer.phrase in hit.text:
                return position
    return None


def _percentile(samples: Sequence[float], pct: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


async def quality(corpus: Corpus, embedder: LocalEmbedder) -> None:
    with tempfile.TemporaryDirectory(prefix="dexter-memory-bench-") as tmp:
        home = Path(tmp)
        memory = home / "memory"
        memory.mkdir()
        for name, text in corpus.files.items():
            (memory / name).write_text(text, encoding="utf-8")
        index = MemoryIndex(home, embedder)
        started = time.perf_counter()
        stats = await index.sync()
        elapsed = time.perf_counter() - started
        print(
            f"Corpus: {len(corpus.files)} files ({len(corpus.files) - 1} daily notes + MEMORY.md), "
            f"{stats.chunks_added} chunks, {len(corpus.queries)} labelled queries; "
            f"'now' = {corpus.now.date()}"
        )
        print(
            f"Indexing throughput (real local embeddings, full sync): {stats.chunks_added} chunks "
            f"in {elapsed:.2f} s = {stats.chunks_added / elapsed:.0f} chunks/s "
            f"({stats.chunks_embedded} embedded)"
        )
        # Re-sync costs: nothing changed, and one file edited by hand.
        noop = await index.sync()
        last = sorted(n for n in corpus.files if n != "MEMORY.md")[-1]
        path = memory / last
        path.write_text(path.read_text(encoding="utf-8") + "\n- Edited by hand.\n", "utf-8")
        edit = await index.sync()
        print(
            f"Re-sync: unchanged {noop.seconds * 1000:.1f} ms; one file edited "
            f"{edit.seconds * 1000:.1f} ms ({edit.chunks_added} chunk(s) re-embedded)\n"
        )

        kinds = sorted({q.kind for q in corpus.queries})
        header = f"{'mode':<28} {'recall@5':>9} {'MRR@5':>7}   " + "  ".join(
            f"{f'R@5 {k}':>14}" for k in kinds
        )
        print(header)
        print("-" * len(header))
        now = corpus.now.date()
        for mode in MODES:
            ranks: list[int | None] = []
            by_kind: dict[str, list[bool]] = {k: [] for k in kinds}
            for query in corpus.queries:
                text = expand_query(query.text) if mode.expand else query.text
                hits = await hybrid_search(index, text, limit=K, now=now, **mode.options)
                rank = _rank(hits, query)
                ranks.append(rank)
                by_kind[query.kind].append(rank is not None)
            recall = sum(r is not None for r in ranks) / len(ranks)
            mrr = sum(1 / r for r in ranks if r is not None) / len(ranks)
            per_kind = "  ".join(
                f"{sum(v) / len(v):>9.2f} (n={len(v):>2})" for v in by_kind.values()
            )
            print(f"{mode.name:<28} {recall:>9.3f} {mrr:>7.3f}   {per_kind}")
        index.close()


class _CachedQueries:
    """Same model id and dims as the real embedder; returns precomputed query vectors."""

    def __init__(self, model_id: str, dims: int, vectors: dict[str, npt.NDArray[np.float32]]):
        self.model_id = model_id
        self.dims = dims
        self._vectors = vectors

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.stack([self._vectors[t] for t in texts]).astype(np.float32)


def _synthetic_text(rng: random.Random, facts: Sequence[str]) -> str:
    lines = [noise_line(rng)[1] for _ in range(rng.randint(3, 7))]
    if rng.random() < 0.2:
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(facts))
    return "\n".join(f"- {line}" for line in lines)


def _build_synthetic(
    index: MemoryIndex,
    size: int,
    base: npt.NDArray[np.float32],
    facts: Sequence[str],
    model_id: str,
    dims: int,
) -> None:
    rng = random.Random(size)
    np_rng = np.random.default_rng(size)
    picks = np_rng.integers(0, base.shape[0], size=size)
    noise = np_rng.standard_normal((size, dims)).astype(np.float32) * (0.6 / np.sqrt(dims))
    vectors = base[picks] + noise
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    start = date(2016, 1, 1)
    rows = []
    per_file = max(1, size // 3650)  # about ten years of daily notes
    for i in range(size):
        day = start + timedelta(days=i // per_file)
        rows.append(
            (
                f"{day.isoformat()}.md",
                1 + (i % per_file) * 8,
                8 + (i % per_file) * 8,
                _synthetic_text(rng, facts),
                f"synthetic-{i}",
                day.isoformat(),
                model_id,
                dims,
                vectors[i].astype("<f4").tobytes(),
            )
        )
    conn = index.conn
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany(
        "INSERT INTO chunks (path, start_line, end_line, text, hash, date, model_id, dims, "
        "vector) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    conn.execute("COMMIT")


async def latency(corpus: Corpus, embedder: LocalEmbedder) -> None:
    texts = [q.text for q in corpus.queries]
    started = time.perf_counter()
    query_vectors = embedder.embed_sync(texts)
    per_query_ms = (time.perf_counter() - started) / len(texts) * 1000
    single = []
    for text in texts[:30]:
        t0 = time.perf_counter()
        await embedder.embed([text])
        single.append((time.perf_counter() - t0) * 1000)
    cached = _CachedQueries(
        embedder.model_id, embedder.dims, {t: query_vectors[i] for i, t in enumerate(texts)}
    )
    base = embedder.embed_sync(list(corpus.files.values()))
    facts = [
        line[2:]
        for text in corpus.files.values()
        for line in text.splitlines()
        if line.startswith("- ") and any(w in line for w in ("Bought", "Sold", "thesis"))
    ]
    print(
        "\nSearch latency, full pipeline (hybrid + decay + MMR, limit 5), on SYNTHESISED chunk "
        "tables:\nreal query vectors (cached), generated note texts in FTS5, vectors = perturbed "
        "copies of real corpus vectors."
    )
    print(
        f"Query embedding with the local model: p50 {_percentile(single, 50):.1f} ms, "
        f"p95 {_percentile(single, 95):.1f} ms per single query "
        f"({per_query_ms:.1f} ms/query batched); add it for end-to-end latency."
    )
    for size in LATENCY_SIZES:
        with tempfile.TemporaryDirectory(prefix="dexter-memory-latency-") as tmp:
            index = MemoryIndex(Path(tmp), cached)
            t0 = time.perf_counter()
            _build_synthetic(index, size, base, facts, embedder.model_id, embedder.dims)
            build = time.perf_counter() - t0
            t0 = time.perf_counter()
            index.vector_table()
            load = time.perf_counter() - t0
            samples: list[float] = []
            keyword: list[float] = []
            for run in range(LATENCY_RUNS):
                text = texts[run % len(texts)]
                t0 = time.perf_counter()
                await hybrid_search(index, text, limit=K)
                samples.append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                await hybrid_search(
                    index, text, limit=K, vector_weight=0.0, text_weight=1.0, mmr=False
                )
                keyword.append((time.perf_counter() - t0) * 1000)
            matched = [
                index.conn.execute(
                    "SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (match,)
                ).fetchone()[0]
                for text in texts
                if (match := fts_query(text)) is not None
            ]
            p50, p95 = _percentile(samples, 50), _percentile(samples, 95)
            target = TARGETS_MS[size]
            verdict = "meets" if p95 <= target else "MISSES"
            print(
                f"  {size:>7,} chunks: p50 {p50:6.2f} ms, p95 {p95:6.2f} ms "
                f"({verdict} the {target:.0f} ms p95 target); keyword stage alone p95 "
                f"{_percentile(keyword, 95):.2f} ms (a query's OR-ed terms match "
                f"{statistics.median(matched) / size:.0%} of chunks at the median, "
                f"{max(matched) / size:.0%} at most); table built in {build:.1f} s, vector "
                f"matrix loaded in {load * 1000:.0f} ms"
            )
            index.close()


async def main() -> None:
    corpus = generate()
    embedder = LocalEmbedder()
    t0 = time.perf_counter()
    embedder.load()
    print(f"Local embedder {embedder.model_id} loaded in {time.perf_counter() - t0:.2f} s\n")
    await quality(corpus, embedder)
    await latency(corpus, embedder)


if __name__ == "__main__":
    asyncio.run(main())
