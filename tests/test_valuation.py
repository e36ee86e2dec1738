"""Valuation on a day from the close that day and the statements FILED BY that day, hand-checked
against the raw recorded data: Yahoo Finance chart replies (../shared/fixtures/prices/yahoo/) and
SEC companyfacts (../shared/fixtures/sec-mirror/). Every expected number below is computed in the
comments from values read in those raw JSON files (concept, period, value, form, filing date)."""

from __future__ import annotations

from datetime import date
from functools import cache
from pathlib import Path

import pytest

from dexter.data.errors import NotFound
from dexter.data.models import Company
from dexter.data.router import DataRouter
from dexter.data.sec.provider import SecEdgarProvider
from dexter.data.settings import DataSettings
from dexter.data.valuation import Valuation, month_ends, valuations, value_days
from dexter.data.yahoo import YahooPriceProvider, parse_chart
from tests.support.fixtures import companyfacts
from tests.support.sec_mirror import Mirror, mirror_transport
from tests.support.yahoo_fixtures import SERVED, YahooReplies, body, yahoo_transport

APPLE = Company(ticker="AAPL", cik="0000320193", name="Apple Inc.")
TESLA = Company(ticker="TSLA", cik="0001318605", name="Tesla, Inc.")


@cache
def _valued(ticker: str, days: tuple[date, ...]) -> tuple[Valuation, ...]:
    company, cik = (APPLE, "0000320193") if ticker == "AAPL" else (TESLA, "0001318605")
    bars = parse_chart(body(SERVED[ticker]), "recorded").bars
    return tuple(value_days(company, companyfacts(cik), bars, list(days), "Yahoo Finance"))


def apple(day: date) -> Valuation:
    days = (date(2020, 9, 30), date(2020, 10, 29), date(2020, 10, 30), date(2020, 11, 6))
    return _valued("AAPL", days)[days.index(day)]


def tesla(day: date) -> Valuation:
    days = (date(2021, 12, 31), date(2022, 10, 31), date(2010, 8, 31))
    return _valued("TSLA", days)[days.index(day)]


def test_apple_2020_09_30_before_the_10k_with_the_pre_split_share_count() -> None:
    v = apple(date(2020, 9, 30))
    # Close 2020-09-30: 115.81 (chart). Filed by then: the Q3 FY2020 10-Q (filed 2020-07-31),
    # cover count dei:EntityCommonStockSharesOutstanding 4,275,634,000 as of 2020-07-17, i.e.
    # before the 4:1 split of 2020-08-31 (the chart's closes are post-split): × 4.
    # market cap = 115.81 × 4,275,634,000 × 4 = 1,980,644,694,160
    assert v.price_date == "2020-09-30" and v.inputs["split_factor"] == 4
    assert v.market_cap == pytest.approx(1_980_644_694_160)
    # TTM to 2020-06-27 = FY2019 (10-K 2019-10-31) + 9M FY2020 − 9M FY2019 (10-Q 2020-07-31):
    # revenue   260,174 + 209,817 − 196,134 = 273,857 M
    # net income 55,256 +  44,738 −  41,570 =  58,424 M
    # op. income 63,930 +  51,513 −  48,305 =  67,138 M;  D&A 12,547 + 8,354 − 9,368 = 11,533 M
    # FCF (69,391 + 60,098 − 49,481) − (10,495 + 5,525 − 7,718) = 80,008 − 8,302 = 71,706 M
    # dividends paid 14,119 + 10,570 − 10,640 = 14,049 M
    # Balance 2020-06-27: debt 94,048 (LT noncurrent) + 7,509 (LT current) + 11,166 (other
    # short-term borrowings) = 112,723 M; cash 33,383 M; equity 72,282 M.
    assert v.inputs["revenue"] == 273_857_000_000 and v.inputs["net_income"] == 58_424_000_000
    assert v.inputs["total_debt"] == 112_723_000_000
    cap = 1_980_644_694_160
    ev = cap + 112_723_000_000 - 33_383_000_000  # 2,059,984,694,160
    assert v.enterprise_value == pytest.approx(ev)
    assert v.price_to_earnings_ratio == pytest.approx(cap / 58_424e6)  # 33.90
    assert v.price_to_sales_ratio == pytest.approx(cap / 273_857e6)  # 7.23
    assert v.price_to_book_ratio == pytest.approx(cap / 72_282e6)  # 27.40
    assert v.enterprise_value_to_ebitda_ratio == pytest.approx(ev / (67_138e6 + 11_533e6))  # 26.18
    assert v.enterprise_value_to_revenue_ratio == pytest.approx(ev / 273_857e6)  # 7.52
    assert v.dividend_yield == pytest.approx(14_049e6 / cap)  # 0.71%
    assert v.free_cash_flow_yield == pytest.approx(71_706e6 / cap)  # 3.62%
    assert any("4:1 (2020) split are × 4" in note for note in v.notes)


