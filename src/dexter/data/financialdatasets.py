"""Financial Datasets (api.financialdatasets.ai): the paid provider, at parity with the original.

It serves everything the original used (statements, metrics, segments, prices, news, insider
trades, 13F holdings, filings and their items, earnings, crypto, the screener) and maps the JSON
onto our records with provenance. Compared with the original it keeps the server's error bodies,
retries 429/5xx, follows `next_page_url` up to the requested limit, and explains a 402 instead of
failing opaquely: the paid plan was the original's most common complaint.

The API key travels only in the `X-API-KEY` header, so request URLs (used as citations and cache
keys) never contain it; error texts are scrubbed of it as a second line of defence.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urljoin, urlsplit

from pydantic import SecretStr, ValidationError

from dexter.data.cache import FOREVER, DiskCache
from dexter.data.errors import (
    ConfigurationNeeded,
    DataError,
    NotFound,
    RateLimited,
    Unavailable,
    UpstreamError,
)
from dexter.data.http import HttpClient, Params, Sleep, build_url
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
    Period,
    Price,
    PriceSnapshot,
    Record,
    ScreenRow,
    Source,
    StatementBase,
)
from dexter.data.provider import Capability

if TYPE_CHECKING:
    import httpx2

PROVIDER = "Financial Datasets"
DEFAULT_BASE_URL = "https://api.financialdatasets.ai"
KEY_VARIABLE = "FINANCIAL_DATASETS_API_KEY"

HOUR = 3600.0
# Freshness per endpoint, as in the original's table (reference/original-tools.md §2.3). Filings
# metadata and snapshots are deliberately uncached: they change during the day.
STATEMENTS_TTL = 24 * HOUR
SEGMENTS_TTL = 24 * HOUR
EARNINGS_TTL = 24 * HOUR
FILING_ITEMS_TTL = 24 * HOUR
COMPANY_TTL = 24 * HOUR
METRICS_TTL = 6 * HOUR
METRICS_SNAPSHOT_TTL = 1 * HOUR
INSIDER_TTL = 1 * HOUR
HOLDINGS_TTL = 1 * HOUR
NEWS_TTL = 0.25 * HOUR

# The API pages lists (about ten records per page for statements) and `limit` is a total, so a
# large limit can take many pages; the bound stops a server that keeps linking pages forever.
MAX_PAGES = 50
# The most positions /institutional-holdings returns in one page.
MAX_HOLDINGS_PAGE = 200

T = TypeVar("T", bound=Record)
R = TypeVar("R")
Parse = Callable[[dict[str, Any], str], R]

_TICKER_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.\-]{0,14}$")

# The screener speaks its own field names; these are the XBRL concepts callers reach for most
# (the SEC screener takes concepts), mapped to the nearest Financial Datasets field.
_CONCEPT_FIELDS: dict[str, str] = {
    "Revenues": "revenue",
    "RevenueFromContractWithCustomerExcludingAssessedTax": "revenue",
    "SalesRevenueNet": "revenue",
    "CostOfRevenue": "cost_of_revenue",
    "GrossProfit": "gross_profit",
    "OperatingIncomeLoss": "operating_income",
    "NetIncomeLoss": "net_income",
    "ResearchAndDevelopmentExpense": "research_and_development",
    "EarningsPerShareBasic": "earnings_per_share",
    "EarningsPerShareDiluted": "earnings_per_share_diluted",
    "Assets": "total_assets",
    "Liabilities": "total_liabilities",
    "StockholdersEquity": "shareholders_equity",
    "CashAndCashEquivalentsAtCarryingValue": "cash_and_equivalents",
    "NetCashProvidedByUsedInOperatingActivities": "net_cash_flow_from_operations",
}

_PERIOD_LABELS = frozenset({"annual", "quarterly", "ttm"})
_ROMAN = {"1": "I", "2": "II", "3": "III", "4": "IV"}
_ARABIC = {v: k for k, v in _ROMAN.items()}


class KeyRejected(UpstreamError):
    """Financial Datasets refused the API key (HTTP 401/403)."""


class PlanRequired(UpstreamError):
    """The key works but its plan does not include this data (HTTP 402)."""


@dataclass(frozen=True)
class FinancialStatements:
    """The three statements from one `/financials` call."""

    income_statements: list[IncomeStatement] = field(default_factory=list)
    balance_sheets: list[BalanceSheet] = field(default_factory=list)
    cash_flow_statements: list[CashFlowStatement] = field(default_factory=list)


class FinancialDatasetsProvider:
    name = PROVIDER
    capabilities = frozenset(
        {
            Capability.STATEMENTS,
            Capability.METRICS,
            Capability.FILINGS,
            Capability.FILING_ITEMS,
            Capability.INSIDER_TRADES,
            Capability.HOLDINGS,
            Capability.PRICES,
            Capability.PRICE_SNAPSHOT,
            Capability.NEWS,
            Capability.SEGMENTS,
            Capability.SCREEN,
        }
    )

    def __init__(
        self,
        api_key: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        cache_dir: Path | None = None,
        transport: httpx2.AsyncBaseTransport | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        key = (api_key or "").strip()
        if not key:
            raise ConfigurationNeeded(
                f"{KEY_VARIABLE} is empty.",
                hint="Set it to your Financial Datasets key, or unset it to use SEC EDGAR, "
                "which needs no key.",
            )
        # Held as a SecretStr so that dumping the provider's attributes does not show it.
        self._key = SecretStr(key)
        self.base_url = base_url.rstrip("/")
        self._cache = DiskCache(cache_dir) if cache_dir is not None else None
        # No cache handed to the client: `_fetch` caches only replies that parsed (see there).
        self._http = HttpClient(
            PROVIDER,
            headers={"X-API-KEY": key, "Accept": "application/json"},
            transport=transport,
            sleep=sleep,
            error_hint=_status_hint,
        )
        self._screener_filters: dict[str, Any] | None = None

    def __repr__(self) -> str:
        # The key must never show up in logs or tracebacks that print the provider.
        return f"FinancialDatasetsProvider(base_url={self.base_url!r}, api_key='***')"

    async def aclose(self) -> None:
        await self._http.aclose()

    # ------------------------------------------------------------------ company

    async def company(self, query: str) -> Company:
        text = query.strip()
        params: dict[str, str]
        if text.isdigit():
            params = {"cik": text}
        elif _TICKER_RE.match(text):
            params = {"ticker": text.upper()}
        else:
            # NotFound (not Unavailable) so a router moves on to a source that searches names.
            raise NotFound(
                f"Financial Datasets looks companies up by ticker or CIK, not by name ({query!r}).",
                hint="Give the ticker, or use SEC EDGAR (no key needed), which searches names.",
            )

        def parse(data: dict[str, Any], url: str) -> Company:
            facts = data.get("company_facts")
            if not isinstance(facts, dict) or not (facts.get("ticker") or facts.get("cik")):
                raise NotFound(f"Financial Datasets knows no company {query!r}.", hint=_TICKER_HINT)
            fields = {
                "ticker": str(facts.get("ticker") or text.upper()),
                "cik": _cik(facts.get("cik")) or "",
                "name": str(facts.get("name") or facts.get("ticker") or text),
                "exchange": _str_or_none(facts.get("exchange")),
            }
            return _validate(Company, fields, url, "company facts")

        return await self._get_object(
            "/company/facts", params, parse, ttl=COMPANY_TTL, what="company facts", subject=text
        )

    # ------------------------------------------------------------------ statements

    async def income_statements(
        self,
        ticker: str,
        *,
        period: Period = "annual",
        limit: int = 4,
        report_period_gte: str | None = None,
        report_period_lte: str | None = None,
    ) -> list[IncomeStatement]:
        return await self._statements(
            "/financials/income-statements",
            "income_statements",
            IncomeStatement,
            ticker,
            period=period,
            limit=limit,
            report_period_gte=report_period_gte,
            report_period_lte=report_period_lte,
            what="income statements",
        )

    async def balance_sheets(
        self,
        ticker: str,
        *,
        period: Period = "annual",
        limit: int = 4,
        report_period_gte: str | None = None,
        report_period_lte: str | None = None,
    ) -> list[BalanceSheet]:
        return await self._statements(
            "/financials/balance-sheets",
            "balance_sheets",
            BalanceSheet,
            ticker,
            period=period,
            limit=limit,
            report_period_gte=report_period_gte,
            report_period_lte=report_period_lte,
            what="balance sheets",
        )

    async def cash_flow_statements(
        self,
        ticker: str,
        *,
        period: Period = "annual",
        limit: int = 4,
        report_period_gte: str | None = None,
        report_period_lte: str | None = None,
    ) -> list[CashFlowStatement]:
        return await self._statements(
            "/financials/cash-flow-statements",
            "cash_flow_statements",
            CashFlowStatement,
            ticker,
            period=period,
            limit=limit,
            report_period_gte=report_period_gte,
            report_period_lte=report_period_lte,
            what="cash flow statements",
        )

    async def all_financial_statements(
        self,
        ticker: str,
        *,
        period: Period = "annual",
        limit: int = 4,
        report_period_gte: str | None = None,
        report_period_lte: str | None = None,
    ) -> FinancialStatements:
        """All three statements in one request (`/financials`)."""
        symbol = _ticker(ticker)
        params = _statement_params(symbol, period, limit, report_period_gte, report_period_lte)

        def parse(data: dict[str, Any], url: str) -> FinancialStatements:
            block = data.get("financials")
            if block is None:
                block = {}
            if not isinstance(block, dict):
                raise _shape_error("financial statements", url, data)
            return FinancialStatements(
                income_statements=_statement_rows(
                    block.get("income_statements"), IncomeStatement, url, "income statement", symbol
                ),
                balance_sheets=_statement_rows(
                    block.get("balance_sheets"), BalanceSheet, url, "balance sheet", symbol
                ),
                cash_flow_statements=_statement_rows(
                    block.get("cash_flow_statements"),
                    CashFlowStatement,
                    url,
                    "cash flow statement",
                    symbol,
                ),
            )

        return await self._get_list(
            "/financials",
            params,
            parse,
            key="financials",
            ttl=STATEMENTS_TTL,
            limit=limit,
            what="financial statements",
            subject=symbol,
        )

    async def _statements(
        self,
        path: str,
        key: str,
        model: type[T],
        ticker: str,
        *,
        period: Period,
        limit: int,
        report_period_gte: str | None,
        report_period_lte: str | None,
        what: str,
    ) -> list[T]:
        symbol = _ticker(ticker)
        params = _statement_params(symbol, period, limit, report_period_gte, report_period_lte)

        def parse(data: dict[str, Any], url: str) -> list[T]:
            return _statement_rows(data.get(key), model, url, what, symbol)

        return await self._get_list(
            path, params, parse, key=key, ttl=STATEMENTS_TTL, limit=limit, what=what, subject=symbol
        )

    # ------------------------------------------------------------------ metrics

    async def financial_metrics(
        self, ticker: str, *, period: Period = "annual", limit: int = 4
    ) -> list[FinancialMetrics]:
        symbol = _ticker(ticker)
        params: dict[str, Any] = {"ticker": symbol, "period": period, "limit": limit}

        def parse(data: dict[str, Any], url: str) -> list[FinancialMetrics]:
            rows = data.get("financial_metrics")
            if rows is None and "report_period" in data:
                # The published schema describes this reply as one bare record; accept that too.
                rows = [data]
            return _statement_rows(rows, FinancialMetrics, url, "financial metrics", symbol)

        return await self._get_list(
            "/financial-metrics",
            params,
            parse,
            key="financial_metrics",
            ttl=METRICS_TTL,
            limit=limit,
            what="financial metrics",
            subject=symbol,
        )

    async def financial_metrics_snapshot(self, ticker: str) -> FinancialMetrics:
        """The latest ratios (valuation at the current price, trailing fundamentals).

        The snapshot carries no period of its own, so it is labelled `ttm`, fiscal period
        "latest", dated today.
        """
        symbol = _ticker(ticker)

        def parse(data: dict[str, Any], url: str) -> FinancialMetrics:
            snapshot = data.get("snapshot")
            if not isinstance(snapshot, dict) or not snapshot:
                raise NotFound(f"Financial Datasets has no metrics snapshot for {symbol}.")
            row: dict[str, Any] = {
                "ticker": symbol,
                "report_period": date.today().isoformat(),
                "fiscal_period": "latest",
                "period": "ttm",
            }
            row.update((k, v) for k, v in snapshot.items() if v is not None)
            return _statement_row(row, FinancialMetrics, url, "financial metrics snapshot", symbol)

        return await self._get_object(
            "/financial-metrics/snapshot",
            {"ticker": symbol},
            parse,
            ttl=METRICS_SNAPSHOT_TTL,
            what="the financial metrics snapshot",
            subject=symbol,
        )

    # ------------------------------------------------------------------ facts

    async def facts(self, ticker: str, concept: str) -> list[FactPoint]:
        raise Unavailable(
            "Financial Datasets does not serve raw XBRL facts.",
            hint="SEC EDGAR's companyfacts has them and needs no key; it is used when "
            f"{KEY_VARIABLE} is unset.",
        )

    # ------------------------------------------------------------------ filings

    async def filings(
        self, ticker: str, *, forms: list[str] | None = None, limit: int = 10
    ) -> list[Filing]:
        symbol = _ticker(ticker)
        params: dict[str, Any] = {"ticker": symbol, "limit": limit}
        if forms:
            params["filing_type"] = [f.strip().upper() for f in forms]

        def parse(data: dict[str, Any], url: str) -> list[Filing]:
            filings: list[Filing] = []
            for row in _rows(data.get("filings"), url, "filings"):
                fields = _known(row, Filing)
                fields["cik"] = _cik(row.get("cik")) or ""
                fields.setdefault("ticker", symbol)
                url_value = fields.get("url")
                if isinstance(url_value, str) and "primary_document" not in fields:
                    fields["primary_document"] = url_value.rsplit("/", 1)[-1] or None
                filings.append(_validate(Filing, fields, url, "filing"))
            return filings

        return await self._get_list(
            "/filings",
            params,
            parse,
            key="filings",
            ttl=None,
            limit=limit,
            what="filings",
            subject=symbol,
        )

    async def filing_section(
        self,
        ticker: str,
        *,
        form: str,
        item: str,
        year: int | None = None,
        accession_number: str | None = None,
    ) -> FilingSection:
        """One item of a 10-K, 10-Q or 8-K as text.

        The filing is first located in `/filings` (which also gives its dates); `/filings/items`
        is then asked for that accession number and the year of its report period.
        """
        symbol = _ticker(ticker)
        form = form.strip().upper()
        part, number = _parse_item(item, form)
        fd_item = f"Part-{_ARABIC.get(part, part)},Item-{number}" if part else f"Item-{number}"
        label = f"Part-{_ROMAN.get(part, part)},Item-{number}" if part else number

        filing = await self._locate_filing(symbol, form, year, accession_number)
        accession = accession_number or (filing.accession_number if filing else None)
        report_year = year
        if report_year is None and filing is not None:
            report_year = _year(filing.report_date) or _year(filing.filing_date)
        params: dict[str, Any] = {
            "ticker": symbol,
            "filing_type": form,
            "year": report_year,
            "accession_number": accession,
            "item": fd_item,
        }
        what = f"{form} item {label}"

        def parse(data: dict[str, Any], url: str) -> tuple[list[dict[str, Any]], str, str]:
            items = _rows(data.get("items"), url, "filing items")
            return items, str(data.get("accession_number") or ""), url

        items, served_accession, url = await self._get_object(
            "/filings/items", params, parse, ttl=FILING_ITEMS_TTL, what=what, subject=symbol
        )
        wanted = _item_key(fd_item)
        found: dict[str, Any] | None = None
        for candidate in items:
            names = (candidate.get("number"), candidate.get("name"))
            if any(isinstance(n, str) and _item_key(n) == wanted for n in names):
                found = candidate
                break
        if found is None and len(items) == 1:
            # We asked for exactly one item: a lone answer labelled in some other way (a title
            # rather than an item number) is that item, but one naming another item is not.
            lone = items[0]
            labels = (lone.get("number"), lone.get("name"))
            if not any(isinstance(n, str) and _item_key(n) is not None for n in labels):
                found = lone
        if found is None:
            available = [str(c.get("number") or c.get("name")) for c in items]
            raise NotFound(
                f"The {symbol} {form} has no item {label} at Financial Datasets.",
                hint=(f"Items present: {', '.join(available)}." if available else None),
            )
        accession = served_accession or accession or ""
        filing_date = filing.filing_date if filing else ""
        text = found.get("text")
        return FilingSection(
            ticker=symbol,
            filing_type=form,
            accession_number=accession,
            filing_date=filing_date,
            report_date=filing.report_date if filing else None,
            item=label,
            title=str(found.get("name") or found.get("number") or label),
            text=text if isinstance(text, str) else "",
            source=Source(
                provider=PROVIDER,
                url=url,
                form=form,
                accession_number=accession or None,
                filing_date=filing_date or None,
            ),
        )

    async def _locate_filing(
        self, symbol: str, form: str, year: int | None, accession: str | None
    ) -> Filing | None:
        wide = year is not None or accession is not None
        candidates = await self.filings(symbol, forms=[form], limit=20 if wide else 1)
        if accession:
            wanted = accession.replace("-", "")
            for filing in candidates:
                if filing.accession_number.replace("-", "") == wanted:
                    return filing
            return None  # the accession number alone still pins the filing at /filings/items
        if year is not None:
            for filing in candidates:
                if _year(filing.report_date) == year:
                    return filing
            for filing in candidates:
                if _year(filing.filing_date) == year:
                    return filing
            raise NotFound(
                f"Financial Datasets lists no {form} for {symbol} covering {year}.",
                hint="Check the year, or list the filings to see which exist.",
            )
        if not candidates:
            raise NotFound(f"Financial Datasets lists no {form} filings for {symbol}.")
        return candidates[0]

    # ------------------------------------------------------------------ ownership

    async def insider_trades(
        self, ticker: str, *, limit: int = 20, name: str | None = None
    ) -> list[InsiderTrade]:
        symbol = _ticker(ticker)
        params: dict[str, Any] = {"ticker": symbol, "limit": limit, "name": name}

        def parse(data: dict[str, Any], url: str) -> list[InsiderTrade]:
            trades: list[InsiderTrade] = []
            for row in _rows(data.get("insider_trades"), url, "insider trades"):
                fields = _known(row, InsiderTrade, drop=("source",))
                fields.setdefault("ticker", symbol)
                fields["source"] = Source(
                    provider=PROVIDER,
                    url=url,
                    form=_str_or_none(row.get("form_type")) or "4",
                    accession_number=_str_or_none(row.get("accession_number")),
                    filing_date=_str_or_none(row.get("filing_date")),
                )
                trades.append(_validate(InsiderTrade, fields, url, "insider trade"))
            return trades

        return await self._get_list(
            "/insider-trades",
            params,
            parse,
            key="insider_trades",
            ttl=INSIDER_TTL,
            limit=limit,
            what="insider trades",
            subject=symbol,
        )

    async def institutional_holdings(
        self,
        *,
        filer_cik: str | None = None,
        ticker: str | None = None,
        limit: int | None = 50,
        filer_name: str | None = None,
    ) -> list[InstitutionalHolding]:
        """13F positions: who holds `ticker`, or what one filer (by CIK or name) holds;
        `limit` None pages through all of them, 200 (the API's maximum) a page."""
        given = [v for v in (filer_cik, ticker, filer_name) if v]
        if len(given) != 1:
            raise DataError("Give exactly one of ticker, filer_cik or filer_name.")
        if filer_name:
            investors = await self.institutional_investors(filer_name)
            if not investors:
                raise NotFound(
                    f"No institutional filer at Financial Datasets matches {filer_name!r}.",
                    hint="Try a shorter prefix of the manager's name, or its CIK.",
                )
            filer_cik = investors[0]["cik"]
        params: dict[str, Any] = {"limit": MAX_HOLDINGS_PAGE if limit is None else limit}
        if ticker:
            subject = params["ticker"] = _ticker(ticker)
        else:
            subject = params["filer_cik"] = _cik(filer_cik) or str(filer_cik)

        def parse(data: dict[str, Any], url: str) -> list[InstitutionalHolding]:
            # Filer-mode rows omit the filer; the envelope (or our request) names it.
            envelope_cik = _cik(data.get("filer_cik")) or params.get("filer_cik")
            holdings: list[InstitutionalHolding] = []
            for row in _rows(data.get("institutional_holdings"), url, "institutional holdings"):
                fields = _known(row, InstitutionalHolding, drop=("source",))
                fields["filer_cik"] = _cik(row.get("filer_cik")) or envelope_cik
                fields["source"] = Source(
                    provider=PROVIDER,
                    url=url,
                    form=_str_or_none(row.get("form_type")) or "13F-HR",
                    accession_number=_str_or_none(row.get("accession_number")),
                    filing_date=_str_or_none(row.get("filing_date")),
                )
                holdings.append(_validate(InstitutionalHolding, fields, url, "13F holding"))
            return holdings

        return await self._get_list(
            "/institutional-holdings",
            params,
            parse,
            key="institutional_holdings",
            ttl=HOLDINGS_TTL,
            limit=limit,
            what="institutional holdings",
            subject=subject,
        )

    async def institutional_investors(self, name: str | None = None) -> list[dict[str, str]]:
        """13F filers whose name starts with `name`: `[{"cik": ..., "name": ...}]`."""
        params = {"name": name.strip() if name else None}

        def parse(data: dict[str, Any], url: str) -> list[dict[str, str]]:
            out: list[dict[str, str]] = []
            for row in _rows(data.get("investors"), url, "institutional investors"):
                cik = _cik(row.get("cik"))
                if cik:
                    out.append({"cik": cik, "name": str(row.get("name") or "")})
            return out

        return await self._get_object(
            "/institutional-holdings/investors",
            params,
            parse,
            ttl=HOLDINGS_TTL,
            what="institutional investors",
            subject=name,
        )

    # ------------------------------------------------------------------ market data

    async def prices(
        self, ticker: str, *, start_date: str, end_date: str, interval: str = "day"
    ) -> list[Price]:
        symbol = _ticker(ticker)
        start, end = _date_range(start_date, end_date)
        params = {"ticker": symbol, "interval": interval, "start_date": start, "end_date": end}
        return await self._price_rows("/prices", params, symbol, end)

    async def crypto_prices(
        self,
        ticker: str,
        *,
        start_date: str,
        end_date: str,
        interval: str = "day",
        interval_multiplier: int = 1,
    ) -> list[Price]:
        """Crypto bars; tickers look like `BTC-USD` or `BTC-ETH`."""
        symbol = _ticker(ticker)
        start, end = _date_range(start_date, end_date, widen=False)
        params = {
            "ticker": symbol,
            "interval": interval,
            "interval_multiplier": interval_multiplier,
            "start_date": start,
            "end_date": end,
        }
        return await self._price_rows("/crypto/prices", params, symbol, end)

    async def _price_rows(
        self, path: str, params: dict[str, Any], symbol: str, end: str
    ) -> list[Price]:
        # A closed window never changes; one that includes today is still moving.
        ttl = FOREVER if end < date.today().isoformat() else None

        def parse(data: dict[str, Any], url: str) -> list[Price]:
            prices: list[Price] = []
            for row in _rows(data.get("prices"), url, "prices"):
                fields = _known(row, Price)
                fields.setdefault("ticker", symbol)
                prices.append(_validate(Price, fields, url, "price"))
            return prices

        return await self._get_list(
            path, params, parse, key="prices", ttl=ttl, limit=None, what="prices", subject=symbol
        )

    async def price_snapshot(self, ticker: str) -> PriceSnapshot:
        return await self._snapshot("/prices/snapshot", _ticker(ticker))

    async def crypto_price_snapshot(self, ticker: str) -> PriceSnapshot:
        return await self._snapshot("/crypto/prices/snapshot", _ticker(ticker))

    async def _snapshot(self, path: str, symbol: str) -> PriceSnapshot:

        def parse(data: dict[str, Any], url: str) -> PriceSnapshot:
            snapshot = data.get("snapshot")
            if not isinstance(snapshot, dict) or snapshot.get("price") is None:
                raise NotFound(f"Financial Datasets has no current price for {symbol}.")
            fields = _known(snapshot, PriceSnapshot, drop=("source",))
            fields.setdefault("ticker", symbol)
            fields["source"] = Source(provider=PROVIDER, url=url)
            return _validate(PriceSnapshot, fields, url, "price snapshot")

        return await self._get_object(
            path, {"ticker": symbol}, parse, ttl=None, what="a price snapshot", subject=symbol
        )

    async def news(self, ticker: str, *, limit: int = 10) -> list[NewsItem]:
        symbol = _ticker(ticker)
        params: dict[str, Any] = {"ticker": symbol, "limit": limit}

        def parse(data: dict[str, Any], url: str) -> list[NewsItem]:
            items: list[NewsItem] = []
            for row in _rows(data.get("news"), url, "news"):
                fields = _known(row, NewsItem)
                fields.setdefault("ticker", symbol)
                items.append(_validate(NewsItem, fields, url, "news item"))
            return items

        return await self._get_list(
            "/news",
            params,
            parse,
            key="news",
            ttl=NEWS_TTL,
            limit=limit,
            what="news",
            subject=symbol,
        )

    async def earnings(
        self, ticker: str | None = None, *, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """Earnings releases and reports (8-K, 10-Q, 10-K), newest report period first.

        Without a ticker this is the market-wide feed. Records are returned as the API shapes
        them, each with a `source` added.
        """
        symbol = _ticker(ticker) if ticker else None
        params: dict[str, Any] = {"ticker": symbol, "limit": limit}

        def parse(data: dict[str, Any], url: str) -> list[dict[str, Any]]:
            return [_with_source(row, url) for row in _rows(data.get("earnings"), url, "earnings")]

        return await self._get_list(
            "/earnings",
            params,
            parse,
            key="earnings",
            ttl=EARNINGS_TTL,
            limit=limit,
            what="earnings",
            subject=symbol,
        )

    # ------------------------------------------------------------------ segments

    async def segments(
        self, ticker: str, *, period: Period = "annual", limit: int = 4, year: int | None = None
    ) -> list[dict[str, Any]]:
        """Revenue and other line items by business segment, product and geography.

        The nested shape varies by company, so records are returned as the API shapes them, each
        with a `source` added.
        """
        symbol = _ticker(ticker)
        if period == "ttm":
            raise DataError("Segment financials are reported annually or quarterly, not as TTM.")
        params: dict[str, Any] = {"ticker": symbol, "period": period, "limit": limit}

        def parse(data: dict[str, Any], url: str) -> list[dict[str, Any]]:
            rows = _rows(data.get("segmented_financials"), url, "segment financials")
            if year is not None:  # the API has no fiscal-year filter; keep that year's periods
                rows = [r for r in rows if str(r.get("report_period") or "")[:4] == str(year)]
            return [_with_source(row, url) for row in rows]

        return await self._get_list(
            "/financials/segments",
            params,
            parse,
            key="segmented_financials",
            ttl=SEGMENTS_TTL,
            limit=limit,
            what="segment financials",
            subject=symbol,
        )

    # ------------------------------------------------------------------ screener

    async def screener_filters(self) -> dict[str, Any]:
        """The screener's catalogue of fields and operators (fetched once per process)."""
        if self._screener_filters is None:
            data = await self._get_object(
                "/financials/search/screener/filters",
                None,
                lambda data, url: data,
                ttl=None,
                what="the screener's field list",
                subject=None,
            )
            self._screener_filters = data
        return self._screener_filters

    async def screener(
        self,
        filters: Sequence[Mapping[str, Any]],
        *,
        currency: str = "USD",
        limit: int = 25,
    ) -> tuple[list[dict[str, Any]], str]:
        """Run the screener with raw filters (`{"field", "operator", "value"}`).

        Returns the result rows and the URL they came from.
        """
        if not filters:
            raise DataError("The Financial Datasets screener needs at least one filter.")
        url = self._url("/financials/search/screener")
        payload = {"filters": [dict(f) for f in filters], "currency": currency, "limit": limit}
        try:
            raw = await self._http.post_json(url, payload)
        except DataError as exc:
            raise self._translate(exc, "screener results", None) from None
        data = _object(raw, url, "screener results")
        return _rows(data.get("search_results"), url, "screener results"), url

    async def screen(
        self,
        *,
        concept: str,
        period: str,
        unit: str = "USD",
        limit: int = 25,
        min_value: float | None = None,
        max_value: float | None = None,
    ) -> list[ScreenRow]:
        """Companies whose latest `concept` lies within the bounds.

        `concept` is a screener field (`revenue`, `net_margin` …) or a common XBRL concept mapped
        to one. The screener works on each company's latest figures: a `period` of annual,
        quarterly or ttm keeps only rows of that kind, and any other period (e.g. SEC-style
        CY2024) is not a filter here; each row's `period` says which report it came from.
        """
        field_name = _screen_field(concept)
        await self._check_screen_field(field_name)
        filters: list[dict[str, Any]] = []
        if min_value is not None:
            filters.append({"field": field_name, "operator": "gte", "value": min_value})
        if max_value is not None:
            filters.append({"field": field_name, "operator": "lte", "value": max_value})
        if not filters:
            raise DataError(
                "The Financial Datasets screener needs a bound: give min_value or max_value."
            )
        currency = unit.split("/")[0].upper()
        if not re.fullmatch(r"[A-Z]{3}", currency):
            currency = "USD"
        rows, _ = await self.screener(filters, currency=currency, limit=limit)
        wanted_period = period.strip().lower()
        out: list[ScreenRow] = []
        for row in rows:
            if wanted_period in _PERIOD_LABELS and row.get("period") not in (None, wanted_period):
                continue
            value = _number(row.get(field_name))
            if value is None:
                continue
            ticker = _str_or_none(row.get("ticker"))
            out.append(
                ScreenRow(
                    ticker=ticker,
                    # The screener answers with tickers only; the CIK stays empty unless sent.
                    cik=_cik(row.get("cik")) or "",
                    name=str(row.get("name") or ticker or ""),
                    value=value,
                    concept=field_name,
                    unit=unit,
                    period=_str_or_none(row.get("report_period"))
                    or _str_or_none(row.get("period")),
                    accession_number=_str_or_none(row.get("accession_number")),
                )
            )
        return out[:limit]

    async def _check_screen_field(self, field_name: str) -> None:
        # The original sent whatever field name it was given and surfaced a bare 400; check
        # against the catalogue so an unknown field gets suggestions instead.
        try:
            catalogue = await self.screener_filters()
        except DataError:
            return  # the screener itself will report what is wrong
        known = _catalogue_names(catalogue.get("metrics"))
        if known and field_name not in known:
            close = difflib.get_close_matches(field_name, sorted(known), n=5, cutoff=0.5)
            raise NotFound(
                f"The Financial Datasets screener has no field {field_name!r}.",
                hint=(f"Did you mean: {', '.join(close)}?" if close else None),
            )

    # ------------------------------------------------------------------ HTTP plumbing

    def _url(self, path: str) -> str:
        return f"{self.base_url}{path}"

    async def _get_object(
        self,
        path: str,
        params: Params | None,
        parse: Parse[R],
        *,
        ttl: float | None,
        what: str,
        subject: str | None,
    ) -> R:
        return await self._fetch(path, params, parse, ttl=ttl, what=what, subject=subject)

    async def _get_list(
        self,
        path: str,
        params: Params,
        parse: Parse[R],
        *,
        key: str,
        ttl: float | None,
        limit: int | None,
        what: str,
        subject: str | None,
    ) -> R:
        """GET a list endpoint, following `next_page_url` until `limit` records are in hand."""
        return await self._fetch(
            path, params, parse, ttl=ttl, what=what, subject=subject, key=key, limit=limit
        )

    async def _fetch(
        self,
        path: str,
        params: Params | None,
        parse: Parse[R],
        *,
        ttl: float | None,
        what: str,
        subject: str | None,
        key: str | None = None,
        limit: int | None = None,
    ) -> R:
        """GET, page when `key` is given, parse, and cache what parsed.

        Caching happens here rather than in HttpClient for two reasons: a reply is cached only
        once it has parsed into our records (a well-formed but wrong-shaped reply must not be
        served for a day), and a paged reply is cached whole under the first page's URL, since
        the later pages' cursors are short-lived and a cached first page would link to dead ones.
        """
        url = self._url(path)
        full = build_url(url, params)
        cached = self._cached(full, ttl)
        if cached is not None:
            try:
                return parse(cached, full)
            except UpstreamError:
                pass  # written by an older reader, perhaps; fetch afresh
        try:
            data = _object(await self._http.get_json(url, params=params), full, what)
            if key is not None:
                await self._follow_pages(data, full, key=key, limit=limit, what=what)
        except DataError as exc:
            raise self._translate(exc, what, subject) from None
        if key is not None and limit is not None:
            _trim(data, key, limit)
        result = parse(data, full)
        if self._cache is not None and ttl is not None:
            self._cache.put(full, full, json.dumps(data).encode())
        return result

    async def _follow_pages(
        self, data: dict[str, Any], first_url: str, *, key: str, limit: int | None, what: str
    ) -> None:
        next_url = data.pop("next_page_url", None)
        visited = {first_url}
        pages = 1
        while isinstance(next_url, str) and next_url and pages < MAX_PAGES:
            if limit is not None and _count(data, key) >= limit:
                break
            page_url = self._next_page(next_url, first_url)
            if page_url in visited:
                break  # a server that links a page to itself would loop forever
            visited.add(page_url)
            page = _object(await self._http.get_json(page_url), page_url, what)
            next_url = page.pop("next_page_url", None)
            _merge(data, page)
            pages += 1

    def _cached(self, full: str, ttl: float | None) -> dict[str, Any] | None:
        if self._cache is None or ttl is None:
            return None
        hit = self._cache.get(full, ttl)
        if hit is None:
            return None
        try:
            data = json.loads(hit.body)
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    def _next_page(self, next_url: str, origin_url: str) -> str:
        """Where to fetch the next page, never sending the key to a host we were not given."""
        if not urlsplit(next_url).scheme:
            return urljoin(origin_url, next_url)
        base = urlsplit(self.base_url)
        target = urlsplit(next_url)
        if (target.scheme, target.netloc) == (base.scheme, base.netloc):
            return next_url
        official = urlsplit(DEFAULT_BASE_URL)
        if (target.scheme, target.netloc) == (official.scheme, official.netloc):
            # Behind a proxy or mirror the API still links to itself: re-root onto our base.
            query = f"?{target.query}" if target.query else ""
            return f"{self.base_url}{target.path}{query}"
        raise UpstreamError(
            "Financial Datasets linked the next page to another host; it was not followed, so "
            "the API key is not sent there.",
            url=origin_url,
            body=next_url,
        )

    def _translate(self, exc: DataError, what: str, subject: str | None) -> DataError:
        """Turn a transport-level failure into one that says what to do about it."""
        about = f"{what} for {subject}" if subject else what
        if isinstance(exc, NotFound):
            return NotFound(
                self._scrub(f"Financial Datasets has no {about} (HTTP 404)."),
                hint=_TICKER_HINT if subject else None,
            )
        if not isinstance(exc, UpstreamError):
            return exc
        body = self._scrub(exc.body) if exc.body is not None else None
        detail = _server_message(body)
        said = f": {detail}" if detail else ""
        status = exc.status
        if status in (401, 403):
            return KeyRejected(
                f"Financial Datasets rejected the API key (HTTP {status}{said}).",
                status=status,
                url=exc.url,
                body=body,
                hint=f"Check {KEY_VARIABLE} (copy it again from your Financial Datasets "
                "dashboard), or unset it to use SEC EDGAR, which needs no key.",
            )
        if status == 402:
            return PlanRequired(
                f"This data needs a paid Financial Datasets plan: {about} was refused "
                f"(HTTP 402{said}).",
                status=status,
                url=exc.url,
                body=body,
                hint="Financial statements, filings and their sections, insider trades and 13F "
                "holdings also come from SEC EDGAR without any key: unset "
                f"{KEY_VARIABLE} to use it. Prices, news, segments and the screener need a "
                "Financial Datasets plan that includes them.",
            )
        message = self._scrub(exc.message)
        if detail and detail not in message:
            message = f"{message} {detail}"
        cls = RateLimited if isinstance(exc, RateLimited) else UpstreamError
        return cls(
            f"Could not get {about}: {message}",
            status=status,
            url=exc.url,
            body=body,
            hint=self._scrub(exc.hint) if exc.hint else None,
        )

    def _scrub(self, text: str) -> str:
        key = self._key.get_secret_value()
        return text.replace(key, "***") if key in text else text


# ---------------------------------------------------------------------- helpers

_TICKER_HINT = (
    "Check the ticker: Financial Datasets covers US-listed companies, and delisted or foreign "
    "tickers may be missing."
)


def _status_hint(status: int) -> str | None:
    if status == 429:
        return "Financial Datasets limits requests per plan; wait a minute and try again."
    if status >= 500:
        return "Financial Datasets is having trouble; try again later."
    return None


def _ticker(ticker: str) -> str:
    symbol = ticker.strip().upper()
    if not symbol:
        raise DataError("A ticker is needed.")
    return symbol


def _cik(value: Any) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    text = str(value).strip()
    if not text.isdigit():
        return None
    return text.zfill(10)


def _str_or_none(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _number(value: Any) -> int | float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return value
    if isinstance(value, str):
        # The screener's schema types its metric values as strings.
        try:
            number = float(value.replace(",", ""))
        except ValueError:
            return None
        return int(number) if number.is_integer() and "." not in value else number
    return None


def _year(day: str | None) -> int | None:
    if day and len(day) >= 4 and day[:4].isdigit():
        return int(day[:4])
    return None


def _date_range(start: str, end: str, *, widen: bool = True) -> tuple[str, str]:
    try:
        first = date.fromisoformat(start.strip())
        last = date.fromisoformat(end.strip())
    except ValueError:
        raise DataError(f"Dates must be YYYY-MM-DD (got start {start!r}, end {end!r}).") from None
    if widen and first >= last:
        # The API rejects empty windows; a week back makes "the price on day X" return X or the
        # trading day before it.
        first = last - timedelta(days=7)
    return first.isoformat(), last.isoformat()


def _statement_params(
    symbol: str, period: Period, limit: int, gte: str | None, lte: str | None
) -> dict[str, Any]:
    return {
        "ticker": symbol,
        "period": period,
        "limit": limit,
        "report_period_gte": gte,
        "report_period_lte": lte,
    }


def _object(raw: Any, url: str, what: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise UpstreamError(
            f"Financial Datasets sent {what} in an unexpected shape (not a JSON object).",
            url=url,
            body=json.dumps(raw)[:500],
        )
    return raw


def _rows(value: Any, url: str, what: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise UpstreamError(
            f"Financial Datasets sent {what} in an unexpected shape (not a list).",
            url=url,
            body=json.dumps(value)[:500],
        )
    return [row for row in value if isinstance(row, dict)]


def _known(row: Mapping[str, Any], model: type[Record], drop: Iterable[str] = ()) -> dict[str, Any]:
    """The row's fields that the model has: the API adds fields over time, our models forbid
    extras, and a new field must not break parsing."""
    names = set(model.model_fields) - set(drop)
    # A null is treated as absent so the model's default applies (e.g. currency "USD").
    return {k: v for k, v in row.items() if k in names and v is not None}


def _validate(model: type[T], fields: dict[str, Any], url: str, what: str) -> T:
    try:
        return model.model_validate(fields)
    except ValidationError as exc:
        raise _shape_error(what, url, fields, exc) from None


def _shape_error(
    what: str, url: str, row: Any, exc: ValidationError | None = None
) -> UpstreamError:
    detail = ""
    if exc is not None:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        detail = f" ({where}: {first.get('msg')})"
    return UpstreamError(
        f"Financial Datasets sent a {what} record we could not read{detail}.",
        url=url,
        body=json.dumps(row, default=str)[:500],
    )


def _statement_row(row: Mapping[str, Any], model: type[T], url: str, what: str, ticker: str) -> T:
    fields = _known(row, model, drop=("sources",))
    fields.setdefault("ticker", ticker)
    accession = _str_or_none(row.get("accession_number"))
    source = Source(provider=PROVIDER, url=url, accession_number=accession)
    base = set(StatementBase.model_fields)
    # Every reported number cites the request it came from (and its filing when known).
    fields["sources"] = {
        name: source for name, value in fields.items() if name not in base and value is not None
    }
    if not fields.get("fiscal_period") and fields.get("report_period"):
        fields["fiscal_period"] = fields["report_period"]
    return _validate(model, fields, url, what)


def _statement_rows(value: Any, model: type[T], url: str, what: str, ticker: str) -> list[T]:
    return [_statement_row(row, model, url, what, ticker) for row in _rows(value, url, what)]


def _with_source(row: dict[str, Any], url: str) -> dict[str, Any]:
    source = Source(
        provider=PROVIDER,
        url=url,
        form=_str_or_none(row.get("source_type")),
        accession_number=_str_or_none(row.get("accession_number")),
        filing_date=_str_or_none(row.get("filing_date")),
    )
    return {**row, "source": source.model_dump(exclude_none=True)}


def _count(data: Mapping[str, Any], key: str) -> int:
    value = data.get(key)
    if isinstance(value, list):
        return len(value)
    if isinstance(value, dict):
        # `/financials` nests three lists, one per statement; each holds one row per period.
        return max((len(v) for v in value.values() if isinstance(v, list)), default=0)
    return 0


def _merge(into: dict[str, Any], page: Mapping[str, Any]) -> None:
    for key, value in page.items():
        current = into.get(key)
        if isinstance(current, list) and isinstance(value, list):
            current.extend(value)
        elif isinstance(current, dict) and isinstance(value, dict):
            _merge(current, value)
        elif key not in into:
            into[key] = value


def _trim(data: dict[str, Any], key: str, limit: int) -> None:
    value = data.get(key)
    if isinstance(value, list):
        data[key] = value[:limit]
    elif isinstance(value, dict):
        for name, inner in value.items():
            if isinstance(inner, list):
                value[name] = inner[:limit]


def _server_message(body: str | None) -> str | None:
    """The API's own explanation from an error body (`{"error": ..., "message": ...}`)."""
    if not body:
        return None
    try:
        parsed = json.loads(body)
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    message = parsed.get("message") or parsed.get("detail") or parsed.get("error")
    return str(message).strip() if message else None


_ITEM_NUMBER = re.compile(r"\d{1,2}[A-C]?(\.\d{2})?")
# Section names people use instead of numbers, for 10-K (item) and 10-Q (part, item).
_TEN_K_NAMES = {
    "BUSINESS": "1",
    "RISK FACTORS": "1A",
    "PROPERTIES": "2",
    "LEGAL PROCEEDINGS": "3",
    "MD&A": "7",
    "MANAGEMENT'S DISCUSSION AND ANALYSIS": "7",
    "MARKET RISK": "7A",
    "FINANCIAL STATEMENTS": "8",
    "CONTROLS AND PROCEDURES": "9A",
}
_TEN_Q_NAMES = {
    "FINANCIAL STATEMENTS": ("1", "1"),
    "MD&A": ("1", "2"),
    "MANAGEMENT'S DISCUSSION AND ANALYSIS": ("1", "2"),
    "MARKET RISK": ("1", "3"),
    "CONTROLS AND PROCEDURES": ("1", "4"),
    "LEGAL PROCEEDINGS": ("2", "1"),
    "RISK FACTORS": ("2", "1A"),
}


def _split_item(label: str) -> tuple[str | None, str]:
    """("1", "2") for "Part I, Item 2" or "Part-1,Item-2"; (None, "1A") for "Item 1A" or "1a"."""
    text = label.strip().upper().replace("_", " ").replace("\u2019", "'")
    part: str | None = None
    match = re.match(r"^PART[\s\-]*([IV]+|\d)\b[\s,\-]*(.*)$", text)
    if match:
        part = _ARABIC.get(match.group(1), match.group(1))
        text = match.group(2)
    return part, re.sub(r"^ITEM[\s\-.]*", "", text).strip().rstrip(".")


def _parse_item(item: str, form: str) -> tuple[str | None, str]:
    part, text = _split_item(item)
    ten_q = form.startswith("10-Q")
    if part is None and not _ITEM_NUMBER.fullmatch(text):
        if ten_q and text in _TEN_Q_NAMES:
            return _TEN_Q_NAMES[text]
        if not ten_q and text in _TEN_K_NAMES:
            return None, _TEN_K_NAMES[text]
    if not _ITEM_NUMBER.fullmatch(text):
        raise DataError(
            f"Cannot read the item {item!r}; use an item number such as 1A or 7, "
            "Part-I,Item-2 for a 10-Q, or 2.02 for an 8-K."
        )
    if part is None and ten_q:
        # 10-Q items repeat across parts; default to where the commonly wanted ones live
        # (Part I: financial statements, MD&A, market risk, controls; Part II: risk factors).
        part = "2" if text in {"1A", "5", "6"} else "1"
    return part, text


def _item_key(label: str) -> str | None:
    """A comparable key for an item label, or None when the label is not an item number."""
    part, text = _split_item(label)
    if not _ITEM_NUMBER.fullmatch(text):
        return None
    return f"{part or ''}|{text}"


def _screen_field(concept: str) -> str:
    text = concept.strip()
    if ":" in text:
        local = text.split(":", 1)[1]
        mapped = _CONCEPT_FIELDS.get(local)
        if mapped is None:
            raise NotFound(
                f"The Financial Datasets screener has no equivalent of {text}.",
                hint="Use a screener field such as revenue, net_income or gross_margin, or "
                "screen XBRL concepts with SEC EDGAR (no key needed).",
            )
        return mapped
    return _CONCEPT_FIELDS.get(text, text)


def _catalogue_names(metrics: Any) -> set[str]:
    """Every field name mentioned in the screener catalogue, whatever its nesting."""
    names: set[str] = set()
    if isinstance(metrics, dict):
        for key, value in metrics.items():
            names.add(str(key))
            names |= _catalogue_names(value)
    elif isinstance(metrics, list):
        for value in metrics:
            if isinstance(value, str):
                names.add(value)
            elif isinstance(value, dict):
                for key in ("field", "name", "key", "id"):
                    if isinstance(value.get(key), str):
                        names.add(value[key])
                names |= _catalogue_names(
                    {k: v for k, v in value.items() if isinstance(v, dict | list)}
                )
    return names
