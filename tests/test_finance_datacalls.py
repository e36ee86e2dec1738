"""The data calls as tools, driven over the recorded SEC mirror (and a stub market-data source)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from dexter.data.errors import NotFound
from dexter.data.models import Company, NewsItem, Price, PriceSnapshot, Source
from dexter.data.provider import Capability
from dexter.data.router import DataRouter
from dexter.data.sec.provider import SecEdgarProvider
from dexter.data.settings import DataSettings
from dexter.tools.base import Tool, ToolContext, ToolFailure, ToolResult
from dexter.tools.finance.datacalls import available_data_calls, data_call_tools
from tests.support.fixtures import fixtures_dir
from tests.support.ownership_filings import snowflake_insider_filings
from tests.support.sec_mirror import Mirror, mirror_transport
from tests.support.thirteen_f import example_13f_filing

NAMES = [
    "income_statements",
    "balance_sheets",
    "cash_flow_statements",
    "financial_metrics",
    "xbrl_facts",
    "filings",
    "filing_section",
    "filing_documents",
    "filing_document",
    "sec_search",
    "insider_trades",
    "institutional_holdings",
    "stock_prices",
    "price_snapshot",
    "valuation",
    "company_news",
    "segments",
    "screen_companies",
]


@pytest.fixture
def router(tmp_path: Path) -> DataRouter:
    fixtures_dir()  # skip early, with instructions, when the recorded mirror is absent
    settings = DataSettings(cache_dir=tmp_path / "cache", sec_user_agent="Dexter Tests t@e.com")
    return DataRouter([SecEdgarProvider(settings, transport=mirror_transport(Mirror()))])


def tools(router: DataRouter) -> dict[str, Tool[Any]]:
    return {tool.name: tool for tool in data_call_tools(router)}


async def call(tool: Tool[Any], ctx: ToolContext | None = None, **arguments: Any) -> ToolResult:
    """Validate arguments as a model's tool call would be, then run."""
    result = await tool.run(tool.Args.model_validate(arguments), ctx or ToolContext())
    assert isinstance(result, ToolResult)
    return result


