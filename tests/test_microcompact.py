from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dexter.agent.context.microcompact import MARKER_PREFIX, figure_lines, is_marker, microcompact
from dexter.agent.context.results import ResultStore, cap_result, stored_reference
from dexter.models.types import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)

READ_ONLY = {"get_financials", "web_fetch"}


def _compactable(name: str) -> bool:
    return name in READ_ONLY


def _session(
    n: int, size: int = 5_000
) -> tuple[list[Message], dict[str, tuple[str, dict[str, Any]]]]:
    messages: list[Message] = [SystemMessage("sys"), UserMessage("Compare AAPL margins")]
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    for i in range(n):
        call_id = f"call_{i}"
        args = {"ticker": "AAPL", "year": 2020 + i}
        calls[call_id] = ("get_financials", args)
        messages.append(AssistantMessage(tool_calls=(ToolCall(call_id, "get_financials", "{}"),)))
        headline = f"AAPL FY{2020 + i} revenue $391,035M, net margin 24.0% [S{i + 1}]\n"
        body = headline + "management commented on the quarter\n" * (size // 36)
        messages.append(ToolMessage(call_id, "get_financials", body))
    return messages, calls


def test_keeps_recent_and_marks_older_with_key_size_and_figures(tmp_path: Path) -> None:
    store = ResultStore(tmp_path, "run")
    messages, calls = _session(7)
    originals = {m.tool_call_id: m.content for m in messages if isinstance(m, ToolMessage)}

    result = microcompact(messages, store=store, calls=calls, compactable=_compactable)

    tools = [m for m in result.messages if isinstance(m, ToolMessage)]
    assert result.cleared == 3
    assert [is_marker(m.content) for m in tools] == [True] * 3 + [False] * 4
    for message in tools[3:]:
        assert message.content == originals[message.tool_call_id]
    first = tools[0].content
    # The key to read it back, the full size and the figure line; nothing else.
    assert first == (
        f"{MARKER_PREFIX} call_0, {len(originals['call_0']):,} chars]\n"
        "AAPL FY2020 revenue $391,035M, net margin 24.0% [S1]"
    )
    assert str(tmp_path) not in first
    for message in tools[:3]:
        assert store.load(message.tool_call_id) == originals[message.tool_call_id]
    assert result.chars_saved == sum(
        len(originals[m.tool_call_id]) - len(m.content) for m in tools[:3]
    )
    # Non-tool messages are the same objects, in the same places.
    assert result.messages[:2] == messages[:2]


def test_second_pass_is_idempotent(tmp_path: Path) -> None:
    store = ResultStore(tmp_path, "run")
    messages, calls = _session(6)
    once = microcompact(messages, store=store, calls=calls, compactable=_compactable)
    twice = microcompact(once.messages, store=store, calls=calls, compactable=_compactable)
    assert twice.cleared == 0 and twice.chars_saved == 0
    assert twice.messages == once.messages


def test_nothing_qualifies_returns_same_contents(tmp_path: Path) -> None:
    store = ResultStore(tmp_path, "run")
    messages, calls = _session(4)
    result = microcompact(messages, store=store, calls=calls, compactable=_compactable)
    assert result.cleared == 0 and result.chars_saved == 0
    assert all(a is b for a, b in zip(result.messages, messages, strict=True))
    assert not store.directory.exists()


def test_non_compactable_and_short_results_untouched(tmp_path: Path) -> None:
    store = ResultStore(tmp_path, "run")
    messages, calls = _session(6)
    write = ToolMessage("w", "write_file", "wrote 9,000 bytes " * 600)
    short = ToolMessage("s", "web_fetch", "404 not found")
    messages[3:3] = [write, short]
    result = microcompact(messages, store=store, calls=calls, compactable=_compactable)
    assert write in result.messages and short in result.messages
    assert result.cleared == 2  # call_0 and call_1; `short` counted among the old but kept


def test_preview_becomes_marker_pointing_at_full_file(tmp_path: Path) -> None:
    store = ResultStore(tmp_path, "run")
    full = "10-K item 7 " * 10_000
    preview = cap_result(ToolMessage("big", "web_fetch", full), store=store, tool_args={"url": "x"})
    messages, calls = _session(4)
    messages.insert(2, preview)
    calls["big"] = ("web_fetch", {"url": "https://sec.gov/x"})
    result = microcompact(messages, store=store, calls=calls, compactable=_compactable)
    marker = result.messages[2]
    assert isinstance(marker, ToolMessage) and is_marker(marker.content)
    ref = stored_reference(marker.content)
    assert ref is not None and ref.key == "big" and ref.chars == len(full)
    assert store.load("big") == full  # the preview never overwrote the full text


def test_marker_detection() -> None:
    assert not is_marker("[Old tool result content cleared]")
    assert not is_marker("plain data")
    assert is_marker(f"{MARKER_PREFIX} c1, 1,234 chars]\nrevenue 1.2B")
    assert not is_marker(f"{MARKER_PREFIX} c1 with no size]")


def test_markers_never_show_the_home_folder_and_keep_the_figures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "ann"
    monkeypatch.setenv("HOME", str(home))
    store = ResultStore(home / ".dexter", "run")
    listing = (
        f"{home}/.dexter/exports/aapl.csv: 1,204 rows, revenue total $1,616.4B [S1]\n"
        f"{home}a/other.csv: 12,000 rows\n"  # another user's folder that merely starts alike
        + "filler line without numbers\n"
        * 200
    )
    messages: list[Message] = [SystemMessage("sys"), UserMessage("q")]
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    for i in range(5):
        calls[f"c{i}"] = ("web_fetch", {"url": f"{home}/x"})
        messages.append(AssistantMessage(tool_calls=(ToolCall(f"c{i}", "web_fetch", "{}"),)))
        messages.append(ToolMessage(f"c{i}", "web_fetch", listing))

    result = microcompact(messages, store=store, calls=calls, compactable=_compactable)

    marker = result.messages[3]
    assert isinstance(marker, ToolMessage) and is_marker(marker.content)
    assert str(home) + "/" not in marker.content
    assert "~/.dexter/exports/aapl.csv: 1,204 rows, revenue total $1,616.4B [S1]" in marker.content
    assert f"{home}a/other.csv: 12,000 rows" in marker.content
    assert len(marker.content) < 250
    assert store.load("c0") == listing  # the full text, paths and all, is on disk


def test_figure_lines_are_figures_not_counters() -> None:
    text = "\n".join(
        [
            "[filings/f07.txt: 30,183 bytes, 182 lines; showing lines 1-182 of 182]",
            "1\tFIGURE-7: revenue 1,007.25 USD bn [S7]",
            "2\tParagraph 0 of filing 7: management discussed demand.",
            "3\t| Revenue   | 391,035 |   383,285 |",
            "4\tGross margin was 46.2%",
            "5\tRevenue   1.2B",
            '6\t{"revenue": 391035000000}',
            "7\tParagraph 12 of filing 7: outlook for each segment.",
            "8\tFIGURE-7: revenue 1,007.25 USD bn [S7]",
        ]
    )
    # Without read_file's line numbers, whitespace collapsed, each distinct line once.
    assert figure_lines(text) == [
        "FIGURE-7: revenue 1,007.25 USD bn [S7]",
        "| Revenue | 391,035 | 383,285 |",
        "Gross margin was 46.2%",
        "Revenue 1.2B",
        '{"revenue": 391035000000}',
    ]
    many = "\n".join(f"segment {i} revenue {i},000.5" for i in range(100))
    kept = figure_lines(many)
    assert kept[0] == "segment 0 revenue 0,000.5" and sum(len(k) + 1 for k in kept) <= 400
