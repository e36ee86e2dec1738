"""The token ledger and the price table."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from dexter.config import ConfigError, load_settings
from dexter.models.types import Usage
from dexter.store import Ledger, Price, Store, open_store, overrides_from_settings, price_for
from dexter.store.prices import parse_overrides


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return open_store(tmp_path / "home")


def test_totals_equal_the_sum_of_recorded_usages(store: Store) -> None:
    ledger = Ledger(store)
    usages = [Usage(1000, 200, 300, 50), Usage(4000, 100, 0, 0), Usage(10, 5)]
    ledger.record_model_call("s1", "r1", "openai", "gpt-4.1", "main", usages[0])
    ledger.record_model_call("s1", "r1", "openai", "gpt-4.1-mini", "router", usages[1], tool="x")
    ledger.record_model_call("s1", "r2", "anthropic", "claude-haiku-4-5", "compaction", usages[2])
    # A failed call with no usage, and one whose provider reported nothing.
    ledger.record_model_call(
        "s1", "r2", "openai", "gpt-4.1", "main", None, ok=False, error="rate_limit: slow down"
    )
    ledger.record_model_call(
        "s1", "r2", "ollama", "qwen3:8b", "memory", None, estimated_input_tokens=777
    )
    ledger.record_model_call("s2", "r9", "openai", "gpt-4.1", "main", Usage(5, 5))

    totals = ledger.totals("s1")
    expected = usages[0] + usages[1] + usages[2]
    assert totals.usage == expected
    assert totals.calls == 5
    assert totals.failed_calls == 1
    assert totals.estimated_calls == 2
    assert totals.estimated_input_tokens == 777
    assert totals.unpriced_calls == 0
    assert ledger.totals().calls == 6
    assert ledger.totals(run_id="r1").usage == usages[0] + usages[1]
    assert ledger.totals("s1", "r2").calls == 3

    failed = store.query("SELECT ok, error, reported, cost_usd FROM model_calls WHERE ok = 0")
    assert [tuple(row) for row in failed] == [(0, "rate_limit: slow down", 0, 0.0)]

    expected_cost = (
        Price(2.0, 8.0, 0.5).cost(usages[0])
        + Price(0.4, 1.6, 0.1).cost(usages[1])
        + Price(1.0, 5.0, 0.1).cost(usages[2])
    )
    assert totals.cost_usd == pytest.approx(expected_cost)


def test_tool_calls_are_counted(store: Store) -> None:
    ledger = Ledger(store)
    ledger.record_tool_call("s1", "r1", "get_financials", {"ticker": "AAPL"}, duration_ms=12.5)
    ledger.record_tool_call(
        "s1", "r1", "web_search", '{"q": "x"}', ok=False, error="timeout", call_id="c2"
    )
    totals = ledger.totals("s1")
    assert (totals.tool_calls, totals.failed_tool_calls) == (2, 1)
    assert totals.calls == 0 and totals.cost_usd is None
    row = store.query("SELECT args_json FROM tool_calls WHERE tool = 'get_financials'")[0]
    assert row[0] == '{"ticker": "AAPL"}'


def test_report_grouping(store: Store) -> None:
    ledger = Ledger(store)
    day1 = datetime(2025, 3, 1, 12, tzinfo=UTC)
    day2 = datetime(2025, 3, 2, 9, tzinfo=UTC)
    ledger.record_model_call("s1", "r1", "openai", "gpt-4.1", "main", Usage(100, 10), at=day1)
    ledger.record_model_call("s1", "r1", "openai", "gpt-4.1", "main", Usage(200, 20), at=day2)
    ledger.record_model_call(
        "s1", "r1", "openai", "gpt-4.1-mini", "router", Usage(50, 5), tool="get_financials", at=day2
    )
    ledger.record_model_call("s2", "r2", "acme", "mystery-1", "judge", Usage(7, 3), at=day2)
    ledger.record_tool_call("s1", "r1", "get_financials", {}, at=day1)

    by_model = {row.key: row for row in ledger.report("model")}
    assert by_model["openai:gpt-4.1"].calls == 2
    assert by_model["openai:gpt-4.1"].input_tokens == 300
    assert by_model["acme:mystery-1"].cost_usd is None
    assert by_model["acme:mystery-1"].unpriced_calls == 1
    assert ledger.report("model")[0].key == "openai:gpt-4.1"  # biggest first

    by_phase = {row.key: row.usage for row in ledger.report("phase")}
    assert by_phase == {"main": Usage(300, 30), "router": Usage(50, 5), "judge": Usage(7, 3)}

    by_day = ledger.report("day")
    assert [row.key for row in by_day] == ["2025-03-01", "2025-03-02"]
    assert [row.calls for row in by_day] == [1, 3]
    assert [row.tool_calls for row in by_day] == [1, 0]

    by_tool = {row.key: row for row in ledger.report("tool", session_id="s1")}
    assert by_tool["get_financials"].input_tokens == 50
    assert by_tool["get_financials"].tool_calls == 1
    assert by_tool["(model)"].calls == 2

    by_session = {row.key: row.calls for row in ledger.report("session")}
    assert by_session == {"s1": 3, "s2": 1}
    # Rows always add up to the totals.
    assert sum(row.input_tokens for row in ledger.report("phase")) == ledger.totals().input_tokens


def test_prices_from_table_prefix_and_unknown() -> None:
    assert price_for("openai", "gpt-4o") == Price(2.5, 10.0, 1.25)
    assert price_for("openai", "gpt-4o-mini-2024-07-18") == Price(0.15, 0.6, 0.075)
    assert price_for("anthropic", "claude-haiku-4-5-20251001") == Price(1.0, 5.0, 0.1)
    assert price_for("openrouter", "anthropic/claude-sonnet-4-6") == Price(3.0, 15.0, 0.3)
    assert price_for("ollama", "llama3.3:70b") == Price(0.0, 0.0, 0.0)
    for provider, model in (("openai", "gpt-9"), ("acme", "gpt-4o"), ("openrouter", "x/y")):
        assert price_for(provider, model) is None


def test_cost_uses_cached_rate_for_cache_hits() -> None:
    price = Price(input=2.0, output=8.0, cached=0.5)
    usage = Usage(input_tokens=1_000_000, output_tokens=500_000, cached_tokens=400_000)
    assert price.cost(usage) == pytest.approx(0.6 * 2.0 + 0.4 * 0.5 + 0.5 * 8.0)


def test_price_overrides_from_settings(tmp_path: Path, store: Store) -> None:
    home = tmp_path / "settings-home"
    home.mkdir()
    (home / "settings.json").write_text(
        '{"prices": {"openai:gpt-4.1": {"input": 1, "output": 2, "cached": 0.5},'
        ' "acme:mystery": {"input": 10, "output": 20}}}'
    )
    settings = load_settings(cwd=tmp_path, environ={"DEXTER_HOME": str(home)})
    overrides = overrides_from_settings(settings)
    assert price_for("openai", "gpt-4.1", overrides) == Price(1.0, 2.0, 0.5)
    assert price_for("acme", "mystery-large", overrides) == Price(10.0, 20.0, 10.0)
    assert price_for("openai", "gpt-4o", overrides) == Price(2.5, 10.0, 1.25)

    ledger = Ledger(store, overrides)
    ledger.record_model_call(None, None, "acme", "mystery", "main", Usage(1_000_000, 0))
    ledger.record_model_call(None, None, "acme", "unpriced", "main", Usage(1_000_000, 0))
    totals = ledger.totals()
    assert totals.cost_usd == pytest.approx(10.0)
    assert totals.unpriced_calls == 1


def test_estimated_only_call_costs_its_estimate(store: Store) -> None:
    ledger = Ledger(store)
    ledger.record_model_call(
        "s", "r", "openai", "gpt-4.1", "main", None, estimated_input_tokens=500_000
    )
    assert ledger.totals().cost_usd == pytest.approx(1.0)
    assert ledger.totals().input_tokens == 0


@pytest.mark.parametrize(
    "raw",
    [
        [],
        {"gpt-4.1": {"input": 1, "output": 1}},
        {"openai:gpt-4.1": 3},
        {"openai:gpt-4.1": {"input": 1}},
        {"openai:gpt-4.1": {"input": -1, "output": 1}},
        {"openai:gpt-4.1": {"input": True, "output": 1}},
    ],
)
def test_bad_price_overrides_are_config_errors(raw: object) -> None:
    with pytest.raises(ConfigError):
        parse_overrides(raw)


def test_estimated_usage_is_kept_apart_from_reported_usage_and_costed(store: Store) -> None:
    # A server that reports no usage (llama.cpp): the wire client's estimate, flagged.
    ledger = Ledger(store)
    ledger.record_model_call(
        "s", "r", "openai", "gpt-4.1", "main", Usage(2000, 100, estimated=True)
    )
    ledger.record_model_call("s", "r", "openai", "gpt-4.1", "main", Usage(1000, 50))
    totals = ledger.totals()
    assert totals.usage == Usage(1000, 50)  # what servers reported
    assert (totals.estimated_input_tokens, totals.estimated_output_tokens) == (2000, 100)
    assert totals.counted == Usage(3000, 150, estimated=True)
    assert totals.estimated_calls == 1
    assert totals.cost_usd == pytest.approx(Price(2.0, 8.0, 0.5).cost(Usage(3000, 150)))
    (row,) = ledger.report("model")
    assert row.counted.estimated and row.estimated_output_tokens == 100
