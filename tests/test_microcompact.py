from __future__ import annotations

from pathlib import Path
from typing import Any

from dexter.agent.context.microcompact import MARKER_PREFIX, is_marker, microcompact
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
        body = f"round {i} revenue {i * 1000}\n" * (size // 20)
        messages.append(ToolMessage(call_id, "get_financials", body))
    return messages, calls


def test_keeps_recent_and_marks_older_with_tool_args_and_path(tmp_path: Path) -> None:
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
    assert first.startswith(MARKER_PREFIX)
    assert 'get_financials(ticker="AAPL", year=2020)' in first
    assert str(store.path("call_0")) in first
    assert 'read_tool_result(call_id="call_0")' in first
    assert f"{len(originals['call_0']):,} characters" in first
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
    assert is_marker(f'{MARKER_PREFIX}: call_id="c1", 1,234 characters from t(). …]')
