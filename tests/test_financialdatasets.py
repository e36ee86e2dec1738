"""The Financial Datasets provider against a stand-in built from the API's OpenAPI description
and one real recorded reply (see tests/support/fd_fixtures.py). Nothing here touches the network.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from dexter.data.errors import (
    ConfigurationNeeded,
    DataError,
    NotFound,
    RateLimited,
    Unavailable,
    UpstreamError,
)
from dexter.data.financialdatasets import (
    FinancialDatasetsProvider,
    KeyRejected,
    PlanRequired,
)
from dexter.data.models import (
    BalanceSheet,
    CashFlowStatement,
    Company,
    Filing,
    FilingSection,
    FinancialMetrics,
    IncomeStatement,
    InsiderTrade,
    InstitutionalHolding,
    NewsItem,
    Price,
    PriceSnapshot,
    Record,
    ScreenRow,
)
from dexter.data.provider import Capability, FinanceProvider
from tests.support.fd_fixtures import BASE_URL, TEST_KEY, FDMock, Reply, recorded_msft

MSFT_URL = f"{BASE_URL}/financials?limit=1&period=annual&ticker=MSFT"


class Sleeps:
    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


@pytest.fixture
def mock() -> FDMock:
    return FDMock()


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
async def fd(
    mock: FDMock, sleeps: Sleeps, tmp_path: Path
) -> AsyncIterator[FinancialDatasetsProvider]:
    provider = FinancialDatasetsProvider(
        TEST_KEY, cache_dir=tmp_path / "cache", transport=mock.transport, sleep=sleeps
    )
    yield provider
    await provider.aclose()


def _recorded_income() -> dict[str, Any]:
    return {"income_statements": recorded_msft()["financials"]["income_statements"]}


def _all_text(error: BaseException) -> str:
    parts = [str(error), repr(error)]
    for name in ("body", "url", "hint", "message"):
        value = getattr(error, name, None)
        if value:
            parts.append(str(value))
    return "\n".join(parts)


# ---------------------------------------------------------------------- real recorded data


async def test_statements_map_from_the_recorded_msft_reply(
    fd: FinancialDatasetsProvider, mock: FDMock
) -> None:
    result = await fd.all_financial_statements("msft", period="annual", limit=1)

    income = result.income_statements[0]
    assert income.ticker == "MSFT"
    assert income.revenue == 281_724_000_000
    assert income.net_income == 101_832_000_000
    assert income.fiscal_period == "2025-FY"
    assert income.report_period == "2025-06-30"
    assert income.period == "annual"
    assert income.earnings_per_share_diluted == 13.64
    assert result.balance_sheets[0].total_assets == 619_003_000_000
    assert result.balance_sheets[0].accumulated_other_comprehensive_income == -3_347_000_000
    # The recorded cash-flow row has a field our model lacks; it is dropped, not fatal.
    assert result.cash_flow_statements[0].net_cash_flow_from_operations == 136_162_000_000

    source = income.sources["revenue"]
    assert source.provider == "Financial Datasets"
    assert source.url == MSFT_URL
    assert TEST_KEY not in source.url
    assert set(income.sources) >= {"revenue", "net_income", "earnings_per_share"}

    (request,) = mock.requests
    assert request.url.path == "/financials"
    assert request.headers["x-api-key"] == TEST_KEY


async def test_income_statements_endpoint_with_recorded_rows(
    fd: FinancialDatasetsProvider, mock: FDMock
) -> None:
    mock.script("/financials/income-statements", Reply(200, _recorded_income()))

    (income,) = await fd.income_statements("MSFT", period="annual", limit=1)

    assert isinstance(income, IncomeStatement)
    assert income.revenue == 281_724_000_000
    assert income.net_income == 101_832_000_000
    assert income.sources["net_income"].url == (
        f"{BASE_URL}/financials/income-statements?limit=1&period=annual&ticker=MSFT"
    )
    params = mock.requests[0].url.params
    assert dict(params) == {"ticker": "MSFT", "period": "annual", "limit": "1"}


async def test_report_period_filters_are_sent(fd: FinancialDatasetsProvider, mock: FDMock) -> None:
    await fd.balance_sheets(
        "AAPL",
        period="quarterly",
        limit=2,
        report_period_gte="2023-01-01",
        report_period_lte="2024-12-31",
    )
    params = mock.requests[0].url.params
    assert params["report_period_gte"] == "2023-01-01"
    assert params["report_period_lte"] == "2024-12-31"
    assert params["period"] == "quarterly"


# ---------------------------------------------------------------------- every endpoint's example

Call = Callable[[FinancialDatasetsProvider], Awaitable[Any]]

ENDPOINTS: list[tuple[str, Call, str, type[Record] | type[dict[str, Any]]]] = [
    ("company", lambda p: p.company("AAPL"), "/company/facts", Company),
    (
        "income",
        lambda p: p.income_statements("AAPL"),
        "/financials/income-statements",
        IncomeStatement,
    ),
    ("balance", lambda p: p.balance_sheets("AAPL"), "/financials/balance-sheets", BalanceSheet),
    (
        "cashflow",
        lambda p: p.cash_flow_statements("AAPL"),
        "/financials/cash-flow-statements",
        CashFlowStatement,
    ),
    ("metrics", lambda p: p.financial_metrics("AAPL"), "/financial-metrics", FinancialMetrics),
    (
        "metrics-snapshot",
        lambda p: p.financial_metrics_snapshot("AAPL"),
        "/financial-metrics/snapshot",
        FinancialMetrics,
    ),
    ("filings", lambda p: p.filings("AAPL"), "/filings", Filing),
    (
        "filing-items",
        lambda p: p.filing_section("AAPL", form="10-K", item="1A"),
        "/filings/items",
        FilingSection,
    ),
    ("insider", lambda p: p.insider_trades("AAPL"), "/insider-trades", InsiderTrade),
    (
        "holdings-ticker",
        lambda p: p.institutional_holdings(ticker="AAPL"),
        "/institutional-holdings",
        InstitutionalHolding,
    ),
    (
        "holdings-filer",
        lambda p: p.institutional_holdings(filer_cik="1067983"),
        "/institutional-holdings",
        InstitutionalHolding,
    ),
    (
        "investors",
        lambda p: p.institutional_investors("Berkshire"),
        "/institutional-holdings/investors",
        dict,
    ),
    (
        "prices",
        lambda p: p.prices("AAPL", start_date="2024-01-02", end_date="2024-01-31"),
        "/prices",
        Price,
    ),
    ("snapshot", lambda p: p.price_snapshot("AAPL"), "/prices/snapshot", PriceSnapshot),
    ("news", lambda p: p.news("AAPL", limit=5), "/news", NewsItem),
    ("earnings", lambda p: p.earnings("AAPL"), "/earnings", dict),
    ("segments", lambda p: p.segments("AAPL"), "/financials/segments", dict),
    (
        "screener-filters",
        lambda p: p.screener_filters(),
        "/financials/search/screener/filters",
        dict,
    ),
    (
        "screener",
        lambda p: p.screen(concept="revenue", period="annual", min_value=1e9),
        "/financials/search/screener",
        ScreenRow,
    ),
]


@pytest.mark.parametrize(
    ("call", "path", "model"), [e[1:] for e in ENDPOINTS], ids=[e[0] for e in ENDPOINTS]
)
async def test_each_endpoint_example_parses_into_our_models(
    fd: FinancialDatasetsProvider,
    mock: FDMock,
    call: Call,
    path: str,
    model: type[Any],
) -> None:
    result = await call(fd)

    records = result if isinstance(result, list) else [result]
    assert records, "the example reply should yield at least one record"
    assert all(isinstance(r, model) for r in records)
    # Every request used a documented path and passed the spec's parameter checks (the stand-in
    # answers 400 for unknown or missing parameters and 404 for undocumented paths).
    assert mock.to(path)
    for request in mock.requests:
        assert mock.examples.operation(request.method, request.url.path) is not None
    for record in records:
        for url in _source_urls(record):
            assert url.startswith(f"{BASE_URL}{path}")
            assert TEST_KEY not in url


def _source_urls(record: Any) -> list[str]:
    if isinstance(record, dict):
        source = record.get("source")
        return [source["url"]] if source else []
    urls = [s.url for s in getattr(record, "sources", {}).values()]
    source = getattr(record, "source", None)
    if source is not None and not isinstance(source, str):
        urls.append(source.url)
    return urls


async def test_financial_metrics_example_keeps_known_fields(fd: FinancialDatasetsProvider) -> None:
    (metrics,) = await fd.financial_metrics("AAPL", period="ttm", limit=1)
    assert metrics.ticker == "AAPL"
    assert metrics.gross_margin == 1234.5
    assert metrics.sources["gross_margin"].accession_number == "0000320193-24-000123"


async def test_holdings_carry_filer_and_filing_provenance(fd: FinancialDatasetsProvider) -> None:
    (holding,) = await fd.institutional_holdings(filer_cik="1067983", limit=1)
    assert holding.cusip == "037833100"
    assert holding.source is not None
    assert holding.source.form == "13F-HR"
    assert holding.source.accession_number == "0000320193-24-000123"
    assert holding.source.url == f"{BASE_URL}/institutional-holdings?filer_cik=0001067983&limit=1"


async def test_holdings_by_filer_name_resolve_through_investors(
    fd: FinancialDatasetsProvider, mock: FDMock
) -> None:
    mock.script(
        "/institutional-holdings/investors",
        Reply(200, {"investors": [{"cik": "0001067983", "name": "BERKSHIRE HATHAWAY INC"}]}),
    )
    await fd.institutional_holdings(filer_name="Berkshire")
    assert mock.to("/institutional-holdings/investors")[0].url.params["name"] == "Berkshire"
    assert mock.to("/institutional-holdings")[0].url.params["filer_cik"] == "0001067983"


async def test_holdings_need_exactly_one_subject(fd: FinancialDatasetsProvider) -> None:
    with pytest.raises(DataError, match="exactly one"):
        await fd.institutional_holdings()
    with pytest.raises(DataError, match="exactly one"):
        await fd.institutional_holdings(ticker="AAPL", filer_cik="1067983")


async def test_crypto_endpoints_use_the_price_shapes(
    fd: FinancialDatasetsProvider, mock: FDMock
) -> None:
    # Crypto is not in the published spec; answer with its Price/PriceSnapshot schemas.
    ex = mock.examples
    mock.script("/crypto/prices", Reply(200, ex.example(ex.schema("PricesResponse"), None, {})))
    mock.script(
        "/crypto/prices/snapshot",
        Reply(200, ex.example(ex.schema("PriceSnapshotResponse"), None, {"ticker": "BTC-USD"})),
    )
    prices = await fd.crypto_prices("btc-usd", start_date="2024-01-01", end_date="2024-01-31")
    snapshot = await fd.crypto_price_snapshot("BTC-USD")

    assert prices[0].ticker == "BTC-USD"
    assert snapshot.price == 1234.5
    params = mock.to("/crypto/prices")[0].url.params
    assert params["interval_multiplier"] == "1"
    assert params["ticker"] == "BTC-USD"


# ---------------------------------------------------------------------- parameters and paging


async def test_list_params_repeat_the_key(fd: FinancialDatasetsProvider, mock: FDMock) -> None:
    await fd.filings("AAPL", forms=["10-K", "10-Q"], limit=5)

    (request,) = mock.requests
    assert request.url.params.get_list("filing_type") == ["10-K", "10-Q"]
    assert b"filing_type=10-K&filing_type=10-Q" in request.url.query


async def test_paging_follows_next_page_url_until_the_limit(
    fd: FinancialDatasetsProvider, mock: FDMock
) -> None:
    rows = _recorded_income()["income_statements"]

    def page(n: int, cursor: str | None) -> Reply:
        batch = [{**rows[0], "report_period": f"{2025 - n}-06-30"} for n in range(n, n + 2)]
        body: dict[str, Any] = {"income_statements": batch}
        if cursor:
            body["next_page_url"] = f"{BASE_URL}/financials/income-statements?cursor={cursor}"
        return Reply(200, body)

    mock.script(
        "/financials/income-statements", page(0, "p2"), page(2, "p3"), page(4, "p4"), page(6, None)
    )

    statements = await fd.income_statements("MSFT", limit=5)

    assert [s.report_period[:4] for s in statements] == ["2025", "2024", "2023", "2022", "2021"]
    requests = mock.to("/financials/income-statements")
    assert len(requests) == 3  # the fourth page is not needed for five rows
    assert [r.url.params.get("cursor") for r in requests] == [None, "p2", "p3"]
    assert all(r.headers["x-api-key"] == TEST_KEY for r in requests)
    # Every row cites the query that was asked, not an opaque cursor URL.
    assert all("cursor" not in s.sources["revenue"].url for s in statements)


async def test_paging_stops_when_the_link_disappears_or_loops(
    fd: FinancialDatasetsProvider, mock: FDMock
) -> None:
    row = _recorded_income()["income_statements"][0]
    looping = f"{BASE_URL}/news?cursor=same"
    mock.script(
        "/news",
        Reply(200, {"news": [{"title": "a"}], "next_page_url": looping}),
        Reply(200, {"news": [{"title": "b"}], "next_page_url": looping}),
        Reply(200, {"news": [{"title": "never"}]}),
    )
    news = await fd.news("MSFT", limit=10)
    assert [n.title for n in news] == ["a", "b"]
    assert len(mock.to("/news")) == 2

    mock.script("/financials/income-statements", Reply(200, {"income_statements": [row]}))
    assert len(await fd.income_statements("MSFT", limit=10)) == 1
    assert len(mock.to("/financials/income-statements")) == 1


async def test_next_page_on_another_host_is_refused(
    fd: FinancialDatasetsProvider, mock: FDMock
) -> None:
    mock.script(
        "/news",
        Reply(200, {"news": [{"title": "a"}], "next_page_url": "https://evil.example/news?c=1"}),
    )
    with pytest.raises(UpstreamError, match="another host") as caught:
        await fd.news("MSFT", limit=10)
    assert all(r.url.host == "api.financialdatasets.ai" for r in mock.requests)
    assert TEST_KEY not in _all_text(caught.value)


async def test_next_page_is_rerooted_onto_a_configured_proxy(mock: FDMock, sleeps: Sleeps) -> None:
    mock.script(
        "/fd/news",
        Reply(200, {"news": [{"title": "a"}], "next_page_url": f"{BASE_URL}/news?cursor=c2"}),
    )
    mock.script("/fd/news", Reply(200, {"news": [{"title": "b"}]}))
    provider = FinancialDatasetsProvider(
        TEST_KEY, base_url="http://127.0.0.1:8999/fd/", transport=mock.transport, sleep=sleeps
    )
    try:
        news = await provider.news("MSFT", limit=2)
    finally:
        await provider.aclose()
    assert [n.title for n in news] == ["a", "b"]
    assert [str(r.url) for r in mock.requests] == [
        "http://127.0.0.1:8999/fd/news?limit=2&ticker=MSFT",
        "http://127.0.0.1:8999/fd/news?cursor=c2",
    ]


async def test_same_day_price_window_is_widened(
    fd: FinancialDatasetsProvider, mock: FDMock
) -> None:
    await fd.prices("AAPL", start_date="2024-03-15", end_date="2024-03-15")
    params = mock.requests[0].url.params
    assert (params["start_date"], params["end_date"]) == ("2024-03-08", "2024-03-15")


# ---------------------------------------------------------------------- filing sections


def _filings_reply() -> Reply:
    base = {"cik": 320193, "filing_type": "10-K", "ticker": "AAPL"}
    return Reply(
        200,
        {
            "filings": [
                {
                    **base,
                    "accession_number": "0000320193-24-000123",
                    "filing_date": "2024-11-01",
                    "report_date": "2024-09-28",
                    "url": "https://www.sec.gov/Archives/edgar/data/320193/000032019324000123/aapl-20240928.htm",
                },
                {
                    **base,
                    "accession_number": "0000320193-23-000106",
                    "filing_date": "2023-11-03",
                    "report_date": "2023-09-30",
                    "url": "https://www.sec.gov/Archives/edgar/data/320193/000032019323000106/aapl-20230930.htm",
                },
            ]
        },
    )


async def test_filing_section_locates_the_filing_and_picks_the_item(
    fd: FinancialDatasetsProvider, mock: FDMock
) -> None:
    mock.script("/filings", _filings_reply())
    mock.script(
        "/filings/items",
        Reply(
            200,
            {
                "ticker": "AAPL",
                "filing_type": "10-K",
                "accession_number": "0000320193-23-000106",
                "year": 2023,
                "items": [
                    {"number": "Item-1", "name": "Business", "text": "Apple designs..."},
                    {"number": "Item-1A", "name": "Risk Factors", "text": "The Company's ..."},
                ],
            },
        ),
    )

    section = await fd.filing_section("aapl", form="10-k", item="Item 1A", year=2023)

    assert section.item == "1A"
    assert section.title == "Risk Factors"
    assert section.text == "The Company's ..."
    assert section.accession_number == "0000320193-23-000106"
    assert section.filing_date == "2023-11-03"
    assert section.source.form == "10-K"
    assert section.source.accession_number == "0000320193-23-000106"
    params = mock.to("/filings/items")[0].url.params
    assert params["item"] == "Item-1A"
    assert params["year"] == "2023"
    assert params["accession_number"] == "0000320193-23-000106"
    assert params["filing_type"] == "10-K"


async def test_ten_q_items_name_their_part(fd: FinancialDatasetsProvider, mock: FDMock) -> None:
    await fd.filing_section("AAPL", form="10-Q", item="Part I, Item 2")
    assert mock.to("/filings/items")[0].url.params["item"] == "Part-1,Item-2"
    await fd.filing_section("AAPL", form="10-Q", item="1A")
    assert mock.to("/filings/items")[1].url.params["item"] == "Part-2,Item-1A"


async def test_missing_item_lists_what_the_filing_has(
    fd: FinancialDatasetsProvider, mock: FDMock
) -> None:
    mock.script("/filings", _filings_reply())
    mock.script(
        "/filings/items",
        Reply(
            200, {"items": [{"number": "Item-1", "text": "x"}, {"number": "Item-7", "text": "y"}]}
        ),
    )
    with pytest.raises(NotFound, match="no item 9B") as caught:
        await fd.filing_section("AAPL", form="10-K", item="9B")
    assert "Item-1, Item-7" in str(caught.value)


async def test_items_can_be_named_and_a_lone_other_item_is_not_taken(
    fd: FinancialDatasetsProvider, mock: FDMock
) -> None:
    await fd.filing_section("AAPL", form="10-Q", item="MD&A")
    await fd.filing_section("AAPL", form="10-K", item="Risk Factors")
    assert [r.url.params["item"] for r in mock.to("/filings/items")] == [
        "Part-1,Item-2",
        "Item-1A",
    ]

    mock.script("/filings/items", Reply(200, {"items": [{"number": "Item-7", "text": "MD&A"}]}))
    with pytest.raises(NotFound, match="no item 1A"):
        await fd.filing_section("MSFT", form="10-K", item="1A")
    with pytest.raises(DataError, match="Cannot read the item"):
        await fd.filing_section("AAPL", form="10-K", item="the interesting bit")


# ---------------------------------------------------------------------- errors


async def test_rejected_key_says_which_setting_to_check(mock: FDMock, sleeps: Sleeps) -> None:
    wrong = "fd-wrong-key-0000"
    provider = FinancialDatasetsProvider(wrong, transport=mock.transport, sleep=sleeps)
    try:
        with pytest.raises(KeyRejected) as caught:
            await provider.income_statements("AAPL")
    finally:
        await provider.aclose()
    error = caught.value
    assert error.status == 401
    assert "rejected the API key" in str(error)
    assert "FINANCIAL_DATASETS_API_KEY" in str(error)
    assert error.body is not None and "Invalid API key provided" in error.body
    assert wrong not in _all_text(error)
    assert len(mock.requests) == 1  # an auth failure is not retried


async def test_payment_required_explains_the_plan_and_the_free_alternative(
    fd: FinancialDatasetsProvider, mock: FDMock
) -> None:
    body = mock.examples.error_body("PaymentRequiredError")
    mock.script("/prices", Reply(402, body))

    with pytest.raises(PlanRequired) as caught:
        await fd.prices("TSLA", start_date="2024-01-02", end_date="2024-01-31")

    error = caught.value
    text = str(error)
    assert isinstance(error, UpstreamError) and error.status == 402
    assert "paid Financial Datasets plan" in text
    assert "SEC EDGAR" in text and "without any key" in text
    assert "FINANCIAL_DATASETS_API_KEY" in text
    assert "requires a paid subscription" in text  # the server's own words
    assert error.body is not None and "Payment Required" in error.body
    assert error.url is not None and error.url.startswith(f"{BASE_URL}/prices?")


async def test_unknown_ticker_is_not_found(fd: FinancialDatasetsProvider, mock: FDMock) -> None:
    mock.script(
        "/financials/income-statements", Reply(404, mock.examples.error_body("NotFoundError"))
    )
    with pytest.raises(NotFound, match="ZZZZQ") as caught:
        await fd.income_statements("zzzzq")
    assert "Check the ticker" in str(caught.value)


async def test_rate_limit_is_retried_then_succeeds(
    fd: FinancialDatasetsProvider, mock: FDMock, sleeps: Sleeps
) -> None:
    mock.script(
        "/financials/income-statements",
        Reply(429, {"error": "Too Many Requests"}, headers={"retry-after": "2"}),
        Reply(200, _recorded_income()),
    )
    (income,) = await fd.income_statements("MSFT", limit=1)
    assert income.revenue == 281_724_000_000
    assert len(mock.requests) == 2
    assert sleeps.calls == [2.0]


async def test_rate_limit_that_persists_is_reported(
    fd: FinancialDatasetsProvider, mock: FDMock
) -> None:
    mock.script("/news", *[Reply(429, {"error": "Too Many Requests"}) for _ in range(4)])
    with pytest.raises(RateLimited) as caught:
        await fd.news("AAPL")
    assert caught.value.status == 429
    assert "Too Many Requests" in (caught.value.body or "")


async def test_malformed_json_is_a_clear_error_with_the_body(
    fd: FinancialDatasetsProvider, mock: FDMock
) -> None:
    mock.script("/financials/income-statements", Reply(200, raw=b'{"income_statements": [{"tick'))
    with pytest.raises(UpstreamError, match="not valid JSON") as caught:
        await fd.income_statements("MSFT")
    assert caught.value.body is not None and '{"income_statements"' in caught.value.body


async def test_persistent_server_error_gives_up_with_the_body(
    fd: FinancialDatasetsProvider, mock: FDMock, sleeps: Sleeps
) -> None:
    failure = Reply(500, {"error": "Internal Server Error", "message": "database unavailable"})
    mock.script("/financial-metrics", *[failure] * 4)
    with pytest.raises(UpstreamError) as caught:
        await fd.financial_metrics("AAPL")
    error = caught.value
    assert error.status == 500
    assert "financial metrics for AAPL" in str(error)
    assert "database unavailable" in str(error)
    assert error.body is not None and "Internal Server Error" in error.body
    assert len(mock.requests) == 4
    assert len(sleeps.calls) == 3


async def test_wrong_shapes_and_bad_values_are_upstream_errors(
    fd: FinancialDatasetsProvider, mock: FDMock
) -> None:
    mock.script("/financials/income-statements", Reply(200, {"income_statements": "none"}))
    with pytest.raises(UpstreamError, match="unexpected shape"):
        await fd.income_statements("MSFT")

    bad = {**_recorded_income()["income_statements"][0], "revenue": "lots"}
    mock.script("/financials/income-statements", Reply(200, {"income_statements": [bad]}))
    with pytest.raises(UpstreamError, match="revenue") as caught:
        await fd.income_statements("MSFT")
    assert caught.value.body is not None and "lots" in caught.value.body

    mock.script("/financials/income-statements", Reply(200, [1, 2, 3]))
    with pytest.raises(UpstreamError, match="not a JSON object"):
        await fd.income_statements("MSFT")


async def test_facts_are_unavailable_with_a_pointer_to_sec(fd: FinancialDatasetsProvider) -> None:
    assert Capability.FACTS not in fd.capabilities
    with pytest.raises(Unavailable, match="XBRL") as caught:
        await fd.facts("AAPL", "us-gaap:Revenues")
    assert "SEC EDGAR" in str(caught.value)


async def test_company_by_name_is_left_to_sources_that_search_names(
    fd: FinancialDatasetsProvider, mock: FDMock
) -> None:
    with pytest.raises(NotFound, match="ticker or CIK"):
        await fd.company("Apple Inc and friends")
    assert mock.requests == []


def test_an_empty_key_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationNeeded, match="FINANCIAL_DATASETS_API_KEY"):
        FinancialDatasetsProvider("  ")


# ---------------------------------------------------------------------- screener


async def test_screen_posts_filters_and_reads_string_values(
    fd: FinancialDatasetsProvider, mock: FDMock
) -> None:
    rows = await fd.screen(
        concept="us-gaap:NetIncomeLoss", period="annual", min_value=1e9, max_value=5e11, limit=10
    )

    (post,) = [r for r in mock.requests if r.method == "POST"]
    assert post.url.path == "/financials/search/screener"
    assert post.headers["x-api-key"] == TEST_KEY
    assert json.loads(post.content) == {
        "filters": [
            {"field": "net_income", "operator": "gte", "value": 1e9},
            {"field": "net_income", "operator": "lte", "value": 5e11},
        ],
        "currency": "USD",
        "limit": 10,
    }
    (row,) = rows
    assert row.ticker == "AAPL"
    assert row.concept == "net_income"
    assert row.value == 500_000_000_000  # the stand-in echoes the last filter's bound


async def test_screen_checks_fields_against_the_catalogue(
    fd: FinancialDatasetsProvider, mock: FDMock
) -> None:
    catalogue = {"metrics": {"income_statement": [{"field": "revenue"}, {"field": "net_income"}]}}
    mock.script("/financials/search/screener/filters", Reply(200, catalogue))
    with pytest.raises(NotFound, match="no field 'revenu'") as caught:
        await fd.screen(concept="revenu", period="annual", min_value=1)
    assert "revenue" in str(caught.value)
    assert not [r for r in mock.requests if r.method == "POST"]


async def test_screen_needs_a_bound_and_a_known_concept(fd: FinancialDatasetsProvider) -> None:
    with pytest.raises(DataError, match="bound"):
        await fd.screen(concept="revenue", period="annual")
    with pytest.raises(NotFound, match="no equivalent"):
        await fd.screen(concept="us-gaap:SomethingObscure", period="CY2024", min_value=1)


# ---------------------------------------------------------------------- cache


async def test_second_identical_statements_call_is_served_from_cache(
    fd: FinancialDatasetsProvider, mock: FDMock
) -> None:
    first = await fd.all_financial_statements("MSFT", limit=1)
    second = await fd.all_financial_statements("MSFT", limit=1)

    assert len(mock.requests) == 1
    assert second == first
    await fd.all_financial_statements("MSFT", limit=2)  # a different query is its own entry
    assert len(mock.requests) == 2


async def test_closed_price_windows_are_cached_and_open_ones_are_not(
    fd: FinancialDatasetsProvider, mock: FDMock
) -> None:
    for _ in range(2):
        await fd.prices("AAPL", start_date="2024-01-02", end_date="2024-01-31")
    assert len(mock.to("/prices")) == 1

    today = date.today()
    for _ in range(2):
        await fd.prices(
            "AAPL", start_date=(today - timedelta(days=30)).isoformat(), end_date=today.isoformat()
        )
    assert len(mock.to("/prices")) == 3

    for _ in range(2):
        await fd.price_snapshot("AAPL")
    assert len(mock.to("/prices/snapshot")) == 2


async def test_failures_are_not_cached(fd: FinancialDatasetsProvider, mock: FDMock) -> None:
    path = "/financials/income-statements"
    mock.script(path, Reply(200, raw=b"{broken"))
    with pytest.raises(UpstreamError):
        await fd.income_statements("MSFT", limit=1)
    # Well-formed JSON of the wrong shape must not be served from the cache either.
    mock.script(path, Reply(200, {"income_statements": "none"}))
    with pytest.raises(UpstreamError):
        await fd.income_statements("MSFT", limit=1)
    mock.script(path, Reply(200, _recorded_income()))
    assert (await fd.income_statements("MSFT", limit=1))[0].revenue == 281_724_000_000
    assert len(mock.to(path)) == 3


# ---------------------------------------------------------------------- the key stays secret


async def test_the_key_never_leaks(
    fd: FinancialDatasetsProvider, mock: FDMock, tmp_path: Path
) -> None:
    assert TEST_KEY not in repr(fd)
    assert TEST_KEY not in str(vars(fd))

    results: list[Any] = [
        await fd.all_financial_statements("MSFT", limit=1),
        await fd.insider_trades("AAPL"),
        await fd.price_snapshot("AAPL"),
        await fd.segments("AAPL"),
    ]
    assert TEST_KEY not in repr(results)
    assert all(TEST_KEY not in str(r.url) for r in mock.requests)

    # Even if the server echoed the key back, our errors do not repeat it.
    mock.script("/news", Reply(400, {"error": "Bad Request", "message": f"bad key {TEST_KEY}"}))
    with pytest.raises(UpstreamError) as caught:
        await fd.news("AAPL")
    assert TEST_KEY not in _all_text(caught.value)

    for path in (tmp_path / "cache").rglob("*"):
        if path.is_file():
            assert TEST_KEY.encode() not in path.read_bytes()


def test_the_provider_satisfies_the_protocol() -> None:
    provider: FinanceProvider = FinancialDatasetsProvider(TEST_KEY)
    assert provider.name == "Financial Datasets"
    # Facts, filing documents and full-text search are the SEC's alone.
    assert provider.capabilities == frozenset(Capability) - {
        Capability.FACTS,
        Capability.DOCUMENTS,
        Capability.FULL_TEXT_SEARCH,
    }


async def test_aclose_can_be_called_twice(mock: FDMock) -> None:
    provider = FinancialDatasetsProvider(TEST_KEY, transport=mock.transport)
    await provider.news("AAPL")
    await provider.aclose()
    await provider.aclose()
