"""Yahoo Finance's chart API as a key-less price source (prices and quotes only).

`/v8/finance/chart/{symbol}` answers with daily (weekly, monthly) bars, split and dividend events
and a `meta` block (currency, exchange, latest price). The API is unofficial: no key, no published
terms for automated use, and it changes or refuses without notice, so every refusal (401/403/429,
an HTML page, a shape we do not know) becomes an error that says so, and a configured keyed
provider is always tried first (see sources.py).

What Yahoo's numbers mean, decided once here:
* `close`, `open`, `high`, `low` are split-adjusted to the day of the request (a 2019 AAPL close
  reads a quarter of what was traded then); `adjusted_close` is also dividend-adjusted.
* Dividends are per share on the same split-adjusted basis; a split is stored as "4:1".
* A bar's day is its exchange's local date (timestamps are the session open in UTC).
* Bars whose prices are all null (a halt, a holiday some feeds still list) are dropped.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from dexter.data.cache import DiskCache
from dexter.data.errors import NotFound, Unavailable, UpstreamError
from dexter.data.http import HttpClient
from dexter.data.models import (
    BalanceSheet,
    CashFlowStatement,
    Company,
    FactPoint,
    Filing,
    FilingSection,
    FinancialMetrics,
    IncomeStatement,
    InsiderTrade,
    InstitutionalHolding,
    NewsItem,
    Number,
    Period,
    Price,
    PriceSnapshot,
    ScreenRow,
    Source,
)
from dexter.data.provider import Capability

if TYPE_CHECKING:
    import httpx2

PROVIDER = "Yahoo Finance"
YAHOO_URL = "https://query1.finance.yahoo.com"
# Unofficial and shared by many: stay well below anything that looks like scraping.
YAHOO_RATE = 2.0
# A closed window still moves when a later split or dividend re-adjusts it; a day is fresh enough.
CLOSED_TTL = 24 * 3600.0
OPEN_TTL = 60.0
USER_AGENT = "Mozilla/5.0 (compatible; Dexter financial research agent)"
INTERVALS = {"day": "1d", "week": "1wk", "month": "1mo", "1d": "1d", "1wk": "1wk", "1mo": "1mo"}
REFUSED_HINT = (
    "Yahoo Finance's chart API is unofficial and key-less; it sometimes refuses automated "
    "clients for a while. Try again later, or set FINANCIAL_DATASETS_API_KEY to use a keyed "
    "price provider instead."
)
CHANGED_HINT = (
    "The unofficial API may have changed; set FINANCIAL_DATASETS_API_KEY for a keyed price "
    "provider, or report the reply so the parser can learn the new shape."
)
# US share classes are written BRK.B at the SEC and BRK-B at Yahoo; exchange suffixes (WSU.DE,
# 7203.T) keep their dot.
_SHARE_CLASS = re.compile(r"^([A-Z]+)\.([A-C])$")


def _hint(status: int) -> str | None:
    return REFUSED_HINT if status in (200, 401, 403, 429) else None


def yahoo_symbol(ticker: str) -> str:
    text = ticker.strip().upper()
    match = _SHARE_CLASS.match(text)
    return f"{match.group(1)}-{match.group(2)}" if match else text


@dataclass(frozen=True)
class Chart:
    """One chart reply, parsed: bars oldest first, and what the meta block says."""

    symbol: str
    currency: str | None
    instrument_type: str | None
    exchange: str | None
    name: str | None
    url: str
    bars: list[Price]
    # (day, amount per share) and (day, numerator / denominator), oldest first.
    dividends: list[tuple[str, float]] = field(default_factory=list)
    splits: list[tuple[str, float, str]] = field(default_factory=list)
    dropped: int = 0  # bars whose prices were all null
    market_price: float | None = None
    market_time: str | None = None
    previous_close: float | None = None


def _changed(why: str, url: str) -> NoReturn:
    raise UpstreamError(
        f"Yahoo Finance's chart API answered in a shape Dexter does not know ({why}).",
        url=url,
        hint=CHANGED_HINT,
    )


def _number(value: Any) -> Number | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if value == value else None  # NaN is missing


def _day(timestamp: int, offset: int) -> str:
    return datetime.fromtimestamp(timestamp + offset, UTC).date().isoformat()


def parse_chart(data: Any, url: str) -> Chart:
    """The chart reply as bars and events; an error reply or unknown shape raises."""
    chart = data.get("chart") if isinstance(data, dict) else None
    if not isinstance(chart, dict):
        _changed("no `chart` object", url)
    error = chart.get("error")
    if isinstance(error, dict):
        description = str(error.get("description") or error.get("code") or "an error")
        raise NotFound(f"Yahoo Finance: {description}.", hint="Check the symbol.")
    results = chart.get("result")
    if not isinstance(results, list) or not results or not isinstance(results[0], dict):
        _changed("no `chart.result`", url)
    result = results[0]
    meta = result.get("meta")
    if not isinstance(meta, dict):
        _changed("no `meta`", url)
    offset = meta.get("gmtoffset")
    offset = offset if isinstance(offset, int) else 0
    currency = meta.get("currency") if isinstance(meta.get("currency"), str) else None
    symbol = str(meta.get("symbol") or "")
    timestamps = result.get("timestamp") or []
    indicators = result.get("indicators")
    if not isinstance(timestamps, list) or not isinstance(indicators, dict):
        _changed("`timestamp` or `indicators` missing", url)
    quotes = indicators.get("quote") or [{}]
    quote = quotes[0] if isinstance(quotes, list) and quotes else None
    if not isinstance(quote, dict):
        _changed("no `indicators.quote`", url)
    adjusted = indicators.get("adjclose")
    adj = adjusted[0].get("adjclose") if isinstance(adjusted, list) and adjusted else None
    columns = {name: quote.get(name) for name in ("open", "high", "low", "close", "volume")}
    columns["adjusted_close"] = adj
    for name, column in columns.items():
        if (
            timestamps
            and column is not None
            and (not isinstance(column, list) or len(column) != len(timestamps))
        ):
            _changed(f"`{name}` does not have one value per timestamp", url)

    raw_events = result.get("events")
    events: dict[str, Any] = raw_events if isinstance(raw_events, dict) else {}
    dividends: dict[str, float] = {}
    for raw in (events.get("dividends") or {}).values():
        amount, when = raw.get("amount"), raw.get("date")
        if isinstance(amount, int | float) and isinstance(when, int):
            day = _day(when, offset)
            dividends[day] = dividends.get(day, 0.0) + float(amount)
    splits: dict[str, tuple[float, str]] = {}
    for raw in (events.get("splits") or {}).values():
        num, den, when = raw.get("numerator"), raw.get("denominator"), raw.get("date")
        if isinstance(num, int | float) and isinstance(den, int | float) and den and num:
            if isinstance(when, int):
                splits[_day(when, offset)] = (num / den, f"{num:g}:{den:g}")

    bars: list[Price] = []
    dropped = 0
    # Yahoo's prices are binary floats (129.0399932861328); `priceHint` is the decimals it shows.
    hint = meta.get("priceHint")
    decimals = (hint if isinstance(hint, int) and 0 <= hint <= 8 else 2) + 2
    for index, stamp in enumerate(timestamps):
        if not isinstance(stamp, int):
            _changed("a timestamp is not a number", url)
        values = {
            name: _number(column[index]) if isinstance(column, list) else None
            for name, column in columns.items()
        }
        for name in ("open", "high", "low", "close", "adjusted_close"):
            value = values[name]
            values[name] = round(value, decimals) if value is not None else None
        if all(values[name] is None for name in ("open", "high", "low", "close")):
            dropped += 1
            continue
        day = _day(stamp, offset)
        split = splits.get(day)
        bars.append(
            Price(
                ticker=symbol,
                time=day,
                currency=currency,
                dividend=dividends.get(day),
                split=split[1] if split else None,
                **values,
            )
        )
    market_time = meta.get("regularMarketTime")
    previous = meta.get("previousClose", meta.get("chartPreviousClose"))
    return Chart(
        symbol=symbol,
        currency=currency,
        instrument_type=meta.get("instrumentType"),
        exchange=meta.get("fullExchangeName") or meta.get("exchangeName"),
        name=meta.get("longName") or meta.get("shortName"),
        url=url,
        bars=bars,
        dividends=sorted(dividends.items()),
        splits=sorted((day, ratio, text) for day, (ratio, text) in splits.items()),
        dropped=dropped,
        market_price=_number(meta.get("regularMarketPrice")),
        market_time=(
            datetime.fromtimestamp(market_time, UTC).isoformat()
            if isinstance(market_time, int)
            else None
        ),
        previous_close=_number(previous),
    )


def _epoch(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp())


class YahooPriceProvider:
    """Prices and quotes from Yahoo Finance; every other capability belongs to other sources."""

    name = PROVIDER
    capabilities = frozenset({Capability.PRICES, Capability.PRICE_SNAPSHOT})

    def __init__(
        self,
        *,
        base_url: str = YAHOO_URL,
        cache_dir: Path | None = None,
        as_of: date | None = None,
        transport: httpx2.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        today: Callable[[], date] = date.today,
        rate_per_second: float = YAHOO_RATE,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.as_of = as_of
        self._today = today
        self.http = HttpClient(
            PROVIDER,
            headers={"User-Agent": USER_AGENT, "Accept": "application/json"},
            rate_per_second=rate_per_second,
            cache=DiskCache(cache_dir) if cache_dir is not None else None,
            transport=transport,
            sleep=sleep,
            error_hint=_hint,
        )

    async def aclose(self) -> None:
        await self.http.aclose()

    def _last_day(self) -> date:
        today = self._today()
        return min(today, self.as_of) if self.as_of else today

    async def chart(
        self, ticker: str, *, start: date, end: date, interval: str = "1d", events: bool = True
    ) -> Chart:
        """Bars from `start` to `end` (both included; `end` is cut at the as-of date)."""
        code = INTERVALS.get(interval)
        if code is None:
            raise Unavailable(
                f"Yahoo Finance prices come by day, week or month, not {interval!r}.",
                hint="Use --interval 1d, 1wk or 1mo.",
            )
        end = min(end, self._last_day())
        symbol = yahoo_symbol(ticker)
        params: dict[str, str | int] = {
            "period1": _epoch(start),
            "period2": _epoch(end + timedelta(days=1)),
            "interval": code,
        }
        if events:
            params["events"] = "div,split"
        url = f"{self.base_url}/v8/finance/chart/{symbol}"
        ttl = CLOSED_TTL if end < self._today() else OPEN_TTL
        try:
            data = await self.http.get_json(url, params=params, ttl=ttl)
        except NotFound:
            raise NotFound(
                f"Yahoo Finance has no prices for {symbol!r}.",
                hint="Check the symbol: non-US listings carry the exchange's suffix (WSU.DE, "
                "7203.T), currency pairs end in =X (EURUSD=X).",
            ) from None
        chart = parse_chart(data, url)
        first, last = start.isoformat(), end.isoformat()
        return _within(chart, first, last)

    async def prices(
        self, ticker: str, *, start_date: str, end_date: str, interval: str = "day"
    ) -> list[Price]:
        chart = await self.chart(
            ticker,
            start=date.fromisoformat(start_date[:10]),
            end=date.fromisoformat(end_date[:10]),
            interval=interval,
        )
        return chart.bars

    async def price_snapshot(self, ticker: str) -> PriceSnapshot:
        """The latest price; as of a past day, that day's close (or the last before it)."""
        last = self._last_day()
        chart = await self.chart(ticker, start=last - timedelta(days=14), end=last, events=False)
        closes = [bar for bar in chart.bars if bar.close is not None]
        symbol = chart.symbol or yahoo_symbol(ticker)
        source = Source(provider=PROVIDER, url=chart.url)
        live = self.as_of is None and chart.market_price is not None
        if live:
            price = chart.market_price
            # The change is against the last close before the market price's own session.
            session = (chart.market_time or "")[:10]
            before = [bar for bar in closes if bar.time < session]
            previous = before[-1].close if before else chart.previous_close
            when = chart.market_time
        elif closes:
            price = closes[-1].close
            previous = closes[-2].close if len(closes) >= 2 else None
            when = closes[-1].time
        else:
            raise NotFound(f"Yahoo Finance has no price for {symbol} in the two weeks to {last}.")
        assert price is not None
        change = price - previous if previous else None
        return PriceSnapshot(
            ticker=symbol,
            price=price,
            day_change=round(change, 6) if change is not None else None,
            day_change_percent=round(change / previous * 100, 4)
            if change is not None and previous
            else None,
            time=when,
            source=source,
            currency=chart.currency,
        )

    # -- everything else is another source's ------------------------------------------------

    def _not_here(self, what: str) -> NoReturn:
        raise Unavailable(f"Yahoo Finance is used for prices only, not {what}.")

    async def company(self, query: str) -> Company:
        raise NotFound(f"Yahoo Finance does not look up companies ({query!r}).")

    async def income_statements(self, ticker: str, **kw: Any) -> list[IncomeStatement]:
        self._not_here("statements")

    async def balance_sheets(self, ticker: str, **kw: Any) -> list[BalanceSheet]:
        self._not_here("statements")

    async def cash_flow_statements(self, ticker: str, **kw: Any) -> list[CashFlowStatement]:
        self._not_here("statements")

    async def financial_metrics(
        self, ticker: str, *, period: Period = "annual", limit: int = 4
    ) -> list[FinancialMetrics]:
        self._not_here("financial metrics")

    async def facts(self, ticker: str, concept: str) -> list[FactPoint]:
        self._not_here("XBRL facts")

    async def filings(
        self, ticker: str, *, forms: list[str] | None = None, limit: int = 10
    ) -> list[Filing]:
        self._not_here("filings")

    async def filing_section(self, ticker: str, **kw: Any) -> FilingSection:
        self._not_here("filings")

    async def insider_trades(self, ticker: str, *, limit: int = 20) -> list[InsiderTrade]:
        self._not_here("insider trades")

    async def institutional_holdings(self, **kw: Any) -> list[InstitutionalHolding]:
        self._not_here("holdings")

    async def news(self, ticker: str, *, limit: int = 10) -> list[NewsItem]:
        self._not_here("news")

    async def segments(
        self, ticker: str, *, period: Period = "annual", limit: int = 4, year: int | None = None
    ) -> list[dict[str, Any]]:
        self._not_here("segments")

    async def screen(self, **kw: Any) -> list[ScreenRow]:
        self._not_here("screens")


def _within(chart: Chart, first: str, last: str) -> Chart:
    """Only the bars and events inside [first, last]: the as-of cut, and Yahoo's habit of
    adding today's partial bar to any window."""
    return replace(
        chart,
        bars=[bar for bar in chart.bars if first <= bar.time <= last],
        dividends=[d for d in chart.dividends if first <= d[0] <= last],
        splits=[s for s in chart.splits if first <= s[0] <= last],
    )
