"""Statements from SEC companyfacts: real Apple, NVIDIA and Snowflake files for what users see,
tiny synthetic documents for the rules real files cannot isolate (restatement, IFRS, bad input)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest

from dexter.data.errors import NotFound, UpstreamError
from dexter.data.sec.facts import (
    company_has_facts,
    fact_series,
    index_facts,
    statements_from_facts,
)
from tests.support.fixtures import sec_mirror_file

APPLE, NVIDIA, SNOWFLAKE = "0000320193", "0001045810", "0001640147"


@cache
def _load(cik: str) -> dict[str, Any]:
    return json.loads(_path(cik).read_text())  # type: ignore[no-any-return]


def _path(cik: str) -> Any:
    path = sec_mirror_file(f"https://data.sec.gov/api/xbrl/companyfacts/CIK{cik}.json")
    if not path.is_file():
        pytest.skip(f"{path} is missing; run `uv run python scripts/fetch_fixtures.py`.")
    return path


def facts(cik: str) -> dict[str, Any]:
    _path(cik)  # skip cleanly before the cache can remember a failure
    return _load(cik)


# ---------------------------------------------------------------- known values, labelled periods


def test_apple_annual_revenue_and_net_income_match_the_10k() -> None:
    fy25, fy24 = statements_from_facts(
        facts(APPLE), ticker="AAPL", statement="income", period="annual", limit=2
    )
    assert (fy25.fiscal_period, fy25.report_period) == ("2025-FY", "2025-09-27")
    assert (fy24.fiscal_period, fy24.report_period) == ("2024-FY", "2024-09-28")
    assert fy25.revenue == 416_161_000_000
    assert fy24.revenue == 391_035_000_000
    assert fy25.net_income == 112_010_000_000
    assert fy25.ticker == "AAPL" and fy25.period == "annual" and fy25.currency == "USD"


def test_sources_name_the_filing_form_and_concept() -> None:
    (fy25,) = statements_from_facts(
        facts(APPLE), ticker="AAPL", statement="income", period="annual", limit=1
    )
    source = fy25.sources["revenue"]
    assert source.provider == "SEC EDGAR"
    assert source.form == "10-K"
    assert source.accession_number == "0000320193-25-000079"
    assert source.filing_date == "2025-10-31"
    assert source.concept == "us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax"
    assert source.unit == "USD"
    index_url = (
        "https://www.sec.gov/Archives/edgar/data/320193/000032019325000079/"
        "0000320193-25-000079-index.htm"
    )
    assert source.url == index_url
    assert fy25.accession_number == "0000320193-25-000079" and fy25.filing_url == index_url
    assert fy25.sources["earnings_per_share_diluted"].unit == "USD/shares"
    assert "acc. 0000320193-25-000079" in source.cite()


def test_a_restated_comparative_cites_the_latest_filing_that_reported_it() -> None:
    fy24 = statements_from_facts(
        facts(APPLE), ticker="AAPL", statement="income", period="annual", limit=2
    )[1]
    # The record is FY2024's own 10-K; the figure was last filed as a comparative in FY2025's.
    assert fy24.accession_number == "0000320193-24-000123"
    assert fy24.sources["revenue"].accession_number == "0000320193-25-000079"


def test_nvidia_fiscal_2026_is_the_year_ended_january_2026() -> None:
    (fy26,) = statements_from_facts(
        facts(NVIDIA), ticker="NVDA", statement="income", period="annual", limit=1
    )
    assert (fy26.fiscal_period, fy26.report_period) == ("2026-FY", "2026-01-25")
    assert fy26.revenue == 215_938_000_000
    assert fy26.sources["revenue"].concept == "us-gaap:Revenues"
    # NVIDIA's proxy statement repeats net income months later; the 10-K is still the source.
    assert fy26.sources["net_income"].form == "10-K"
    assert fy26.sources["net_income"].accession_number == "0001045810-26-000021"


def test_labels_follow_the_company_where_old_filings_mislabelled_the_year() -> None:
    # NVIDIA's 10-K for the year ended 2011-01-30 was tagged fiscal 2010; NVIDIA calls it 2011.
    (fy11,) = statements_from_facts(
        facts(NVIDIA),
        ticker="NVDA",
        statement="income",
        period="annual",
        limit=1,
        report_period_lte="2011-12-31",
    )
    assert (fy11.fiscal_period, fy11.report_period) == ("2011-FY", "2011-01-30")


def test_apple_quarters_are_apple_fiscal_quarters() -> None:
    quarters = statements_from_facts(
        facts(APPLE), ticker="AAPL", statement="income", period="quarterly", limit=5
    )
    labels = [(q.fiscal_period, q.report_period) for q in quarters]
    assert labels == [
        ("2026-Q1", "2025-12-27"),  # Apple's first quarter ends in late December
        ("2025-Q4", "2025-09-27"),
        ("2025-Q3", "2025-06-28"),
        ("2025-Q2", "2025-03-29"),
        ("2025-Q1", "2024-12-28"),
    ]
    assert quarters[0].revenue == 143_756_000_000
    assert quarters[0].sources["revenue"].form == "10-Q"
    assert all(q.period == "quarterly" for q in quarters)


def test_nvidia_quarters_run_into_the_next_fiscal_year() -> None:
    latest = statements_from_facts(
        facts(NVIDIA), ticker="NVDA", statement="income", period="quarterly", limit=1
    )[0]
    assert (latest.fiscal_period, latest.report_period) == ("2027-Q1", "2026-04-26")


def test_derived_fourth_quarter_is_the_year_less_three_quarters() -> None:
    for cik, ticker in ((APPLE, "AAPL"), (NVIDIA, "NVDA")):
        (year,) = statements_from_facts(
            facts(cik), ticker=ticker, statement="income", period="annual", limit=1
        )
        quarters = statements_from_facts(
            facts(cik),
            ticker=ticker,
            statement="income",
            period="quarterly",
            limit=4,
            report_period_lte=year.report_period,
        )
        q4, q3, q2, q1 = quarters
        assert q4.report_period == year.report_period
        assert q4.fiscal_period == year.fiscal_period.replace("FY", "Q4")
        first_three = [q.revenue for q in (q1, q2, q3)]
        assert year.revenue is not None and None not in first_three
        assert q4.revenue == year.revenue - sum(r for r in first_three if r is not None)
        source = q4.sources["revenue"]
        assert source.form == "10-K (derived Q4)"
        assert source.concept == year.sources["revenue"].concept
    assert q4.revenue == 68_127_000_000  # NVIDIA's fourth quarter of fiscal 2026


def test_derived_fourth_quarter_eps_is_quarter_income_over_quarter_shares() -> None:
    """Per-share amounts do not subtract: FY EPS − nine-month EPS gave Apple 1.84 for Q4 FY2025;
    the filing's Q4 figures give 27,466 M ÷ 14,863.6 M diluted shares = 1.85."""
    q4 = statements_from_facts(
        facts(APPLE),
        ticker="AAPL",
        statement="income",
        period="quarterly",
        limit=1,
        report_period_lte="2025-09-27",
    )[0]
    assert q4.fiscal_period == "2025-Q4"
    assert q4.net_income == 27_466_000_000
    assert q4.weighted_average_shares_diluted == 14_863_610_000  # 4·FY − 3·nine months
    assert q4.earnings_per_share_diluted == 1.85
    assert q4.weighted_average_shares == 14_815_306_000
    assert q4.earnings_per_share == 1.85  # 27,466 ÷ 14,815.3 = 1.854
    source = q4.sources["earnings_per_share_diluted"]
    assert source.form == "10-K (derived Q4)"
    assert source.concept == (
        "computed: us-gaap:NetIncomeLoss ÷ us-gaap:WeightedAverageNumberOfDilutedSharesOutstanding"
    )


