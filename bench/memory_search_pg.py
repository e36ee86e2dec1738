"""Memory search latency at 100,000 chunks: Postgres + pgvector (team mode) vs SQLite + numpy.

The same synthesised index as `bench/memory_retrieval.py`'s latency table (its generator, its
seed): generated note texts from `bench/memory_corpus.py`, one passage per line, passage vectors
perturbed copies of the real corpus's passage vectors from the local MiniLM model, real query
vectors (computed once; the query-embedding cost is the same for both backends and is left out).
The SQLite table is built first; the very same rows are then copied into Postgres (binary COPY),
so both backends search identical chunks and vectors.

Measured per query, `limit` 5, the default pipeline (hybrid + decay + MMR):
- SQLite + numpy: `hybrid_search` (as in memory_retrieval.py; vectors held in memory);
- Postgres + pgvector: `PgMemoryIndex.search` (its sync check included: one round trip that
  finds nothing changed) — keyword side on the GIN index, vector side HNSW first stage over chunk
  mean vectors then exact passage scores for the best `FIRST_STAGE_CHUNKS`.
Also the keyword stage alone on each, the agreement of the two top-5 lists, and build times.

Then quality: the labelled year of notes (66 queries + 24 held out, `bench/memory_corpus.py`)
indexed with the REAL local embedder in both backends (each text embedded once, shared), and
recall@5 / MRR@5 of the default search and of the `memory_search` tool's expanded query on each:
what a user would notice if the backends ranked differently.

Postgres: `DEXTER_BENCH_DATABASE_URL` (a server with pgvector) or a local `pgserver` (the dev
dependency). Size the server as production would be: at 100k chunks the HNSW index is ~200 MB,
more than pgserver's default `shared_buffers` (128 MB), and a search then reads index pages from
the OS cache (about twice the latency). For the figures in the report the bench's pgserver ran
with `ALTER SYSTEM SET shared_buffers = '1GB'` (applied at its next start); the value in use is
printed. Prints figures; asserts nothing. Run: uv run python bench/memory_search_pg.py [size]
"""

from __future__ import annotations

import asyncio
import os
import struct
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dexter.memory.backend import MemoryBackend
from dexter.memory.chunking import chunk_markdown
from dexter.memory.embeddings import LocalEmbedder
from dexter.memory.index import MemoryIndex
from dexter.memory.passages import passages
from dexter.memory.pg_index import PgMemoryIndex
from dexter.memory.pg_link import PgLink
from dexter.memory.search import hybrid_search
from dexter.memory.tools import expand_query
from memory_corpus import Corpus, generate
from memory_retrieval import _build_synthetic, _CachedQueries, _percentile, _rank

SIZE = 100_000
RUNS = int(os.environ.get("BENCH_RUNS", "300"))
K = 5
PRINCIPAL = "operator"
KEYWORD_ONLY: dict[str, Any] = {"vector_weight": 0.0, "text_weight": 1.0, "mmr": False}
MODES: dict[str, dict[str, Any]] = {
    "default": {},
    "keyword-only": {**KEYWORD_ONLY, "decay": False},
    "vector-only": {"vector_weight": 1.0, "text_weight": 0.0, "decay": False, "mmr": False},
}


def _server_url() -> tuple[str, Any]:
    given = os.environ.get("DEXTER_BENCH_DATABASE_URL", "").strip()
    if given:
        return given, None
    import pgserver

    folder = Path(tempfile.gettempdir()) / f"dexter-pg-bench-{os.getuid()}"
    server = pgserver.get_server(folder, cleanup_mode="stop")
    return str(server.get_uri()), server


