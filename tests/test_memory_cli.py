"""`dexter memory search|add|index|stats`, through the real argument parser."""

from __future__ import annotations

import argparse
import json
from datetime import date
from pathlib import Path

import pytest

from dexter.cli.memory_command import add_memory_parser, run_memory_command
from dexter.memory.embeddings import LocalEmbedder


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="dexter")
    add_memory_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


def run(argv: list[str]) -> int:
    args = parse(argv)
    assert args.memory_run is run_memory_command
    return int(args.memory_run(args))


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEXTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DEXTER_EMBEDDINGS", "none")  # keyword-only: fast, no model load
    return tmp_path / "home"


@pytest.fixture
def local(monkeypatch: pytest.MonkeyPatch, home: Path) -> Path:
    try:
        LocalEmbedder().load()
    except Exception as exc:
        pytest.skip(f"local embedding model unavailable: {exc}")
    monkeypatch.delenv("DEXTER_EMBEDDINGS")
    return home


def test_add_then_search(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["memory", "add", "I hold 200 NVDA at $410"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == "Remembered in MEMORY.md: I hold 200 NVDA at $410"
    assert "keyword-only: embeddings are turned off" in err
    assert (home / "memory" / "MEMORY.md").read_text() == "- I hold 200 NVDA at $410\n"

    assert run(["memory", "search", "nvidia", "position"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0].startswith("1. MEMORY.md:1-1  long-term  score ")
    assert "   - I hold 200 NVDA at $410" in out
    assert "keyword-only" in err

    assert run(["memory", "search", "--limit", "3", "tesla"]) == 0
    out, _ = capsys.readouterr()
    assert out.startswith("No memories match 'tesla' (1 memory files, keyword-only search)")


def test_add_daily_duplicate_and_refusal(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["memory", "add", "--daily", "Decided", "to", "trim", "NVDA"]) == 0
    today = f"{date.today().isoformat()}.md"
    assert f"Remembered in {today}: Decided to trim NVDA" in capsys.readouterr().out
    assert run(["memory", "add", "--daily", "decided to trim NVDA."]) == 0
    assert "Already remembered (identical)" in capsys.readouterr().out

    dump = "AAPL price 231.20, MSFT price 415.30, NVDA quote 132.10, GOOGL 170.22"
    assert run(["memory", "add", dump]) == 2
    _, err = capsys.readouterr()
    assert "market data" in err and "edit" in err
    assert not (home / "memory" / "MEMORY.md").exists()

    assert run(["memory", "add", "--json", dump]) == 2
    data = json.loads(capsys.readouterr().out)
    assert data["written"] is False and "market data" in data["error"]


def test_search_json(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    memory = home / "memory"
    memory.mkdir(parents=True)
    (memory / "2026-01-05.md").write_text("# 2026-01-05\n\n- Sold 40 TSLA at $390.\n")
    assert run(["memory", "search", "--json", "TSLA sale"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["mode"] == "keyword-only" and data["query"] == "TSLA sale"
    (hit,) = data["results"]
    assert hit["path"] == "2026-01-05.md" and hit["date"] == "2026-01-05"
    assert (hit["start_line"], hit["end_line"]) == (1, 3)
    assert "Sold 40 TSLA" in hit["text"] and hit["vector_score"] is None


def test_index_and_stats(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    memory = home / "memory"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text("- Prefers dividend growers.\n")
    (memory / "2026-01-05.md").write_text("- Sold 40 TSLA.\n")
    (memory / "notes.txt").write_text("not a memory file\n")

    assert run(["memory", "stats"]) == 0
    out = capsys.readouterr().out
    assert "Memory files: 2 on disk, 0 indexed" in out
    assert "The index is behind the files" in out

    assert run(["memory", "index"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        "Indexed 2 changed files (2 chunks added, 0 removed, 0 embedded (0 entries)"
    )
    assert "Memory files: 2 on disk, 2 indexed" in out
    assert "Vectors:      none — keyword-only" in out

    assert run(["memory", "index", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["sync"]["files_indexed"] == 0  # nothing changed since
    assert data["sync"]["passages_embedded"] == 0
    assert data["stats"]["chunks"] == 2 and data["stats"]["keyword_only"] is True

    assert run(["memory", "stats", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["files"] == 2 and data["files_on_disk"] == 2
    assert data["db_path"].endswith("index.db")


def test_limit_must_be_positive(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["memory", "search", "--limit", "0", "x"]) == 2
    assert "--limit" in capsys.readouterr().err


def test_local_embeddings_find_a_paraphrase(
    local: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["memory", "add", "Excludes tobacco and weapons makers from the portfolio."]) == 0
    assert run(["memory", "add", "Lives in California."]) == 0
    capsys.readouterr()
    assert run(["memory", "index"]) == 0
    out, err = capsys.readouterr()
    assert "local MiniLM" in out and "keyword-only" not in err
    assert run(["memory", "search", "--json", "which industries am I unwilling to own"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["mode"] == "hybrid"
    assert data["results"] and "tobacco" in data["results"][0]["text"]
    assert data["results"][0]["vector_score"] > 0