def test_nvidia_fy2023_is_on_the_post_split_basis_throughout() -> None:
    """NVIDIA split 10-for-1 in June 2024. FY2023's EPS was last filed post-split (0.17 diluted on
    25,070 M shares, 10-K filed 2025-02-26) but its balance sheet only pre-split (2,466 M shares,
    10-K filed 2024-02-21): every share figure must be restated to the latest basis."""
    data = facts(NVIDIA)
    fy23, fy22 = statements_from_facts(
        data,
        ticker="NVDA",
        statement="income",
        period="annual",
        limit=2,
        report_period_lte="2023-01-29",
    )
    assert (fy23.fiscal_period, fy22.fiscal_period) == ("2023-FY", "2022-FY")
    assert fy23.earnings_per_share_diluted == 0.17
    assert fy23.weighted_average_shares_diluted == 25_070_000_000
    # FY2022's 3.85 on 2,535 M diluted shares was only ever filed before the 2024 split.
    assert fy22.earnings_per_share_diluted == pytest.approx(0.385)
    assert fy22.weighted_average_shares_diluted == 25_350_000_000
    growth = fy23.earnings_per_share_diluted / fy22.earnings_per_share_diluted - 1
    assert growth == pytest.approx(-0.558, abs=0.001)  # not −95.6% across mixed bases
    (balance,) = statements_from_facts(
        data,
        ticker="NVDA",
        statement="balance",
        period="annual",
        limit=1,
        report_period_lte="2023-01-29",
    )
    assert balance.outstanding_shares == 24_660_000_000
    assert balance.shareholders_equity is not None
    book_value_per_share = balance.shareholders_equity / balance.outstanding_shares
    assert book_value_per_share == pytest.approx(22_101_000_000 / 24_660_000_000)
    # The raw series still shows each value as filed.
    raw = [
        (p.value, p.filed)
        for p in fact_series(data, "EarningsPerShareDiluted")
        if (p.start, p.end) == ("2022-01-31", "2023-01-29")
    ]
    assert (0.17, "2025-02-26") in raw and (1.74, "2024-02-21") in raw


