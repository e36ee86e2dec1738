"""Which tools a run binds: routed meta-tools by default, the data calls directly on request."""

from __future__ import annotations

from pathlib import Path

import pytest

from dexter.cli.open_runtime import open_runtime
from dexter.config import ConfigError, Settings, load_settings
from dexter.runtime import AgentSpec, fast_model_plan
from dexter.tools.finance.routed import RoutedTool

SEC_ONLY = {"OPENAI_API_KEY": "sk-test-123456", "DEXTER_SEC_USER_AGENT": "T t@example.com"}


def names(env: dict[str, str], tmp_path: Path) -> list[str]:
    registry = open_runtime(load_settings(cwd=tmp_path, environ=env)).tools(AgentSpec())
    return registry.names()


def router_model_spec(settings: Settings, model: str | None) -> str:
    return fast_model_plan(settings, open_runtime(settings).resolve(model)).spec


def test_routed_by_default_with_only_what_sec_can_serve(tmp_path: Path) -> None:
    bound = names(SEC_ONLY, tmp_path)
    finance = [
        n
        for n in bound
        if n
        in {
            "get_financials",
            "get_market_data",
            "read_filings",
            "stock_screener",
            "income_statements",
        }
    ]
    assert finance == ["get_financials", "get_market_data", "read_filings", "stock_screener"]
    assert bound[:2] == ["calculate", "read_tool_result"]


def test_direct_mode_binds_each_available_data_call(tmp_path: Path) -> None:
    bound = names({**SEC_ONLY, "DEXTER_FINANCE_TOOLS": "direct"}, tmp_path)
    assert "income_statements" in bound and "filing_section" in bound
    assert "get_financials" not in bound
    assert "company_news" not in bound  # neither SEC nor the key-less price source has news
    # Key-less prices (Yahoo Finance) bind prices, quotes and valuation without any key.
    assert {"stock_prices", "price_snapshot", "valuation"} <= set(bound)
    assert "segments" in bound  # read from the filings' own XBRL


def test_key_less_prices_can_be_turned_off(tmp_path: Path) -> None:
    bound = names(
        {**SEC_ONLY, "DEXTER_FINANCE_TOOLS": "direct", "DEXTER_YAHOO_URL": "off"}, tmp_path
    )
    assert "stock_prices" not in bound and "valuation" not in bound


def test_a_financial_datasets_key_adds_market_data_calls(tmp_path: Path) -> None:
    env = {**SEC_ONLY, "DEXTER_FINANCE_TOOLS": "direct", "FINANCIAL_DATASETS_API_KEY": "fd-key"}
    bound = names(env, tmp_path)
    assert "stock_prices" in bound and "company_news" in bound and "segments" in bound


def test_bad_mode_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="'routed' or 'direct'"):
        names({**SEC_ONLY, "DEXTER_FINANCE_TOOLS": "both"}, tmp_path)


def test_router_model_defaults_to_the_providers_fast_model(tmp_path: Path) -> None:
    settings = load_settings(cwd=tmp_path, environ=SEC_ONLY)
    assert (
        router_model_spec(settings, "anthropic:claude-sonnet-4-6") == "anthropic:claude-haiku-4-5"
    )
    assert router_model_spec(settings, "openai:gpt-5.6-sol") == "openai:gpt-5.6-luna"
    custom = load_settings(
        cwd=tmp_path, environ={**SEC_ONLY, "DEXTER_ROUTER_MODEL": "ollama:qwen3"}
    )
    assert router_model_spec(custom, None) == "ollama:qwen3"


def test_meta_tool_offers_only_its_own_calls(tmp_path: Path) -> None:
    registry = open_runtime(load_settings(cwd=tmp_path, environ=SEC_ONLY)).tools(AgentSpec())
    meta = registry.get("read_filings")
    assert isinstance(meta, RoutedTool)
    assert [t.name for t in meta.inner_tools] == [
        "filing_section",
        "filings",
        "filing_documents",
        "filing_document",
        "sec_search",
    ]
