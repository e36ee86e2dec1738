"""The agent side of memory: the three tools, the system-prompt section and the flush."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from dexter.memory.chunking import estimate_tokens
from dexter.memory.context import MEMORY_HEADING, memory_prompt
from dexter.memory.embeddings import Embedder, LocalEmbedder
from dexter.memory.files import MemoryFiles
from dexter.memory.flush import NOTED_HEADING, flush_memories, parse_facts
from dexter.memory.index import MemoryIndex
from dexter.memory.tools import (
    MemoryGetArgs,
    MemoryGetTool,
    MemorySearchArgs,
    MemorySearchTool,
    MemoryUpdateArgs,
    MemoryUpdateTool,
    entry_problem,
    expand_query,
    memory_tools,
)
from dexter.models.errors import ErrorKind, ModelError
from dexter.models.scripted import ScriptedModel, text
from dexter.tools.base import ToolContext, ToolFailure

TODAY = date(2026, 3, 9)


def _today() -> date:
    return TODAY


@pytest.fixture(scope="module")
def local_embedder() -> Embedder:
    embedder = LocalEmbedder()
    try:
        embedder.load()
    except Exception as exc:  # the packaged model is missing or broken on this machine
        pytest.skip(f"local embedding model unavailable: {exc}")
    return embedder


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / ".dexter"


@pytest.fixture
def files(home: Path) -> MemoryFiles:
    return MemoryFiles(home)


@pytest.fixture
def keyword_index(home: Path) -> Iterator[MemoryIndex]:
    index = MemoryIndex(home, None)
    yield index
    index.close()


class Tools:
    def __init__(self, index: MemoryIndex, files: MemoryFiles) -> None:
        search, get, update = memory_tools(index, files, today=_today)
        assert isinstance(search, MemorySearchTool)
        assert isinstance(get, MemoryGetTool)
        assert isinstance(update, MemoryUpdateTool)
        self.search_tool, self.get_tool, self.update_tool = search, get, update
        self.ctx = ToolContext(home=files.home)

    async def search(self, query: str, **kw: object) -> str:
        result = await self.search_tool.run(MemorySearchArgs(query=query, **kw), self.ctx)
        return result.content

    async def get(self, file: str, **kw: object) -> str:
        result = await self.get_tool.run(MemoryGetArgs(file=file, **kw), self.ctx)
        return result.content

    async def update(self, **kw: object) -> str:
        result = await self.update_tool.run(MemoryUpdateArgs(**kw), self.ctx)  # type: ignore[arg-type]
        return result.content


# ---- memory_update then memory_search ------------------------------------------------------


async def test_remembered_holding_is_recalled_in_a_later_session(
    home: Path, files: MemoryFiles, local_embedder: Embedder
) -> None:
    files.write(
        "MEMORY.md",
        "# About the user\n\n- Prefers conservative DCF assumptions.\n- Lives in California.\n",
    )
    files.write("2026-03-02.md", "# 2026-03-02\n\n- Read the Costco 10-K.\n")
    first = MemoryIndex(home, local_embedder)
    out = await Tools(first, files).update(content="I hold 200 NVDA at $410")
    assert "Remembered in MEMORY.md" in out
    first.close()

    later = MemoryIndex(home, local_embedder)  # a new session: a fresh index object
    tools = Tools(later, files)
    result = await tools.search_tool.run(
        MemorySearchArgs(query="what's my nvidia position"), tools.ctx
    )
    assert "I hold 200 NVDA at $410" in result.content
    assert "MEMORY.md:" in result.content
    top = result.data["results"][0]
    assert top["path"] == "MEMORY.md" and "200 NVDA" in top["text"]
    label = f"memory MEMORY.md:{top['start_line']}-{top['end_line']}"
    assert tools.ctx.sources.entries()[0].label == label
    assert f"[{top['source']}]" in result.content
    later.close()


async def test_search_is_found_at_once_after_a_write(
    files: MemoryFiles, keyword_index: MemoryIndex
) -> None:
    tools = Tools(keyword_index, files)
    assert "No memories match" in await tools.search("TSLA")
    await tools.update(content="Sold all my TSLA shares; not buying back.", file="daily")
    found = await tools.search("TSLA shares")
    assert "2026-03-09.md:" in found and "Sold all my TSLA" in found
    assert "keyword-only" in found


async def test_hand_edits_and_deletes_are_reflected_at_once(
    files: MemoryFiles, keyword_index: MemoryIndex
) -> None:
    files.write("MEMORY.md", "# Me\n\n- Holds 50 shares of Costco.\n- Banks with Chase.\n")
    tools = Tools(keyword_index, files)
    assert "Costco" in await tools.search("Costco shares")

    path = files.path("MEMORY.md")
    path.write_text("# Me\n\n- Holds 80 shares of Walmart.\n- Banks with Chase.\n", "utf-8")
    assert "No memories match" in await tools.search("Costco")
    assert "80 shares of Walmart" in await tools.search("Walmart")

    path.write_text("# Me\n\n- Banks with Chase.\n", "utf-8")
    assert "No memories match" in await tools.search("Walmart")


async def test_edit_and_delete_through_the_tool(
    files: MemoryFiles, keyword_index: MemoryIndex
) -> None:
    tools = Tools(keyword_index, files)
    await tools.update(content="Holds 120 AMZN at $185.")
    out = await tools.update(
        action="edit", old_text="Holds 120 AMZN at $185.", content="Holds 150 AMZN at $190."
    )
    assert "Edited MEMORY.md" in out
    assert files.read("MEMORY.md") == "- Holds 150 AMZN at $190.\n"  # bullet kept
    assert "150 AMZN" in await tools.search("AMZN")

    with pytest.raises(ToolFailure, match="memory_get"):
        await tools.update(action="delete", old_text="Holds 999 AMZN")
    await tools.update(action="delete", old_text="- Holds 150 AMZN at $190.")
    assert files.read("MEMORY.md").strip() == ""
    assert "No memories match" in await tools.search("AMZN")

    with pytest.raises(ToolFailure, match="old_text"):
        await tools.update(action="edit", content="x")


# ---- discipline ----------------------------------------------------------------------------


async def test_identical_entry_is_not_added_twice(
    files: MemoryFiles, keyword_index: MemoryIndex
) -> None:
    tools = Tools(keyword_index, files)
    await tools.update(content="I hold 200 NVDA at $410")
    before = files.read("MEMORY.md")
    out = await tools.update(content="- i hold 200 NVDA at $410.")
    assert "Already remembered" in out and "MEMORY.md line 1" in out
    assert files.read("MEMORY.md") == before
    # A daily note is checked against MEMORY.md too.
    out = await tools.update(content="I hold 200 NVDA at $410", file="daily")
    assert "Already remembered" in out
    assert files.read("2026-03-09.md") == ""
    # New figures are news, not a duplicate.
    assert "Remembered" in await tools.update(content="I hold 300 NVDA at $410")
    assert "300 NVDA" in files.read("MEMORY.md")


async def test_near_identical_entry_is_reported(
    home: Path, files: MemoryFiles, local_embedder: Embedder
) -> None:
    index = MemoryIndex(home, local_embedder)
    tools = Tools(index, files)
    await tools.update(content="I prefer conservative DCF assumptions")
    out = await tools.update(content="Prefers conservative DCF assumptions.")
    assert "Already remembered (near-identical)" in out
    assert files.read("MEMORY.md").count("DCF") == 1
    index.close()


async def test_price_dumps_and_long_entries_are_refused(
    files: MemoryFiles, keyword_index: MemoryIndex
) -> None:
    tools = Tools(keyword_index, files)
    dump = (
        "AAPL price 231.20 (+1.2%), MSFT price 415.30 (-0.4%), NVDA quote 132.10 (+2.2%), "
        "GOOGL 170.22, volume 54M"
    )
    with pytest.raises(ToolFailure, match="preferences, decisions, holdings"):
        await tools.update(content=dump)
    table = "| Ticker | Close |\n|---|---|\n| AAPL | 231.20 |\n| MSFT | 415.30 |"
    with pytest.raises(ToolFailure, match="market data"):
        await tools.update(content=table)
    with pytest.raises(ToolFailure, match="under 500"):
        await tools.update(content="I like value investing. " * 30)
    assert not files.path("MEMORY.md").exists()
    # Holdings with prices are fine.
    assert entry_problem("Bought 25 COST at $1,012.40 on 2025-05-20, target price $1,200") is None
    assert entry_problem("I hold 200 NVDA at $410") is None


# ---- memory_get ----------------------------------------------------------------------------


async def test_memory_get_reads_exact_line_ranges(
    files: MemoryFiles, keyword_index: MemoryIndex
) -> None:
    files.write("MEMORY.md", "# Me\n\n- one\n  - indented two\n- three\n")
    tools = Tools(keyword_index, files)
    assert await tools.get("long_term") == (
        "MEMORY.md lines 1-5 of 5:\n# Me\n\n- one\n  - indented two\n- three"
    )
    assert await tools.get("MEMORY.md", start_line=3, end_line=4) == (
        "MEMORY.md lines 3-4 of 5:\n- one\n  - indented two"
    )
    assert (await tools.get("MEMORY.md", start_line=5, end_line=99)).endswith("\n- three")
    with pytest.raises(ToolFailure, match="only 5 lines"):
        await tools.get("MEMORY.md", start_line=9)
    with pytest.raises(ToolFailure, match="before start_line"):
        await tools.get("MEMORY.md", start_line=4, end_line=2)
    with pytest.raises(ToolFailure, match="not a memory file"):
        await tools.get("../settings.json")
    with pytest.raises(ToolFailure, match="does not exist"):
        await tools.get("daily")
    files.write("2026-03-09.md", "# today\n")
    assert (await tools.get("today")).startswith("2026-03-09.md lines 1-1 of 1:")
    assert (await tools.get("2026-03-09")).endswith("# today")


async def test_search_arguments(files: MemoryFiles, keyword_index: MemoryIndex) -> None:
    with pytest.raises(ValidationError):
        MemorySearchArgs(query="x", limit=11)
    files.write("2026-01-05.md", "- Bought 10 TSLA in January.\n")
    files.write("2026-03-01.md", "- Bought 10 TSLA in March.\n")
    tools = Tools(keyword_index, files)
    out = await tools.search("TSLA", since="2026-02-01")
    assert "March" in out and "January" not in out
    out = await tools.search("TSLA", until="2026-02-01")
    assert "January" in out and "March" not in out
    with pytest.raises(ToolFailure, match="since"):
        await tools.search("TSLA", since="2026-03-01", until="2026-01-01")


def test_query_expansion_links_names_and_tickers() -> None:
    assert expand_query("what's my nvidia position") == "what's my nvidia position (NVDA)"
    assert expand_query("NVDA thesis") == "NVDA thesis (nvidia)"
    assert expand_query("cost of living") == "cost of living"
    assert expand_query("Apple vs AAPL") == "Apple vs AAPL"


def test_tool_specs_are_provider_safe(files: MemoryFiles, keyword_index: MemoryIndex) -> None:
    specs = {t.name: t for t in memory_tools(keyword_index, files)}
    assert list(specs) == ["memory_search", "memory_get", "memory_update"]
    assert specs["memory_search"].concurrency_safe
    assert not specs["memory_update"].needs_approval
    params = specs["memory_update"].spec().parameters
    assert params["additionalProperties"] is False
    assert set(params["properties"]) == {"action", "content", "file", "old_text"}


# ---- memory_prompt -------------------------------------------------------------------------


async def test_memory_prompt_is_none_without_memories(files: MemoryFiles) -> None:
    assert await memory_prompt(files, None, today=TODAY) is None
    files.write("MEMORY.md", "\n\n")
    assert await memory_prompt(files, None, today=TODAY) is None


async def test_memory_prompt_loads_long_term_today_and_yesterday(
    files: MemoryFiles, keyword_index: MemoryIndex
) -> None:
    files.write("MEMORY.md", "- Prefers conservative DCF assumptions.\n")
    files.write("2026-03-09.md", "- Decided to trim NVDA.\n")
    files.write("2026-03-08.md", "- Asked about Costco margins.\n")
    files.write("2026-03-01.md", "- A note from last week.\n")
    prompt = await memory_prompt(files, keyword_index, today=TODAY)
    assert prompt is not None
    assert prompt.startswith(MEMORY_HEADING)
    order = [prompt.index(s) for s in ("conservative DCF", "trim NVDA", "Costco margins")]
    assert order == sorted(order)  # MEMORY.md, then today, then yesterday
    assert "### 2026-03-09.md (today's note)" in prompt
    assert "last week" not in prompt
    assert "memory_search" in prompt and "memory_update" in prompt
    assert "keyword-only" in prompt


async def test_memory_prompt_stays_within_budget(files: MemoryFiles) -> None:
    files.write("MEMORY.md", "".join(f"- Evergreen fact number {i}.\n" for i in range(400)))
    files.write("2026-03-09.md", "".join(f"- Today's entry {i}.\n" for i in range(300)))
    yesterday = files.daily_name(TODAY - timedelta(days=1))
    files.write(yesterday, "- Only one line yesterday.\n")
    for budget in (300, 800, 2000):
        prompt = await memory_prompt(files, None, max_tokens=budget, today=TODAY)
        assert prompt is not None
        assert estimate_tokens(prompt) <= budget
        assert "Evergreen fact number 0." in prompt  # MEMORY.md keeps its first lines
        assert "Today's entry 299." in prompt  # a daily note keeps its newest lines
        assert "Only one line yesterday." in prompt  # a short file is kept whole
        assert "lines omitted; memory_get file MEMORY.md" in prompt
    small = await memory_prompt(files, None, max_tokens=10, today=TODAY)
    assert small is None


# ---- flush ---------------------------------------------------------------------------------


def test_parse_facts_tolerates_fences_and_garbage() -> None:
    assert parse_facts('```json\n["Holds 200 NVDA.", " ", 3]\n```') == ["Holds 200 NVDA."]
    assert parse_facts('Here you go: ["a fact"] hope it helps') == ["a fact"]
    assert parse_facts("[]") == []
    assert parse_facts("nothing") == []
    assert parse_facts('["unterminated') == []
    assert parse_facts('{"facts": ["x"]}') == ["x"]  # a wrapped list is still a list
    assert parse_facts('{"a": 1}') == []


async def test_flush_writes_only_accepted_facts(files: MemoryFiles) -> None:
    files.write("MEMORY.md", "- Prefers conservative DCF assumptions.\n")
    reply = json.dumps(
        [
            "Holds 200 NVDA at an average cost of $410.",
            "Prefers conservative DCF assumptions.",  # already in MEMORY.md
            "AAPL closed at $231.20, MSFT at $415.30, NVDA at $132.10, up 1.2% on volume.",
            "Wants to retire by 55.",
            "Wants to retire by 55.",
        ]
    )
    model = ScriptedModel([text(reply)])
    written = await flush_memories(
        model,
        user_messages=["I hold 200 NVDA at $410, should I trim?", "I want to retire by 55"],
        findings="NVDA trades at 35x forward earnings.",
        files=files,
        today=TODAY,
    )
    assert written == ["Holds 200 NVDA at an average cost of $410.", "Wants to retire by 55."]
    assert files.read("2026-03-09.md") == (
        f"{NOTED_HEADING}\n- Holds 200 NVDA at an average cost of $410.\n- Wants to retire by 55.\n"
    )
    request = model.requests[0]
    prompt = request.messages[-1].content
    assert "1. I hold 200 NVDA at $410, should I trim?" in prompt
    assert "35x forward earnings" in prompt

    # A second flush the same day extends the same section, without repeating facts.
    again = ScriptedModel([text('["Wants to retire by 55.", "Has a Roth IRA at Schwab."]')])
    written = await flush_memories(
        again, user_messages=["my Roth is at Schwab"], findings="", files=files, today=TODAY
    )
    assert written == ["Has a Roth IRA at Schwab."]
    note = files.read("2026-03-09.md")
    assert note.count(NOTED_HEADING) == 1 and note.count("retire by 55") == 1


@pytest.mark.parametrize(
    "reply", ["[]", "nothing", "NO_MEMORY_TO_FLUSH", '["broken', '{"a": 1}', ""]
)
async def test_flush_with_nothing_usable_writes_nothing(files: MemoryFiles, reply: str) -> None:
    model = ScriptedModel([text(reply)])
    written = await flush_memories(
        model, user_messages=["what is AAPL's margin?"], findings="", files=files, today=TODAY
    )
    assert written == []
    assert not files.path("2026-03-09.md").exists()


async def test_flush_survives_a_failed_model_call(files: MemoryFiles) -> None:
    model = ScriptedModel([ModelError(ErrorKind.AUTH, "bad key")])
    assert await flush_memories(model, user_messages=["hi"], findings="", files=files) == []
    assert files.list() == []
    # No user messages: no model call at all.
    idle = ScriptedModel([])
    assert await flush_memories(idle, user_messages=[], findings="x", files=files) == []
    assert idle.calls_made == 0