def test_derived_quarters_around_splits_stay_on_one_basis() -> None:
    """Q4 = 4·FY − 3·nine months mixed a post-split year with pre-split quarters: NVIDIA's Q4
    FY2023 showed 92.7 B diluted shares and EPS −1.00; Apple's Q4 FY2020 was 3–4× too high."""
    nvidia_q4 = statements_from_facts(
        facts(NVIDIA),
        ticker="NVDA",
        statement="income",
        period="quarterly",
        limit=1,
        report_period_lte="2023-01-29",
    )[0]
    assert nvidia_q4.fiscal_period == "2023-Q4"
    assert nvidia_q4.weighted_average_shares_diluted == 24_770_000_000
    assert nvidia_q4.earnings_per_share_diluted == 0.06  # 1,414 M ÷ 24,770 M
    apple_q4 = statements_from_facts(
        facts(APPLE),
        ticker="AAPL",
        statement="income",
        period="quarterly",
        limit=1,
        report_period_lte="2020-09-26",
    )[0]
    assert apple_q4.fiscal_period == "2020-Q4"
    assert apple_q4.weighted_average_shares_diluted == 17_256_522_000
    assert apple_q4.earnings_per_share_diluted == 0.73  # 12,673 M ÷ 17,256.5 M


def test_year_to_date_cash_flows_become_quarters() -> None:
    """Apple's 10-Q cash-flow statements are year-to-date only; Q2 = six months − Q1."""
    data = facts(APPLE)
    q2 = statements_from_facts(
        data,
        ticker="AAPL",
        statement="cashflow",
        period="quarterly",
        limit=1,
        report_period_lte="2025-03-29",
    )[0]
    assert q2.fiscal_period == "2025-Q2"
    raw = {
        (p.start, p.end): p.value
        for p in fact_series(data, "NetCashProvidedByUsedInOperatingActivities")
    }
    six_months = raw[("2024-09-29", "2025-03-29")]
    first_quarter = raw[("2024-09-29", "2024-12-28")]
    assert q2.net_cash_flow_from_operations == six_months - first_quarter
    assert q2.sources["net_cash_flow_from_operations"].form == "10-Q (derived Q2)"


