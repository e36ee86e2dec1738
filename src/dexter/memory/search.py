"""Hybrid memory search: vectors + BM25, merged, decayed by age, diversified by MMR.

Pipeline for one query (`limit` results wanted, candidate pool `limit × 4` from each side):

1. Keyword side: FTS5 over chunk text. The query's word tokens (minus common English stopwords,
   unless that leaves nothing) are OR-ed as quoted terms, so a chunk matching more and rarer words
   ranks higher. FTS5's `bm25()` is NEGATIVE (lower = better), so raw relevance is `-bm25` and the
   keyword score is that divided by the best raw relevance among the keyword candidates:
   the best keyword match scores 1.0 and a weaker one proportionally less (never the constant 1.0
   of the original, and never 0 for a real match, which a min-max scale would give the weakest).
   Dividing by the best rather than squashing with x/(1+x) keeps scores meaningful on a tiny
   index, where FTS5 floors the IDF of common terms at 1e-6 and every absolute bm25 is ~0.
2. Vector side: a chunk's vector score is the cosine (dot product of unit vectors) of the query
   and the chunk's closest passage (`dexter.memory.passages`: each entry embedded on its own, so
   a question about one fact is not diluted by the chunk's other facts), clipped at 0. Up to
   `FULL_SCAN_PASSAGES` passages are scanned in memory; a bigger index first ranks its chunks by
   their mean passage vector and scores the `FIRST_STAGE_CHUNKS` best by passage.
3. Merge by chunk id: `relevance = 0.8·vector + 0.2·keyword` (weights normalised to sum 1; a side
   with no candidate for a chunk contributes 0). With no embedder (or no vectors, or a failed
   query embedding) search is keyword-only: weights 0/1 and `Hit.vector_score is None`.
4. `min_score` (default 0.15) is applied to that relevance, BEFORE decay: decay orders results,
   it does not make an old but relevant note unfindable. 0.15 rather than 0.2 because of what
   the local MiniLM model measures: a paraphrase sharing no word ("nvidia position size" vs "I
   hold 200 NVDA shares") has cosine 0.24 (relevance 0.19 with no keyword match), while unrelated
   finance notes sit at cosine <= ~0.18 (relevance <= ~0.14).
5. Decay: `score = relevance · (0.6 + 0.4 · 0.5 ** (age_days / half_life_days))` for daily notes
   only (age from the note's local date to `now`); MEMORY.md is evergreen and never decays.
6. MMR (λ 0.7): greedily pick `argmax λ·(score/best) − (1−λ)·max_sim(selected)`, where similarity
   is the cosine of the chunks' mean passage vectors when both have them, else the Jaccard
   overlap of their word sets.
   Near-duplicates of an already chosen chunk therefore drop down the list.

Filters: `paths` (memory file names) and `since`/`until` (inclusive, on the daily-note date; a
date bound excludes MEMORY.md, which has no date) restrict both candidate sides before ranking.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Protocol

_log = logging.getLogger(__name__)

if TYPE_CHECKING:
    import sqlite3

    import numpy as np
    import numpy.typing as npt

    from dexter.memory.embeddings import Embedder
    from dexter.memory.vectors import VectorTable

    # The mean passage vector of each of these chunks (None for a chunk without one), for MMR.
    Centroids = Callable[[Sequence[int]], list[npt.NDArray[np.float32] | None]]

__all__ = [
    "DEFAULT_MIN_SCORE",
    "TEXT_WEIGHT",
    "VECTOR_WEIGHT",
    "ChunkRow",
    "Hit",
    "SearchableIndex",
    "embed_query",
    "fts_query",
    "hybrid_search",
    "query_terms",
    "rank_candidates",
]

DEFAULT_MIN_SCORE = 0.15
# With a vector per passage the vector side is the sharper one; 0.7/0.3 (one vector per chunk)
# let a keyword that matches an unrelated line outrank the paraphrase's own passage.
VECTOR_WEIGHT = 0.8
TEXT_WEIGHT = 0.2
_WORD = re.compile(r"\w+", re.UNICODE)
_STOPWORDS = frozenset(
    """a about an and any are as at be been but by can could did do does for from had has have how
    i i'm if in into is it its me my of on or our should so than that the their them then there
    these they this to was we were what when where which who why will with would you your""".split()
)


class SearchableIndex(Protocol):
    """What search needs of an index (`MemoryIndex` is one): search sits below the index."""

    embedder: Embedder | None
    last_warning: str | None
    term_counts: dict[str, int]

    @property
    def conn(self) -> sqlite3.Connection: ...

    def vector_table(self) -> VectorTable | None: ...


@dataclass(frozen=True, slots=True)
class Hit:
    path: str
    start_line: int
    end_line: int
    text: str
    score: float
    vector_score: float | None  # None in keyword-only mode
    text_score: float | None  # 0.0 when the chunk came from the vector side only
    date: date | None  # daily-note date; None for MEMORY.md


@dataclass(slots=True)
class _Candidate:
    chunk_id: int
    vector: float = 0.0
    text: float = 0.0


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def query_terms(query: str) -> list[str]:
    words = list(dict.fromkeys(_words(query)))
    content = [w for w in words if w not in _STOPWORDS]
    return content or words


def fts_query(query: str, terms: Sequence[str] | None = None) -> str | None:
    """An FTS5 MATCH expression: distinct quoted words OR-ed, stopwords dropped when possible."""
    chosen = list(terms) if terms is not None else query_terms(query)
    if not chosen:
        return None
    return " OR ".join('"' + w.replace('"', "") + '"' for w in chosen)


# On a large index a word found in more than this share of chunks adds little to the ranking but
# makes FTS5 score every chunk that contains it (most of the search time at 100,000 chunks); such
# words are left to the vector side, and a query made only of them has no keyword side there.
COMMON_TERM_SHARE = 0.01
LARGE_INDEX_CHUNKS = 5_000


def _selective_terms(index: SearchableIndex, terms: list[str]) -> list[str]:
    conn = index.conn
    cache = index.term_counts  # chunk counts, valid while nothing was written
    generation = conn.execute("SELECT total_changes()").fetchone()[0]
    if cache.get("__generation__") != generation:
        cache.clear()
        cache["__generation__"] = generation
        cache["__total__"] = int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])
    total = cache["__total__"]
    if total < LARGE_INDEX_CHUNKS:
        return terms
    most = int(COMMON_TERM_SHARE * total)
    rare = []
    for term in terms:
        if term not in cache:
            quoted = '"' + term.replace('"', "") + '"'
            # Counting stops past the threshold: a common word's exact count is not needed.
            row = conn.execute(
                "SELECT count(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?)",
                (quoted, most + 1),
            ).fetchone()
            cache[term] = int(row[0])
        if cache[term] <= most:
            rare.append(term)
    return rare


def _filters(
    paths: Sequence[str] | None, since: date | None, until: date | None
) -> tuple[str, list[object]]:
    clauses: list[str] = []
    params: list[object] = []
    if paths is not None:
        clauses.append(f"c.path IN ({','.join('?' * len(paths))})" if paths else "0")
        params.extend(paths)
    if since is not None:
        clauses.append("c.date >= ?")
        params.append(since.isoformat())
    if until is not None:
        clauses.append("c.date <= ?")
        params.append(until.isoformat())
    return "".join(f" AND {c}" for c in clauses), params


def _keyword_candidates(
    index: SearchableIndex, query: str, pool: int, where: str, params: list[object]
) -> dict[int, float]:
    match = fts_query(query, _selective_terms(index, query_terms(query)))
    if match is None:
        return {}
    if where:
        sql = (
            "SELECT c.id, -bm25(chunks_fts) FROM chunks_fts "
            "JOIN chunks c ON c.id = chunks_fts.rowid "
            f"WHERE chunks_fts MATCH ?{where} ORDER BY bm25(chunks_fts) LIMIT ?"
        )
    else:  # no join: about twice as fast on a large index
        sql = (
            "SELECT rowid, -bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ? "
            "ORDER BY bm25(chunks_fts) LIMIT ?"
        )
    rows = index.conn.execute(sql, (match, *params, pool)).fetchall()
    raw = {int(r[0]): max(0.0, float(r[1])) for r in rows}
    best = max(raw.values(), default=0.0)
    if best <= 0.0:
        return dict.fromkeys(raw, 1.0)
    return {chunk_id: value / best for chunk_id, value in raw.items()}


def _vector_mask(
    table: VectorTable, paths: Sequence[str] | None, since: date | None, until: date | None
) -> npt.NDArray[np.bool_] | None:
    import numpy as np

    mask: npt.NDArray[np.bool_] | None = None
    if paths is not None:
        codes = [i for i, name in enumerate(table.path_names) if name in set(paths)]
        mask = np.isin(table.path_codes, np.asarray(codes, dtype=np.int32))
    if since is not None or until is not None:
        dated = table.dates >= 0
        if since is not None:
            dated &= table.dates >= since.toordinal()
        if until is not None:
            dated &= table.dates <= until.toordinal()
        mask = dated if mask is None else mask & dated
    return mask


# A search on an index too big to scan by passage first ranks chunks by their mean vector, then
# reads the passage vectors of this many of the best (8 times the largest candidate pool).
FIRST_STAGE_CHUNKS = 320


def _chunk_scores(
    index: SearchableIndex,
    table: VectorTable,
    query_vector: npt.NDArray[np.float32],
    pool: int,
    mask: npt.NDArray[np.bool_] | None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """(rows of `table`, their best passage's cosine), for every chunk when the passages are in
    memory, else for the first stage's best chunks."""
    import numpy as np

    if table.passages is not None and table.passage_starts is not None:
        sims = np.maximum.reduceat(table.passages @ query_vector, table.passage_starts)
        rows = np.arange(sims.shape[0]) if mask is None else np.flatnonzero(mask)
        return rows, sims[rows]
    coarse = table.matrix @ query_vector
    if mask is not None:
        coarse = np.where(mask, coarse, -np.inf)
    k = min(max(FIRST_STAGE_CHUNKS, pool), coarse.shape[0])
    rows = np.argpartition(-coarse, k - 1)[:k] if k < coarse.shape[0] else np.arange(k)
    rows = rows[np.isfinite(coarse[rows])]
    if rows.size == 0:
        return rows, np.zeros(0, dtype=np.float32)
    ids = table.ids[rows].tolist()
    marks = ",".join("?" * len(ids))
    blobs = dict(
        index.conn.execute(f"SELECT id, vector FROM chunks WHERE id IN ({marks})", ids).fetchall()
    )
    rows = np.asarray([r for r, i in zip(rows.tolist(), ids, strict=True) if blobs.get(i)])
    parts = [bytes(blobs[int(table.ids[r])]) for r in rows]
    dims = table.matrix.shape[1]
    counts = np.fromiter((len(b) // (2 * dims) for b in parts), dtype=np.int64, count=len(parts))
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    vectors = np.frombuffer(b"".join(parts), dtype="<f2").reshape(-1, dims).astype(np.float32)
    return rows, np.maximum.reduceat(vectors @ query_vector, starts)


def _vector_candidates(
    index: SearchableIndex,
    table: VectorTable,
    query_vector: npt.NDArray[np.float32],
    pool: int,
    mask: npt.NDArray[np.bool_] | None,
) -> dict[int, float]:
    """The `pool` chunks whose best passage is closest to the query, with that cosine."""
    import numpy as np

    rows, sims = _chunk_scores(index, table, query_vector, pool, mask)
    k = min(pool, sims.shape[0])
    if k <= 0:
        return {}
    top = np.argpartition(-sims, k - 1)[:k] if k < sims.shape[0] else np.arange(sims.shape[0])
    # Vectors are stored as float16 (about three significant digits): beyond six decimals a
    # score is rounding noise, which would otherwise order equal texts by their row position.
    return {
        int(table.ids[rows[i]]): max(0.0, round(float(sims[i]), 6))
        for i in top
        if np.isfinite(sims[i])
    }


# Decay halves the *recency bonus*, not the whole score: a fresh note beats an equally
# relevant old one, but a ten-month-old exact match still outranks a vaguely similar new note
# (a pure 30-day half-life multiplied such a match by ~0.001 and lost it; see the benchmark).
DECAY_FLOOR = 0.6


def _decay(day: date | None, now: date, half_life_days: float) -> float:
    if day is None or half_life_days <= 0 or not math.isfinite(half_life_days):
        return 1.0
    recency = 0.5 ** (max(0, (now - day).days) / half_life_days)
    return float(DECAY_FLOOR + (1.0 - DECAY_FLOOR) * recency)


def _jaccard(a: set[str], b: set[str]) -> float:
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def _mmr(
    hits: list[Hit],
    ids: list[int],
    centroids: Centroids,
    lam: float,
    limit: int,
) -> list[Hit]:
    """Greedy maximal marginal relevance over `hits` (sorted by score), keeping `limit`."""
    lam = min(1.0, max(0.0, lam))
    if len(hits) <= 1 or lam >= 1.0:
        return hits[:limit]

    best = max(h.score for h in hits) or 1.0
    vectors = centroids(ids)
    words = [set(_words(h.text)) for h in hits]

    def similarity(a: int, b: int) -> float:
        va, vb = vectors[a], vectors[b]
        if va is not None and vb is not None:
            return float(va @ vb)
        return _jaccard(words[a], words[b])

    remaining = list(range(len(hits)))
    max_sim = [0.0] * len(hits)
    chosen: list[int] = []
    while remaining and len(chosen) < limit:
        pick = max(
            remaining,
            key=lambda i: (lam * hits[i].score / best - (1 - lam) * max_sim[i], hits[i].score),
        )
        chosen.append(pick)
        remaining.remove(pick)
        for i in remaining:
            max_sim[i] = max(max_sim[i], similarity(i, pick))
    return [hits[i] for i in chosen]


class EmbedsQueries(Protocol):
    embedder: Embedder | None
    last_warning: str | None


async def embed_query(index: EmbedsQueries, query: str) -> npt.NDArray[np.float32] | None:
    """The query's vector, or None (keyword-only) with `last_warning` set when embedding failed."""
    embedder = index.embedder
    if embedder is None:
        return None
    import numpy as np

    try:
        matrix = np.asarray(await embedder.embed([query]), dtype=np.float32)
    except Exception as exc:  # keyword-only for this query rather than no answer at all
        _log.debug("query embedding failed; keyword-only", exc_info=True)
        index.last_warning = (
            f"Embedding the query with {embedder.model_id} failed ({exc}); "
            "searched by keyword only."
        )
        return None
    if matrix.ndim != 2 or matrix.shape[0] != 1:
        return None
    vector: npt.NDArray[np.float32] = matrix[0]
    return vector


async def hybrid_search(
    index: SearchableIndex,
    query: str,
    *,
    limit: int = 5,
    paths: Iterable[str] | None = None,
    since: date | None = None,
    until: date | None = None,
    min_score: float = DEFAULT_MIN_SCORE,
    vector_weight: float = VECTOR_WEIGHT,
    text_weight: float = TEXT_WEIGHT,
    decay: bool = True,
    half_life_days: float = 30.0,
    mmr: bool = True,
    mmr_lambda: float = 0.7,
    now: date | None = None,
) -> list[Hit]:
    """Search the index as it stands (call `index.sync()` or use `index.search()` to refresh)."""
    limit = max(1, limit)
    pool = limit * 4
    path_list = None if paths is None else list(dict.fromkeys(paths))
    where, params = _filters(path_list, since, until)

    keyword = _keyword_candidates(index, query, pool, where, params)

    # A weight of 0 turns the vector side off: nothing is loaded, embedded or scanned for it.
    table = index.vector_table() if vector_weight > 0 else None
    query_vector = None
    if table is not None and query.strip():
        query_vector = await embed_query(index, query)
        if query_vector is not None and query_vector.shape[0] != table.matrix.shape[1]:
            query_vector = None
    vector: dict[int, float] = {}
    if table is not None and query_vector is not None:
        mask = _vector_mask(table, path_list, since, until)
        vector = _vector_candidates(index, table, query_vector, pool, mask)

    def centroids(ids: Sequence[int]) -> list[npt.NDArray[np.float32] | None]:
        return [table.vector(i) if table is not None else None for i in ids]

    def chunk_rows(ids: Sequence[int]) -> list[ChunkRow]:
        marks = ",".join("?" * len(ids))
        return [
            ChunkRow(int(r[0]), str(r[1]), int(r[2]), int(r[3]), str(r[4]), r[5])
            for r in index.conn.execute(
                "SELECT id, path, start_line, end_line, text, date FROM chunks "
                f"WHERE id IN ({marks})",
                list(ids),
            ).fetchall()
        ]

    return rank_candidates(
        keyword,
        vector,
        use_vectors=query_vector is not None,
        chunk_rows=chunk_rows,
        centroids=centroids,
        limit=limit,
        min_score=min_score,
        vector_weight=vector_weight,
        text_weight=text_weight,
        decay=decay,
        half_life_days=half_life_days,
        mmr=mmr,
        mmr_lambda=mmr_lambda,
        now=now,
    )


@dataclass(frozen=True, slots=True)
class ChunkRow:
    """What a hit shows of a chunk; `date` is the ISO daily-note date (None for MEMORY.md)."""

    chunk_id: int
    path: str
    start_line: int
    end_line: int
    text: str
    date: str | None


def rank_candidates(
    keyword: dict[int, float],
    vector: dict[int, float],
    *,
    use_vectors: bool,
    chunk_rows: Callable[[Sequence[int]], list[ChunkRow]],
    centroids: Centroids,
    limit: int,
    min_score: float,
    vector_weight: float,
    text_weight: float,
    decay: bool,
    half_life_days: float,
    mmr: bool,
    mmr_lambda: float,
    now: date | None,
) -> list[Hit]:
    """Steps 3-6 of the pipeline (merge, threshold, decay, MMR) over both sides' candidates
    (chunk id -> score in [0, 1]); every backend ranks through here, so results agree."""
    limit = max(1, limit)
    if use_vectors:
        total = vector_weight + text_weight
        wv, wt = (
            (vector_weight / total, text_weight / total)
            if total > 0
            else (VECTOR_WEIGHT, TEXT_WEIGHT)
        )
    else:
        wv, wt = 0.0, 1.0

    merged: dict[int, _Candidate] = {}
    for chunk_id, score in vector.items():
        merged.setdefault(chunk_id, _Candidate(chunk_id)).vector = score
    for chunk_id, score in keyword.items():
        merged.setdefault(chunk_id, _Candidate(chunk_id)).text = score
    relevance = {c.chunk_id: wv * c.vector + wt * c.text for c in merged.values()}
    kept = [cid for cid, rel in relevance.items() if rel >= min_score]
    if not kept:
        return []

    today = now or date.today()
    scored: list[tuple[Hit, int]] = []
    for row in chunk_rows(kept):
        chunk_id = row.chunk_id
        cand = merged[chunk_id]
        day = date.fromisoformat(row.date) if row.date else None
        factor = _decay(day, today, half_life_days) if decay else 1.0
        hit = Hit(
            path=row.path,
            start_line=row.start_line,
            end_line=row.end_line,
            text=row.text,
            score=relevance[chunk_id] * factor,
            vector_score=cand.vector if use_vectors else None,
            text_score=cand.text,
            date=day,
        )
        scored.append((hit, chunk_id))
    scored.sort(key=lambda pair: (-pair[0].score, pair[0].path, pair[0].start_line))

    hits = [h for h, _ in scored]
    if mmr:
        hits = _mmr(hits, [cid for _, cid in scored], centroids, mmr_lambda, limit)
    return hits[:limit]
