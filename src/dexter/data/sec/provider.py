"""SEC EDGAR as a FinanceProvider: the key-less default.

All HTTP goes through one rate-limited, caching `HttpClient` (SEC allows 10 requests/second per
user and requires a declared user agent). Parsing lives in the sibling modules; this class only
decides what to fetch, caches parsed documents for the life of the process, and attaches sources.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from dexter.data.cache import FOREVER, DiskCache
from dexter.data.errors import DataError, NotFound, Unavailable, UnknownCompany, UpstreamError
from dexter.data.http import HttpClient
from dexter.data.models import (
    BalanceSheet,
    CashFlowStatement,
    Company,
    FactPoint,
    Filing,
    FilingList,
    FilingSection,
    FinancialMetrics,
    HistoryGap,
    Holdings,
    IncomeStatement,
    InsiderTrade,
    InsiderTrades,
    NewsItem,
    Period,
    Price,
    PriceSnapshot,
    ScreenRow,
    Source,
)
from dexter.data.provider import Capability
from dexter.data.sec import urls
from dexter.data.sec.history import XBRL_HISTORY, before_edgar, missing_history
from dexter.data.settings import DataSettings
from dexter.data.singleflight import SingleFlight

# The parsers for each kind of SEC document (facts, filings, Form 4, 13F, frames, full-text
# search, HTML text) are imported by the methods that use them: building the router, which every
# run does, then costs none of them.
if TYPE_CHECKING:
    import httpx2

    from dexter.data.ratelimit import Limiter
    from dexter.data.sec.facts import FactsIndex
    from dexter.data.sec.filing_docs import DocumentEntry, DocumentText, FilingDocuments
    from dexter.data.sec.fulltext import SearchPage
    from dexter.data.sec.submissions import SubmissionsPage
    from dexter.data.sec.tickers import TickerTable
    from dexter.data.shared_cache import SharedBodyCache

T = TypeVar("T")

PROVIDER = "SEC EDGAR"
TICKERS_TTL = 24 * 3600.0
SUBMISSIONS_TTL = 3600.0
FACTS_TTL = 3600.0
FRAMES_TTL = 24 * 3600.0
# Pages outside /Archives/ (browse-edgar, current feeds) change; Archives documents never do.
SEC_PAGE_TTL = 15 * 60.0
MAX_OLDER_PAGES = 5
MAX_FORM4_FILINGS = 40
# Insider transactions are reported on Form 4 (within two business days) and Form 5 (the
# annual catch-up); amendments (4/A, 5/A) are read too.
OWNERSHIP_FORMS = ("4", "5")

# The name of the SEC's limit and cache entries in the team database, shared by every client.
SHARED_LIMIT_NAME = "sec"

SEC_403_HINT = (
    "The SEC refuses requests without a declared user agent and blocks clients that send more "
    "than 10 requests per second (for about ten minutes). Check DEXTER_SEC_USER_AGENT is a name "
    "and an email address, and wait before retrying if you may have exceeded the limit."
)


def _hint(status: int) -> str | None:
    return SEC_403_HINT if status in (403, 429) else None


class SecEdgarProvider:
    name = PROVIDER
    capabilities = frozenset(
        {
            Capability.STATEMENTS,
            Capability.METRICS,
            Capability.FACTS,
            Capability.FILINGS,
            Capability.FILING_ITEMS,
            Capability.INSIDER_TRADES,
            Capability.HOLDINGS,
            Capability.SCREEN,
            Capability.DOCUMENTS,
            Capability.FULL_TEXT_SEARCH,
            Capability.SEGMENTS,
        }
    )

    def __init__(
        self,
        settings: DataSettings,
        *,
        transport: httpx2.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._settings = settings
        self._transport = transport
        self._sleep = sleep
        self.as_of = settings.as_of.isoformat() if settings.as_of else None
        self._client: HttpClient | None = None
        # Parsed documents, shared by concurrent callers: one fetch per key per process.
        self._flights = SingleFlight()
        # Filers found outside the ticker table, by the ticker we gave them.
        self._resolved: dict[str, Company] = {}
        # With an as-of date, per company: each concept filed only later -> its first filing day.
        self._withheld: dict[str, dict[str, str]] = {}

    # -- plumbing ----------------------------------------------------------------------------

    @property
    def http(self) -> HttpClient:
        if self._client is None:
            agent = self._settings.require_sec_user_agent()
            self._client = HttpClient(
                PROVIDER,
                headers={"User-Agent": agent, "Accept-Encoding": "gzip, deflate"},
                rate_per_second=self._settings.sec_rate,
                limiter=self._shared_limiter(),
                cache=DiskCache(self._settings.cache_dir / "sec"),
                shared_cache=self._shared_cache(),
                transport=self._transport,
                sleep=self._sleep,
                error_hint=_hint,
            )
        return self._client

    def _shared_limiter(self) -> Limiter | None:
        """In team mode, the one SEC limit every process and machine on the database shares:
        the SEC counts requests per user agent, not per worker."""
        url = self._settings.team_database_url
        if url is None:
            return None
        from dexter.data.shared_ratelimit import SharedRateLimiter

        return SharedRateLimiter(url, SHARED_LIMIT_NAME, self._settings.sec_rate)

    def _shared_cache(self) -> SharedBodyCache | None:
        """In team mode, bodies fetched by any machine, behind this machine's disk cache: each
        document costs the team's shared SEC budget once, not once per machine."""
        url = self._settings.team_database_url
        if url is None:
            return None
        from dexter.data.shared_cache import SharedBodyCache

        return SharedBodyCache(url, SHARED_LIMIT_NAME)

    async def aclose(self) -> None:
        self._flights.cancel()
        if self._client is not None:
            await self._client.aclose()

    async def _once(self, key: str, load: Callable[[], Awaitable[T]]) -> T:
        return await self._flights.once(key, load)

    @property
    def data_url(self) -> str:
        """The data.sec.gov base in use (a mirror's in tests)."""
        return self._settings.sec_data_url

    @property
    def www_url(self) -> str:
        """The www.sec.gov base in use (filing links point here)."""
        return self._settings.sec_www_url

    @property
    def _data(self) -> str:
        return self._settings.sec_data_url

    @property
    def _www(self) -> str:
        return self._settings.sec_www_url

    async def _tickers(self) -> TickerTable:
        from dexter.data.sec.tickers import TickerTable

        async def load() -> TickerTable:
            data = await self.http.get_json(urls.company_tickers(self._www), ttl=TICKERS_TTL)
            return TickerTable.from_json(data)

        return await self._once("tickers", load)

    async def _submissions(self, cik: str) -> dict[str, Any]:
        async def load() -> dict[str, Any]:
            try:
                data = await self.http.get_json(
                    urls.submissions(cik, self._data), ttl=SUBMISSIONS_TTL
                )
            except NotFound:
                raise NotFound(
                    f"The SEC answered 'not found' (HTTP 404) for the filing history of CIK "
                    f"{int(cik)} ({urls.submissions(cik, self._data)}); it gives no reason.",
                    hint="Check the CIK; a company's CIK is on its EDGAR page.",
                ) from None
            if not isinstance(data, dict):
                raise UpstreamError("SEC submissions JSON is not an object.")
            return data

        return await self._once(f"submissions:{cik}", load)

    async def _facts(self, company: Company) -> FactsIndex:
        from dexter.data.sec.facts import index_facts

        async def load() -> FactsIndex:
            url = urls.companyfacts(company.cik, self._data)
            try:
                data = await self.http.get_json(url, ttl=FACTS_TTL)
            except NotFound:
                raise NotFound(
                    f"The SEC answered 'not found' (HTTP 404) for the XBRL company facts of "
                    f"{company.name} ({company.ticker}) at {url}; it gives no reason.",
                    hint="Funds, trusts and some foreign filers file no XBRL financial data; "
                    f"their documents can still be read (`dexter data filings {company.ticker}`).",
                ) from None
            if self.as_of is not None:
                data, withheld = await asyncio.to_thread(facts_filed_by, data, self.as_of)
                self._withheld[company.cik] = withheld
            # Indexing a multi-megabyte document takes a moment; keep the event loop free.
            return await asyncio.to_thread(index_facts, data)

        return await self._once(f"facts:{company.cik}", load)

    async def companyfacts_document(self, ticker: str) -> tuple[Company, dict[str, Any]]:
        """The company's whole companyfacts document, NOT cut at the as-of date: for callers
        that cut it at several dates themselves (point-in-time valuation, see valuation.py)."""
        company = await self.company(ticker)

        async def load() -> dict[str, Any]:
            url = urls.companyfacts(company.cik, self._data)
            try:
                data = await self.http.get_json(url, ttl=FACTS_TTL)
            except NotFound:
                raise NotFound(
                    f"The SEC has no XBRL company facts for {company.name} ({company.ticker}).",
                    hint="Funds, trusts and some foreign filers file no XBRL financial data.",
                ) from None
            if not isinstance(data, dict):
                raise UpstreamError("SEC companyfacts JSON is not an object.", url=url)
            return data

        return company, await self._once(f"companyfacts:{company.cik}", load)

    async def fetch_sec_url(self, url: str) -> bytes:
        """GET any sec.gov URL through this client (user agent, shared limiter, retries),
        pointed at the configured base URLs; Archives documents are cached for good."""
        target = urls.rebase_sec_url(
            url,
            data_base=self._data,
            www_base=self._www,
            efts_base=self._settings.sec_efts_url,
        )
        ttl = FOREVER if "/Archives/" in target else SEC_PAGE_TTL
        return await self.http.get_bytes(target, ttl=ttl)

    # -- companies and statements ------------------------------------------------------------

    async def company(self, query: str) -> Company:
        """Ticker, CIK or name. Filers missing from today's ticker table (delisted, acquired,
        funds, private issuers) resolve by CIK from their submissions file, and by name through
        EDGAR's company lookup."""
        from dexter.data.sec.tickers import cik_digits

        table = await self._tickers()
        try:
            return table.resolve(query)
        except UnknownCompany as unknown:
            known = self._resolved.get(query.strip().upper())
            if known is not None:
                return known
            digits = cik_digits(query)
            if digits:
                found: Company | None = await self._company_by_cik(digits, unknown)
            else:
                found = await self._company_by_name(query)
                if found is None:
                    found = await self._company_by_former_name(query, table)
            if found is None:
                raise
            # Calls made later with the ticker this returned must find the company again.
            self._resolved[found.ticker.upper()] = found
            return found

    async def _company_by_cik(self, cik: str, unknown: UnknownCompany) -> Company:
        from dexter.data.sec.submissions import company_info

        try:
            data = await self._submissions(urls.pad_cik(cik))
        except NotFound:
            raise unknown from None
        info = company_info(data)
        # No ticker today: the CIK stands in, so every call made with it resolves again here.
        ticker = info.tickers[0] if info.tickers else str(int(info.cik))
        return Company(ticker=ticker.upper(), cik=info.cik, name=info.name)

    async def _company_by_name(self, name: str) -> Company | None:
        from dexter.data.sec.fulltext import search_url
        from dexter.data.sec.tickers import normalise_name

        url = search_url(self._settings.sec_efts_url)
        try:
            data = await self.http.get_json(url, params={"keysTyped": name}, ttl=TICKERS_TTL)
        except DataError:
            return None  # the lookup is a courtesy; the ticker table's suggestions still stand
        hits = (data.get("hits") or {}).get("hits") if isinstance(data, dict) else None
        wanted = normalise_name(name)
        for hit in hits or []:
            source = hit.get("_source") if isinstance(hit, dict) else None
            cik = str(hit.get("_id") or "") if isinstance(hit, dict) else ""
            if not isinstance(source, dict) or not cik.isdigit():
                continue
            entity = str(source.get("entity") or "")
            if wanted and normalise_name(entity).startswith(wanted):
                tickers = str(source.get("tickers") or "").replace(" ", "").split(",")
                ticker = tickers[0] if tickers and tickers[0] else str(int(cik))
                return Company(ticker=ticker.upper(), cik=urls.pad_cik(cik), name=entity)
        return None

    async def _company_by_former_name(self, name: str, table: TickerTable) -> Company | None:
        """A name the company no longer uses ("Tesla Motors", "Apple Computer"): the few largest
        filers whose name today starts with the same word, checked against the former names in
        their submissions (a request each, made only when nothing else matched)."""
        from dexter.data.sec.submissions import company_info
        from dexter.data.sec.tickers import normalise_name

        wanted = normalise_name(name)
        for candidate in table.sharing_first_word(name):
            try:
                info = company_info(await self._submissions(candidate.cik))
            except DataError:
                continue  # no history to check; the ticker table's suggestions still stand
            if any(normalise_name(former) == wanted for former in info.former_names):
                return candidate
        return None

    async def _statements(
        self, ticker: str, statement: Literal["income", "balance", "cashflow"], **kw: Any
    ) -> list[Any]:
        company = await self.company(ticker)
        index = await self._facts(company)
        if self.as_of is not None and not index.has_financials:
            raise self._nothing_filed_yet(company)
        return list(index.statements(ticker=company.ticker, statement=statement, **kw))

    def _nothing_filed_yet(self, company: Company, concept: str | None = None) -> NotFound:
        """The as-of date is before the company filed any XBRL figures (or this concept): said
        with the day it first did, instead of "has no XBRL data", which it has."""
        withheld = self._withheld.get(company.cik, {})
        if concept is not None:
            key = next((k for k in withheld if _concept_matches(k, concept)), None)
            if key is None:
                raise AssertionError("only called for a concept that was withheld")
            return NotFound(
                f"{company.name} filed no {key} values on or before the as-of date {self.as_of}; "
                f"the first were filed on {withheld[key]}.",
                hint="Research as of a date sees only what was filed by then.",
            )
        financial = [day for key, day in withheld.items() if _is_financial(key)]
        first = f"; its first were filed on {min(financial)}" if financial else ""
        return NotFound(
            f"Nothing {company.name} filed on or before the as-of date {self.as_of} carries XBRL "
            f"financial data{first}.",
            hint=XBRL_HISTORY,
        )

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
            ticker,
            "income",
            period=period,
            limit=limit,
            report_period_gte=report_period_gte,
            report_period_lte=report_period_lte,
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
            ticker,
            "balance",
            period=period,
            limit=limit,
            report_period_gte=report_period_gte,
            report_period_lte=report_period_lte,
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
            ticker,
            "cashflow",
            period=period,
            limit=limit,
            report_period_gte=report_period_gte,
            report_period_lte=report_period_lte,
        )

    async def financial_metrics(
        self, ticker: str, *, period: Period = "annual", limit: int = 4
    ) -> list[FinancialMetrics]:
        from dexter.data.metrics import compute_metrics

        # Earlier periods so the oldest shown still has its growth base and opening balances:
        # one year back, which is four periods for quarters (year-on-year) and TTM.
        extra = 1 if period == "annual" else 4
        income, balance, cashflow = await asyncio.gather(
            self.income_statements(ticker, period=period, limit=limit + extra),
            self.balance_sheets(ticker, period=period, limit=limit + extra),
            self.cash_flow_statements(ticker, period=period, limit=limit + extra),
        )
        return compute_metrics(income, balance, cashflow)[:limit]

    async def facts(self, ticker: str, concept: str) -> list[FactPoint]:
        from dexter.data.sec.facts import fact_series

        company = await self.company(ticker)
        index = await self._facts(company)
        try:
            return fact_series(index, concept)
        except NotFound:
            withheld = self._withheld.get(company.cik, {})
            if any(_concept_matches(key, concept) for key in withheld):
                raise self._nothing_filed_yet(company, concept) from None
            raise

    # -- filings -----------------------------------------------------------------------------

    async def filings(
        self,
        ticker: str,
        *,
        forms: list[str] | None = None,
        limit: int = 10,
        include_amendments: bool = False,
        page_back: bool = True,
        filed_gte: str | None = None,
        filed_lte: str | None = None,
        items: list[str] | None = None,
    ) -> FilingList:
        """Newest first; older history pages are fetched only when the recent list is short.

        `filed_gte` / `filed_lte` bound the filing date; `items` keeps 8-Ks reporting any of
        those items (2.02 results, 5.02 officers …). The as-of date caps `filed_lte`.

        An older page that fails to load (404, 5xx, timeout, damaged JSON) ends the paging: what
        loaded is returned with the gap named (`FilingList.gaps`), and when nothing matched
        the error says what could not be read, since "no such filings" would be a guess."""
        from dexter.data.sec.submissions import filings_from_submissions, older_pages

        company = await self.company(ticker)
        data = await self._submissions(company.cik)
        if self.as_of is not None and (filed_lte is None or filed_lte > self.as_of):
            filed_lte = self.as_of
        keep = _filing_filter(filed_gte, filed_lte, items)
        # Filter before the limit: read everything on a page, then keep what matches.
        found = [
            f
            for f in filings_from_submissions(
                data,
                ticker=company.ticker,
                forms=forms,
                limit=None,
                www_base=self._www,
                include_amendments=include_amendments,
            )
            if keep(f)
        ][:limit]
        gaps: list[HistoryGap] = []
        pages = older_pages(data) if page_back else []
        # Pages wholly after the range hold nothing wanted; pages wholly before it end the walk.
        if filed_lte is not None:
            pages = [p for p in pages if not p.starts_after(filed_lte)]
        if filed_gte is not None:
            pages = [p for p in pages if p.reaches_back_to(filed_gte)]
        for read, page in enumerate(pages):
            if len(found) >= limit:
                break
            url = urls.submissions_page(page.name, self._data)
            if read == MAX_OLDER_PAGES:
                gaps.append(
                    _gap(
                        page,
                        url,
                        f"Dexter reads at most {MAX_OLDER_PAGES} older pages per request",
                        False,
                    )
                )
                break
            try:
                page_data = await self.http.get_json(url, ttl=SUBMISSIONS_TTL)
                if not isinstance(page_data, dict):
                    raise UpstreamError("SEC submissions page is not a JSON object.", url=url)
                rows = filings_from_submissions(
                    page_data,
                    ticker=company.ticker,
                    forms=forms,
                    limit=None,
                    www_base=self._www,
                    include_amendments=include_amendments,
                    cik=company.cik,
                )
            except NotFound:
                reason = "the SEC answered 'not found' (HTTP 404), though the history lists it"
                gaps.append(_gap(page, url, reason, True))
                break
            except DataError as error:
                gaps.append(_gap(page, url, error.message.rstrip("."), True))
                break
            found += [f for f in rows if keep(f)][: limit - len(found)]
        if gaps and not found:
            raise self._unread_history(company, gaps, forms, filed_gte, filed_lte)
        return FilingList(found[:limit], gaps)

    def _unread_history(
        self,
        company: Company,
        gaps: list[HistoryGap],
        forms: list[str] | None,
        gte: str | None,
        lte: str | None,
    ) -> DataError:
        """Nothing matched in the history that loaded, and part of it did not: an error
        naming that part, not an empty list that reads as "there are none"."""
        what = " or ".join(forms) if forms else "filing"
        when = ""
        if gte and lte:
            when = f" filed from {gte} to {lte}"
        elif gte or lte:
            when = f" filed on or {'after' if gte else 'before'} {gte or lte}"
        message = (
            f"No {what} of {company.name}{when} is in the part of its EDGAR filing history that "
            f"could be read. {missing_history(gaps)}"
        )
        if any(gap.failed for gap in gaps):
            return UpstreamError(message, url=gaps[0].url)
        return NotFound(message)

    # -- filing documents and full-text search ---------------------------------------------

    async def filing_documents(self, company: str, accession_number: str) -> FilingDocuments:
        """Every document of one filing, with its type (EX-99.1 …) and description."""
        who = await self.company(company)
        return await self._filing_documents(who, accession_number.strip())

    async def _filing_documents(self, who: Company, accession: str) -> FilingDocuments:
        from dexter.data.sec.filing_docs import (
            DocumentEntry,
            FilingDocuments,
            merge_documents,
            parse_index_headers,
            parse_index_page,
        )
        from dexter.data.sec.filing_index import parse_filing_index

        async def load() -> FilingDocuments:
            folder = urls.filing_folder(who.cik, accession, self._www)
            index_url = urls.filing_index(who.cik, accession, self._www)
            try:
                listing = await self.http.get_json(index_url, ttl=FOREVER)
            except NotFound:
                raise await self._missing_filing(who, accession, index_url) from None
            listed = [
                DocumentEntry(name=d.name, url=d.url, size=d.size)
                for d in parse_filing_index(listing, folder_url=folder)
            ]
            header = None
            typed: list[DocumentEntry] = []
            try:
                page = await self.http.get_bytes(
                    f"{folder}/{accession}-index-headers.html", ttl=FOREVER
                )
                header = parse_index_headers(page, folder_url=folder)
                typed = header.documents
            except NotFound:
                pass
            if not typed:
                try:
                    page = await self.http.get_bytes(
                        urls.filing_index_page(who.cik, accession, self._www), ttl=FOREVER
                    )
                    typed = parse_index_page(page, folder_url=folder)
                except NotFound:
                    pass  # types stay unknown; names and the primary-document guess remain
            filing = FilingDocuments(
                cik=who.cik,
                accession_number=accession,
                company_name=(header.company_name if header else None) or who.name,
                form=header.form if header else None,
                filing_date=header.filing_date if header else None,
                report_date=header.report_date if header else None,
                items=header.items if header else [],
                index_url=urls.filing_index_page(who.cik, accession, self._www),
                documents=merge_documents(listed, typed),
            )
            return await self._with_submission_facts(who, filing)

        found = await self._once(f"documents:{who.cik}:{accession}", load)
        if self.as_of is not None and found.filing_date and found.filing_date > self.as_of:
            raise NotFound(
                f"Filing {accession} was filed on {found.filing_date}, after the as-of date "
                f"{self.as_of}.",
                hint="Research is limited to what was public on the as-of date.",
            )
        return found

    async def _missing_filing(self, who: Company, accession: str, index_url: str) -> NotFound:
        """The SEC answered 404 for a filing's folder: say that, and whether the company's own
        filing list names it, without guessing why (a bare 404 gives no reason)."""
        from dexter.data.sec.submissions import filings_from_submissions

        listed: Filing | None = None
        try:
            data = await self._submissions(who.cik)
            wanted = accession.replace("-", "")
            listed = next(
                (
                    f
                    for f in filings_from_submissions(data, ticker=who.ticker, www_base=self._www)
                    if f.accession_number.replace("-", "") == wanted
                ),
                None,
            )
        except DataError:
            pass
        said = f"The SEC answered 'not found' (HTTP 404) for {index_url}"
        if listed is not None:
            return NotFound(
                f"{said}, the document list of {who.name}'s {listed.filing_type} filed "
                f"{listed.filing_date} ({accession}), which its filing history names; the SEC "
                "gives no reason.",
                hint=f"The filing's main document: {listed.url}",
            )
        return NotFound(
            f"{said}, filing {accession} under {who.name}, and {who.name}'s recent filing "
            "history does not name it; the SEC gives no reason.",
            hint=f"Check the accession number: `dexter data filings {who.ticker}` lists them.",
        )

    async def _with_submission_facts(
        self, who: Company, filing: FilingDocuments
    ) -> FilingDocuments:
        """Form, dates and items from the submissions list when the header page was missing."""
        from dexter.data.sec.submissions import filings_from_submissions

        if filing.form and filing.filing_date:
            return filing
        try:
            data = await self._submissions(who.cik)
        except DataError:
            return filing
        for row in filings_from_submissions(data, ticker=who.ticker, www_base=self._www):
            if row.accession_number == filing.accession_number:
                return filing.model_copy(
                    update={
                        "form": filing.form or row.filing_type,
                        "filing_date": filing.filing_date or row.filing_date,
                        "report_date": filing.report_date or row.report_date,
                        "items": filing.items or row.items,
                    }
                )
        return filing

    async def filing_document(
        self, company: str, accession_number: str, *, document: str | None = None
    ) -> DocumentText:
        """One document's text: primary (default), `cover`, an exhibit type, or a file name."""
        from dexter.data.sec.documents import html_to_text
        from dexter.data.sec.filing_docs import DocumentText, choose_document, cover_page

        filing = await self.filing_documents(company, accession_number)
        chosen, cover_only = choose_document(filing, document)
        if chosen.name.lower().endswith(".pdf"):
            raise Unavailable(
                f"{chosen.name} is a PDF, which cannot be read yet.",
                hint="Most filings also hold an HTML version of each document.",
            )
        body = await self.http.get_bytes(chosen.url, ttl=FOREVER)
        text = await asyncio.to_thread(html_to_text, body)
        if cover_only:
            text = cover_page(text)
        return DocumentText(
            cik=filing.cik,
            accession_number=filing.accession_number,
            company_name=filing.company_name,
            form=filing.form,
            filing_date=filing.filing_date,
            name=chosen.name,
            type=chosen.type,
            description=chosen.description,
            url=chosen.url,
            cover_only=cover_only,
            text=text,
            source=Source(
                provider=PROVIDER,
                url=chosen.url,
                form=" ".join(x for x in (filing.form, _exhibit_label(chosen, filing)) if x)
                or None,
                accession_number=filing.accession_number,
                filing_date=filing.filing_date,
            ),
        )

    async def full_text_search(
        self,
        query: str,
        *,
        forms: list[str] | None = None,
        start_date: str | None = None,
        end_date: str | None = None,
        company: str | None = None,
        offset: int = 0,
    ) -> SearchPage:
        """EDGAR full-text search; the as-of date caps the end of the date range."""
        from dexter.data.sec.fulltext import parse_search, search_params, search_url

        if not query.strip():
            raise Unavailable("Full-text search needs words or a quoted phrase to look for.")
        if self.as_of is not None and (end_date is None or end_date > self.as_of):
            end_date = self.as_of
        ciks = [(await self.company(company)).cik] if company else None
        params = search_params(
            query, forms=forms, start_date=start_date, end_date=end_date, ciks=ciks, offset=offset
        )
        url = search_url(self._settings.sec_efts_url)
        from dexter.data.http import build_url

        data = await self.http.get_json(url, params=params, ttl=SEC_PAGE_TTL)
        page = parse_search(
            data, query=query, url=build_url(url, params), www_base=self._www, offset=offset
        )
        if self.as_of is not None:
            cutoff = self.as_of
            kept = [h for h in page.hits if (h.filing_date or "") <= cutoff]
            page = page.model_copy(update={"hits": kept})
        return page

    async def filing_section(
        self,
        ticker: str,
        *,
        form: str,
        item: str,
        year: int | None = None,
        accession_number: str | None = None,
    ) -> FilingSection:
        from dexter.data.sec.documents import html_to_text
        from dexter.data.sec.items import extract_item

        form = form.upper()
        if form not in ("10-K", "10-Q"):
            raise Unavailable(f"Sections can be extracted from 10-K and 10-Q filings, not {form}.")
        recent = await self.filings(ticker, forms=[form], limit=60, page_back=False)
        try:
            filing = _choose_filing(recent, form=form, year=year, accession=accession_number)
        except NotFound:
            if recent and year is None and accession_number is None:
                raise
            # Older history pages too: for a year asked for, or when an as-of date hides the
            # whole recent page.
            older = await self.filings(ticker, forms=[form], limit=200)
            if not older and self.as_of is not None:
                who = await self.company(ticker)
                raise NotFound(
                    f"No {form} of {who.name} filed on or before the as-of date {self.as_of} "
                    "is in its EDGAR filing history.",
                    hint=before_edgar(self.as_of),
                ) from None
            try:
                filing = _choose_filing(older, form=form, year=year, accession=accession_number)
            except NotFound as missing:
                if not older.gaps:
                    raise
                # The filing may be on the page that did not load: say that, not "no such 10-K".
                said = f"{missing.message} {missing_history(older.gaps)}"
                if older.failed_gaps:
                    raise UpstreamError(said, url=older.gaps[0].url, hint=missing.hint) from None
                raise NotFound(said, hint=missing.hint) from None
        html = await self.http.get_bytes(filing.url, ttl=FOREVER)
        text = await asyncio.to_thread(html_to_text, html)
        section = extract_item(text, form, item)
        return FilingSection(
            ticker=filing.ticker or ticker.upper(),
            filing_type=filing.filing_type,
            accession_number=filing.accession_number,
            filing_date=filing.filing_date,
            report_date=filing.report_date,
            item=section.item,
            title=section.title,
            text=section.text,
            source=Source(
                provider=PROVIDER,
                url=filing.url,
                form=filing.filing_type,
                accession_number=filing.accession_number,
                filing_date=filing.filing_date,
            ),
        )

    async def insider_trades(self, ticker: str, *, limit: int = 20) -> InsiderTrades:
        """Transactions from Forms 4 and 5 and their amendments, newest first. Form 5 is the
        annual catch-up for transactions exempt from or missed on Form 4 (gifts, small
        acquisitions); its holdings-only rows are positions, not transactions, and stay out."""
        from dexter.data.sec.ownership import ownership_xml_name, parse_ownership_document

        filings = await self.filings(
            ticker,
            forms=list(OWNERSHIP_FORMS),
            limit=min(MAX_FORM4_FILINGS, limit),
            include_amendments=True,
        )

        async def trades_of(filing: Filing) -> list[InsiderTrade]:
            name = ownership_xml_name(filing.primary_document or filing.url.rsplit("/", 1)[-1])
            url = urls.filing_document(filing.cik, filing.accession_number, name, self._www)
            xml = await self.http.get_bytes(url, ttl=FOREVER)
            parsed = parse_ownership_document(
                xml,
                url=url,
                accession_number=filing.accession_number,
                filing_date=filing.filing_date,
                form=filing.filing_type,
            )
            return parsed.trades

        results = await asyncio.gather(*(trades_of(f) for f in filings), return_exceptions=True)
        trades: list[InsiderTrade] = []
        failures: list[BaseException] = []
        for result in results:
            if isinstance(result, BaseException):
                if not isinstance(result, DataError):
                    raise result
                failures.append(result)
            else:
                trades += result
        if failures and not trades:
            raise failures[0]
        trades.sort(key=lambda t: (t.transaction_date or "", t.filing_date or ""), reverse=True)
        return InsiderTrades(trades[:limit], [str(failure) for failure in failures], filings.gaps)

    async def institutional_holdings(
        self, *, filer_cik: str | None = None, ticker: str | None = None, limit: int | None = 50
    ) -> Holdings:
        """The latest 13F-HR's positions, largest value first: `limit` of them (None: all),
        with the whole report's count and value so a cut list can say what it left out."""
        from dexter.data.sec.filing_index import find_information_table, parse_filing_index
        from dexter.data.sec.holdings13f import parse_information_table
        from dexter.data.sec.submissions import company_info, filings_from_submissions

        if not filer_cik:
            raise Unavailable(
                "SEC EDGAR can list a 13F filer's holdings (give the filer), but not every holder "
                "of one stock.",
                hint="Set FINANCIAL_DATASETS_API_KEY to look up holders by ticker.",
            )
        cik, name = await self._filer(filer_cik)
        data = await self._submissions(cik)
        name = company_info(data).name or name
        filings = filings_from_submissions(
            data,
            ticker=None,
            forms=["13F-HR"],
            limit=1,
            www_base=self._www,
            include_amendments=False,
        )
        if not filings:
            raise NotFound(f"{name} has filed no 13F-HR holdings report.")
        filing = filings[0]
        folder = urls.filing_folder(cik, filing.accession_number, self._www)
        index = await self.http.get_json(
            urls.filing_index(cik, filing.accession_number, self._www), ttl=FOREVER
        )
        table = find_information_table(parse_filing_index(index, folder_url=folder))
        xml = await self.http.get_bytes(table.url, ttl=FOREVER)
        rows = parse_information_table(
            xml,
            filer_cik=cik,
            filer_name=name,
            report_period=filing.report_date,
            filing_date=filing.filing_date,
            accession_number=filing.accession_number,
            url=table.url,
        )
        # Largest value first (a stable sort: equal values keep the table's order).
        rows.sort(key=lambda h: h.value_usd or 0, reverse=True)
        shown = rows if limit is None else rows[:limit]
        total = sum(h.value_usd or 0 for h in rows)
        return Holdings(shown, total_count=len(rows), total_value_usd=total)

    async def _filer(self, filer: str) -> tuple[str, str]:
        text = filer.strip()
        if text.isdigit():
            table = await self._tickers()
            known = table.by_cik(text)
            return urls.pad_cik(text), known.name if known else f"CIK {int(text)}"
        company = await self.company(text)
        return company.cik, company.name

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
        from dexter.data.sec.frames import screen_rows_from_frame

        taxonomy, _, tag = concept.rpartition(":")
        url = urls.frames(taxonomy or "us-gaap", tag, unit, period.upper(), self._data)
        try:
            data = await self.http.get_json(url, ttl=FRAMES_TTL)
        except NotFound:
            raise NotFound(
                f"The SEC answered 'not found' (HTTP 404) for the frame of {concept} in {unit} "
                f"for {period} ({url}); it gives no reason.",
                hint="The SEC builds a frame only for a concept, unit and period that filers "
                "reported. Periods look like CY2024 (a year), CY2024Q3 (a quarter) or CY2024Q4I "
                "(an instant, for balance-sheet items); concepts like Revenues or NetIncomeLoss.",
            ) from None
        table = await self._tickers()
        rows = screen_rows_from_frame(data, tickers=table.tickers_by_cik())
        if min_value is not None:
            rows = [r for r in rows if r.value >= min_value]
        if max_value is not None:
            rows = [r for r in rows if r.value <= max_value]
        return rows[:limit]

    # -- segments ----------------------------------------------------------------------------

    async def segments(
        self, ticker: str, *, period: Period = "annual", limit: int = 4, year: int | None = None
    ) -> list[dict[str, Any]]:
        """Revenue and operating income by segment, geography and product from the latest 10-K
        (10-Q for quarterly; that of fiscal `year` when given): its own XBRL dimensional facts,
        with the company's labels, each breakdown checked against the reported total."""
        from dexter.data.sec.segments import segment_periods
        from dexter.data.sec.xbrl_instance import parse_instance, parse_labels

        if period not in ("annual", "quarterly"):
            raise Unavailable("Segment breakdowns are reported annually or quarterly, not as TTM.")
        form = "10-K" if period == "annual" else "10-Q"
        recent = await self.filings(ticker, forms=[form], limit=60, page_back=year is not None)
        if not recent:
            who = await self.company(ticker)
            raise NotFound(f"No {form} of {who.name} is in its EDGAR filing history.")
        filing = _choose_filing(recent, form=form, year=year, accession=None)
        who = await self.company(ticker)
        documents = await self._filing_documents(who, filing.accession_number)
        instance_doc, labels_doc = _xbrl_documents(documents)
        if instance_doc is None:
            raise NotFound(
                f"{who.name}'s {form} filed {filing.filing_date} ({filing.accession_number}) "
                "has no XBRL instance in its folder, so its segment facts cannot be read.",
                hint="Filings before 2009-2011 (by company size) carry no XBRL; "
                f"`dexter data filing-section {who.ticker} --item 8` reads the notes as text.",
            )
        instance_bytes = await self.http.get_bytes(instance_doc.url, ttl=FOREVER)
        label_bytes = await self.http.get_bytes(labels_doc.url, ttl=FOREVER) if labels_doc else None

        def parse() -> list[dict[str, Any]]:
            instance = parse_instance(instance_bytes, url=instance_doc.url)
            labels = (
                parse_labels(label_bytes, url=labels_doc.url) if labels_doc and label_bytes else {}
            )
            periods = segment_periods(
                instance,
                labels,
                period=period,
                limit=limit,
                ticker=filing.ticker or who.ticker,
                company_name=documents.company_name or who.name,
                form=filing.filing_type,
                accession_number=filing.accession_number,
                filing_date=filing.filing_date,
                filing_url=documents.index_url,
                instance_url=instance_doc.url,
            )
            return [p.model_dump(mode="json") for p in periods]

        # Parsing a multi-megabyte instance takes a moment; keep the event loop free.
        records = await asyncio.to_thread(parse)
        if not records:
            raise NotFound(
                f"{who.name}'s {form} filed {filing.filing_date} ({filing.accession_number}) "
                "tags no revenue or operating income by business segment, geography or product "
                "in its XBRL.",
                hint=f"Its segment note can be read as text: `dexter data filing-section "
                f"{who.ticker} --item 8`.",
            )
        return records

    # -- not offered by the SEC --------------------------------------------------------------

    async def prices(
        self, ticker: str, *, start_date: str, end_date: str, interval: str = "day"
    ) -> list[Price]:
        raise Unavailable("SEC EDGAR has no market prices.")

    async def price_snapshot(self, ticker: str) -> PriceSnapshot:
        raise Unavailable("SEC EDGAR has no market prices.")

    async def news(self, ticker: str, *, limit: int = 10) -> list[NewsItem]:
        raise Unavailable("SEC EDGAR has no news.")


