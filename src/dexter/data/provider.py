"""The interface every financial data source implements, and the capabilities it declares."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

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

if TYPE_CHECKING:
    from dexter.data.sec.filing_docs import DocumentText, FilingDocuments
    from dexter.data.sec.fulltext import SearchPage


class Capability(StrEnum):
    STATEMENTS = "financial statements"
    METRICS = "financial metrics"
    FACTS = "XBRL facts"
    FILINGS = "filings"
    FILING_ITEMS = "filing sections"
    INSIDER_TRADES = "insider trades"
    HOLDINGS = "institutional holdings"
    PRICES = "stock prices"
    PRICE_SNAPSHOT = "price snapshot"
    NEWS = "company news"
    SEGMENTS = "segment financials"
    SCREEN = "stock screening"
    DOCUMENTS = "filing documents"
    FULL_TEXT_SEARCH = "full-text search"


class FinanceProvider(Protocol):
    """A data source. Methods for capabilities it does not declare raise `Unavailable`."""

    name: str
    capabilities: frozenset[Capability]

    async def company(self, query: str) -> Company: ...

    async def income_statements(
        self,
        ticker: str,
        *,
        period: Period = "annual",
        limit: int = 4,
        report_period_gte: str | None = None,
        report_period_lte: str | None = None,
    ) -> list[IncomeStatement]: ...

    async def balance_sheets(
        self,
        ticker: str,
        *,
        period: Period = "annual",
        limit: int = 4,
        report_period_gte: str | None = None,
        report_period_lte: str | None = None,
    ) -> list[BalanceSheet]: ...

    async def cash_flow_statements(
        self,
        ticker: str,
        *,
        period: Period = "annual",
        limit: int = 4,
        report_period_gte: str | None = None,
        report_period_lte: str | None = None,
    ) -> list[CashFlowStatement]: ...

    async def financial_metrics(
        self, ticker: str, *, period: Period = "annual", limit: int = 4
    ) -> list[FinancialMetrics]: ...

    async def facts(self, ticker: str, concept: str) -> list[FactPoint]: ...

    async def filings(
        self, ticker: str, *, forms: list[str] | None = None, limit: int = 10
    ) -> list[Filing]: ...

    async def filing_section(
        self,
        ticker: str,
        *,
        form: str,
        item: str,
        year: int | None = None,
        accession_number: str | None = None,
    ) -> FilingSection: ...

    async def insider_trades(self, ticker: str, *, limit: int = 20) -> list[InsiderTrade]: ...

    async def institutional_holdings(
        self, *, filer_cik: str | None = None, ticker: str | None = None, limit: int | None = 50
    ) -> list[InstitutionalHolding]: ...

    async def prices(
        self, ticker: str, *, start_date: str, end_date: str, interval: str = "day"
    ) -> list[Price]: ...

    async def price_snapshot(self, ticker: str) -> PriceSnapshot: ...

    async def news(self, ticker: str, *, limit: int = 10) -> list[NewsItem]: ...

    async def segments(
        self, ticker: str, *, period: Period = "annual", limit: int = 4, year: int | None = None
    ) -> list[dict[str, Any]]: ...

    async def screen(
        self,
        *,
        concept: str,
        period: str,
        unit: str = "USD",
        limit: int = 25,
        min_value: float | None = None,
        max_value: float | None = None,
    ) -> list[ScreenRow]: ...

    async def aclose(self) -> None: ...


class DocumentsProvider(Protocol):
    """A source that can open any filing's documents and search filings' full text (the
    DOCUMENTS and FULL_TEXT_SEARCH capabilities)."""

    async def filing_documents(self, company: str, accession_number: str) -> FilingDocuments: ...

    async def filing_document(
        self, company: str, accession_number: str, *, document: str | None = None
    ) -> DocumentText: ...

    async def full_text_search(
        self,
        query: str,
        *,
        forms: list[str] | None = None,
        start_date: str | None = None,
        end_date: str | None = None,
        company: str | None = None,
        offset: int = 0,
    ) -> SearchPage: ...
