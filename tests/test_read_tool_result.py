from __future__ import annotations

import re
from pathlib import Path

import pytest

from dexter.agent.context.results import ResultStore, cap_result
from dexter.models.types import ToolMessage
from dexter.tools.base import ToolContext, ToolFailure
from dexter.tools.read_tool_result import ReadToolResult, ReadToolResultArgs

_SLICE_HEADER = re.compile(
    r"^\[.*: characters (\d+)–(\d+) of (\d+); (next offset (\d+)|end of result)\]$"
)
_EXCERPT = re.compile(r"^--- characters (\d+)–(\d+) ---$", re.MULTILINE)


def _fixture_text() -> str:
    # Varied lines (with \r\n and non-ASCII) so any off-by-one shows up in the comparison.
    rows = [
        f"FY{2000 + i % 25} segment {i}: revenue €{i * 7919 % 100_000:,} — ok\r\n"
        for i in range(3000)
    ]
    return "".join(rows)[:120_000]


async def _read(tool: ReadToolResult, home: Path, **kwargs: object) -> str:
    args = ReadToolResultArgs.model_validate(kwargs)
    result = await tool.run(args, ToolContext(home=home))
    return result.content


async def test_slices_reassemble_every_byte(tmp_path: Path) -> None:
    full = _fixture_text()
    assert len(full) == 120_000
    store = ResultStore(tmp_path, "run-1")
    preview = cap_result(
        ToolMessage("call_0", "read_filings", full), store=store, tool_args={"ticker": "AAPL"}
    )
    assert 'call_id="call_0"' in preview.content and store.path("call_0").is_file()
    tool = ReadToolResult(run_dir=lambda: store.directory)

    pieces: list[str] = []
    offset: int | None = 0
    while offset is not None:
        out = await _read(tool, tmp_path, call_id="call_0", offset=offset, length=40_000)
        header, _, body = out.partition("\n")
        match = _SLICE_HEADER.match(header)
        assert match, header
        start, end, total = (int(match[i]) for i in (1, 2, 3))
        assert (start, total) == (offset, 120_000) and len(body) == end - start
        assert len(out) < 50_000  # never re-triggers the persistence cap
        pieces.append(body)
        offset = int(match[5]) if match[5] else None
    assert "".join(pieces) == full


async def test_search_returns_exact_excerpts_with_offsets(tmp_path: Path) -> None:
    full = _fixture_text()
    store = ResultStore(tmp_path, "run-1")
    store.save("call_0", "read_filings", {}, full)
    tool = ReadToolResult()  # no run_dir: finds the newest file under home/tool-results

    term = "segment 1234:"
    out = await _read(tool, tmp_path, call_id="call_0", search=term.upper())
    assert "1 match for" in out
    excerpts = list(_EXCERPT.finditer(out))
    assert len(excerpts) == 1
    start, end = int(excerpts[0][1]), int(excerpts[0][2])
    body = out[excerpts[0].end() + 1 : excerpts[0].end() + 1 + end - start]
    assert body == full[start:end]
    assert term in body and full.index(term) in range(start, end)

    # Paging through a frequent term's matches covers every occurrence exactly once.
    seen: list[int] = []
    offset = 0
    while True:
        out = await _read(tool, tmp_path, call_id="call_0", search="FY2007", offset=offset)
        for m in _EXCERPT.finditer(out):
            s, e = int(m[1]), int(m[2])
            assert out[m.end() + 1 : m.end() + 1 + e - s] == full[s:e]
            seen += [i for i in range(s, e) if full.startswith("FY2007", i) and i >= offset]
        more = re.search(r"More matches from offset (\d+)", out)
        if not more:
            break
        offset = int(more[1])
    expected = [m.start() for m in re.finditer("FY2007", full)]
    assert sorted(set(seen)) == expected


async def test_no_match_is_reported(tmp_path: Path) -> None:
    store = ResultStore(tmp_path, "r")
    store.save("c", "t", {}, "alpha\nbeta\n")
    out = await _read(ReadToolResult(), tmp_path, call_id="c", search="gamma")
    assert "no matches" in out


async def test_unknown_call_id_lists_stored_ids(tmp_path: Path) -> None:
    store = ResultStore(tmp_path, "run-1")
    for i in range(3):
        store.save(f"call_{i}", "t", {}, f"result {i}")
    tool = ReadToolResult(run_dir=lambda: store.directory)
    with pytest.raises(ToolFailure) as info:
        await _read(tool, tmp_path, call_id="call_9")
    message = str(info.value)
    assert "call_9" in message
    for i in range(3):
        assert f"call_{i}" in message


async def test_run_dir_scopes_reads_to_one_run(tmp_path: Path) -> None:
    first, second = ResultStore(tmp_path, "run-a"), ResultStore(tmp_path, "run-b")
    first.save("call_0", "t", {}, "from run a")
    second.save("call_0", "t", {}, "from run b")
    out_a = await _read(ReadToolResult(run_dir=lambda: first.directory), tmp_path, call_id="call_0")
    out_b = await _read(
        ReadToolResult(run_dir=lambda: second.directory), tmp_path, call_id="call_0"
    )
    assert out_a.endswith("\nfrom run a") and out_b.endswith("\nfrom run b")


async def test_accepts_file_name_and_rejects_bad_offset(tmp_path: Path) -> None:
    store = ResultStore(tmp_path, "r")
    path = store.save("c1", "t", {}, "0123456789")
    out = await _read(ReadToolResult(), tmp_path, call_id=str(path), offset=4, length=3)
    assert out.endswith("\n456")
    with pytest.raises(ToolFailure, match="past the end"):
        await _read(ReadToolResult(), tmp_path, call_id="c1", offset=11)


def test_length_is_capped_below_persistence_threshold() -> None:
    with pytest.raises(ValueError):
        ReadToolResultArgs(call_id="c", length=40_001)
    assert ReadToolResult().spec().name == "read_tool_result"


async def test_the_key_is_read_as_a_marker_shows_it(tmp_path: Path) -> None:
    """A cleared result's marker reads "[Cleared call_7, 31,579 chars]": a model that copies
    the key with the comma (or quotes) still gets the result."""
    store = ResultStore(tmp_path, "run-1")
    store.save("call_7", "read_file", {}, "FIGURE-7: revenue 1,007.25 USD bn [S7]\n")
    tool = ReadToolResult(run_dir=lambda: store.directory)
    for written in ("call_7,", "`call_7`", '"call_7"', "call_7.txt"):
        out = await _read(tool, tmp_path, call_id=written)
        assert "FIGURE-7: revenue 1,007.25 USD bn [S7]" in out, written