def test_apple_on_the_10k_filing_day_sees_the_new_year_and_the_day_before_does_not() -> None:
    # The FY2020 10-K was filed 2020-10-30: on 10-29 the TTM still ends 2020-06-27.
    before, on = apple(date(2020, 10, 29)), apple(date(2020, 10, 30))
    assert before.inputs["revenue"] == 273_857_000_000
    assert on.inputs["revenue"] == 274_515_000_000  # FY2020, 10-K filed 2020-10-30
    assert on.sources["price_to_sales_ratio"].filing_date == "2020-10-30"
    assert before.sources["price_to_sales_ratio"].filing_date == "2020-07-31"


def test_apple_2020_11_06_after_the_10k() -> None:
    v = apple(date(2020, 11, 6))
    # Close 2020-11-06: 118.69. 10-K filed 2020-10-30: cover count 17,001,802,000 (2020-10-16,
    # post-split, factor 1). market cap = 118.69 × 17,001,802,000 = 2,017,943,879,380.
    # FY2020: revenue 274,515 M, net income 57,411 M, operating income 66,288 M, D&A 11,056 M,
    # FCF 80,674 − 7,309 = 73,365 M, dividends 14,081 M; 2020-09-26: debt 98,667 + 8,773 +
    # 4,996 (commercial paper) = 112,436 M, cash 38,016 M, equity 65,339 M.
    cap = 2_017_943_879_380
    ev = cap + 112_436e6 - 38_016e6  # 2,092,363,879,380
    assert v.inputs["split_factor"] == 1 and v.market_cap == pytest.approx(cap)
    assert v.enterprise_value == pytest.approx(ev)
    assert v.price_to_earnings_ratio == pytest.approx(cap / 57_411e6)  # 35.15
    assert v.price_to_sales_ratio == pytest.approx(cap / 274_515e6)  # 7.35
    assert v.price_to_book_ratio == pytest.approx(cap / 65_339e6)  # 30.88
    assert v.enterprise_value_to_ebitda_ratio == pytest.approx(ev / (66_288e6 + 11_056e6))
    assert v.enterprise_value_to_revenue_ratio == pytest.approx(ev / 274_515e6)
    assert v.dividend_yield == pytest.approx(14_081e6 / cap)
    assert v.free_cash_flow_yield == pytest.approx(73_365e6 / cap)
    # Each ratio cites its input's filing and spells its formula.
    pe = v.sources["price_to_earnings_ratio"]
    assert (pe.form or "").startswith("10-K") and pe.accession_number == "0000320193-20-000096"
    assert pe.concept == "computed: market_cap / net_income"
    assert v.input_sources["price"].provider == "Yahoo Finance"


def test_tesla_2022_10_31_no_dividend_and_post_split_count() -> None:
    v = tesla(date(2022, 10, 31))
    # Close 2022-10-31: 227.54 (full-history chart). Q3 2022 10-Q filed 2022-10-24: cover count
    # 3,157,752,449 (2022-10-18, after the 3:1 split of 2022-08-25), factor 1.
    # market cap = 227.54 × 3,157,752,449 = 718,514,992,245.46
    # TTM to 2022-09-30 = FY2021 (10-K 2022-02-07) + 9M 2022 − 9M 2021 (10-Q 2022-10-24):
    # revenue 53,823 + 57,144 − 36,104 = 74,863 M; net income (NetIncomeLoss) 5,519 + 8,869 −
    # 3,198 = 11,190 M; FCF (11,497 + 11,446 − 6,912) − (6,482 + 5,300 − 4,672) = 8,921 M;
    # 2022-09-30: cash 19,532 M, equity 39,851 M. No dividends line: yield 0.
    cap = 718_514_992_245.46
    assert v.market_cap == pytest.approx(cap) and v.inputs["split_factor"] == 1
    assert v.price_to_earnings_ratio == pytest.approx(cap / 11_190e6)  # 64.2
    assert v.price_to_sales_ratio == pytest.approx(cap / 74_863e6)  # 9.60
    assert v.price_to_book_ratio == pytest.approx(cap / 39_851e6)  # 18.0
    assert v.free_cash_flow_yield == pytest.approx(8_921e6 / cap)
    assert v.dividend_yield == 0
    # Debt and D&A are the statements' own (debt.py reads Tesla's debt concepts as a whole).
    debt, amortisation = v.inputs["total_debt"], v.inputs["depreciation_and_amortization"]
    assert v.enterprise_value == pytest.approx(cap + debt - 19_532e6)
    assert v.enterprise_value_to_ebitda_ratio == pytest.approx(
        (cap + debt - 19_532e6) / (12_368e6 + amortisation)  # op. income 6,523+9,755−3,910
    )