def _gap(page: SubmissionsPage, url: str, reason: str, failed: bool) -> HistoryGap:
    return HistoryGap(
        page=page.name,
        url=url,
        filed_from=page.filing_from,
        filed_to=page.filing_to,
        reason=reason,
        failed=failed,
    )


def _filing_filter(
    gte: str | None, lte: str | None, items: list[str] | None
) -> Callable[[Filing], bool]:
    wanted = {i.strip() for i in items or [] if i.strip()}

    def keep(filing: Filing) -> bool:
        day = filing.filing_date[:10]
        if (gte and day < gte) or (lte and day > lte):
            return False
        return not wanted or bool(wanted & set(filing.items))

    return keep


def _xbrl_documents(
    filing: FilingDocuments,
) -> tuple[DocumentEntry | None, DocumentEntry | None]:
    """The filing's XBRL instance (EDGAR's `*_htm.xml` extract of an inline filing, else an
    older filing's own instance `*.xml`) and its label linkbase (`*_lab.xml`)."""
    names = [d for d in filing.documents if d.name.lower().endswith(".xml")]
    labels = next((d for d in names if d.name.lower().endswith("_lab.xml")), None)
    extracted = next((d for d in names if d.name.lower().endswith("_htm.xml")), None)
    if extracted is not None:
        return extracted, labels
    linkbases = ("_cal.xml", "_def.xml", "_lab.xml", "_pre.xml")
    own = [
        d
        for d in names
        if (d.type or "").upper() == "EX-101.INS"
        or (
            not d.name.lower().endswith(linkbases)
            and "-" in d.name
            and d.name[0].isalpha()
            and d.name.lower() not in ("filingsummary.xml", "primary_doc.xml")
        )
    ]
    typed = [d for d in own if (d.type or "").upper() == "EX-101.INS"]
    chosen = typed or own
    if chosen:
        return chosen[0], labels
    # No extracted instance: the primary document itself, when the filing is inline XBRL
    # (its `.xsd` schema says so; without one the filing has no XBRL at all).
    if any(d.name.lower().endswith(".xsd") for d in filing.documents):
        primary = filing.primary()
        if primary.name.lower().endswith((".htm", ".html")):
            return primary, labels
    return None, labels