def test_names_flags_and_provider_safe_schemas(router: DataRouter) -> None:
    every = data_call_tools(router)
    assert [t.name for t in every] == NAMES
    for tool in every:
        assert tool.concurrency_safe and not tool.needs_approval
        spec = tool.spec()
        assert spec.name == tool.name and 20 < len(spec.description) < 300
        schema = spec.parameters
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        text = repr(schema)
        assert "$ref" not in text and "$defs" not in text and "'title'" not in text
        assert "anyOf" not in text, "optional fields appear as plain types"
        for name, prop in schema["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} explains itself to the model"
    statement = tools(router)["income_statements"].spec().parameters
    assert statement["required"] == ["company"]
    assert statement["properties"]["period"]["enum"] == ["annual", "quarterly", "ttm"]


def test_only_calls_a_configured_source_can_serve_are_offered(router: DataRouter) -> None:
    offered = [t.name for t in available_data_calls(router)]
    for missing in ("stock_prices", "company_news", "price_snapshot", "valuation"):
        assert missing not in offered
    # Segments come from the filings' own XBRL, so SEC EDGAR alone serves them.
    assert {"income_statements", "filing_section", "screen_companies", "segments"} <= set(offered)


async def test_company_names_resolve_to_tickers(router: DataRouter) -> None:
    income = tools(router)["income_statements"]
    nvidia = await call(income, company="nvidia corp", limit=1)
    assert nvidia.content.startswith("## NVIDIA CORP (NVDA) — income statement (annual)")
    assert "2026-FY (2026-01-25)" in nvidia.content
    assert "| Revenue | 215,938 |" in nvidia.content
    assert nvidia.data["company"]["ticker"] == "NVDA"

    apple = await call(income, company="Apple", limit=1)
    assert "(AAPL)" in apple.content.splitlines()[0]
    assert "| Revenue | 416,161 |" in apple.content
    assert apple.data["records"][0]["revenue"] == 416_161_000_000


async def test_report_period_bounds_reach_the_data_layer(router: DataRouter) -> None:
    income = tools(router)["income_statements"]
    since = await call(income, company="AAPL", report_period_gte="2024-01-01")
    periods = [r["fiscal_period"] for r in since.data["records"]]
    assert periods == ["2025-FY", "2024-FY"]
    assert "2023-FY" not in since.content

    until = await call(income, company="AAPL", report_period_lte="2023", limit=2)
    assert [r["fiscal_period"] for r in until.data["records"]] == ["2023-FY", "2022-FY"]
    assert "earlier ones exist" in until.content, "more periods exist beyond the limit"

    metrics = tools(router)["financial_metrics"]
    recent = await call(metrics, company="AAPL", report_period_gte="2024-01-01")
    assert [r["fiscal_period"] for r in recent.data["records"]] == ["2025-FY", "2024-FY"]


def test_arguments_are_read_leniently_but_checked(router: DataRouter) -> None:
    args: Any = tools(router)["income_statements"].Args
    parsed: Any = args.model_validate(
        {"company": "AAPL", "period": "Quarterly", "limit": 500, "report_period_gte": "2022"}
    )
    assert (parsed.period, parsed.limit, parsed.report_period_gte) == (
        "quarterly",
        20,
        "2022-01-01",
    )
    february: Any = args.model_validate({"company": "X", "report_period_lte": "2024-02"})
    assert february.report_period_lte == "2024-02-29", "a month means its last day as an end"
    with pytest.raises(ValidationError):
        args.model_validate({"company": "AAPL", "report_period_gte": "last year"})
    with pytest.raises(ValidationError):
        args.model_validate({"company": "AAPL", "period": "weekly"})
    forms: Any = tools(router)["filings"].Args.model_validate({"company": "AAPL", "forms": "10k"})
    assert forms.forms == ["10-K"]


def test_form_names_with_a_space_stay_one_form(router: DataRouter) -> None:
    args: Any = tools(router)["filings"].Args
    for given, expected in (
        ("DEF 14A", ["DEF 14A"]),
        ("def 14a, 10-K", ["DEF 14A", "10-K"]),
        ("SC 13D 10-Q", ["SC 13D", "10-Q"]),
        ("10-K 10-Q", ["10-K", "10-Q"]),
        ("10k,10q", ["10-K", "10-Q"]),
    ):
        assert args.model_validate({"company": "AAPL", "forms": given}).forms == expected, given


async def test_unknown_company_fails_with_the_suggestion(router: DataRouter) -> None:
    with pytest.raises(ToolFailure) as info:
        await call(tools(router)["balance_sheets"], company="AAPLE")
    message = str(info.value)
    assert "AAPLE" in message and "Did you mean" in message and "AAPL (Apple Inc.)" in message


async def test_unavailable_capability_says_how_to_enable_it(router: DataRouter) -> None:
    with pytest.raises(ToolFailure) as info:
        await call(tools(router)["stock_prices"], company="AAPL", start_date="2025-01-01")
    assert "not available" in str(info.value) and "FINANCIAL_DATASETS_API_KEY" in str(info.value)

    holdings = tools(router)["institutional_holdings"]
    with pytest.raises(ToolFailure, match="FINANCIAL_DATASETS_API_KEY"):
        await call(holdings, company="AAPL")
    with pytest.raises(ToolFailure, match="exactly one of filer"):
        await call(holdings)


async def test_filing_section_is_trimmed_to_the_focus_and_cited(router: DataRouter) -> None:
    ctx = ToolContext()
    result = await call(
        tools(router)["filing_section"],
        ctx,
        company="Apple",
        item="risk factors",
        year=2024,
        focus="supply chain",
        max_chars=6_000,
    )
    assert result.content.startswith("## AAPL 10-K (period ended 2024-09-28")
    assert "supply chain" in result.content and "Note: Showing" in result.content
    assert len(result.content) < 8_000
    assert result.data["accession_number"] == "0000320193-24-000123"
    [entry] = ctx.sources.entries()
    assert "0000320193-24-000123" in entry.label and f"[{entry.id}]" in result.content


async def test_sources_are_shared_across_calls_of_one_run(router: DataRouter) -> None:
    ctx = ToolContext()
    table = tools(router)
    income = await call(table["income_statements"], ctx, company="AAPL", limit=1)
    cash = await call(table["cash_flow_statements"], ctx, company="AAPL", limit=1)
    listing = await call(table["filings"], ctx, company="AAPL", forms=["10-K"], limit=1)
    assert "| Sources | [S1] |" in income.content and "| Sources | [S1] |" in cash.content
    assert "[S1]" in listing.content and len(ctx.sources) == 1


class MarketStub:
    """A keyed market-data source: knows no companies itself, serves prices, quotes, news."""

    name = "Financial Datasets"
    capabilities = frozenset({Capability.PRICES, Capability.PRICE_SNAPSHOT, Capability.NEWS})

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def company(self, query: str) -> Company:
        raise NotFound(f"unknown {query}")

    async def prices(
        self, ticker: str, *, start_date: str, end_date: str, interval: str = "day"
    ) -> list[Price]:
        self.calls.append(("prices", {"ticker": ticker, "start": start_date, "end": end_date}))
        return [
            Price(ticker=ticker, time="2025-01-02", open=10, high=12, low=9, close=11, volume=5),
            Price(ticker=ticker, time="2025-01-03", open=11, high=14, low=10, close=13, volume=6),
        ]

    async def price_snapshot(self, ticker: str) -> PriceSnapshot:
        source = Source(provider=self.name, url="https://api.example/prices/snapshot")
        return PriceSnapshot(ticker=ticker, price=202.0, day_change=2.0, source=source)

    async def news(self, ticker: str, *, limit: int = 10) -> list[NewsItem]:
        self.calls.append(("news", {"ticker": ticker, "limit": limit}))
        return [
            NewsItem(
                ticker=ticker,
                title="Apple | results",
                source="Reuters",
                date="2025-01-30",
                url="https://example.com/a",
            )
        ]

    async def aclose(self) -> None:
        return None


async def test_market_data_calls_resolve_names_and_cite(tmp_path: Path) -> None:
    fixtures_dir()
    settings = DataSettings(cache_dir=tmp_path / "cache", sec_user_agent="Dexter Tests t@e.com")
    stub = MarketStub()
    sec = SecEdgarProvider(settings, transport=mirror_transport(Mirror()))
    router = DataRouter([stub, sec])  # type: ignore[list-item]
    offered = {t.name for t in available_data_calls(router)}
    assert {"stock_prices", "price_snapshot", "company_news", "segments"} <= offered

    ctx = ToolContext()
    table = tools(router)
    prices = await call(
        table["stock_prices"], ctx, company="Apple", start_date="2025-01", end_date="2025-01-31"
    )
    assert stub.calls[0] == (
        "prices",
        {"ticker": "AAPL", "start": "2025-01-01", "end": "2025-01-31"},
    )
    assert "change +18.2%" in prices.content and "high 14.00 (2025-01-03)" in prices.content
    assert "Financial Datasets day prices, AAPL" in ctx.sources.entries()[0].label

    quote = await call(table["price_snapshot"], ctx, company="apple")
    assert "202.00 USD, day change +2.00 (+1.00%)" in quote.content and "[S2]" in quote.content

    news = await call(table["company_news"], ctx, company="AAPL", limit=99)
    assert stub.calls[-1] == ("news", {"ticker": "AAPL", "limit": 25})
    assert "Apple / results — Reuters, 2025-01-30 [S3]" in news.content
    assert ctx.sources.entries()[2].url == "https://example.com/a"
    await router.aclose()


@pytest.fixture
def filers(tmp_path: Path) -> DataRouter:
    """The mirror with a 13F filer and Snowflake's Forms 3, 4 and 5 added."""
    mirror = Mirror({**example_13f_filing(), **snowflake_insider_filings()})
    settings = DataSettings(cache_dir=tmp_path / "cache", sec_user_agent="Dexter Tests t@e.com")
    return DataRouter([SecEdgarProvider(settings, transport=mirror_transport(mirror))])


def table_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if re.match(r"\| \d+ \|", line)]