def test_tesla_2021_with_the_2022_split_read_from_the_sec_data() -> None:
    # This chart was recorded without split events; the SEC data itself shows the 3:1 change of
    # share basis (counts filed from 2022-10-24 on are three times larger), so the count filed
    # 2021-10-25 (1,004,264,852) is × 3. Close 2021-12-31: 352.26 (split-adjusted).
    v = tesla(date(2021, 12, 31))
    assert v.inputs["shares_outstanding"] == 1_004_264_852 and v.inputs["split_factor"] == 3
    assert v.market_cap == pytest.approx(352.26 * 1_004_264_852 * 3)  # 1,061,287,010,296.56


def test_before_any_xbrl_filing_says_so() -> None:
    v = tesla(date(2010, 8, 31))
    assert v.market_cap is None and "filed no XBRL data by 2010-08-31" in v.notes[0]


def test_month_ends() -> None:
    assert month_ends(date(2023, 11, 5), date(2024, 2, 1)) == [
        date(2023, 11, 30), date(2023, 12, 31), date(2024, 1, 31), date(2024, 2, 29)
    ]  # fmt: skip


async def test_valuations_through_the_router(tmp_path: Path) -> None:
    settings = DataSettings(cache_dir=tmp_path, sec_user_agent="T t@example.com")
    sec = SecEdgarProvider(settings, transport=mirror_transport(Mirror()))
    yahoo = YahooPriceProvider(transport=yahoo_transport(YahooReplies()), rate_per_second=1e3)
    router = DataRouter([sec, yahoo])
    found = await valuations(router, "TSLA", [date(2022, 10, 31)])
    assert found[0].market_cap == pytest.approx(718_514_992_245.46)
    await router.aclose()


async def test_a_day_after_the_as_of_date_is_refused(tmp_path: Path) -> None:
    settings = DataSettings(cache_dir=tmp_path, sec_user_agent="T t@example.com")
    sec = SecEdgarProvider(
        settings.with_as_of(date(2021, 1, 4)), transport=mirror_transport(Mirror())
    )
    router = DataRouter([sec], as_of=date(2021, 1, 4))
    with pytest.raises(NotFound, match="after the as-of date"):
        await valuations(router, "TSLA", [date(2022, 10, 31)])
    await router.aclose()


async def test_valuation_tool_cites_each_figure_and_is_offered_by_both_routers(
    tmp_path: Path,
) -> None:
    from dexter.tools.base import ToolContext, ToolResult
    from dexter.tools.finance.datacalls import available_data_calls
    from dexter.tools.finance.routed import ROUTED_TOOLS, GetFinancials, GetMarketData

    assert "valuation" in ROUTED_TOOLS[GetFinancials] and "valuation" in ROUTED_TOOLS[GetMarketData]
    settings = DataSettings(cache_dir=tmp_path, sec_user_agent="T t@example.com")
    sec = SecEdgarProvider(settings, transport=mirror_transport(Mirror()))
    yahoo = YahooPriceProvider(transport=yahoo_transport(YahooReplies()), rate_per_second=1e3)
    router = DataRouter([sec, yahoo])
    tool = next(t for t in available_data_calls(router) if t.name == "valuation")
    ctx = ToolContext()
    args = tool.Args.model_validate({"company": "apple", "dates": ["2020-09-30", "2020-11-06"]})
    result = await tool.run(args, ctx)
    assert isinstance(result, ToolResult)
    text = result.content
    assert "## Apple Inc. (AAPL) — valuation on 2020-09-30, 2020-11-06" in text
    assert "| Market cap (M) | 1,980,645 [S" in text and "| 2,017,944 [S" in text
    assert "| P/E (TTM) | 33.90 [S" in text and "17,102.5 (4,275.6 filed × 4)" in text
    assert "price_to_earnings_ratio = market_cap / net_income" in text
    assert "Yahoo Finance daily closes, AAPL" in text and "acc. 0000320193-20-000096" in text
    await router.aclose()
