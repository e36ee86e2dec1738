"""Key-less prices from Yahoo Finance's chart API, on real recorded replies
(../shared/fixtures/prices/yahoo/, README "prices/") served by a mock transport."""

from __future__ import annotations

import copy
import json
from datetime import date
from pathlib import Path
from typing import Any

import httpx2
import pytest

from dexter.data.errors import NotFound, RateLimited, UpstreamError
from dexter.data.models import Price, PriceSnapshot
from dexter.data.provider import Capability
from dexter.data.router import DataRouter
from dexter.data.yahoo import YahooPriceProvider, parse_chart, yahoo_symbol
from tests.support.yahoo_fixtures import SERVED, YahooReplies, body, recording, yahoo_transport
from tests.test_data_router import fd_answering


def provider(
    tmp_path: Path | None = None,
    replies: YahooReplies | None = None,
    *,
    as_of: date | None = None,
) -> YahooPriceProvider:
    async def no_sleep(_: float) -> None:
        return None

    return YahooPriceProvider(
        cache_dir=tmp_path / "yahoo" if tmp_path else None,
        as_of=as_of,
        transport=yahoo_transport(replies or YahooReplies()),
        sleep=no_sleep,
        today=lambda: date(2025, 2, 20),  # the recordings' day
        rate_per_second=1000.0,
    )


def chart(symbol: str) -> Any:
    name = SERVED[symbol]
    return parse_chart(body(name), recording(name)["request"]["url"])


def test_aapl_split_day_and_dividend_are_on_their_bars() -> None:
    aapl = chart("AAPL")
    assert len(aapl.bars) == 49
    assert (aapl.bars[0].time, aapl.bars[-1].time) == ("2020-08-31", "2020-11-06")
    # The 4:1 split took effect at the open of 2020-08-31: that bar carries it.
    assert aapl.splits == [("2020-08-31", 4.0, "4:1")]
    assert aapl.bars[0].split == "4:1" and aapl.bars[0].close == 129.04
    assert aapl.bars[-1].close == 118.69 and aapl.bars[-1].dividend == 0.205
    # Adjusted close is below close before an ex-dividend day (dividends are taken out).
    assert aapl.bars[-1].adjusted_close == 115.9342
    assert all(bar.currency == "USD" for bar in aapl.bars)


def test_nvda_split_of_2021_07_20() -> None:
    nvda = chart("NVDA")
    assert len(nvda.bars) == 252
    assert nvda.splits == [("2021-07-20", 4.0, "4:1")]
    split_bar = next(bar for bar in nvda.bars if bar.split)
    assert split_bar.time == "2021-07-20"
    # Recorded in 2025: every close is also divided by the 2024 10:1 split.
    assert nvda.bars[-1].close == 22.84


def test_msft_dividends_with_dates_and_amounts() -> None:
    msft = chart("MSFT")
    assert msft.dividends == [
        ("2021-02-17", 0.56),
        ("2021-05-19", 0.56),
        ("2021-08-18", 0.56),
        ("2021-11-17", 0.62),
    ]
    assert msft.bars[-1].close == 308.26


def test_missing_days_are_absent_and_null_bars_dropped() -> None:
    msft = chart("MSFT")
    days = [date.fromisoformat(bar.time) for bar in msft.bars]
    assert all(day.weekday() < 5 for day in days)  # no weekend bars
    assert date(2021, 7, 5).isoformat() not in {bar.time for bar in msft.bars}  # a holiday
    # Yahoo writes a halted or unreported session as nulls: built from the real reply by
    # blanking one bar, it is dropped and counted, and the columns stay aligned.
    blanked = copy.deepcopy(body(SERVED["MSFT"]))
    quote = blanked["chart"]["result"][0]["indicators"]["quote"][0]
    for column in ("open", "high", "low", "close", "volume"):
        quote[column][1] = None
    parsed = parse_chart(blanked, "test")
    assert parsed.dropped == 1 and len(parsed.bars) == 251
    assert parsed.bars[1].time == msft.bars[2].time and parsed.bars[1].close == msft.bars[2].close


def test_empty_weekend_reply_is_no_bars_not_an_error() -> None:
    weekend = chart("AAPL-WEEKEND")
    assert weekend.bars == [] and weekend.currency == "USD"


def test_euro_listing_keeps_its_currency() -> None:
    washtec = chart("WSU.DE")
    assert washtec.currency == "EUR" and len(washtec.bars) == 3
    assert [b.time for b in washtec.bars] == ["2023-08-04", "2023-08-07", "2023-08-08"]
    assert washtec.bars[-1].close == 33.2 and washtec.bars[-1].currency == "EUR"


def test_fx_pair_is_quoted_in_its_second_currency() -> None:
    eurusd = chart("EURUSD=X")
    assert eurusd.instrument_type == "CURRENCY" and eurusd.currency == "USD"
    assert [b.time for b in eurusd.bars] == ["2020-01-01", "2020-01-02", "2020-01-03"]
    assert eurusd.bars[-1].close == 1.117144 and eurusd.bars[-1].volume == 0


def test_share_classes_use_yahoos_dash_but_exchange_suffixes_keep_their_dot() -> None:
    assert yahoo_symbol("brk.b") == "BRK-B"
    assert yahoo_symbol("WSU.DE") == "WSU.DE" and yahoo_symbol("EURUSD=X") == "EURUSD=X"


