"""One contract for the memory index, run on both backends: SQLite + numpy (one user, files in the
home) and Postgres + pgvector (team mode, documents in the database).

The Postgres side shares one database per module (each test uses principals of its own, which is
itself the isolation under test); `test_migrations_apply_once` takes a fresh one.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path

import pytest

from dexter.memory.backend import MemoryBackend
from dexter.memory.embeddings import Embedder
from dexter.memory.files import MemoryNameError
from dexter.memory.index import MemoryIndex
from dexter.memory.pg_link import PgLink
from tests.support.fake_embedder import FakeEmbedder
from tests.support.postgres import create_database, drop_database

Make = Callable[[str, Embedder | None], MemoryBackend]

NOTES = """\
# What I know

## Holdings
- I hold 200 NVDA shares bought at $410 in the taxable account.
- Bought 150 TSM in the Roth IRA; Taiwan risk keeps it under 4%.

## Preferences
- Prefers conservative DCF assumptions: terminal growth no higher than 2.5%.
- Wants answers as short bullet points with the key numbers first.
"""

DAILY = """\
# 2025-03-08

## Market
- The 10-year Treasury yield closed at 4.31%; breadth was narrow.
- Read the Costco call transcript; management sounded upbeat on demand.
"""


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    url = create_database()
    try:
        yield url
    finally:
        drop_database(url)


@pytest.fixture
def pg_link(pg_url: str) -> Iterator[PgLink]:
    link = PgLink(pg_url)
    yield link
    link.close()


@pytest.fixture(params=["sqlite", "postgres"])
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Make]:
    """Memory for a principal (a name unique to this test) on the backend under test."""
    opened: list[MemoryBackend] = []
    tag = uuid.uuid4().hex[:8]
    link = PgLink(request.getfixturevalue("pg_url")) if request.param == "postgres" else None

    def factory(principal: str, embedder: Embedder | None) -> MemoryBackend:
        memory: MemoryBackend
        if link is not None:
            from dexter.memory.pg_index import PgMemoryIndex

            memory = PgMemoryIndex(link, f"{principal}-{tag}", embedder)
        else:
            memory = MemoryIndex(tmp_path / "principals" / principal, embedder)
        opened.append(memory)
        return memory

    yield factory
    for memory in opened:
        memory.close()


def _places(hits: list[object]) -> list[tuple[str, int]]:
    return [(h.path, h.start_line) for h in hits]  # type: ignore[attr-defined]


# documents ----------------------------------------------------------------------------------


async def test_documents_edit_like_files(make: Make) -> None:
    docs = make("alice", None).files
    assert docs.list() == []
    docs.append("MEMORY.md", "I hold 200 NVDA at $410")
    docs.append("MEMORY.md", "## Rules\nNever uses margin.")
    docs.append("2025-03-08.md", "first")
    docs.append("2025-03-08.md", "second")
    assert docs.list() == ["2025-03-08.md", "MEMORY.md"]
    assert docs.read("MEMORY.md") == "- I hold 200 NVDA at $410\n\n## Rules\nNever uses margin.\n"
    assert docs.replace_text("2025-03-08.md", "second", "2nd") is True
    assert docs.replace_text("2025-03-08.md", "absent", "x") is False
    assert docs.delete_text("2025-03-08.md", "- 2nd") is True
    assert docs.read("2025-03-08.md") == "- first\n\n"
    assert docs.delete_text("2025-03-09.md", "nothing") is False
    assert docs.list() == ["2025-03-08.md", "MEMORY.md"]  # a failed edit creates nothing
    assert docs.read("2025-03-09.md") == ""
    with pytest.raises(MemoryNameError):
        docs.append("../notes.md", "nope")
    with pytest.raises(ValueError, match="empty"):
        docs.append("MEMORY.md", "   ")


# sync ---------------------------------------------------------------------------------------


async def test_sync_adds_updates_and_deletes_chunks(make: Make) -> None:
    memory = make("alice", FakeEmbedder())
    memory.files.write("MEMORY.md", NOTES)
    memory.files.write("2025-03-08.md", DAILY)
    first = await memory.sync()
    assert (first.files_seen, first.files_indexed, first.chunks_removed) == (2, 2, 0)
    assert first.chunks_added >= 2
    stats = memory.stats()
    assert stats["files"] == 2
    assert stats["chunks"] == first.chunks_added == stats["embedded_chunks"]

    memory.files.replace_text("MEMORY.md", "200 NVDA", "140 NVDA")
    second = await memory.sync()
    assert second.files_indexed == 1
    assert second.chunks_removed >= 1 and second.chunks_added == second.chunks_removed
    assert memory.stats()["chunks"] == stats["chunks"]
    hits = await memory.search("NVDA shares", limit=3)
    assert "140 NVDA" in hits[0].text
    assert not any("200 NVDA" in h.text for h in hits)


async def test_reindex_goes_by_content_hash(make: Make) -> None:
    embedder = FakeEmbedder()
    memory = make("alice", embedder)
    memory.files.write("MEMORY.md", NOTES)
    await memory.sync()
    embedded = embedder.texts_embedded
    assert embedded >= 4  # one vector per entry

    again = await memory.sync()
    assert (again.files_indexed, again.chunks_added, again.chunks_embedded) == (0, 0, 0)
    forced = await memory.sync(force=True)
    assert forced.files_indexed == 1
    assert forced.chunks_added == forced.chunks_removed > 0
    assert embedder.texts_embedded == embedded  # same texts: vectors reused, nothing embedded

    memory.files.replace_text("MEMORY.md", "short bullet points", "one-line bullet points")
    edited = await memory.sync()
    assert edited.passages_embedded == 1  # only the changed entry
    assert embedder.texts_embedded == embedded + 1


async def test_a_new_embedding_model_re_embeds_every_chunk(make: Make) -> None:
    memory = make("alice", FakeEmbedder())
    memory.files.write("MEMORY.md", NOTES)
    await memory.sync()
    chunks = memory.stats()["chunks"]
    other = FakeEmbedder(model_id="fake:other", dims=128)
    switched = make("alice", other)
    stats = await switched.sync()
    assert stats.chunks_embedded == chunks
    assert switched.stats()["embedded_chunks"] == chunks
    hits = await switched.search("nvidia position size", limit=1)
    assert hits and "NVDA" in hits[0].text and hits[0].vector_score


# search -------------------------------------------------------------------------------------


async def test_keyword_hits_without_an_embedder(make: Make) -> None:
    memory = make("alice", None)
    memory.files.write("MEMORY.md", NOTES)
    memory.files.write("2025-03-08.md", DAILY)
    assert memory.keyword_only
    hits = await memory.search("Taiwan risk", limit=5)
    assert hits and "TSM" in hits[0].text
    assert hits[0].vector_score is None and hits[0].text_score == 1.0
    stemmed = await memory.search("treasury yields", limit=1)  # "yields" finds "yield"
    assert stemmed and stemmed[0].path == "2025-03-08.md"
    assert stemmed[0].date == date(2025, 3, 8)
    assert await memory.search("zzzqqq", limit=5) == []


async def test_vector_hits_share_no_keyword(make: Make) -> None:
    memory = make("alice", FakeEmbedder())
    memory.files.write("MEMORY.md", NOTES)
    memory.files.write("2025-03-08.md", DAILY)
    hits = await memory.search("nvidia position size", limit=3, decay=False)
    assert hits and "200 NVDA" in hits[0].text
    assert hits[0].text_score == 0.0 and (hits[0].vector_score or 0) > 0.15


async def test_hybrid_ranking_prefers_both_sides_and_the_rare_word(make: Make) -> None:
    memory = make("alice", FakeEmbedder())
    memory.files.write(
        "MEMORY.md",
        "\n\n".join(
            [
                "## A\n- Apple results next week; nothing to do about Apple.",
                "## B\n- AAPL cost basis is $92.40 per share, checked at Fidelity.",
                "## C\n- Read about apple orchards in Washington state.",
            ]
        ),
    )
    hits = await memory.search("apple cost basis", limit=3, decay=False, mmr=False)
    assert "92.40" in hits[0].text  # keyword and vector agree on it
    assert hits[0].score >= hits[-1].score
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)


async def test_path_and_date_filters(make: Make) -> None:
    memory = make("alice", FakeEmbedder())
    memory.files.write("MEMORY.md", NOTES)
    memory.files.write("2025-03-08.md", DAILY)
    memory.files.write("2025-03-20.md", "- Treasury yield fell to 4.10% after the Fed.\n")
    only_daily = await memory.search("treasury yield", limit=5, paths=["2025-03-20.md"])
    assert {h.path for h in only_daily} == {"2025-03-20.md"}
    early = await memory.search("treasury yield", limit=5, until=date(2025, 3, 10))
    assert {h.path for h in early} == {"2025-03-08.md"}
    assert await memory.search("treasury yield", limit=5, paths=[]) == []


async def test_each_principal_sees_only_its_own_memory(make: Make) -> None:
    alice = make("alice", FakeEmbedder())
    bob = make("bob", FakeEmbedder())
    alice.files.write("MEMORY.md", "- Alice holds 200 NVDA shares.\n")
    bob.files.write("MEMORY.md", "- Bob holds 75 TSM shares and likes Taiwan.\n")
    bob.files.write("2025-03-08.md", "- Bob sold NVDA shares today.\n")
    assert alice.files.list() == ["MEMORY.md"]
    assert alice.files.read("MEMORY.md") == "- Alice holds 200 NVDA shares.\n"
    hits = await alice.search("NVDA TSM shares Taiwan", limit=10, min_score=0.0)
    assert hits and all("Alice" in h.text for h in hits)
    assert {h.path for h in await bob.search("NVDA shares", limit=10)} == {
        "2025-03-08.md",
        "MEMORY.md",
    }
    assert alice.stats()["files"] == 1 and bob.stats()["files"] == 2


async def test_a_chunk_deleted_from_a_file_disappears(make: Make) -> None:
    memory = make("alice", FakeEmbedder())
    memory.files.write("MEMORY.md", NOTES)
    assert any("TSM" in h.text for h in await memory.search("TSM Taiwan", limit=3))
    assert memory.files.delete_text(
        "MEMORY.md", "- Bought 150 TSM in the Roth IRA; Taiwan risk keeps it under 4%.\n"
    )
    hits = await memory.search("TSM Taiwan", limit=5, min_score=0.0)
    assert not any("TSM" in h.text for h in hits)
    assert not any("Taiwan" in h.text for h in await memory.search("Taiwan", limit=5))


async def test_both_backends_return_the_same_hits(tmp_path: Path, pg_link: PgLink) -> None:
    from dexter.memory.pg_index import PgMemoryIndex

    lite = MemoryIndex(tmp_path, FakeEmbedder())
    team = PgMemoryIndex(pg_link, f"same-{uuid.uuid4().hex[:8]}", FakeEmbedder())
    for memory in (lite, team):
        memory.files.write("MEMORY.md", NOTES)
        memory.files.write("2025-03-08.md", DAILY)
    try:
        for query in ("nvidia position size", "conservative valuation", "Costco demand"):
            a = await lite.search(query, limit=4, now=date(2025, 3, 9))
            b = await team.search(query, limit=4, now=date(2025, 3, 9))
            assert _places(a) == _places(b), query
            for x, y in zip(a, b, strict=True):
                assert x.vector_score == pytest.approx(y.vector_score, abs=1e-3)
    finally:
        lite.close()


# Postgres only ------------------------------------------------------------------------------


async def test_large_index_path_uses_hnsw_and_finds_the_same_chunks(
    pg_link: PgLink, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dexter.memory.pg_index as pg_index

    tag = uuid.uuid4().hex[:8]
    crowd = pg_index.PgMemoryIndex(pg_link, f"crowd-{tag}", FakeEmbedder())
    crowd.files.write("MEMORY.md", DAILY.replace("# 2025-03-08", "# crowd") * 3)
    await crowd.sync()
    memory = pg_index.PgMemoryIndex(pg_link, f"alice-{tag}", FakeEmbedder())
    memory.files.write("MEMORY.md", NOTES)
    exact = await memory.search("nvidia position size", limit=3)
    monkeypatch.setattr(pg_index, "EXACT_CHUNKS", 0)
    monkeypatch.setattr(pg_index, "FIRST_STAGE_CHUNKS", 2)
    staged = await memory.search("nvidia position size", limit=3)
    assert _places(staged)[:1] == _places(exact)[:1]
    with pg_link.use() as conn:
        names = {r["indexname"] for r in conn.execute("SELECT indexname FROM pg_indexes")}
    assert "memory_chunks_hnsw_256" in names


def test_two_workers_appending_at_once_both_land(pg_url: str) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from dexter.memory.pg_documents import PgMemoryDocuments

    principal = f"shared-{uuid.uuid4().hex[:8]}"
    links = [PgLink(pg_url), PgLink(pg_url)]  # two connections, as two machines would have
    try:
        workers = [PgMemoryDocuments(link, principal) for link in links]

        def write(worker: int) -> None:
            for i in range(15):
                workers[worker].append("2025-03-08.md", f"worker {worker} entry {i}")

        with ThreadPoolExecutor(2) as pool:
            list(pool.map(write, [0, 1]))
        lines = workers[0].read("2025-03-08.md").split("\n\n")
        assert sorted(line.strip() for line in lines) == sorted(
            f"- worker {w} entry {i}" for w in (0, 1) for i in range(15)
        )
    finally:
        for link in links:
            link.close()


async def test_a_home_s_memory_files_copy_into_the_team_database(
    pg_link: PgLink, tmp_path: Path
) -> None:
    from dexter.memory.files import MemoryFiles
    from dexter.memory.pg_documents import copy_files_into
    from dexter.memory.pg_index import PgMemoryIndex

    files = MemoryFiles(tmp_path)
    files.write("MEMORY.md", NOTES)
    files.write("2025-03-08.md", DAILY)
    team = PgMemoryIndex(pg_link, f"moved-{uuid.uuid4().hex[:8]}", None)
    assert copy_files_into(files, team.files) == ["2025-03-08.md", "MEMORY.md"]
    assert team.files.read("MEMORY.md") == NOTES
    assert [h.path for h in await team.search("Costco transcript", limit=1)] == ["2025-03-08.md"]


async def test_migrations_apply_once(postgres_url: str) -> None:
    from dexter.memory.pg_migrations import MEMORY_PG_MIGRATIONS, apply_memory_migrations
    from dexter.store.pg import connect

    with connect(postgres_url) as conn:
        assert apply_memory_migrations(conn) == [m.number for m in MEMORY_PG_MIGRATIONS]
        assert apply_memory_migrations(conn) == []
        rows = conn.execute("SELECT number FROM _memory_migrations").fetchall()
    assert [r["number"] for r in rows] == [m.number for m in MEMORY_PG_MIGRATIONS]


# team mode through the front doors ----------------------------------------------------------


def test_memory_commands_use_the_team_database(
    postgres_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import argparse
    import json

    from dexter.cli.memory_command import add_memory_parser

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DEXTER_EMBEDDINGS", "none")
    monkeypatch.setenv("DEXTER_DATABASE_URL", postgres_url)

    def run(*argv: str) -> int:
        parser = argparse.ArgumentParser(prog="dexter")
        add_memory_parser(parser.add_subparsers(dest="command"))
        args = parser.parse_args(["memory", *argv])
        return int(args.memory_run(args))

    assert run("search", "NVDA") == 0
    assert "No memories match 'NVDA' (no memory files yet" in capsys.readouterr().out
    assert run("add", "I hold 200 NVDA at $410") == 0
    assert capsys.readouterr().out.strip() == "Remembered in MEMORY.md: I hold 200 NVDA at $410"
    assert not (tmp_path / "home" / "memory").exists()  # the database holds it, not the home
    assert run("search", "--json", "NVDA", "position") == 0
    found = json.loads(capsys.readouterr().out)
    assert [r["path"] for r in found["results"]] == ["MEMORY.md"]
    assert run("index", "--force", "--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["sync"]["files_indexed"] == 1 and report["stats"]["chunks"] == 1
    assert "operator" in report["stats"]["db_path"]
    assert "password" not in report["stats"]["db_path"]


async def test_runtime_gives_each_principal_its_rows_over_one_connection(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dexter.cli.open_runtime import open_runtime
    from dexter.config import load_settings
    from dexter.memory.pg_index import PgMemoryIndex
    from dexter.principal import Principal

    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DEXTER_EMBEDDINGS", "none")
    monkeypatch.setenv("DEXTER_DATABASE_URL", pg_url)
    runtime = open_runtime(load_settings())
    tag = uuid.uuid4().hex[:8]
    try:
        carol = runtime.memory_for(Principal(f"telegram:{tag}1", "user", "carol"))
        dave = runtime.memory_for(Principal(f"telegram:{tag}2", "user", "dave"))
        assert isinstance(carol, PgMemoryIndex) and isinstance(dave, PgMemoryIndex)
        assert carol.link is dave.link
        carol.files.append("MEMORY.md", "Carol keeps 30% in T-bills.")
        assert dave.files.list() == []
        assert [h.path for h in await carol.search("T-bills")] == ["MEMORY.md"]
        assert await dave.search("T-bills") == []
    finally:
        runtime.close_local()


def test_db_migrate_and_copy_bring_memory_into_the_team_database(
    postgres_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from dexter.cli.main import main
    from dexter.memory.files import MemoryFiles
    from dexter.memory.pg_documents import PgMemoryDocuments
    from dexter.principal import Principal
    from dexter.store import open_store
    from dexter.store.principals import PrincipalStore

    home = tmp_path / "home"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEXTER_HOME", str(home))
    MemoryFiles(home).write("MEMORY.md", NOTES)
    erin = Principal("telegram:555", "user", "erin")
    with open_store(home) as store:
        PrincipalStore(store).touch(erin)
    MemoryFiles(erin.home(home)).write("2025-03-08.md", DAILY)

    assert main(["db", "copy", "--from", f"sqlite:{home}", "--to", postgres_url]) == 0
    out = capsys.readouterr().out
    assert "memory of operator        1 files" in out and "memory of telegram:555" in out
    link = PgLink(postgres_url)
    try:
        assert PgMemoryDocuments(link, "operator").read("MEMORY.md") == NOTES
        assert PgMemoryDocuments(link, "telegram:555").list() == ["2025-03-08.md"]
    finally:
        link.close()
    monkeypatch.setenv("DEXTER_DATABASE_URL", postgres_url)
    assert main(["db", "migrate"]) == 0
    assert "Memory schema version 1 (up to date)" in capsys.readouterr().out
    # Forgetting a principal in team mode forgets its memory rows too.
    assert main(["principals", "rm", "telegram:555", "--yes"]) == 0
    assert "1 memory document" in capsys.readouterr().out
    link = PgLink(postgres_url)
    try:
        assert PgMemoryDocuments(link, "telegram:555").list() == []
        assert PgMemoryDocuments(link, "operator").list() == ["MEMORY.md"]
    finally:
        link.close()
