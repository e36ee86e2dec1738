"""The memory index: SQLite (FTS5 + float32 vectors) mirroring the markdown memory files.

The database lives at `DEXTER_HOME/memory/index.db`, beside the files it indexes, so everything
Dexter remembers is in one folder (removing it forgets everything; `index.db` alone can be deleted
at any time and is rebuilt). Schema: `dexter.memory.migrations`.

`sync()` is cheap when nothing changed (one `stat` per file and one small query), and `search()`
runs it first, so a hand edit of a memory file is reflected by the very next search:

- a file whose size/mtime changed is re-read and hashed; if its content hash changed, ALL its old
  chunks are deleted (text and keyword index, in one transaction) and the new chunks inserted, so
  text removed from a file can never be found again; vectors are reused by content hash: a
  chunk whose text is already embedded keeps its vectors, and of a changed chunk only the
  passages (`dexter.memory.passages`) that are new get embedded;
- a file that disappeared loses its chunks;
- chunks whose vector is missing or was made by another model (`model_id`/`dims` differ from the
  embedder's) are re-embedded;
- with `embedder=None` the index is keyword-only: vectors stay NULL and search says so.

Everything to embed in one sync goes to the embedder sorted by length, all files together, so a
batch holds texts of about the same length and little of the work is padding.

An embedding failure never loses text: the chunks are stored without vectors (keyword search still
finds them), `last_warning` says what happened, and the next sync tries again.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dexter.memory.chunking import chunk_markdown
from dexter.memory.embedding_batches import EMBED_BATCH, ChunkVectors, PassageEmbedding
from dexter.memory.files import MemoryFiles, file_date
from dexter.memory.migrations import open_memory_db
from dexter.memory.search import (
    DEFAULT_MIN_SCORE,
    TEXT_WEIGHT,
    VECTOR_WEIGHT,
    Hit,
    hybrid_search,
)
from dexter.memory.vectors import VectorTable

_log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from dexter.memory.embeddings import Embedder

__all__ = [
    "EMBED_BATCH",
    "FULL_SCAN_PASSAGES",
    "INDEX_FILE_NAME",
    "MemoryIndex",
    "SyncStats",
    "VectorTable",
]

INDEX_FILE_NAME = "index.db"
# Up to this many passage vectors (~100 MB at 384 dimensions) are kept in memory and scanned whole;
# a bigger index keeps its chunks' mean vectors and reads passages for the best chunks only.
FULL_SCAN_PASSAGES = 65_536
_RACY_NS = 2_000_000_000  # files modified in the last 2 s are always re-hashed


@dataclass(frozen=True, slots=True)
class SyncStats:
    files_seen: int
    files_indexed: int
    files_removed: int
    chunks_added: int
    chunks_removed: int
    seconds: float
    chunks_embedded: int = 0
    passages_embedded: int = 0


@dataclass(slots=True)
class _FileWork:
    name: str
    text_hash: str
    mtime_ns: int
    size: int
    chunks: list[tuple[int, int, str, str]]  # start_line, end_line, text, sha256(text)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class MemoryIndex(PassageEmbedding):
    """Index and search the memory files of one Dexter home."""

    def __init__(self, home: Path, embedder: Embedder | None) -> None:
        self.home = home
        self.files = MemoryFiles(home)
        self.embedder = embedder
        self.db_path = self.files.dir / INDEX_FILE_NAME
        self.last_warning: str | None = None
        # Document counts of query terms, valid for one `total_changes()` generation.
        self.term_counts: dict[str, int] = {}
        self._conn: sqlite3.Connection | None = None
        self._lock = asyncio.Lock()
        self._vectors: VectorTable | None = None
        self._generation: int | None = None
        self._embeddings_checked = False
        self._embedded_total = 0
        self._passages_total = 0

    # connection ----------------------------------------------------------------------------

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = open_memory_db(self.db_path)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._vectors = None

    @property
    def keyword_only(self) -> bool:
        """True when search cannot use vectors (no embedder configured)."""
        return self.embedder is None

    def _read_generation(self) -> int:
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return int(row[0]) if row else 0

    # sync ----------------------------------------------------------------------------------

    async def sync(self, *, force: bool = False) -> SyncStats:
        """Bring the index up to date with the files; `force` re-reads every file."""
        async with self._lock:
            return await self._sync(force)

    async def _sync(self, force: bool) -> SyncStats:
        started = time.perf_counter()
        embedded_before = self._embedded_total
        passages_before = self._passages_total
        # File stats, reads and SQLite (whose write lock another process may hold for seconds)
        # run in a worker thread, so the event loop keeps streaming meanwhile.
        on_disk, removed, work, touched = await asyncio.to_thread(self._scan, force)
        vectors = await self._vectors_for(work)
        chunks_added, chunks_removed = await asyncio.to_thread(
            self._write, work, removed, touched, vectors
        )
        if self.embedder is not None and any(v is None for v in vectors.values()):
            self._embeddings_checked = False  # a batch failed: retry on the next sync
        else:
            await self._reembed_stale()
        return SyncStats(
            files_seen=len(on_disk),
            files_indexed=len(work),
            files_removed=len(removed),
            chunks_added=chunks_added,
            chunks_removed=chunks_removed,
            seconds=time.perf_counter() - started,
            chunks_embedded=self._embedded_total - embedded_before,
            passages_embedded=self._passages_total - passages_before,
        )

    def _scan(
        self, force: bool
    ) -> tuple[list[str], list[str], list[_FileWork], list[tuple[str, int, int]]]:
        conn = self.conn
        generation = self._read_generation()
        if generation != self._generation:
            # Another process (or our first call) wrote the index: re-check everything.
            self._vectors = None
            self.term_counts.clear()
            self._embeddings_checked = False
            self._generation = generation

        on_disk = self.files.list()
        known = {
            str(row[0]): (str(row[1]), int(row[2]), int(row[3]))
            for row in conn.execute("SELECT path, hash, mtime_ns, size FROM files")
        }
        removed = sorted(set(known) - set(on_disk))
        work: list[_FileWork] = []
        touched: list[tuple[str, int, int]] = []  # same content, new stat
        for name in on_disk:
            try:
                stat = os.stat(self.files.path(name))
            except FileNotFoundError:  # deleted between listing and stat
                if name in known:
                    removed.append(name)
                continue
            previous = known.get(name)
            # Same size and mtime means unchanged, unless the mtime is so recent that a second
            # edit within the filesystem's timestamp resolution could hide behind it.
            settled = time.time_ns() - stat.st_mtime_ns > _RACY_NS
            if (
                not force
                and previous
                and settled
                and previous[1:] == (stat.st_mtime_ns, stat.st_size)
            ):
                continue
            text = self.files.read(name)
            text_hash = _sha256(text)
            if not force and previous and previous[0] == text_hash:
                if previous[1:] != (stat.st_mtime_ns, stat.st_size):
                    touched.append((name, stat.st_mtime_ns, stat.st_size))
                continue
            chunks = [
                (c.start_line, c.end_line, c.text, _sha256(c.text))
                for c in chunk_markdown(text)
                if c.text.strip()
            ]
            work.append(_FileWork(name, text_hash, stat.st_mtime_ns, stat.st_size, chunks))

        return on_disk, removed, work, touched

    def _write(
        self,
        work: Sequence[_FileWork],
        removed: Sequence[str],
        touched: Sequence[tuple[str, int, int]],
        vectors: dict[str, ChunkVectors | None],
    ) -> tuple[int, int]:
        conn = self.conn
        chunks_added = chunks_removed = 0
        now = datetime.now(UTC).isoformat()
        if work or removed or touched:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for name in removed:
                    chunks_removed += conn.execute(
                        "DELETE FROM chunks WHERE path = ?", (name,)
                    ).rowcount
                    conn.execute("DELETE FROM files WHERE path = ?", (name,))
                for item in work:
                    chunks_removed += conn.execute(
                        "DELETE FROM chunks WHERE path = ?", (item.name,)
                    ).rowcount
                    day = file_date(item.name)
                    rows = []
                    for start, end, text, chunk_hash in item.chunks:
                        vec = vectors.get(chunk_hash)
                        made = vec is not None and self.embedder is not None
                        rows.append(
                            (
                                item.name,
                                start,
                                end,
                                text,
                                chunk_hash,
                                day.isoformat() if day else None,
                                self.embedder.model_id if made and self.embedder else None,
                                self.embedder.dims if made and self.embedder else None,
                                vec.vector if vec else None,
                                vec.passages if vec else None,
                                vec.centroid if vec else None,
                            )
                        )
                    conn.executemany(
                        "INSERT INTO chunks (path, start_line, end_line, text, hash, date, "
                        "model_id, dims, vector, passages, centroid) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        rows,
                    )
                    chunks_added += len(rows)
                    conn.execute(
                        "INSERT OR REPLACE INTO files (path, hash, mtime_ns, size, indexed_at) "
                        "VALUES (?, ?, ?, ?, ?)",
                        (item.name, item.text_hash, item.mtime_ns, item.size, now),
                    )
                for name, mtime_ns, size in touched:
                    conn.execute(
                        "UPDATE files SET mtime_ns = ?, size = ? WHERE path = ?",
                        (mtime_ns, size, name),
                    )
                if work or removed:
                    self._bump_generation(conn)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            if work or removed:
                self._vectors = None

        return chunks_added, chunks_removed

    def _bump_generation(self, conn: sqlite3.Connection) -> None:
        conn.execute(
            "UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) "
            "WHERE key = 'generation'"
        )
        self._generation = self._read_generation()

    async def _vectors_for(self, work: Sequence[_FileWork]) -> dict[str, ChunkVectors | None]:
        """Vectors for the new chunks: those of an already embedded chunk with the same text,
        else one per passage, reusing the vectors of passages the files already had."""
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
        """Stored vectors of chunks with these texts (by hash), and of every passage the files
        `names` have now (by passage hash), made by the current embedder."""
        embedder = self.embedder
        assert embedder is not None
        current = (embedder.model_id, embedder.dims)
        found: dict[str, ChunkVectors | None] = {}
        for start in range(0, len(hashes), 500):
            part = hashes[start : start + 500]
            marks = ",".join("?" * len(part))
            for row in self.conn.execute(
                f"SELECT hash, passages, centroid, vector FROM chunks WHERE hash IN ({marks}) "
                "AND model_id = ? AND dims = ? AND vector IS NOT NULL AND centroid IS NOT NULL "
                "AND passages IS NOT NULL",
                (*part, *current),
            ):
                found[str(row[0])] = ChunkVectors(str(row[1]), bytes(row[2]), bytes(row[3]))
        known: dict[str, bytes] = {}
        width = embedder.dims * 2
        for start in range(0, len(names), 500):
            part = names[start : start + 500]
            marks = ",".join("?" * len(part))
            for row in self.conn.execute(
                f"SELECT passages, vector FROM chunks WHERE path IN ({marks}) AND model_id = ? "
                "AND dims = ? AND vector IS NOT NULL AND passages IS NOT NULL",
                (*part, *current),
            ):
                blob = bytes(row[1])
                for i, passage_hash in enumerate(str(row[0]).split()):
                    known[passage_hash] = blob[i * width : (i + 1) * width]
        return found, known

    async def _reembed_stale(self) -> None:
        """Embed chunks with no vector or one from another model/dimension."""
        embedder = self.embedder
        if embedder is None or self._embeddings_checked:
            return
        stale = self.conn.execute(
            "SELECT id, text FROM chunks WHERE vector IS NULL OR centroid IS NULL "
            "OR passages IS NULL OR model_id IS NOT ? OR dims IS NOT ?",
            (embedder.model_id, embedder.dims),
        ).fetchall()
        if stale:
            made = await self._embed_chunks({int(row[0]): str(row[1]) for row in stale}, {})
            updates = [
                (embedder.model_id, embedder.dims, vec.vector, vec.passages, vec.centroid, key)
                for key, vec in made.items()
                if vec is not None
            ]
            self._embedded_total += len(updates)
            if updates:
                conn = self.conn
                conn.execute("BEGIN IMMEDIATE")
                try:
                    conn.executemany(
                        "UPDATE chunks SET model_id = ?, dims = ?, vector = ?, passages = ?, "
                        "centroid = ? WHERE id = ?",
                        updates,
                    )
                    self._bump_generation(conn)
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                self._vectors = None
            if len(updates) < len(stale):
                return  # keep checking on later syncs until every chunk has a vector
        self._embeddings_checked = True

    # vectors -------------------------------------------------------------------------------

    def vector_table(self) -> VectorTable | None:
        """The current model's vectors in memory (loaded lazily; None if there are none)."""
        embedder = self.embedder
        if embedder is None:
            return None
        if self._vectors is None:
            import numpy as np  # only once there is something to recall

            current = (embedder.model_id, embedder.dims)
            embedded = "vector IS NOT NULL AND centroid IS NOT NULL AND model_id = ? AND dims = ?"
            count, size = self.conn.execute(
                f"SELECT COUNT(*), TOTAL(length(vector)) FROM chunks WHERE {embedded}", current
            ).fetchone()
            if not count:
                return None
            passage_count = int(size) // (2 * embedder.dims)
            whole = passage_count <= FULL_SCAN_PASSAGES
            rows = self.conn.execute(
                f"SELECT id, path, date, centroid{', vector' if whole else ''} FROM chunks "
                f"WHERE {embedded} ORDER BY id",
                current,
            ).fetchall()
            names = tuple(sorted({str(r[1]) for r in rows}))
            code = {name: i for i, name in enumerate(names)}
            ids = np.fromiter((int(r[0]) for r in rows), dtype=np.int64, count=len(rows))
            matrix = np.frombuffer(b"".join(bytes(r[3]) for r in rows), dtype="<f4")
            scanned = starts = None
            if whole:
                blobs = [bytes(r[4]) for r in rows]
                sizes = np.fromiter((len(b) for b in blobs), dtype=np.int64, count=len(rows))
                starts = np.concatenate(([0], np.cumsum(sizes // (2 * embedder.dims))[:-1]))
                scanned = (
                    np.frombuffer(b"".join(blobs), dtype="<f2")
                    .reshape(-1, embedder.dims)
                    .astype(np.float32)
                )
            self._vectors = VectorTable(
                ids=ids,
                matrix=matrix.reshape(len(rows), embedder.dims).astype(np.float32, copy=False),
                path_codes=np.fromiter(
                    (code[str(r[1])] for r in rows), dtype=np.int32, count=len(rows)
                ),
                path_names=names,
                dates=np.fromiter(
                    (date.fromisoformat(r[2]).toordinal() if r[2] else -1 for r in rows),
                    dtype=np.int64,
                    count=len(rows),
                ),
                row_of={int(chunk_id): i for i, chunk_id in enumerate(ids.tolist())},
                passages=scanned,
                passage_starts=starts.astype(np.int64) if starts is not None else None,
                passage_count=passage_count,
            )
        return self._vectors

    # search and stats ----------------------------------------------------------------------

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
        """Sync (cheap when nothing changed), then `hybrid_search` (options documented there)."""
        await self.sync()
        return await hybrid_search(
            self,
            query,
            limit=limit,
            paths=paths,
            since=since,
            until=until,
            min_score=DEFAULT_MIN_SCORE if min_score is None else min_score,
            vector_weight=vector_weight,
            text_weight=text_weight,
            decay=decay,
            half_life_days=half_life_days,
            mmr=mmr,
            mmr_lambda=mmr_lambda,
            now=now,
        )

    def stats(self) -> dict[str, Any]:
        conn = self.conn
        files = int(conn.execute("SELECT COUNT(*) FROM files").fetchone()[0])
        chunks = int(conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])
        models = {
            str(row[0]): int(row[1])
            for row in conn.execute(
                "SELECT model_id, COUNT(*) FROM chunks WHERE vector IS NOT NULL GROUP BY model_id"
            )
        }
        current = self.embedder.model_id if self.embedder else None
        size = sum(
            p.stat().st_size for p in (self.db_path, Path(f"{self.db_path}-wal")) if p.exists()
        )
        return {
            "db_path": str(self.db_path),
            "files": files,
            "chunks": chunks,
            "embedded_chunks": models.get(current, 0) if current else 0,
            "model_id": current,
            "dims": self.embedder.dims if self.embedder else None,
            "keyword_only": self.embedder is None,
            "vectors_by_model": models,
            "db_bytes": size,
            "last_warning": self.last_warning,
        }