async def test_provider_cuts_the_window_and_asks_with_events(tmp_path: Path) -> None:
    replies = YahooReplies()
    yahoo = provider(tmp_path, replies)
    bars = await yahoo.prices("AAPL", start_date="2020-09-01", end_date="2020-09-30")
    assert bars[0].time == "2020-09-01" and bars[-1].time == "2020-09-30"
    assert len(bars) == 21
    url = httpx2.URL(replies.requests[0])
    assert url.path == "/v8/finance/chart/AAPL"
    assert url.params["interval"] == "1d" and url.params["events"] == "div,split"
    assert url.params["period1"] == "1598918400"  # 2020-09-01 00:00 UTC
    assert url.params["period2"] == "1601510400"  # 2020-10-01 00:00 UTC (exclusive end)
    # A second ask for the same closed window is served from the disk cache.
    await yahoo.prices("AAPL", start_date="2020-09-01", end_date="2020-09-30")
    assert len(replies.requests) == 1
    await yahoo.aclose()


async def test_as_of_cuts_history_and_the_quote_is_that_days_close() -> None:
    replies = YahooReplies()
    yahoo = provider(replies=replies, as_of=date(2020, 10, 15))
    bars = await yahoo.prices("AAPL", start_date="2020-08-01", end_date="2020-12-31")
    assert bars[-1].time == "2020-10-15" and all(b.dividend is None for b in bars)
    assert httpx2.URL(replies.requests[0]).params["period2"] == "1602806400"  # 2020-10-16
    quote = await yahoo.price_snapshot("AAPL")
    assert quote.time == "2020-10-15" and quote.price == bars[-1].close
    assert quote.day_change == pytest.approx(bars[-1].close - bars[-2].close)  # type: ignore[operator]
    assert quote.currency == "USD" and quote.source and quote.source.provider == "Yahoo Finance"
    await yahoo.aclose()


async def test_live_quote_is_the_market_price_in_its_currency() -> None:
    yahoo = provider()
    quote = await yahoo.price_snapshot("WSU.DE")
    assert quote.price == body(SERVED["WSU.DE"])["chart"]["result"][0]["meta"]["regularMarketPrice"]
    assert quote.currency == "EUR"
    await yahoo.aclose()


async def test_unknown_symbol_says_how_symbols_look() -> None:
    yahoo = provider()
    with pytest.raises(NotFound) as info:
        await yahoo.prices("NOPE", start_date="2020-01-01", end_date="2020-02-01")
    assert "no prices for 'NOPE'" in str(info.value) and "=X" in (info.value.hint or "")
    await yahoo.aclose()


@pytest.mark.parametrize(
    ("status", "kind", "content", "expected", "error"),
    [
        (429, "text/plain", b"Too Many Requests", "rate limiting", RateLimited),
        (401, "application/json", b'{"finance":{"error":{"code":"Unauthorized"}}}', "HTTP 401",
         UpstreamError),
        (200, "text/html", b"<!doctype html><html>consent</html>", "HTML page", RateLimited),
        (200, "application/json", b'{"spark": {}}', "shape Dexter does not know",
         UpstreamError),
    ],
)  # fmt: skip
async def test_refusals_and_changed_shapes_say_so(
    status: int, kind: str, content: bytes, expected: str, error: type[Exception]
) -> None:
    yahoo = provider(replies=YahooReplies({"AAPL": (status, kind, content)}))
    with pytest.raises(error) as info:
        await yahoo.prices("AAPL", start_date="2020-09-01", end_date="2020-09-30")
    assert expected in str(info.value)
    hint = getattr(info.value, "hint", "") or ""
    assert "FINANCIAL_DATASETS_API_KEY" in hint and "DEXTER_SEC_USER_AGENT" not in hint
    await yahoo.aclose()


async def test_a_keyed_provider_is_asked_first_and_yahoo_answers_when_it_refuses() -> None:
    yahoo = provider()
    router = DataRouter([fd_answering(402, "Payment Required"), yahoo])
    bars = await router.prices("MSFT", start_date="2022-01-24", end_date="2022-01-28")
    assert [b.close for b in bars][-1] == 308.26
    await router.aclose()


def test_recordings_are_the_documented_ones() -> None:
    # Guards the fixture mapping above: each served file is the reply for its own symbol.
    for symbol, name in SERVED.items():
        url = recording(name)["request"]["url"]
        assert json.dumps(url).find(symbol.split("-")[0]) > 0


class _VendorIgnoringDates:
    """A keyed price vendor that knows nothing of as-of dates: it answers up to today."""

    name = "Vendor"
    capabilities = frozenset({Capability.PRICES, Capability.PRICE_SNAPSHOT})

    async def prices(
        self, ticker: str, *, start_date: str, end_date: str, interval: str = "day"
    ) -> list[Price]:
        days = ["2024-12-30", "2024-12-31", "2025-01-02"]
        return [Price(ticker=ticker, time=d, close=100.0 + i) for i, d in enumerate(days)]

    async def price_snapshot(self, ticker: str) -> PriceSnapshot:
        return PriceSnapshot(ticker=ticker, price=999.0)  # today's: must not be used as of a day

    async def aclose(self) -> None:
        return None


async def test_as_of_cuts_any_providers_history_and_quote() -> None:
    router = DataRouter([_VendorIgnoringDates()], as_of=date(2024, 12, 31))  # type: ignore[list-item]
    bars = await router.prices("AAPL", start_date="2024-12-01", end_date="2025-01-31")
    assert [b.time for b in bars] == ["2024-12-30", "2024-12-31"]
    quote = await router.price_snapshot("AAPL")
    assert quote.price == 101.0 and quote.time == "2024-12-31" and quote.day_change == 1.0