async def test_a_cut_13f_list_tells_the_model_what_it_leaves_out(filers: DataRouter) -> None:
    holdings = tools(filers)["institutional_holdings"]
    result = await call(holdings, filer="1234567")
    assert len(table_rows(result.content)) == 25
    assert (
        "TRUNCATED: the 25 largest of the report's 255 positions by value are listed; the other "
        "230 positions, worth USD 172.4 million (49.2% of the total), are not. Total value of "
        "all 255: USD 350.2 million. Call again with a larger limit or all=true"
    ) in result.content
    assert result.data is not None
    assert (result.data["total_count"], result.data["omitted_count"]) == (255, 230)
    assert result.data["omitted_value_usd"] == 172_426_752

    # A larger limit lists that many rows, not a table capped at 25.
    assert len(table_rows((await call(holdings, filer="1234567", limit=100)).content)) == 100
    every = await call(holdings, filer="1234567", all=True)
    assert len(table_rows(every.content)) == 255
    assert "All 255 positions of the report are listed; total value USD 350.2 million" in (
        every.content
    )


async def test_insider_trades_label_form_4_and_form_5_rows(filers: DataRouter) -> None:
    result = await call(tools(filers)["insider_trades"], company="SNOW")
    assert "(7 from Form 4, 1 from Form 5, 1 from Form 5/A)" in result.content
    gift = next(
        line for line in result.content.splitlines() if line.startswith("| 2021-12-23 | 5 |")
    )
    assert "McMahon John Dennis" in gift and "Gift" in gift and "-61,386" in gift
    assert "5 is the annual statement" in result.content
    filtered = await call(tools(filers)["insider_trades"], company="SNOW", insider="McMahon")
    assert "Filtered to 'McMahon': 2 of the 9 most recent" in filtered.content