def test_ttm_is_the_sum_of_the_latest_four_quarters() -> None:
    data = facts(APPLE)
    (ttm,) = statements_from_facts(data, ticker="AAPL", statement="income", period="ttm", limit=1)
    quarters = statements_from_facts(
        data, ticker="AAPL", statement="income", period="quarterly", limit=4
    )
    assert ttm.fiscal_period == "2026-Q1-TTM" and ttm.period == "ttm"
    assert ttm.report_period == quarters[0].report_period
    assert ttm.revenue == sum(q.revenue or 0 for q in quarters)
    assert ttm.net_income == sum(q.net_income or 0 for q in quarters)
    assert "TTM" in (ttm.sources["revenue"].form or "")
    (balance,) = statements_from_facts(
        data, ticker="AAPL", statement="balance", period="ttm", limit=1
    )
    (latest,) = statements_from_facts(
        data, ticker="AAPL", statement="balance", period="quarterly", limit=1
    )
    assert balance.total_assets == latest.total_assets  # a balance sheet is never summed


def test_balance_sheets_balance() -> None:
    for cik, ticker in ((APPLE, "AAPL"), (NVIDIA, "NVDA"), (SNOWFLAKE, "SNOW")):
        sheets = statements_from_facts(
            facts(cik), ticker=ticker, statement="balance", period="annual", limit=4
        )
        assert len(sheets) == 4
        for sheet in sheets:
            assets, liabilities = sheet.total_assets, sheet.total_liabilities
            equity = sheet.shareholders_equity
            assert assets is not None and liabilities is not None and equity is not None
            # Non-controlling interests (Snowflake has a little) sit outside shareholders' equity.
            assert abs(assets - liabilities - equity) <= 0.005 * assets, (ticker, sheet)
            assert sheet.current_assets is not None and sheet.current_assets <= assets


def test_apple_balance_sheet_fy2025() -> None:
    (sheet,) = statements_from_facts(
        facts(APPLE), ticker="AAPL", statement="balance", period="annual", limit=1
    )
    assert sheet.total_assets == 359_241_000_000
    assert sheet.total_assets == (sheet.total_liabilities or 0) + (sheet.shareholders_equity or 0)
    # Apple splits current debt into commercial paper and the current part of term debt.
    assert sheet.total_debt == (sheet.current_debt or 0) + (sheet.non_current_debt or 0)
    assert (sheet.sources["current_debt"].concept or "").startswith("computed: us-gaap:")


def test_capex_is_negative_and_free_cash_flow_is_ocf_plus_capex() -> None:
    for cik, ticker in ((APPLE, "AAPL"), (NVIDIA, "NVDA"), (SNOWFLAKE, "SNOW")):
        for flows in statements_from_facts(
            facts(cik), ticker=ticker, statement="cashflow", period="annual", limit=3
        ):
            capex, ocf = flows.capital_expenditure, flows.net_cash_flow_from_operations
            assert capex is not None and capex < 0, (ticker, flows.fiscal_period)
            assert ocf is not None
            assert flows.free_cash_flow == ocf + capex
            concept = flows.sources["free_cash_flow"].concept
            assert concept == "computed: net_cash_flow_from_operations + capital_expenditure"
    apple = statements_from_facts(
        facts(APPLE), ticker="AAPL", statement="cashflow", period="annual", limit=1
    )[0]
    assert apple.capital_expenditure == -12_715_000_000


