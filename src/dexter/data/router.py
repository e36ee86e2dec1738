"""Pick, per capability, the configured provider that can serve it.

Providers are tried in priority order (Financial Datasets when keyed, then SEC EDGAR). When the
preferred provider refuses for account reasons (bad key, plan without this data), the next one
that has the capability is used instead; when nothing configured can answer, the error says what
is missing and how to enable it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import date
from typing import TYPE_CHECKING, Any, TypeVar, cast

from dexter.data.errors import NotFound, Unavailable, UnknownCompany, UpstreamError
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
    ScreenRow,
)
from dexter.data.provider import Capability, DocumentsProvider, FinanceProvider

if TYPE_CHECKING:
    from dexter.data.sec.filing_docs import DocumentText, FilingDocuments
    from dexter.data.sec.fulltext import SearchPage

T = TypeVar("T")
P = TypeVar("P")

# Account-level refusals: another provider may well be able to answer.
_FALLBACK_STATUSES = frozenset({401, 402, 403})

ENABLE_HINTS: dict[Capability, str] = {
    Capability.PRICES: "Set FINANCIAL_DATASETS_API_KEY to enable price data (or leave "
    "DEXTER_YAHOO_URL unset for key-less Yahoo Finance prices).",
    Capability.PRICE_SNAPSHOT: "Set FINANCIAL_DATASETS_API_KEY to enable live prices (or leave "
    "DEXTER_YAHOO_URL unset for key-less Yahoo Finance quotes).",
    Capability.NEWS: "Set FINANCIAL_DATASETS_API_KEY to enable company news.",
    Capability.SEGMENTS: "Set FINANCIAL_DATASETS_API_KEY to enable segment financials.",
}


class DataRouter:
    """The one object tools and the CLI talk to; it owns its providers' lifetimes."""

    def __init__(self, providers: Sequence[FinanceProvider], *, as_of: date | None = None) -> None:
        self.providers = list(providers)
        # The research date the providers were built with (None = today): shown to tools so
        # they can say their data stops there.
        self.as_of = as_of

    def provider_of_type(self, kind: type[P]) -> P | None:
        """The first configured provider of one class (e.g. the SEC client for web_fetch)."""
        return next((p for p in self.providers if isinstance(p, kind)), None)

    def names(self) -> list[str]:
        return [p.name for p in self.providers]

    def supports(self, capability: Capability) -> bool:
        return any(capability in p.capabilities for p in self.providers)

    def _claimant(self, company: str | None) -> FinanceProvider | None:
        """The provider that owns this company name outright (e.g. an LEI for the ESEF
        reports), if any: such a provider answers for its own companies and no others."""
        if company is None:
            return None
        for provider in self.providers:
            claims = getattr(provider, "claims", None)
            if claims is not None and claims(company):
                return provider
        return None

    def _candidates(self, capability: Capability) -> list[FinanceProvider]:
        found = [
            p
            for p in self.providers
            if capability in p.capabilities and getattr(p, "claims", None) is None
        ]
        if not found:
            configured = ", ".join(self.names()) or "none"
            raise Unavailable(
                f"{capability.value.capitalize()}: not available from the configured data "
                f"sources ({configured}).",
                hint=ENABLE_HINTS.get(capability),
            )
        return found

    async def _route(
        self,
        capability: Capability,
        call: Callable[[FinanceProvider], Awaitable[T]],
        company: str | None = None,
    ) -> T:
        owner = self._claimant(company)
        if owner is not None:
            if capability not in owner.capabilities:
                raise Unavailable(
                    f"{capability.value.capitalize()}: not available for {company} from "
                    f"{owner.name}, which serves "
                    + ", ".join(sorted(c.value for c in owner.capabilities))
                    + ".",
                    hint="Name the company by its ticker or CIK instead if it also files with "
                    "the SEC.",
                )
            return await call(owner)
        candidates = self._candidates(capability)
        for index, provider in enumerate(candidates):
            try:
                return await call(provider)
            except UpstreamError as error:
                last = index == len(candidates) - 1
                if last or error.status not in _FALLBACK_STATUSES:
                    raise
        raise AssertionError("unreachable: the last candidate either returns or raises")

    async def company(self, query: str) -> Company:
        """Resolve a ticker, CIK or name with the first provider that knows it."""
        if not self.providers:
            raise Unavailable("No data sources are configured.")
        owner = self._claimant(query)
        if owner is not None:
            return await owner.company(query)
        missing: NotFound | None = None
        for provider in self.providers:
            if getattr(provider, "claims", None) is not None:
                continue  # it answers only for the names it claims, asked above
            try:
                return await provider.company(query)
            except NotFound as error:
                # Prefer the error with suggestions (the SEC table knows every filer's name).
                if missing is None or (isinstance(error, UnknownCompany) and error.suggestions):
                    missing = error
            except UpstreamError as error:
                # A refused key at one provider should not hide a provider that needs none.
                if error.status not in _FALLBACK_STATUSES or provider is self.providers[-1]:
                    raise
        if missing is None:
            raise Unavailable(f"No configured data source could look up {query!r}.")
        raise missing

    async def income_statements(self, ticker: str, **kw: Any) -> list[IncomeStatement]:
        return await self._route(
            Capability.STATEMENTS, lambda p: p.income_statements(ticker, **kw), ticker
        )

    async def balance_sheets(self, ticker: str, **kw: Any) -> list[BalanceSheet]:
        return await self._route(
            Capability.STATEMENTS, lambda p: p.balance_sheets(ticker, **kw), ticker
        )

    async def cash_flow_statements(self, ticker: str, **kw: Any) -> list[CashFlowStatement]:
        return await self._route(
            Capability.STATEMENTS, lambda p: p.cash_flow_statements(ticker, **kw), ticker
        )

    async def financial_metrics(
        self, ticker: str, *, period: Period = "annual", limit: int = 4
    ) -> list[FinancialMetrics]:
        return await self._route(
            Capability.METRICS,
            lambda p: p.financial_metrics(ticker, period=period, limit=limit),
            ticker,
        )

    async def facts(self, ticker: str, concept: str) -> list[FactPoint]:
        return await self._route(Capability.FACTS, lambda p: p.facts(ticker, concept), ticker)

    async def filings(self, ticker: str, **kw: Any) -> list[Filing]:
        return await self._route(Capability.FILINGS, lambda p: p.filings(ticker, **kw), ticker)

    async def filing_section(self, ticker: str, **kw: Any) -> FilingSection:
        return await self._route(
            Capability.FILING_ITEMS, lambda p: p.filing_section(ticker, **kw), ticker
        )

    async def filing_documents(self, company: str, accession_number: str) -> FilingDocuments:
        return await self._route(
            Capability.DOCUMENTS,
            lambda p: cast(DocumentsProvider, p).filing_documents(company, accession_number),
        )

    async def filing_document(
        self, company: str, accession_number: str, *, document: str | None = None
    ) -> DocumentText:
        return await self._route(
            Capability.DOCUMENTS,
            lambda p: cast(DocumentsProvider, p).filing_document(
                company, accession_number, document=document
            ),
        )

    async def full_text_search(self, query: str, **kw: Any) -> SearchPage:
        return await self._route(
            Capability.FULL_TEXT_SEARCH,
            lambda p: cast(DocumentsProvider, p).full_text_search(query, **kw),
        )

    async def insider_trades(self, ticker: str, **kw: Any) -> list[InsiderTrade]:
        return await self._route(
            Capability.INSIDER_TRADES, lambda p: p.insider_trades(ticker, **kw), ticker
        )

    async def institutional_holdings(self, **kw: Any) -> list[InstitutionalHolding]:
        return await self._route(Capability.HOLDINGS, lambda p: p.institutional_holdings(**kw))

    async def prices(self, ticker: str, **kw: Any) -> list[Price]:
        # As of a day, no provider may show a later bar (a keyed vendor does not know the date).
        last = self.as_of.isoformat() if self.as_of else None
        if last and str(kw.get("end_date") or last)[:10] > last:
            kw["end_date"] = last
        bars = await self._route(Capability.PRICES, lambda p: p.prices(ticker, **kw))
        return [bar for bar in bars if not last or bar.time[:10] <= last]

    async def price_snapshot(self, ticker: str) -> PriceSnapshot:
        if self.as_of is not None and not self.supports(Capability.PRICES):
            raise Unavailable(f"No price history to read a price as of {self.as_of} from.")
        if self.as_of is not None:
            return await self._close_as_of(ticker, self.as_of)
        return await self._route(Capability.PRICE_SNAPSHOT, lambda p: p.price_snapshot(ticker))

    async def _close_as_of(self, ticker: str, day: date) -> PriceSnapshot:
        """A live quote would look past the as-of day: the day's close (or the last before)."""
        start = date.fromordinal(day.toordinal() - 14).isoformat()
        bars = await self.prices(ticker, start_date=start, end_date=day.isoformat())
        closes = [bar for bar in bars if bar.close is not None]
        if not closes:
            raise NotFound(f"No close for {ticker} in the two weeks to {day}.")
        last, previous = closes[-1], closes[-2].close if len(closes) > 1 else None
        assert last.close is not None
        change = last.close - previous if previous else None
        return PriceSnapshot(
            ticker=last.ticker,
            price=last.close,
            day_change=round(change, 6) if change is not None else None,
            day_change_percent=(
                round(change / previous * 100, 4) if change is not None and previous else None
            ),
            time=last.time[:10],
            currency=last.currency,
        )

    async def news(self, ticker: str, **kw: Any) -> list[NewsItem]:
        return await self._route(Capability.NEWS, lambda p: p.news(ticker, **kw), ticker)

    async def segments(self, ticker: str, **kw: Any) -> list[dict[str, Any]]:
        return await self._route(Capability.SEGMENTS, lambda p: p.segments(ticker, **kw))

    async def screen(self, **kw: Any) -> list[ScreenRow]:
        return await self._route(Capability.SCREEN, lambda p: p.screen(**kw))

    async def aclose(self) -> None:
        for provider in self.providers:
            await provider.aclose()
