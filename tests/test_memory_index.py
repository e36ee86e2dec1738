"""Memory files and the SQLite index: what is stored, what is forgotten, what is re-embedded."""

from __future__ import annotations

import sqlite3
from datetime import date
from pathlib import Path

import pytest

from dexter.memory.files import MemoryFiles, MemoryNameError
from dexter.memory.index import MemoryIndex
from dexter.memory.migrations import MEMORY_MIGRATIONS
from tests.support.fake_embedder import FakeEmbedder


def _texts(home: Path) -> list[str]:
    with sqlite3.connect(home / "memory" / "index.db") as conn:
        return [str(r[0]) for r in conn.execute("SELECT text FROM chunks ORDER BY id")]


# files --------------------------------------------------------------------------------------


def test_append_creates_files_and_lists_only_memory_files(tmp_path: Path) -> None:
    files = MemoryFiles(tmp_path)
    assert files.list() == []
    files.append("MEMORY.md", "I hold 200 NVDA at $410")
    files.append("MEMORY.md", "I prefer conservative DCF assumptions")
    files.append("2025-03-08.md", "## Thesis\nMargins peak in 2026.")
    (files.dir / "notes.txt").write_text("not memory")
    (files.dir / "scratch.md").write_text("not memory either")

    assert files.list() == ["2025-03-08.md", "MEMORY.md"]
    assert files.read("MEMORY.md") == (
        "- I hold 200 NVDA at $410\n\n- I prefer conservative DCF assumptions\n"
    )
    assert files.read("2025-03-08.md") == "## Thesis\nMargins peak in 2026.\n"
    assert files.read("2025-03-09.md") == ""
    assert files.path("MEMORY.md") == tmp_path / "memory" / "MEMORY.md"


def test_daily_names_use_the_local_date(tmp_path: Path) -> None:
    files = MemoryFiles(tmp_path)
    assert files.daily_name(date(2025, 1, 2)) == "2025-01-02.md"
    assert files.daily_name() == f"{date.today().isoformat()}.md"
    assert files.file_date("2025-01-02.md") == date(2025, 1, 2)
    assert files.file_date("MEMORY.md") is None


def test_replace_and_delete_text(tmp_path: Path) -> None:
    files = MemoryFiles(tmp_path)
    files.append("MEMORY.md", "first")
    files.append("MEMORY.md", "second")
    files.append("MEMORY.md", "third")
    assert files.replace_text("MEMORY.md", "second", "2nd") is True
    assert files.replace_text("MEMORY.md", "missing", "x") is False
    assert files.delete_text("MEMORY.md", "- 2nd") is True
    assert files.read("MEMORY.md") == "- first\n\n- third\n"
    assert files.delete_text("MEMORY.md", "- 2nd") is False


@pytest.mark.parametrize(
    "name",
    ["../x.md", "../MEMORY.md", "sub/2025-01-01.md", "/etc/passwd", "notes.md", "2025-02-30.md"],
)
def test_names_outside_the_two_patterns_are_refused(tmp_path: Path, name: str) -> None:
    files = MemoryFiles(tmp_path)
    with pytest.raises(MemoryNameError):
        files.append(name, "nope")
    with pytest.raises(MemoryNameError):
        files.read(name)
    assert not (tmp_path / "x.md").exists()


# index --------------------------------------------------------------------------------------


async def test_migrations_are_recorded_once(tmp_path: Path) -> None:
    MemoryFiles(tmp_path).append("MEMORY.md", "hello")
    for _ in range(2):
        index = MemoryIndex(tmp_path, None)
        await index.sync()
        index.close()
    assert (tmp_path / "memory" / "index.db").is_file()
    with sqlite3.connect(tmp_path / "memory" / "index.db") as conn:
        rows = conn.execute("SELECT number FROM _migrations").fetchall()
    assert [r[0] for r in rows] == [m.number for m in MEMORY_MIGRATIONS]