def test_snowflake_pretty_printed_january_year_parses() -> None:
    path = _path(SNOWFLAKE)
    assert path.read_text()[:40].count("\n") > 0  # really the pretty-printed file
    years = statements_from_facts(
        facts(SNOWFLAKE), ticker="SNOW", statement="income", period="annual", limit=4
    )
    assert [(y.fiscal_period, y.report_period) for y in years] == [
        ("2025-FY", "2025-01-31"),
        ("2024-FY", "2024-01-31"),
        ("2023-FY", "2023-01-31"),
        ("2022-FY", "2022-01-31"),
    ]
    assert years[0].revenue == 3_626_396_000
    assert years[0].net_income is not None and years[0].net_income < 0
    # Snowflake reports selling/marketing and G&A separately; SG&A is their sum.
    assert (
        years[0].sources["selling_general_and_administrative_expenses"].concept or ""
    ).startswith("computed:")


def test_report_period_bounds_are_inclusive() -> None:
    years = statements_from_facts(
        facts(APPLE),
        ticker="AAPL",
        statement="income",
        period="annual",
        limit=10,
        report_period_gte="2022-09-24",
        report_period_lte="2024-09-28",
    )
    assert [y.fiscal_period for y in years] == ["2024-FY", "2023-FY", "2022-FY"]


# ---------------------------------------------------------------- fact_series


def test_fact_series_accepts_every_spelling_and_dedupes() -> None:
    data = facts(APPLE)
    series = fact_series(data, "us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax")
    assert series == fact_series(data, "RevenueFromContractWithCustomerExcludingAssessedTax")
    assert series == fact_series(
        data, "us-gaap/RevenueFromContractWithCustomerExcludingAssessedTax"
    )
    assert series == fact_series(data, "revenuefromcontractwithcustomerexcludingassessedtax")
    keys = [(p.unit, p.start, p.end, p.value) for p in series]
    assert len(keys) == len(set(keys))  # a comparative repeated in later filings appears once
    ends = [p.end for p in series]
    assert ends == sorted(ends, reverse=True) and ends[0] == "2025-12-27"
    fy25 = next(p for p in series if (p.start, p.end) == ("2024-09-29", "2025-09-27"))
    assert fy25.value == 416_161_000_000 and fy25.form == "10-K" and fy25.frame == "CY2025"
    assert fy25.concept == "us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax"


def test_unknown_concept_suggests_close_matches() -> None:
    with pytest.raises(NotFound) as caught:
        fact_series(facts(APPLE), "NetIncomeLos")
    assert "us-gaap:NetIncomeLoss" in str(caught.value)
    with pytest.raises(NotFound) as caught:
        fact_series(facts(NVIDIA), "Revenue")
    assert "us-gaap:Revenues" in str(caught.value)


# ---------------------------------------------------------------- synthetic documents


def _fact(
    value: float, end: str, accn: str, form: str, filed: str, fy: int, fp: str, start: str | None
) -> dict[str, Any]:
    fact: dict[str, Any] = {
        "end": end,
        "val": value,
        "accn": accn,
        "fy": fy,
        "fp": fp,
        "form": form,
        "filed": filed,
    }
    if start:
        fact["start"] = start
    return fact


def _document(
    taxonomy: str, concepts: dict[str, dict[str, list[dict[str, Any]]]]
) -> dict[str, Any]:
    return {
        "cik": 99,
        "entityName": "Example Corp",
        "facts": {
            taxonomy: {name: {"label": name, "units": units} for name, units in concepts.items()}
        },
    }


