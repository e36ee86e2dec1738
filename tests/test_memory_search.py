"""Hybrid memory search, asserted the way a user would notice it."""

from __future__ import annotations

import socket
from datetime import date, timedelta
from pathlib import Path

import pytest

from dexter.memory.files import MemoryFiles
from dexter.memory.index import MemoryIndex
from dexter.memory.search import fts_query
from tests.support.fake_embedder import FakeEmbedder

TODAY = date(2025, 6, 30)

FILLER = [
    "Read the Fed minutes; rates on hold, two cuts priced for the autumn.",
    "Checked the brokerage fees on the new account, nothing unusual.",
    "Weekly review: cash is 12% of the portfolio, rebalance in July.",
    "Looked at the treasury ladder; the 2-year bill matures in September.",
]


def _day(offset: int) -> str:
    return MemoryFiles.daily_name(TODAY - timedelta(days=offset))


def _home(tmp_path: Path, notes: dict[str, str]) -> MemoryFiles:
    files = MemoryFiles(tmp_path)
    for i, text in enumerate(FILLER):
        files.append(_day(200 + i), text)
    for name, text in notes.items():
        files.append(name, text)
    return files


def test_fts_query_drops_stopwords_and_quotes_terms() -> None:
    assert fts_query('What is my "NVDA" position?') == '"nvda" OR "position"'
    assert fts_query("what is it") == '"what" OR "is" OR "it"'
    assert fts_query("  ?! ") is None


async def test_better_keyword_match_scores_higher(tmp_path: Path) -> None:
    _home(
        tmp_path,
        {
            _day(1): "NVDA guidance raised again; NVDA data-center guidance beat.",
            _day(2): (
                "Long day of reading: semiconductors, memory pricing, foundry capacity, "
                "hyperscaler capex, and one line noting NVDA reports next week."
            ),
        },
    )
    index = MemoryIndex(tmp_path, None)
    hits = await index.search("NVDA guidance", now=TODAY, mmr=False, decay=False, min_score=0)
    assert [h.path for h in hits] == [_day(1), _day(2)]
    best, weaker = hits
    assert best.text_score == 1.0
    assert weaker.text_score is not None and 0.0 < weaker.text_score < best.text_score
    assert best.score > weaker.score
    assert best.vector_score is None and weaker.vector_score is None  # keyword-only, said so


async def test_edited_text_is_never_found_again(tmp_path: Path) -> None:
    files = _home(tmp_path, {"MEMORY.md": "I hold 200 NVDA at $410\n\nI prefer index funds"})
    index = MemoryIndex(tmp_path, FakeEmbedder())
    assert any("200 NVDA" in h.text for h in await index.search("NVDA 200", now=TODAY))

    # Hand edit, same size on purpose; the very next search must reflect it.
    assert files.replace_text("MEMORY.md", "I hold 200 NVDA at $410", "I hold 300 NVDA at $410")
    hits = await index.search("NVDA 200", now=TODAY)
    assert hits and all("200 NVDA" not in h.text for h in hits)
    assert "300 NVDA" in hits[0].text

    assert files.delete_text("MEMORY.md", "I hold 300 NVDA at $410")
    hits = await index.search("NVDA", now=TODAY)
    assert all("NVDA" not in h.text for h in hits)


async def test_deleting_a_file_removes_its_results(tmp_path: Path) -> None:
    files = _home(tmp_path, {_day(3): "Opened a starter position in ASML"})
    index = MemoryIndex(tmp_path, FakeEmbedder())
    assert [h.path for h in await index.search("ASML", now=TODAY)] == [_day(3)]
    files.path(_day(3)).unlink()
    assert await index.search("ASML", now=TODAY) == []
    assert index.stats()["files"] == len(FILLER)


async def test_decay_ranks_stale_daily_note_below_fresh_but_not_memory_md(
    tmp_path: Path,
) -> None:
    text = "Target weight for semiconductors is 15 percent of the portfolio"
    _home(tmp_path, {_day(0): text, _day(90): text, "MEMORY.md": text})
    index = MemoryIndex(tmp_path, FakeEmbedder())
    hits = await index.search("semiconductors target weight", now=TODAY, mmr=False, limit=3)
    by_path = {h.path: h for h in hits}
    assert set(by_path) == {_day(0), _day(90), "MEMORY.md"}
    fresh, stale, evergreen = by_path[_day(0)], by_path[_day(90)], by_path["MEMORY.md"]
    assert stale.score < fresh.score
    # 90 days = three half-lives of the recency bonus, on top of a 0.6 floor.
    assert stale.score == pytest.approx(fresh.score * (0.6 + 0.4 * 0.5**3))
    assert evergreen.score == pytest.approx(fresh.score)  # MEMORY.md never decays
    assert hits[-1].path == _day(90)

    # Without decay the three identical notes score the same.
    flat = await index.search("semiconductors target weight", now=TODAY, mmr=False, decay=False)
    assert len({round(h.score, 9) for h in flat}) == 1

    # A year later MEMORY.md outranks every daily note.
    later = await index.search(
        "semiconductors target weight", now=TODAY + timedelta(days=365), mmr=False
    )
    assert later[0].path == "MEMORY.md"