def _exhibit_label(doc: DocumentEntry, filing: FilingDocuments) -> str | None:
    kind = (doc.type or "").upper()
    if not kind or kind == (filing.form or "").upper():
        return None
    return kind


def _concept_matches(key: str, wanted: str) -> bool:
    """Does `wanted` ("Revenues", "us-gaap:Revenues", "us-gaap/revenues") name `key`?"""
    text = wanted.strip().replace("/", ":", 1).lower()
    return key.lower() == text or (":" not in text and key.split(":", 1)[1].lower() == text)


def _is_financial(key: str) -> bool:
    from dexter.data.sec.concepts import FINANCIAL_TAXONOMIES

    return key.split(":", 1)[0] in FINANCIAL_TAXONOMIES


def facts_filed_by(data: dict[str, Any], day: str) -> tuple[dict[str, Any], dict[str, str]]:
    """A companyfacts document holding only the values filed on or before `day`: what an
    analyst could have read then (later restatements and later periods disappear); and each
    concept that was filed only later ("us-gaap:Revenues") with the day it was first filed."""
    facts = data.get("facts")
    withheld: dict[str, str] = {}
    if not isinstance(facts, dict):
        return data, withheld
    kept_facts: dict[str, Any] = {}
    for taxonomy, concepts in facts.items():
        if not isinstance(concepts, dict):
            continue
        kept_concepts: dict[str, Any] = {}
        for name, concept in concepts.items():
            units = concept.get("units") if isinstance(concept, dict) else None
            if not isinstance(units, dict):
                continue
            kept_units = {
                unit: [p for p in points if str(p.get("filed") or "") <= day]
                for unit, points in units.items()
                if isinstance(points, list)
            }
            kept_units = {u: p for u, p in kept_units.items() if p}
            if kept_units:
                kept_concepts[name] = {**concept, "units": kept_units}
                continue
            filed = [
                str(p.get("filed"))
                for points in units.values()
                if isinstance(points, list)
                for p in points
                if isinstance(p, dict) and p.get("filed")
            ]
            if filed:
                withheld[f"{taxonomy}:{name}"] = min(filed)
        kept_facts[taxonomy] = kept_concepts
    return {**data, "facts": kept_facts}, withheld


def _choose_filing(
    filings: list[Filing], *, form: str, year: int | None, accession: str | None
) -> Filing:
    if not filings:
        raise NotFound(f"No {form} filings found.")
    if accession:
        wanted = accession.replace("-", "")
        for filing in filings:
            if filing.accession_number.replace("-", "") == wanted:
                return filing
        raise NotFound(f"No {form} with accession number {accession}.")
    if year is None:
        return filings[0]
    for filing in filings:
        if (filing.report_date or filing.filing_date)[:4] == str(year):
            return filing
    years = sorted({(f.report_date or f.filing_date)[:4] for f in filings}, reverse=True)
    raise NotFound(
        f"No {form} for fiscal year {year}.", hint=f"Years available: {', '.join(years[:10])}."
    )
