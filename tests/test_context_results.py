from __future__ import annotations

import json
from pathlib import Path

import pytest

from dexter.agent.context.results import (
    MAX_RESULT_CHARS,
    PREVIEW_CHARS,
    ResultStore,
    apply_turn_budget,
    cap_result,
    is_preview,
    stored_reference,
)
from dexter.models.types import ToolMessage
from dexter.tools.results import ResultNotFound


def _text(n: int, seed: str = "x") -> str:
    line = f"{seed} revenue 391,035 net income 93,736 \r\n"
    return (line * (n // len(line) + 1))[:n]


def _msg(call_id: str, content: str, name: str = "get_financials") -> ToolMessage:
    return ToolMessage(tool_call_id=call_id, name=name, content=content)


def test_large_result_becomes_preview_with_key_and_read_hint_but_no_path(tmp_path: Path) -> None:
    store = ResultStore(tmp_path, "run-1")
    full = _text(120_000)
    capped = cap_result(_msg("call_0", full), store=store, tool_args={"ticker": "AAPL"})

    assert len(capped.content) < 3_000
    assert capped.tool_call_id == "call_0" and capped.name == "get_financials"
    assert not capped.is_error
    path = tmp_path / "tool-results" / "run-1" / "call_0.txt"
    assert str(tmp_path) not in capped.content  # the model needs the key, not where it lives
    assert "120,000 characters" in capped.content
    assert full[:PREVIEW_CHARS] in capped.content
    assert 'read_tool_result(call_id="call_0", offset=2000)' in capped.content
    assert store.load("call_0") == full  # byte-exact, \r\n preserved
    meta = json.loads(path.with_suffix(".json").read_text())
    assert meta["tool"] == "get_financials" and meta["args"] == {"ticker": "AAPL"}
    assert is_preview(capped.content)
    ref = stored_reference(capped.content)
    assert ref is not None and ref.key == "call_0" and ref.chars == 120_000


def test_small_result_and_error_flag(tmp_path: Path) -> None:
    store = ResultStore(tmp_path, "r")
    small = _msg("a", "ok")
    assert cap_result(small, store=store, tool_args={}) is small
    big = ToolMessage("b", "web_fetch", "e" * (MAX_RESULT_CHARS + 1), is_error=True)
    capped = cap_result(big, store=store, tool_args={})
    assert capped.is_error and is_preview(capped.content)
    # Capping the preview again changes nothing and never overwrites the stored text.
    assert cap_result(capped, store=store, tool_args={}) is capped
    assert store.load("b") == big.content


def test_runs_are_scoped_and_same_id_never_overwrites(tmp_path: Path) -> None:
    one, two = ResultStore(tmp_path, "run-a"), ResultStore(tmp_path, "run-b")
    one.save("call_0", "t", {}, "first run")
    two.save("call_0", "t", {}, "second run")
    assert one.load("call_0") == "first run"
    assert two.load("call_0") == "second run"

    # Within one run a provider may reuse call_0 in a later round: new key, old file intact.
    again = one.save("call_0", "t", {}, "later round")
    assert again.stem == "call_0-2"
    assert one.load("call_0") == "first run"
    assert one.load("call_0-2") == "later round"
    # Saving identical content is idempotent.
    assert one.save("call_0", "t", {}, "first run").stem == "call_0"


def test_ids_are_sanitised_and_missing_is_clear(tmp_path: Path) -> None:
    store = ResultStore(tmp_path, "run")
    path = store.save("toolu_01/../../evil:id", "t", {}, "x")
    assert path.parent == store.directory
    assert path.name == "toolu_01_______evil_id.txt"
    assert store.saved("toolu_01/../../evil:id")
    with pytest.raises(ResultNotFound, match="nope"):
        store.load("nope")


def test_turn_budget_persists_largest_first_and_keeps_order(tmp_path: Path) -> None:
    store = ResultStore(tmp_path, "run")
    sizes = [30_000, 45_000, 10_000, 49_000, 40_000, 48_000, 20_000]
    turn = [_msg(f"c{i}", _text(n, seed=str(i))) for i, n in enumerate(sizes)]
    out = apply_turn_budget(
        turn, store=store, args_by_id={"c3": {"ticker": "MSFT"}}, budget=140_000
    )

    assert [m.tool_call_id for m in out] == [m.tool_call_id for m in turn]
    persisted = [m.tool_call_id for m in out if is_preview(m.content)]
    # Total 242k: dropping 49k, 48k and 45k (each leaving a ~2.4k preview) fits under 140k.
    assert sorted(persisted) == ["c1", "c3", "c5"]
    assert sum(len(m.content) for m in out) <= 140_000
    for before, after in zip(turn, out, strict=True):
        if is_preview(after.content):
            assert store.load(before.tool_call_id) == before.content
        else:
            assert after is before
    assert store.info("c3")["args"] == {"ticker": "MSFT"}


def test_turn_budget_never_persists_a_preview_twice(tmp_path: Path) -> None:
    store = ResultStore(tmp_path, "run")
    full = _text(60_000)
    preview = cap_result(_msg("p", full), store=store, tool_args={})
    # Many previews plus a big result, under a budget the previews alone exceed.
    turn = [preview] * 5 + [_msg("big", _text(30_000))]
    out = apply_turn_budget(turn, store=store, args_by_id={}, budget=5_000)
    assert out[:5] == [preview] * 5
    assert is_preview(out[5].content)
    assert store.load("p") == full
    assert sorted(p.stem for p in store.directory.glob("*.txt")) == ["big", "p"]


def test_turn_under_budget_is_unchanged(tmp_path: Path) -> None:
    store = ResultStore(tmp_path, "run")
    turn = [_msg("a", "x" * 100), _msg("b", "y" * 100)]
    assert apply_turn_budget(turn, store=store, args_by_id={}) == turn
    assert not store.directory.exists()