def _with_database(url: str, name: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


def _copy_binary(rows: list[tuple[bytes | None, ...]]) -> bytes:
    """PostgreSQL binary COPY data for rows of already-encoded fields (None is NULL)."""
    out = [b"PGCOPY\n\xff\r\n\x00", struct.pack("!ii", 0, 0)]
    for row in rows:
        out.append(struct.pack("!h", len(row)))
        for field in row:
            if field is None:
                out.append(struct.pack("!i", -1))
            else:
                out.append(struct.pack("!i", len(field)) + field)
    out.append(struct.pack("!h", -1))
    return b"".join(out)


def _vec(values: np.ndarray[Any, Any]) -> bytes:
    """pgvector's binary form: dimension, unused, then big-endian float4s."""
    return struct.pack("!hh", values.shape[0], 0) + values.astype(">f4").tobytes()


def _copy_to_postgres(lite: MemoryIndex, link: PgLink, dims: int) -> int:
    """Every chunk (and its passages) of the SQLite table into the team tables; passages."""
    passages_total = 0
    with link.use() as conn:
        conn.execute("SET maintenance_work_mem = '512MB'")
        found = conn.execute("SELECT coalesce(max(id), 0) AS n FROM memory_chunks").fetchone()
        offset = int(found["n"]) if found else 0  # past the chunks of the quality section
        last = 0
        while True:
            rows = lite.conn.execute(
                "SELECT id, path, start_line, end_line, text, hash, date, model_id, dims, "
                "passages, centroid, vector FROM chunks WHERE id > ? ORDER BY id LIMIT 10000",
                (last,),
            ).fetchall()
            if not rows:
                break
            last = int(rows[-1][0])
            chunk_fields: list[tuple[bytes | None, ...]] = []
            passage_fields: list[tuple[bytes | None, ...]] = []
            for r in rows:
                chunk_id = offset + int(r[0])
                day = r[6]
                chunk_fields.append(
                    (
                        struct.pack("!q", chunk_id),
                        PRINCIPAL.encode(),
                        str(r[1]).encode(),
                        struct.pack("!i", int(r[2])),
                        struct.pack("!i", int(r[3])),
                        str(r[4]).encode(),
                        str(r[5]).encode(),
                        # DATE: days since 2000-01-01
                        struct.pack("!i", _pg_days(day)) if day else None,
                        str(r[7]).encode(),
                        struct.pack("!i", int(r[8])),
                        str(r[9]).encode(),
                        _vec(np.frombuffer(r[10], dtype="<f4")),
                    )
                )
                matrix = np.frombuffer(r[11], dtype="<f2").reshape(-1, dims).astype(np.float32)
                for ord_, vector in enumerate(matrix):
                    passage_fields.append(
                        (struct.pack("!q", chunk_id), struct.pack("!i", ord_), _vec(vector))
                    )
            passages_total += len(passage_fields)
            with conn.cursor() as cur:
                with cur.copy(
                    "COPY memory_chunks (id, principal, path, start_line, end_line, text, hash, "
                    "date, model_id, dims, passages, centroid) FROM STDIN WITH (FORMAT binary)"
                ) as copy:
                    copy.write(_copy_binary(chunk_fields))
                with cur.copy(
                    "COPY memory_passages (chunk_id, ord, embedding) FROM STDIN "
                    "WITH (FORMAT binary)"
                ) as copy:
                    copy.write(_copy_binary(passage_fields))
        conn.execute("SELECT setval('memory_chunks_id_seq', (SELECT max(id) FROM memory_chunks))")
        conn.execute(
            "INSERT INTO memory_state (principal, generation, chunks) VALUES (%s, 1, "
            "(SELECT count(*) FROM memory_chunks WHERE principal = %s))",
            (PRINCIPAL, PRINCIPAL),
        )
    return passages_total


def _pg_days(day: str) -> int:
    from datetime import date

    return (date.fromisoformat(day) - date(2000, 1, 1)).days


class _Shared:
    """The real embedder, each text embedded once for both backends."""

    def __init__(self, inner: LocalEmbedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dims = inner.dims
        self._cache: dict[str, np.ndarray[Any, Any]] = {}

    async def embed(self, texts: Sequence[str]) -> np.ndarray[Any, Any]:
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            rows = await self.inner.embed(missing)
            self._cache.update(zip(missing, rows, strict=True))
        return np.stack([self._cache[t] for t in texts]).astype(np.float32)


async def quality(corpus: Corpus, embedder: LocalEmbedder, url: str) -> None:
    shared = _Shared(embedder)
    queries = [*corpus.queries, *corpus.held_out]
    now = corpus.now.date()
    link = PgLink(url)
    with tempfile.TemporaryDirectory(prefix="dexter-memory-pg-quality-") as tmp:
        backends: dict[str, MemoryBackend] = {
            "sqlite": MemoryIndex(Path(tmp), shared),
            "postgres": PgMemoryIndex(link, "year", shared),
        }
        for memory in backends.values():
            for name, text in corpus.files.items():
                memory.files.write(name, text)
            await memory.sync()
        chunks = backends["sqlite"].stats()["chunks"]
        print(
            f"\nQuality on the labelled year ({len(corpus.files)} files, {chunks} chunks, real "
            f"local embeddings): recall@5 / MRR@5 over the {len(corpus.queries)} labelled "
            f"queries, recall@5 over the {len(corpus.held_out)} held out"
        )
        for label, expand in (("default search", False), ("memory_search tool", True)):
            row = []
            for backend, memory in backends.items():
                ranks = {}
                for query in queries:
                    text = expand_query(query.text) if expand else query.text
                    ranks[query] = _rank(await memory.search(text, limit=K, now=now), query)
                labelled = [ranks[q] for q in corpus.queries]
                recall = sum(r is not None for r in labelled) / len(labelled)
                mrr = sum(1 / r for r in labelled if r is not None) / len(labelled)
                held = sum(ranks[q] is not None for q in corpus.held_out) / len(corpus.held_out)
                row.append(f"{backend} {recall:.3f} / {mrr:.3f}, held out {held:.2f}")
            print(f"  {label:<20} " + ";  ".join(row))
        for memory in backends.values():
            memory.close()


async def main(size: int) -> None:
    corpus = generate()
    embedder = LocalEmbedder()
    embedder.load()
    texts = [q.text for q in [*corpus.queries, *corpus.held_out]]
    query_vectors = embedder.embed_sync(texts)
    cached = _CachedQueries(
        embedder.model_id, embedder.dims, {t: query_vectors[i] for i, t in enumerate(texts)}
    )
    base = embedder.embed_sync(
        [
            p
            for text in corpus.files.values()
            for c in chunk_markdown(text)
            for p in passages(c.text)
        ]
    )
    facts = [
        line[2:]
        for text in corpus.files.values()
        for line in text.splitlines()
        if line.startswith("- ") and any(w in line for w in ("Bought", "Sold", "thesis"))
    ]
    print(f"cores: {os.cpu_count()}; {size:,} chunks; {RUNS} queries each; limit {K}")

    server_url, server = _server_url()
    import psycopg

    name = f"dexter_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
    url = _with_database(server_url, name)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        version = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        pg_version = conn.execute("SHOW server_version").fetchone()
        buffers = conn.execute("SHOW shared_buffers").fetchone()
        vector_version = version.fetchone()
    print(
        f"Postgres {pg_version[0] if pg_version else '?'}, pgvector "
        f"{vector_version[0] if vector_version else '?'}, shared_buffers "
        f"{buffers[0] if buffers else '?'}"
    )

    with tempfile.TemporaryDirectory(prefix="dexter-memory-pg-bench-") as tmp:
        lite = MemoryIndex(Path(tmp), cached)
        t0 = time.perf_counter()
        count = _build_synthetic(lite, size, base, facts, embedder.model_id, embedder.dims)
        lite_build = time.perf_counter() - t0
        t0 = time.perf_counter()
        assert lite.vector_table() is not None
        lite_load = time.perf_counter() - t0

        link = PgLink(url)
        team = PgMemoryIndex(link, PRINCIPAL, cached)
        t0 = time.perf_counter()
        copied = _copy_to_postgres(lite, link, embedder.dims)
        copy_seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        with link.use() as conn:
            conn.execute("SET maintenance_work_mem = '512MB'")
            conn.execute("ANALYZE memory_chunks")
            conn.execute("ANALYZE memory_passages")
        link.ensure_vector_index(embedder.dims)
        hnsw_seconds = time.perf_counter() - t0
        print(
            f"SQLite table built in {lite_build:.1f} s ({count:,} passages), vectors loaded into "
            f"memory in {lite_load * 1000:.0f} ms; Postgres: rows copied in {copy_seconds:.1f} s "
            f"({copied:,} passages), ANALYZE + HNSW index (m 16, ef_construction 64) built in "
            f"{hnsw_seconds:.1f} s"
        )

        sync_ms: list[float] = []
        for _ in range(30):
            t0 = time.perf_counter()
            await team.sync()
            sync_ms.append((time.perf_counter() - t0) * 1000)

        # Interleaved query by query, so load from other processes falls on both alike.
        results: dict[str, dict[str, list[float]]] = {
            backend: {"full": [], "keyword": []} for backend in ("sqlite", "postgres")
        }
        for run in range(RUNS):
            text = texts[run % len(texts)]
            for backend in ("sqlite", "postgres"):
                for stage, options in (("full", {}), ("keyword", KEYWORD_ONLY)):
                    t0 = time.perf_counter()
                    if backend == "sqlite":
                        await hybrid_search(lite, text, limit=K, **options)
                    else:
                        await team.search(text, limit=K, **options)
                    results[backend][stage].append((time.perf_counter() - t0) * 1000)
        agreement = {}
        for mode, options in MODES.items():
            agree = compared = 0
            for text in texts:
                a = {
                    (h.path, h.start_line)
                    for h in await hybrid_search(lite, text, limit=K, **options)
                }
                b = {(h.path, h.start_line) for h in await team.search(text, limit=K, **options)}
                agree += len(a & b)
                compared += len(a)
            agreement[mode] = agree / max(compared, 1)

        with link.use() as conn:
            plan = conn.execute(
                "EXPLAIN SELECT c.id FROM memory_chunks c WHERE c.principal = %s AND "
                f"c.model_id = %s AND c.dims = {embedder.dims} AND c.centroid IS NOT NULL "
                f"ORDER BY c.centroid::vector({embedder.dims}) <#> %s::vector({embedder.dims}) "
                "LIMIT 320",
                (PRINCIPAL, embedder.model_id, "[" + ",".join(["0.05"] * embedder.dims) + "]"),
            ).fetchall()
            size_row = conn.execute(
                "SELECT pg_size_pretty(pg_database_size(current_database())) AS s"
            ).fetchone()
        uses_hnsw = any("memory_chunks_hnsw" in str(r["QUERY PLAN"]) for r in plan)

        print("\nfull pipeline (hybrid + decay + MMR):")
        for backend in ("sqlite", "postgres"):
            full = results[backend]["full"]
            kw = results[backend]["keyword"]
            print(
                f"  {backend:8}  p50 {_percentile(full, 50):6.2f} ms  p95 "
                f"{_percentile(full, 95):6.2f} ms   keyword stage alone: p50 "
                f"{_percentile(kw, 50):6.2f} ms  p95 {_percentile(kw, 95):6.2f} ms"
            )
        lite_p95 = _percentile(results["sqlite"]["full"], 95)
        pg_p95 = _percentile(results["postgres"]["full"], 95)
        print(
            f"  ratio postgres/sqlite p95: {pg_p95 / lite_p95:.2f}x; Postgres sync check "
            f"(included above) p50 {_percentile(sync_ms, 50):.2f} ms"
        )
        shared = ", ".join(f"{mode} {share:.0%}" for mode, share in agreement.items())
        print(
            f"  top-5 agreement (share of SQLite's hits Postgres also returns, {len(texts)} "
            f"queries): {shared}"
        )
        print(
            f"  HNSW used for the first stage: {uses_hnsw}; database size "
            f"{size_row['s'] if size_row else '?'}; load average {os.getloadavg()[0]:.1f}"
        )
        team.close()
        lite.close()

    # After the latency tables, so their HNSW index is built once over the loaded rows.
    await quality(corpus, embedder, url)

    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[arg-type]
    del server


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else SIZE))