@pytest.mark.parametrize("embedder", [FakeEmbedder(), None], ids=["vectors", "keyword-only"])
async def test_mmr_removes_near_duplicates(tmp_path: Path, embedder: FakeEmbedder | None) -> None:
    dup = "Bought 50 NVDA shares at $120 after the earnings dip"
    _home(
        tmp_path,
        {
            _day(1): dup,
            _day(2): dup + ".",
            _day(3): "Bought 50 NVDA shares at $120 after the earnings dip!",
            _day(4): "NVDA thesis: shares re-rate as data-center earnings compound",
        },
    )
    index = MemoryIndex(tmp_path, embedder)
    plain = await index.search("NVDA shares earnings", now=TODAY, limit=2, mmr=False)
    assert {h.path for h in plain} <= {_day(1), _day(2), _day(3)}  # two copies of one fact

    diverse = await index.search("NVDA shares earnings", now=TODAY, limit=2)
    assert diverse[0].path == _day(1)
    assert diverse[1].path == _day(4)


async def test_vectors_find_a_paraphrase_with_no_shared_keyword(tmp_path: Path) -> None:
    _home(tmp_path, {"MEMORY.md": "I hold 200 NVDA shares"})
    index = MemoryIndex(tmp_path, FakeEmbedder())
    query = "nvidia position size"
    assert await MemoryIndex(tmp_path, None).search(query, now=TODAY) == []  # no keyword overlap
    hits = await index.search(query, now=TODAY)
    assert hits and hits[0].path == "MEMORY.md"
    assert hits[0].text_score == 0.0
    assert hits[0].vector_score is not None and hits[0].vector_score > 0.3


async def test_real_local_embedder_finds_the_paraphrase(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_network(*_args: object, **_kwargs: object) -> None:
        raise OSError("network blocked in this test")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    embeddings = pytest.importorskip("dexter.memory.embeddings")
    embedder = embeddings.LocalEmbedder()
    try:
        embedder.load()
    except Exception as exc:  # model or tokenizer not installed here
        pytest.skip(f"local embedder unavailable: {exc}")
    _home(
        tmp_path,
        {
            "MEMORY.md": "I prefer conservative DCF assumptions",
            _day(5): "I hold 200 NVDA shares",
            _day(6): "Dinner with the family on Sunday",
        },
    )
    index = MemoryIndex(tmp_path, embedder)
    hits = await index.search("nvidia position size", now=TODAY, limit=3)
    assert hits and hits[0].text == "- I hold 200 NVDA shares"
    assert hits[0].text_score == 0.0 and hits[0].vector_score is not None


async def test_path_and_date_filters(tmp_path: Path) -> None:
    _home(
        tmp_path,
        {
            "MEMORY.md": "AAPL is a core holding",
            _day(10): "Trimmed AAPL by 10 percent",
            _day(40): "Added to AAPL on the dip",
        },
    )
    for embedder in (FakeEmbedder(), None):
        index = MemoryIndex(tmp_path, embedder)
        everything = await index.search("AAPL", now=TODAY, limit=5, mmr=False)
        assert {h.path for h in everything} == {"MEMORY.md", _day(10), _day(40)}

        only = await index.search("AAPL", now=TODAY, paths=["MEMORY.md"])
        assert [h.path for h in only] == ["MEMORY.md"]

        recent = await index.search("AAPL", now=TODAY, since=TODAY - timedelta(days=20))
        assert [h.path for h in recent] == [_day(10)]

        window = await index.search(
            "AAPL",
            now=TODAY,
            since=TODAY - timedelta(days=60),
            until=TODAY - timedelta(days=30),
        )
        assert [h.path for h in window] == [_day(40)]
        assert window[0].date == TODAY - timedelta(days=40)
        assert await index.search("AAPL", now=TODAY, paths=[]) == []


async def test_min_score_and_limit(tmp_path: Path) -> None:
    _home(tmp_path, {_day(i): f"Note {i}: reviewed the AAPL position" for i in range(1, 9)})
    index = MemoryIndex(tmp_path, FakeEmbedder())
    hits = await index.search("AAPL position", now=TODAY, limit=3)
    assert len(hits) == 3
    assert all(h.score > 0 for h in hits)
    assert await index.search("AAPL position", now=TODAY, min_score=1.01) == []
    assert await index.search("   ", now=TODAY) == []


async def test_on_a_large_index_words_in_most_notes_leave_the_ranking_to_rarer_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dexter.memory.search as search_module

    files = MemoryFiles(tmp_path)
    for offset in range(1, 21):
        files.append(_day(offset), f"Weekly portfolio review number {offset}, nothing changed.")
    files.append(_day(30), "Portfolio review: trimmed NVDA to 150 shares.")
    # As if these 25 notes were a 100,000-chunk index where 20% is as common as 1% is there:
    # "portfolio" is in 22 of them, "NVDA" in one.
    monkeypatch.setattr(search_module, "LARGE_INDEX_CHUNKS", 10)
    monkeypatch.setattr(search_module, "COMMON_TERM_SHARE", 0.2)
    index = MemoryIndex(tmp_path, None)
    hits = await index.search("portfolio NVDA", now=TODAY)
    assert [h.path for h in hits] == [_day(30)]  # ranked by the rare word alone
    assert await index.search("portfolio review", now=TODAY) == []  # keyword side has nothing