def test_restated_value_latest_filed_wins() -> None:
    k23 = ("0000000099-24-000001", "10-K", "2024-02-20", 2023, "FY")
    k24 = ("0000000099-25-000001", "10-K", "2025-02-20", 2024, "FY")
    revenue = [
        _fact(100, "2023-12-31", *k23, start="2023-01-01"),
        _fact(90, "2022-12-31", *k23, start="2022-01-01"),
        _fact(120, "2024-12-31", *k24, start="2024-01-01"),
        _fact(105, "2023-12-31", *k24, start="2023-01-01"),  # FY2023 restated a year later
    ]
    data = _document("us-gaap", {"Revenues": {"USD": revenue}})
    years = statements_from_facts(data, ticker="EX", statement="income", period="annual", limit=5)
    assert [(y.fiscal_period, y.revenue) for y in years] == [
        ("2024-FY", 120),
        ("2023-FY", 105),
        ("2022-FY", 90),
    ]
    assert years[1].sources["revenue"].accession_number == "0000000099-25-000001"
    assert years[1].accession_number == "0000000099-24-000001"  # still FY2023's own 10-K
    # The raw series keeps both the original and the restated figure.
    values = {p.value for p in fact_series(data, "Revenues") if p.end == "2023-12-31"}
    assert values == {100, 105}


def test_a_53_week_year_ending_in_january_keeps_its_fiscal_year() -> None:
    k23 = ("0000000099-24-000001", "10-K", "2024-02-20", 2023, "FY")
    k24 = ("0000000099-25-000001", "10-K", "2025-02-20", 2024, "FY")
    q1 = ("0000000099-25-000002", "10-Q", "2025-05-01", 2025, "Q1")
    revenue = [
        _fact(100, "2023-12-30", *k23, start="2023-01-01"),
        _fact(120, "2025-01-04", *k24, start="2023-12-31"),  # 53 weeks, ends in January
        _fact(30, "2025-04-05", *q1, start="2025-01-05"),
    ]
    data = _document("us-gaap", {"Revenues": {"USD": revenue}})
    years = statements_from_facts(data, ticker="EX", statement="income", period="annual")
    assert [(y.fiscal_period, y.report_period) for y in years] == [
        ("2024-FY", "2025-01-04"),
        ("2023-FY", "2023-12-30"),
    ]
    (quarter,) = statements_from_facts(data, ticker="EX", statement="income", period="quarterly")
    assert (quarter.fiscal_period, quarter.revenue) == ("2025-Q1", 30)


def test_a_new_registrant_with_only_10qs_gets_fiscal_quarters() -> None:
    rows = [
        _fact(10, "2024-09-30", "q1", "10-Q", "2024-11-01", 2025, "Q1", start="2024-07-01"),
        _fact(11, "2024-12-31", "q2", "10-Q", "2025-02-01", 2025, "Q2", start="2024-10-01"),
    ]
    data = _document("us-gaap", {"Revenues": {"USD": rows}})
    quarters = statements_from_facts(data, ticker="EX", statement="income", period="quarterly")
    assert [(q.fiscal_period, q.revenue) for q in quarters] == [("2025-Q2", 11), ("2025-Q1", 10)]
    assert statements_from_facts(data, ticker="EX", statement="income", period="annual") == []


def test_gross_profit_is_computed_when_not_reported() -> None:
    filing = ("0000000099-25-000001", "10-K", "2025-02-20", 2024, "FY")
    data = _document(
        "us-gaap",
        {
            "Revenues": {"USD": [_fact(500, "2024-12-31", *filing, start="2024-01-01")]},
            "CostOfRevenue": {"USD": [_fact(300, "2024-12-31", *filing, start="2024-01-01")]},
        },
    )
    (year,) = statements_from_facts(data, ticker="EX", statement="income", period="annual")
    assert year.gross_profit == 200
    assert year.sources["gross_profit"].concept == "computed: revenue − cost_of_revenue"


def test_ifrs_filer_reports_in_its_own_currency() -> None:
    filing = ("0000000099-25-000002", "20-F", "2025-03-10", 2024, "FY")
    data = _document(
        "ifrs-full",
        {
            "Revenue": {"EUR": [_fact(7_000, "2024-12-31", *filing, start="2024-01-01")]},
            "ProfitLoss": {"EUR": [_fact(900, "2024-12-31", *filing, start="2024-01-01")]},
            "BasicEarningsLossPerShare": {
                "EUR/shares": [_fact(1.5, "2024-12-31", *filing, start="2024-01-01")]
            },
        },
    )
    (year,) = statements_from_facts(data, ticker="EX", statement="income", period="annual")
    assert (year.fiscal_period, year.currency) == ("2024-FY", "EUR")
    assert (year.revenue, year.net_income, year.earnings_per_share) == (7_000, 900, 1.5)
    assert year.sources["revenue"].form == "20-F"
    assert year.sources["revenue"].concept == "ifrs-full:Revenue"


