"""Team-mode memory index: Postgres full-text search and pgvector over the documents in Postgres.

The same contract as `dexter.memory.index.MemoryIndex` (sync, search, stats; tests in
tests/test_memory_backends.py), for one principal, over `dexter.memory.pg_migrations`'s tables:

- sync compares each document's content hash with the hash it was last indexed at (one query
  when nothing changed); a changed document loses ALL its chunks and gets new ones in one
  transaction, so removed text can never be found again; vectors are reused by chunk hash and
  by passage hash exactly as the SQLite index does (`dexter.memory.embedding_batches`). Writes
  hold a per-principal advisory lock and skip a document whose hash moved on since it was read,
  so two workers syncing at once never duplicate chunks nor index an older text over a newer one.
- keyword side: the query's terms (stopwords dropped, as in SQLite) OR-ed against the chunks'
  GIN-indexed tsvector. `ts_rank` has no notion of how rare a word is, so each term's rank is
  weighted by its BM25 inverse document frequency (counted through the GIN index, and cached
  until the next write), which gives FTS5's bm25 ordering its main trait: the rare word decides.
  On a large index words in more than 1% of the chunks are left to the vector side, as in SQLite.
- vector side: a chunk's score is its best passage's inner product with the query (unit
  vectors, as in SQLite). Up to `EXACT_CHUNKS` chunks the passages are scanned exactly; a larger
  index first takes the `FIRST_STAGE_CHUNKS` nearest chunk mean vectors from an HNSW index, then
  scores their passages exactly (the SQLite index's two stages, with pgvector doing the first).
  HNSW rather than IVFFlat: memory starts empty and grows a note at a time, and IVFFlat's lists
  are fixed by the rows present when the index is built (built on an empty table it never
  recalls well without a rebuild), while HNSW needs no training and keeps its recall as rows
  arrive; its costs (slower inserts, more memory) are small at memory's write rate.
- both sides go to `dexter.memory.search.rank_candidates`: merge, threshold, decay and MMR are
  the SQLite index's own code.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any

from dexter.memory.chunking import chunk_markdown
from dexter.memory.embedding_batches import ChunkVectors, PassageEmbedding
from dexter.memory.files import file_date
from dexter.memory.index import SyncStats
from dexter.memory.pg_documents import PgMemoryDocuments
from dexter.memory.pg_link import PgLink
from dexter.memory.search import (
    COMMON_TERM_SHARE,
    DEFAULT_MIN_SCORE,
    FIRST_STAGE_CHUNKS,
    LARGE_INDEX_CHUNKS,
    TEXT_WEIGHT,
    VECTOR_WEIGHT,
    ChunkRow,
    Hit,
    embed_query,
    query_terms,
    rank_candidates,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import psycopg

    from dexter.memory.embeddings import Embedder

__all__ = ["EXACT_CHUNKS", "PgMemoryIndex"]

# Up to this many embedded chunks (about 5,000 passages) the vector side scans every passage of
# the principal exactly; beyond, the HNSW first stage keeps the scan to a few hundred chunks.
EXACT_CHUNKS = 1_000
# Candidates the HNSW scan visits (pgvector's default is 40): enough that after the principal,
# model and date filters the first stage still has its `FIRST_STAGE_CHUNKS`.
HNSW_EF_SEARCH = 400
_CONFIG = "dexter_memory"  # the text-search configuration of `memory_chunks.tsv`


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _vector_text(values: npt.NDArray[np.float32]) -> str:
    return "[" + ",".join(repr(float(v)) for v in values.tolist()) + "]"


def _parse_vector(text: str) -> npt.NDArray[np.float32]:
    import numpy as np

    parsed: npt.NDArray[np.float32] = np.array(text[1:-1].split(","), dtype=np.float32)
    return parsed


@dataclass(slots=True)
class _DocWork:
    name: str
    text_hash: str
    chunks: list[tuple[int, int, str, str]]  # start_line, end_line, text, sha256(text)


@dataclass(frozen=True, slots=True)
class _Filters:
    sql: str
    params: tuple[Any, ...]


def _filters(paths: Sequence[str] | None, since: date | None, until: date | None) -> _Filters:
    clauses: list[str] = []
    params: list[Any] = []
    if paths is not None:
        clauses.append("c.path = ANY(%s)")
        params.append(list(paths))
    if since is not None:
        clauses.append("c.date >= %s")
        params.append(since)
    if until is not None:
        clauses.append("c.date <= %s")
        params.append(until)
    return _Filters("".join(f" AND {c}" for c in clauses), tuple(params))


class PgMemoryIndex(PassageEmbedding):
    """Index and search one principal's memory documents in the team database."""

    def __init__(self, link: PgLink, principal: str, embedder: Embedder | None) -> None:
        self.link = link
        self.principal = principal
        self.files = PgMemoryDocuments(link, principal)
        self.embedder = embedder
        self.last_warning: str | None = None
        self._lock = asyncio.Lock()
        self._generation: int | None = None
        self._chunks = 0
        # Document counts of query terms (capped), valid for one generation.
        self._term_counts: dict[str, int] = {}
        self._embeddings_checked = False
        self._has_vectors = False  # of the current model, as of the last sync
        self._embedded_total = 0
        self._passages_total = 0

    @property
    def keyword_only(self) -> bool:
        return self.embedder is None

    def close(self) -> None:
        self.link.close()

    # state ---------------------------------------------------------------------------------

    def _note_state(self, generation: int, chunks: int, has_vectors: bool) -> None:
        """This principal's generation as read; another worker's write drops our caches."""
        if generation != self._generation:
            self._term_counts.clear()
            self._embeddings_checked = False
            self._generation = generation
        self._chunks = chunks
        self._has_vectors = bool(has_vectors)

    def _bump(self, conn: psycopg.Connection[Any]) -> None:
        row = conn.execute(
            "INSERT INTO memory_state (principal, generation, chunks) VALUES (%s, 1, "
            "(SELECT count(*) FROM memory_chunks WHERE principal = %s)) "
            "ON CONFLICT (principal) DO UPDATE SET generation = memory_state.generation + 1, "
            "chunks = EXCLUDED.chunks RETURNING generation, chunks",
            (self.principal, self.principal),
        ).fetchone()
        assert row is not None
        self._generation = int(row["generation"])
        self._chunks = int(row["chunks"])
        self._term_counts.clear()

    def _lock_principal(self, conn: psycopg.Connection[Any]) -> None:
        conn.execute(
            "SELECT pg_advisory_xact_lock(hashtext(%s))", (f"dexter-memory:{self.principal}",)
        )

    # sync ----------------------------------------------------------------------------------

    async def sync(self, *, force: bool = False) -> SyncStats:
        """Bring the index up to date with the documents; `force` re-indexes every one."""
        async with self._lock:
            started = time.perf_counter()
            embedded_before = self._embedded_total
            passages_before = self._passages_total
            seen, removed, work = await asyncio.to_thread(self._scan, force)
            vectors = await self._vectors_for(work)
            added, dropped = await asyncio.to_thread(self._write, work, removed, vectors)
            if self.embedder is not None and any(v is None for v in vectors.values()):
                self._embeddings_checked = False  # a batch failed: retry on the next sync
            else:
                await self._reembed_stale()
            return SyncStats(
                files_seen=seen,
                files_indexed=len(work),
                files_removed=len(removed),
                chunks_added=added,
                chunks_removed=dropped,
                seconds=time.perf_counter() - started,
                chunks_embedded=self._embedded_total - embedded_before,
                passages_embedded=self._passages_total - passages_before,
            )

    def _scan(self, force: bool) -> tuple[int, list[str], list[_DocWork]]:
        embedder = self.embedder
        vectors = (
            "EXISTS (SELECT 1 FROM memory_chunks WHERE principal = %s AND model_id = %s "
            "AND dims = %s AND centroid IS NOT NULL)"
            if embedder is not None
            else "false"
        )
        with self.link.use() as conn:
            # One round trip: the state, whether vectors exist, and every document against
            # the hash it was indexed at (documents deleted since have only the latter).
            rows = conn.execute(
                "WITH d AS (SELECT name, hash FROM memory_documents WHERE principal = %s), "
                "f AS (SELECT path, hash FROM memory_files WHERE principal = %s) "
                "SELECT x.name, x.hash, x.indexed, s.generation, s.chunks, "
                f"{vectors} AS has_vectors "
                "FROM (SELECT 1) one "
                "LEFT JOIN memory_state s ON s.principal = %s "
                "LEFT JOIN (SELECT coalesce(d.name, f.path) AS name, d.hash, f.hash AS indexed "
                "FROM d FULL JOIN f ON f.path = d.name) x ON true",
                (
                    self.principal,
                    self.principal,
                    *(
                        (self.principal, embedder.model_id, embedder.dims)
                        if embedder is not None
                        else ()
                    ),
                    self.principal,
                ),
            ).fetchall()
            first = rows[0]
            self._note_state(
                int(first["generation"] or 0), int(first["chunks"] or 0), first["has_vectors"]
            )
            docs = {
                str(r["name"]): (str(r["hash"]), r["indexed"])
                for r in rows
                if r["name"] is not None and r["hash"] is not None
            }
            indexed = [str(r["name"]) for r in rows if r["indexed"] is not None]
            changed = sorted(n for n, (h, seen) in docs.items() if force or h != seen)
            texts = {}
            if changed:
                texts = {
                    str(r["name"]): str(r["text"])
                    for r in conn.execute(
                        "SELECT name, text FROM memory_documents "
                        "WHERE principal = %s AND name = ANY(%s)",
                        (self.principal, changed),
                    )
                }
        removed = sorted(set(indexed) - set(docs))
        work = [
            _DocWork(
                name,
                _sha256(text),
                [
                    (c.start_line, c.end_line, c.text, _sha256(c.text))
                    for c in chunk_markdown(text)
                    if c.text.strip()
                ],
            )
            for name, text in texts.items()
        ]
        return len(docs), removed, work

    async def _vectors_for(self, work: Sequence[_DocWork]) -> dict[str, ChunkVectors | None]:
        """As `MemoryIndex._vectors_for`: reuse by chunk hash, then by passage hash."""
        embedder = self.embedder
        hashes = {h: text for item in work for (_, _, text, h) in item.chunks}
        if embedder is None or not hashes:
            return {}
        found, known = await asyncio.to_thread(
            self._stored_vectors, list(hashes), [item.name for item in work]
        )
        missing = {h: text for h, text in hashes.items() if h not in found}
        fresh = await self._embed_chunks(missing, known)
        self._embedded_total += sum(v is not None for v in fresh.values())
        return {**found, **fresh}

    def _stored_vectors(
        self, hashes: list[str], names: list[str]
    ) -> tuple[dict[str, ChunkVectors | None], dict[str, bytes]]:
        embedder = self.embedder
        assert embedder is not None
        current = (embedder.model_id, embedder.dims)
        found: dict[str, ChunkVectors | None] = {}
        known: dict[str, bytes] = {}
        with self.link.use() as conn:
            rows = conn.execute(
                "SELECT c.id, c.hash, c.path, c.passages, c.centroid::text AS centroid, "
                "array_agg(p.embedding::text ORDER BY p.ord) AS vectors "
                "FROM memory_chunks c JOIN memory_passages p ON p.chunk_id = c.id "
                "WHERE c.principal = %s AND (c.hash = ANY(%s) OR c.path = ANY(%s)) "
                "AND c.model_id = %s AND c.dims = %s AND c.centroid IS NOT NULL "
                "AND c.passages IS NOT NULL GROUP BY c.id",
                (self.principal, hashes, names, *current),
            ).fetchall()
        wanted = set(hashes)
        for row in rows:
            parts = [_parse_vector(v).astype("<f2").tobytes() for v in row["vectors"]]
            passage_hashes = str(row["passages"]).split()
            if str(row["hash"]) in wanted:
                found[str(row["hash"])] = ChunkVectors(
                    str(row["passages"]),
                    _parse_vector(row["centroid"]).astype("<f4").tobytes(),
                    b"".join(parts),
                )
            if str(row["path"]) in names:
                known.update(zip(passage_hashes, parts, strict=False))
        return found, known

    def _write(
        self,
        work: Sequence[_DocWork],
        removed: Sequence[str],
        vectors: dict[str, ChunkVectors | None],
    ) -> tuple[int, int]:
        if not work and not removed:
            return 0, 0
        embedder = self.embedder
        if embedder is not None and any(v is not None for v in vectors.values()):
            self.link.ensure_vector_index(embedder.dims)
        added = dropped = 0
        with self.link.use() as conn, conn.transaction():
            self._lock_principal(conn)
            for name in removed:
                dropped += conn.execute(
                    "DELETE FROM memory_chunks WHERE principal = %s AND path = %s",
                    (self.principal, name),
                ).rowcount
                conn.execute(
                    "DELETE FROM memory_files WHERE principal = %s AND path = %s",
                    (self.principal, name),
                )
            for item in work:
                now = conn.execute(
                    "SELECT hash FROM memory_documents WHERE principal = %s AND name = %s",
                    (self.principal, item.name),
                ).fetchone()
                if now is None or str(now["hash"]) != item.text_hash:
                    continue  # edited (or deleted) since we read it: the next sync takes it
                dropped += conn.execute(
                    "DELETE FROM memory_chunks WHERE principal = %s AND path = %s",
                    (self.principal, item.name),
                ).rowcount
                added += self._insert_chunks(conn, item, vectors)
                conn.execute(
                    "INSERT INTO memory_files (principal, path, hash) VALUES (%s, %s, %s) "
                    "ON CONFLICT (principal, path) DO UPDATE SET hash = EXCLUDED.hash, "
                    "indexed_at = now()",
                    (self.principal, item.name, item.text_hash),
                )
            self._bump(conn)
        if embedder is not None and any(v is not None for v in vectors.values()):
            self._has_vectors = True
        return added, dropped

    def _insert_chunks(
        self,
        conn: psycopg.Connection[Any],
        item: _DocWork,
        vectors: dict[str, ChunkVectors | None],
    ) -> int:
        if not item.chunks:
            return 0
        embedder = self.embedder
        day = file_date(item.name)
        ids = [
            int(r["id"])
            for r in conn.execute(
                "SELECT nextval('memory_chunks_id_seq') AS id FROM generate_series(1, %s)",
                (len(item.chunks),),
            )
        ]
        chunk_rows = []
        passage_rows: list[tuple[int, int, str]] = []
        for chunk_id, (start, end, text, text_hash) in zip(ids, item.chunks, strict=True):
            vec = vectors.get(text_hash)
            made = vec is not None and embedder is not None
            chunk_rows.append(
                (
                    chunk_id,
                    self.principal,
                    item.name,
                    start,
                    end,
                    text,
                    text_hash,
                    day,
                    embedder.model_id if made and embedder else None,
                    embedder.dims if made and embedder else None,
                    vec.passages if vec else None,
                    _centroid_text(vec) if vec else None,
                )
            )
            if vec is not None and embedder is not None:
                passage_rows.extend(_passage_rows(chunk_id, vec, embedder.dims))
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO memory_chunks (id, principal, path, start_line, end_line, text, "
                "hash, date, model_id, dims, passages, centroid) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::vector)",
                chunk_rows,
            )
            if passage_rows:
                cur.executemany(
                    "INSERT INTO memory_passages (chunk_id, ord, embedding) "
                    "VALUES (%s, %s, %s::vector)",
                    passage_rows,
                )
        return len(chunk_rows)

    async def _reembed_stale(self) -> None:
        """Embed chunks with no vectors or ones from another model/dimension."""
        embedder = self.embedder
        if embedder is None or self._embeddings_checked:
            return
        stale = await asyncio.to_thread(self._stale_chunks, embedder)
        if stale:
            made = await self._embed_chunks(stale, {})
            done = {key: vec for key, vec in made.items() if vec is not None}
            self._embedded_total += len(done)
            if done:
                await asyncio.to_thread(self._store_reembedded, embedder, done)
            if len(done) < len(stale):
                return  # keep checking on later syncs until every chunk has a vector
        self._embeddings_checked = True

    def _stale_chunks(self, embedder: Embedder) -> dict[Any, str]:
        with self.link.use() as conn:
            return {
                int(r["id"]): str(r["text"])
                for r in conn.execute(
                    "SELECT id, text FROM memory_chunks WHERE principal = %s AND (centroid IS "
                    "NULL OR passages IS NULL OR model_id IS DISTINCT FROM %s OR dims IS "
                    "DISTINCT FROM %s)",
                    (self.principal, embedder.model_id, embedder.dims),
                )
            }

    def _store_reembedded(self, embedder: Embedder, done: dict[Any, ChunkVectors]) -> None:
        self.link.ensure_vector_index(embedder.dims)
        with self.link.use() as conn, conn.transaction():
            self._lock_principal(conn)
            ids = list(done)
            conn.execute("DELETE FROM memory_passages WHERE chunk_id = ANY(%s)", (ids,))
            with conn.cursor() as cur:
                cur.executemany(
                    "UPDATE memory_chunks SET model_id = %s, dims = %s, passages = %s, "
                    "centroid = %s::vector WHERE id = %s AND principal = %s",
                    [
                        (
                            embedder.model_id,
                            embedder.dims,
                            vec.passages,
                            _centroid_text(vec),
                            key,
                            self.principal,
                        )
                        for key, vec in done.items()
                    ],
                )
                cur.executemany(
                    "INSERT INTO memory_passages (chunk_id, ord, embedding) "
                    "SELECT %s, %s, %s::vector WHERE EXISTS "
                    "(SELECT 1 FROM memory_chunks WHERE id = %s)",
                    [
                        (*row, row[0])
                        for key, vec in done.items()
                        for row in _passage_rows(int(key), vec, embedder.dims)
                    ],
                )
            self._bump(conn)
        self._has_vectors = True

    # search --------------------------------------------------------------------------------

    async def search(
        self,
        query: str,
        *,
        limit: int = 5,
        paths: Iterable[str] | None = None,
        since: date | None = None,
        until: date | None = None,
        min_score: float | None = None,
        vector_weight: float = VECTOR_WEIGHT,
        text_weight: float = TEXT_WEIGHT,
        decay: bool = True,
        half_life_days: float = 30.0,
        mmr: bool = True,
        mmr_lambda: float = 0.7,
        now: date | None = None,
    ) -> list[Hit]:
        """Sync (one query when nothing changed), then search as `hybrid_search` does."""
        await self.sync()
        limit = max(1, limit)
        path_list = None if paths is None else list(dict.fromkeys(paths))
        filters = _filters(path_list, since, until)
        embedder = self.embedder
        # As SQLite's vector table: no vectors of the current model, no vector side.
        vectors_on = embedder is not None and vector_weight > 0 and self._has_vectors
        query_vector = None
        if vectors_on and query.strip():
            query_vector = await embed_query(self, query)
            if embedder is not None and (
                query_vector is None or query_vector.shape[0] != embedder.dims
            ):
                query_vector = None
        return await asyncio.to_thread(
            self._search,
            query,
            query_vector,
            vectors_on,
            filters,
            limit,
            dict(
                min_score=DEFAULT_MIN_SCORE if min_score is None else min_score,
                vector_weight=vector_weight,
                text_weight=text_weight,
                decay=decay,
                half_life_days=half_life_days,
                mmr=mmr,
                mmr_lambda=mmr_lambda,
                now=now,
            ),
        )

    def _search(
        self,
        query: str,
        query_vector: npt.NDArray[np.float32] | None,
        vectors_on: bool,
        filters: _Filters,
        limit: int,
        options: dict[str, Any],
    ) -> list[Hit]:
        pool = limit * 4
        with self.link.use() as conn:
            keyword = self._keyword_candidates(conn, query, pool, filters)
            vector: dict[int, float] = {}
            if query_vector is not None:
                vector = self._vector_candidates(conn, query_vector, pool, filters)

            embedder = self.embedder
            current = (embedder.model_id, embedder.dims) if embedder and vectors_on else None
            kept: dict[int, npt.NDArray[np.float32] | None] = {}

            def chunk_rows(ids: Sequence[int]) -> list[ChunkRow]:
                """The hits' rows, with their mean vectors for MMR in the same round trip."""
                rows = conn.execute(
                    "SELECT id, path, start_line, end_line, text, date::text AS day, "
                    "CASE WHEN model_id = %s AND dims = %s THEN centroid::text END AS centroid "
                    "FROM memory_chunks WHERE principal = %s AND id = ANY(%s)",
                    (*(current or (None, None)), self.principal, list(ids)),
                ).fetchall()
                for r in rows:
                    text = r["centroid"] if current else None
                    kept[int(r["id"])] = _parse_vector(text) if text else None
                return [
                    ChunkRow(
                        int(r["id"]),
                        str(r["path"]),
                        int(r["start_line"]),
                        int(r["end_line"]),
                        str(r["text"]),
                        r["day"],
                    )
                    for r in rows
                ]

            def centroids(ids: Sequence[int]) -> list[npt.NDArray[np.float32] | None]:
                return [kept.get(i) for i in ids]

            return rank_candidates(
                keyword,
                vector,
                use_vectors=query_vector is not None,
                chunk_rows=chunk_rows,
                centroids=centroids,
                limit=limit,
                **options,
            )

    def _term_count(self, conn: psycopg.Connection[Any], term: str, cap: int) -> int:
        """Chunks of this principal containing `term`, counted up to `cap` + 1."""
        if term not in self._term_counts:
            row = conn.execute(
                "SELECT count(*) AS n FROM (SELECT 1 FROM memory_chunks WHERE principal = %s "
                f"AND tsv @@ plainto_tsquery('{_CONFIG}', %s) LIMIT %s) s",
                (self.principal, term, cap + 1),
            ).fetchone()
            self._term_counts[term] = int(row["n"]) if row else 0
        return self._term_counts[term]

    def _keyword_candidates(
        self, conn: psycopg.Connection[Any], query: str, pool: int, filters: _Filters
    ) -> dict[int, float]:
        import math

        total = self._chunks
        if total == 0:
            return {}
        large = total >= LARGE_INDEX_CHUNKS
        cap = int(COMMON_TERM_SHARE * total) if large else total
        weighted: list[tuple[str, float]] = []
        for term in query_terms(query):
            count = self._term_count(conn, term, cap)
            if count == 0 or count > cap:
                continue  # absent, or too common to matter on a large index
            idf = math.log(1.0 + (total - count + 0.5) / (count + 0.5))
            weighted.append((term, idf))
        if not weighted:
            return {}
        queries = ", ".join(
            f"plainto_tsquery('{_CONFIG}', %s) AS q{i}" for i in range(len(weighted))
        )
        rank = " + ".join(f"%s * ts_rank(c.tsv, q.q{i}, 1)" for i in range(len(weighted)))
        match = " || ".join(f"q.q{i}" for i in range(len(weighted)))
        rows = conn.execute(
            f"SELECT c.id, {rank} AS score FROM memory_chunks c, (SELECT {queries}) q "
            f"WHERE c.principal = %s AND c.tsv @@ ({match}){filters.sql} "
            "ORDER BY score DESC, c.id LIMIT %s",
            (
                *(idf for _, idf in weighted),
                *(term for term, _ in weighted),
                self.principal,
                *filters.params,
                pool,
            ),
        ).fetchall()
        raw = {int(r["id"]): max(0.0, float(r["score"])) for r in rows}
        best = max(raw.values(), default=0.0)
        if best <= 0.0:
            return dict.fromkeys(raw, 1.0)
        return {chunk_id: value / best for chunk_id, value in raw.items()}

    def _vector_candidates(
        self,
        conn: psycopg.Connection[Any],
        query_vector: npt.NDArray[np.float32],
        pool: int,
        filters: _Filters,
    ) -> dict[int, float]:
        embedder = self.embedder
        assert embedder is not None
        dims = int(embedder.dims)
        q = _vector_text(query_vector)
        current = (self.principal, embedder.model_id, dims)
        if self._chunks <= EXACT_CHUNKS:
            rows = conn.execute(
                "SELECT p.chunk_id AS id, max(-(p.embedding <#> %s::vector)) AS score "
                "FROM memory_passages p JOIN memory_chunks c ON c.id = p.chunk_id "
                f"WHERE c.principal = %s AND c.model_id = %s AND c.dims = %s{filters.sql} "
                "GROUP BY p.chunk_id ORDER BY score DESC, p.chunk_id LIMIT %s",
                (q, *current, *filters.params, pool),
            ).fetchall()
        else:
            rows = self._two_stages(conn, q, dims, max(FIRST_STAGE_CHUNKS, pool), pool, filters)
        # As in SQLite: vectors hold float16 values, so beyond six decimals a score is noise.
        return {int(r["id"]): max(0.0, round(float(r["score"]), 6)) for r in rows}

    def _two_stages(
        self,
        conn: psycopg.Connection[Any],
        q: str,
        dims: int,
        k: int,
        pool: int,
        filters: _Filters,
    ) -> list[dict[str, Any]]:
        """The `pool` best chunks by passage among the `k` whose mean vector is nearest (found
        through the HNSW index), in one round trip."""
        embedder = self.embedder
        assert embedder is not None
        where = (
            f"c.principal = %s AND c.model_id = %s AND c.dims = {dims} "
            f"AND c.centroid IS NOT NULL{filters.sql}"
        )
        params = (self.principal, embedder.model_id, *filters.params)
        self.link.setting(conn, "hnsw.ef_search", str(max(HNSW_EF_SEARCH, k)))
        distance = f"c.centroid::vector({dims}) <#> %s::vector({dims})"

        def staged(order: str) -> list[dict[str, Any]]:
            return conn.execute(
                f"WITH first AS MATERIALIZED (SELECT c.id FROM memory_chunks c WHERE {where} "
                f"ORDER BY {order} LIMIT %s) "
                "SELECT p.chunk_id AS id, max(-(p.embedding <#> %s::vector)) AS score, "
                "(SELECT count(*) FROM first) AS got "
                "FROM memory_passages p JOIN first f ON f.id = p.chunk_id "
                "GROUP BY p.chunk_id ORDER BY score DESC, p.chunk_id LIMIT %s",
                (*params, q, k, q, pool),
            ).fetchall()

        rows = staged(distance)
        got = int(rows[0]["got"]) if rows else 0
        if got < k:
            # An approximate scan filtered afterwards can come back short (another principal's
            # chunks took the places): when more chunks qualify, rank them exactly instead
            # ("+ 0" hides the expression from the HNSW index).
            row = conn.execute(
                f"SELECT count(*) AS n FROM memory_chunks c WHERE {where}", params
            ).fetchone()
            if row is not None and int(row["n"]) > got:
                rows = staged(f"({distance}) + 0")
        return rows

    # stats ---------------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        with self.link.use() as conn:
            files = conn.execute(
                "SELECT count(*) AS n FROM memory_files WHERE principal = %s", (self.principal,)
            ).fetchone()
            chunks = conn.execute(
                "SELECT count(*) AS n FROM memory_chunks WHERE principal = %s", (self.principal,)
            ).fetchone()
            models = {
                str(r["model_id"]): int(r["n"])
                for r in conn.execute(
                    "SELECT model_id, count(*) AS n FROM memory_chunks WHERE principal = %s "
                    "AND centroid IS NOT NULL GROUP BY model_id",
                    (self.principal,),
                )
            }
            size = conn.execute(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) AS n FROM pg_class c "
                "WHERE c.relkind = 'r' AND c.relname IN ('memory_documents', 'memory_files', "
                "'memory_chunks', 'memory_passages', 'memory_state')"
            ).fetchone()
        current = self.embedder.model_id if self.embedder else None
        return {
            "db_path": f"{self.link.describe()} (principal {self.principal})",
            "team": True,
            "files": int(files["n"]) if files else 0,
            "chunks": int(chunks["n"]) if chunks else 0,
            "embedded_chunks": models.get(current, 0) if current else 0,
            "model_id": current,
            "dims": self.embedder.dims if self.embedder else None,
            "keyword_only": self.embedder is None,
            "vectors_by_model": models,
            "db_bytes": int(size["n"]) if size else 0,
            "last_warning": self.last_warning,
        }


def _centroid_text(vec: ChunkVectors) -> str:
    import numpy as np

    return _vector_text(np.frombuffer(vec.centroid, dtype="<f4"))


def _passage_rows(chunk_id: int, vec: ChunkVectors, dims: int) -> list[tuple[int, int, str]]:
    import numpy as np

    matrix = np.frombuffer(vec.vector, dtype="<f2").reshape(-1, dims).astype(np.float32)
    return [(chunk_id, i, _vector_text(row)) for i, row in enumerate(matrix)]
