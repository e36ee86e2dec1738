"""Each fact in a memory chunk gets its own vector: a question about one entry of a long note
finds it, an edit re-embeds only what changed, and a large index still finds it."""

from __future__ import annotations

import hashlib
import sqlite3
from datetime import date
from pathlib import Path

import pytest

import dexter.memory.index as index_module
from dexter.memory.files import MemoryFiles
from dexter.memory.index import MemoryIndex
from dexter.memory.migrations import MEMORY_MIGRATIONS
from dexter.memory.passages import MAX_PASSAGE_CHARS, passages
from dexter.store.migrations import apply_migrations
from tests.support.fake_embedder import FakeEmbedder

TODAY = date(2025, 6, 30)
# A long daily note: one fact among a dozen unrelated entries, all in a single chunk.
NOISE = [
    f"Read the {firm} call transcript; management sounded {tone} on demand and margins."
    for firm, tone in zip(
        ["Oracle", "Visa", "Deere", "Disney", "Walmart", "Netflix", "Pepsi", "Boeing"],
        ["upbeat", "cautious", "defensive", "confident", "evasive", "calm", "firm", "vague"],
        strict=True,
    )
] + [
    "Dentist appointment moved to next week.",
    "10-year Treasury yield at 4.41%; 2-year at 3.98%.",
    "Kids' soccer schedule is eating Saturdays again.",
]
FACT = "I hold 200 NVDA shares in the taxable account."


def _note(fact_at: int) -> str:
    lines = list(NOISE)
    lines.insert(fact_at, FACT)
    return "# 2025-06-20\n\n## Notes\n" + "\n".join(f"- {line}" for line in lines) + "\n"


def test_passages_are_entries_and_paragraphs_not_headings() -> None:
    text = (
        "# 2025-06-20\n\n## Trades\n- Bought 10 MSFT.\n  Roth IRA, long term.\n* Sold XOM.\n"
        "1. First rule\n\nA plain paragraph\nover two lines.\n\n```\ncode\n\nstays whole\n```\n"
    )
    assert passages(text) == [
        "Bought 10 MSFT.\nRoth IRA, long term.",
        "Sold XOM.",
        "First rule",
        "A plain paragraph\nover two lines.",
        "```\ncode\n\nstays whole\n```",
    ]
    assert passages("## Only a heading") == ["## Only a heading"]
    long = " ".join(["This sentence is about the portfolio."] * 60)
    pieces = passages(long)
    assert len(pieces) > 1 and all(len(p) <= MAX_PASSAGE_CHARS for p in pieces)
    assert " ".join(pieces) == long


async def test_a_fact_among_many_entries_of_one_note_is_found_by_a_paraphrase(
    tmp_path: Path,
) -> None:
    files = MemoryFiles(tmp_path)
    files.write("2025-06-20.md", _note(6))
    files.write("2025-06-21.md", "- " + "\n- ".join(NOISE) + "\n")
    index = MemoryIndex(tmp_path, FakeEmbedder())
    hits = await index.search("nvidia position size", now=TODAY, limit=2)
    assert hits[0].path == "2025-06-20.md" and FACT in hits[0].text
    # Scored on the fact's own passage, not on the note's average of thirteen lines.
    assert hits[0].vector_score is not None and hits[0].vector_score > 0.5
    assert index.stats()["chunks"] == 2


async def test_an_edit_embeds_only_the_new_entry(tmp_path: Path) -> None:
    files = MemoryFiles(tmp_path)
    files.write("2025-06-20.md", _note(6))
    embedder = FakeEmbedder()
    index = MemoryIndex(tmp_path, embedder)
    first = await index.sync()
    assert first.passages_embedded == len(NOISE) + 1
    before = embedder.texts_embedded

    files.append("2025-06-20.md", "Trimmed NVDA to 150 shares after earnings.")
    edited = await index.sync()
    assert edited.chunks_added == 1
    assert edited.passages_embedded == 1
    assert embedder.texts_embedded - before == 1
    hits = await index.search("NVDA trimmed", now=TODAY)
    assert "Trimmed NVDA to 150 shares" in hits[0].text


async def test_a_large_index_searches_in_two_stages_and_still_finds_the_fact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = MemoryFiles(tmp_path)
    for day in range(1, 25):
        files.write(f"2025-05-{day:02d}.md", "- " + "\n- ".join(NOISE) + "\n")
    files.write("2025-06-20.md", _note(3))
    monkeypatch.setattr(index_module, "FULL_SCAN_PASSAGES", 0)  # as if too big to scan whole
    index = MemoryIndex(tmp_path, FakeEmbedder())
    hits = await index.search("nvidia position size", now=TODAY, limit=3)
    table = index.vector_table()
    assert table is not None and table.passages is None  # passages were read, not kept
    assert table.passage_count == 24 * len(NOISE) + len(NOISE) + 1
    assert hits[0].path == "2025-06-20.md"
    assert hits[0].vector_score is not None and hits[0].vector_score > 0.5


async def test_an_index_from_before_passages_is_re_embedded_by_passage(tmp_path: Path) -> None:
    files = MemoryFiles(tmp_path)
    files.write("2025-06-20.md", _note(6))
    path = files.dir / "index.db"
    text = files.read("2025-06-20.md")
    stat = files.path("2025-06-20.md").stat()
    conn = sqlite3.connect(path, isolation_level=None)
    apply_migrations(conn, path, MEMORY_MIGRATIONS[:1])  # the schema of the first release
    # The file indexed as the first release did it: one float32 vector for the whole chunk.
    conn.execute(
        "INSERT INTO files (path, hash, mtime_ns, size, indexed_at) VALUES (?, ?, ?, ?, 'then')",
        (
            "2025-06-20.md",
            hashlib.sha256(text.encode()).hexdigest(),
            stat.st_mtime_ns,
            stat.st_size,
        ),
    )
    conn.execute(
        "INSERT INTO chunks (path, start_line, end_line, text, hash, model_id, dims, vector) "
        "VALUES ('2025-06-20.md', 1, 15, ?, 'old', 'fake:hashed-bow-v1', 256, ?)",
        (text.strip(), bytes(256 * 4)),
    )
    conn.close()

    embedder = FakeEmbedder()
    index = MemoryIndex(tmp_path, embedder)
    stats = await index.sync()
    assert stats.files_indexed == 0  # the file itself did not change ...
    assert (stats.chunks_embedded, stats.passages_embedded) == (
        1,
        len(NOISE) + 1,
    )  # ... its vectors did
    hits = await index.search("nvidia position size", now=TODAY)
    assert hits[0].vector_score is not None and hits[0].vector_score > 0.5