def test_company_without_financial_facts_is_a_clear_not_found() -> None:
    cover = ("0000000099-25-000003", "10-K", "2025-03-01", 2024, "FY")
    data = _document(
        "dei",
        {
            "EntityCommonStockSharesOutstanding": {
                "shares": [_fact(10, "2025-02-01", *cover, start=None)]
            }
        },
    )
    assert company_has_facts(data) is False
    with pytest.raises(NotFound, match="Example Corp has no XBRL financial data"):
        statements_from_facts(data, ticker="EX", statement="income", period="annual")
    assert fact_series(data, "EntityCommonStockSharesOutstanding")[0].value == 10


@pytest.mark.parametrize("document", [{}, {"facts": []}, {"cik": 1, "entityName": "X"}, []])
def test_malformed_document_is_an_upstream_error(document: Any) -> None:
    with pytest.raises(UpstreamError, match="malformed"):
        statements_from_facts(document, ticker="EX", statement="income", period="annual")


def test_bad_rows_are_skipped_not_fatal() -> None:
    filing = ("0000000099-25-000001", "10-K", "2025-02-20", 2024, "FY")
    rows: list[Any] = [
        "not a fact",
        {"end": "2024-12-31", "val": "12", "accn": "x"},
        {"end": "not-a-date", "val": 1, "accn": "y", "start": "2024-01-01"},
        _fact(500, "2024-12-31", *filing, start="2024-01-01"),
    ]
    data = _document("us-gaap", {"Revenues": {"USD": rows}})
    (year,) = statements_from_facts(data, ticker="EX", statement="income", period="annual")
    assert year.revenue == 500


def test_index_is_built_once_per_document() -> None:
    data = facts(APPLE)
    assert company_has_facts(data) is True
    assert index_facts(data) is index_facts(data)
    assert index_facts(index_facts(data)) is index_facts(data)


def test_unknown_statement_or_period_is_rejected() -> None:
    filing = ("0000000099-25-000001", "10-K", "2025-02-20", 2024, "FY")
    data = _document(
        "us-gaap", {"Revenues": {"USD": [_fact(5, "2024-12-31", *filing, start="2024-01-01")]}}
    )
    bad_statement: Any = "equity"
    bad_period: Any = "weekly"
    with pytest.raises(ValueError, match="statement"):
        statements_from_facts(data, ticker="EX", statement=bad_statement, period="annual")
    with pytest.raises(ValueError, match="period"):
        statements_from_facts(data, ticker="EX", statement="income", period=bad_period)


# ---------------------------------------------------------------- debt


def test_snowflake_convertible_notes_are_its_total_debt() -> None:
    fy25, fy24 = statements_from_facts(
        facts(SNOWFLAKE), ticker="SNOW", statement="balance", period="annual", limit=2
    )
    assert fy25.report_period == "2025-01-31"
    assert fy25.non_current_debt == 2_271_529_000
    assert fy25.total_debt == 2_271_529_000
    assert fy25.sources["non_current_debt"].concept == "us-gaap:ConvertibleDebtNoncurrent"
    assert fy24.total_debt == 0  # the notes were issued in September 2024


def test_apple_current_debt_still_adds_term_debt_and_commercial_paper() -> None:
    (fy25,) = statements_from_facts(
        facts(APPLE), ticker="AAPL", statement="balance", period="annual", limit=1
    )
    assert fy25.current_debt == 12_350_000_000 + 7_979_000_000
    assert fy25.total_debt == 12_350_000_000 + 7_979_000_000 + 78_328_000_000