async def test_sync_is_incremental_and_forgets_removed_text(tmp_path: Path) -> None:
    files = MemoryFiles(tmp_path)
    files.append("MEMORY.md", "I hold 200 NVDA at $410")
    files.append("2025-03-08.md", "Sold half my AAPL position")
    embedder = FakeEmbedder()
    index = MemoryIndex(tmp_path, embedder)

    first = await index.sync()
    assert (first.files_seen, first.files_indexed, first.chunks_added) == (2, 2, 2)
    assert first.chunks_embedded == 2

    calls = embedder.calls
    again = await index.sync()
    assert (again.files_indexed, again.chunks_added, again.chunks_removed) == (0, 0, 0)
    assert embedder.calls == calls

    files.write("MEMORY.md", "- I hold 150 NVDA at $410\n")
    edited = await index.sync()
    assert (edited.files_indexed, edited.chunks_added, edited.chunks_removed) == (1, 1, 1)
    assert not any("200 NVDA" in t for t in _texts(tmp_path))

    files.path("2025-03-08.md").unlink()
    gone = await index.sync()
    assert (gone.files_removed, gone.chunks_removed) == (1, 1)
    assert _texts(tmp_path) == ["- I hold 150 NVDA at $410"]
    assert index.stats()["files"] == 1


async def test_changing_the_embedding_model_re_embeds(tmp_path: Path) -> None:
    files = MemoryFiles(tmp_path)
    files.append("MEMORY.md", "I hold 200 NVDA at $410")
    files.append("2025-03-08.md", "Sold half my AAPL position")
    old = MemoryIndex(tmp_path, FakeEmbedder("fake:v1", dims=64))
    await old.sync()
    assert old.stats()["embedded_chunks"] == 2
    old.close()

    new_embedder = FakeEmbedder("fake:v2", dims=128)
    new = MemoryIndex(tmp_path, new_embedder)
    stats = await new.sync()
    assert stats.chunks_embedded == 2
    assert new_embedder.texts_embedded == 2
    info = new.stats()
    assert info["model_id"] == "fake:v2"
    assert info["embedded_chunks"] == 2
    assert info["vectors_by_model"] == {"fake:v2": 2}
    table = new.vector_table()
    assert table is not None and table.matrix.shape == (2, 128)

    # Same model again: nothing to embed.
    again = MemoryIndex(tmp_path, FakeEmbedder("fake:v2", dims=128))
    assert (await again.sync()).chunks_embedded == 0


async def test_keyword_only_mode_stores_no_vectors(tmp_path: Path) -> None:
    MemoryFiles(tmp_path).append("MEMORY.md", "I prefer conservative DCF assumptions")
    index = MemoryIndex(tmp_path, None)
    await index.sync()
    info = index.stats()
    assert info["db_path"] == str(tmp_path / "memory" / "index.db")
    assert info["keyword_only"] is True
    assert (info["chunks"], info["embedded_chunks"]) == (1, 0)
    assert index.vector_table() is None
    hits = await index.search("conservative assumptions")
    assert [h.path for h in hits] == ["MEMORY.md"]
    assert hits[0].vector_score is None


async def test_embedding_failure_keeps_text_searchable_and_retries(tmp_path: Path) -> None:
    MemoryFiles(tmp_path).append("MEMORY.md", "I hold 200 NVDA at $410")
    embedder = FakeEmbedder()
    embedder.fail = True
    index = MemoryIndex(tmp_path, embedder)
    hits = await index.search("NVDA")
    assert [h.path for h in hits] == ["MEMORY.md"]
    assert index.last_warning and "keyword" in index.last_warning
    assert index.stats()["embedded_chunks"] == 0

    embedder.fail = False
    stats = await index.sync()
    assert stats.chunks_embedded == 1
    assert index.stats()["embedded_chunks"] == 1


async def test_a_second_process_sync_is_picked_up(tmp_path: Path) -> None:
    files = MemoryFiles(tmp_path)
    files.append("MEMORY.md", "I hold 200 NVDA at $410")
    reader = MemoryIndex(tmp_path, FakeEmbedder())
    await reader.sync()
    table = reader.vector_table()
    assert table is not None and table.matrix.shape[0] == 1

    files.append("2025-03-08.md", "Bought 10 MSFT")
    writer = MemoryIndex(tmp_path, FakeEmbedder())
    await writer.sync()
    await reader.sync()  # sees the other writer's generation and drops its cached matrix
    table = reader.vector_table()
    assert table is not None and table.matrix.shape[0] == 2