def test_one_current_debt_amount_under_two_concepts_counts_once() -> None:
    k24 = ("0000000099-25-000001", "10-K", "2025-02-20", 2024, "FY")
    q1 = ("0000000099-25-000002", "10-Q", "2025-05-01", 2025, "Q1")
    data = _document(
        "us-gaap",
        {
            "Assets": {"USD": [_fact(5_000, "2024-12-31", *k24, start=None)]},
            # The 10-K files the line as term debt; the next 10-Q's comparative column as
            # short-term borrowings: the same 400, not 800.
            "LongTermDebtCurrent": {"USD": [_fact(400, "2024-12-31", *k24, start=None)]},
            "ShortTermBorrowings": {"USD": [_fact(400, "2024-12-31", *q1, start=None)]},
            "LongTermDebtNoncurrent": {"USD": [_fact(1_000, "2024-12-31", *k24, start=None)]},
        },
    )
    (year,) = statements_from_facts(data, ticker="EX", statement="balance", period="annual")
    assert year.current_debt == 400
    assert year.total_debt == 1_400


def test_two_current_debt_lines_in_one_filing_both_count() -> None:
    k24 = ("0000000099-25-000001", "10-K", "2025-02-20", 2024, "FY")
    data = _document(
        "us-gaap",
        {
            "LongTermDebtCurrent": {"USD": [_fact(400, "2024-12-31", *k24, start=None)]},
            "CommercialPaper": {"USD": [_fact(400, "2024-12-31", *k24, start=None)]},
        },
    )
    (year,) = statements_from_facts(data, ticker="EX", statement="balance", period="annual")
    assert year.current_debt == 800


# No IFRS filer's companyfacts is among the shared fixtures, so these use synthetic documents.


def _ifrs_year(concepts: dict[str, float], statement: Any = "balance") -> Any:
    filing = ("0000000099-25-000002", "20-F", "2025-03-10", 2024, "FY")
    start = "2024-01-01" if statement != "balance" else None
    data = _document(
        "ifrs-full",
        {
            name: {"EUR": [_fact(value, "2024-12-31", *filing, start=start)]}
            for name, value in concepts.items()
        },
    )
    (year,) = statements_from_facts(data, ticker="EX", statement=statement, period="annual")
    return year


def test_ifrs_borrowings_are_total_debt() -> None:
    year = _ifrs_year({"Borrowings": 3_000, "LongtermBorrowings": 2_500})
    assert year.total_debt == 3_000
    assert year.sources["total_debt"].concept == "ifrs-full:Borrowings"


def test_ifrs_long_term_borrowings_already_hold_their_current_portion() -> None:
    year = _ifrs_year(
        {
            "LongtermBorrowings": 2_500,
            "CurrentPortionOfLongtermBorrowings": 500,
            "CurrentBorrowingsAndCurrentPortionOfNoncurrentBorrowings": 700,
        }
    )
    assert year.non_current_debt == 2_000
    assert year.current_debt == 700
    assert year.total_debt == 2_700  # 200 short-term + 2,500 long-term, current portion once
    alone = _ifrs_year({"LongtermBorrowings": 2_500})
    assert alone.non_current_debt is None
    assert alone.total_debt == 2_500


def test_ifrs_cash_flows_from_operations_are_operating_cash_flow() -> None:
    year = _ifrs_year({"CashFlowsFromUsedInOperations": 1_234}, statement="cashflow")
    assert year.net_cash_flow_from_operations == 1_234


def test_apple_income_statement_has_pretax_income() -> None:
    (fy25,) = statements_from_facts(
        facts(APPLE), ticker="AAPL", statement="income", period="annual", limit=1
    )
    assert fy25.pretax_income == 132_729_000_000
    assert fy25.sources["pretax_income"].concept == (
        "us-gaap:IncomeLossFromContinuingOperationsBeforeIncomeTaxesExtraordinaryItemsNoncontrollingInterest"
    )
