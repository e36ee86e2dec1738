"""filings.xbrl.org as a FinanceProvider: EU/UK issuers' ESEF annual reports, key-less.

It serves only the companies it is named for (an LEI, or `esef:…`; see names.py), so the
router sends it those and nothing else. A company's filings are listed from its entity's
`filings` relationship (every page, by `links.next`); per fiscal year one report is read, the
English version when there are several languages, from its xBRL-JSON.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from dexter.data.cache import FOREVER, DiskCache
from dexter.data.errors import NotFound, Unavailable, UnknownCompany, UpstreamError
from dexter.data.esef.index import (
    PROVIDER,
    EsefEntity,
    EsefFiling,
    FilingsPage,
    api_error_text,
    parse_entity,
    parse_filings_page,
)
from dexter.data.esef.names import EsefName, parse_esef_name
from dexter.data.esef.report import ReportFact, read_report
from dexter.data.esef.statements import FORM, StatementKind, build_statement
from dexter.data.http import HttpClient
from dexter.data.models import (
    BalanceSheet,
    CashFlowStatement,
    Company,
    Filing,
    IncomeStatement,
    Period,
)
from dexter.data.provider import Capability
from dexter.data.settings import DataSettings
from dexter.data.singleflight import SingleFlight

if TYPE_CHECKING:
    import httpx2

T = TypeVar("T")

NAME = "filings.xbrl.org (ESEF)"
INDEX_TTL = 6 * 3600.0
PAGE_SIZE = 100
# A country's index is walked for a name at most this far (FI: 755 filings, 8 pages).
MAX_NAME_PAGES = 20
MAX_FILING_PAGES = 10
USER_AGENT = "Dexter financial research agent (filings.xbrl.org client)"
TERMS_HINT = (
    "filings.xbrl.org is run by XBRL International; check https://filings.xbrl.org for its "
    "status and current terms."
)


class UnknownIssuer(UnknownCompany):
    """The name given is no ESEF issuer (or cannot be one): the user's input, exit status 2."""

    def __init__(self, query: str, message: str, *, hint: str | None = None) -> None:
        self.query = query
        self.suggestions = []
        NotFound.__init__(self, message, hint=hint)


def _hint(status: int) -> str | None:
    return TERMS_HINT if status >= 500 or status in (403, 429) else None


class EsefProvider:
    name = NAME
    capabilities = frozenset({Capability.STATEMENTS, Capability.FILINGS})

    def __init__(
        self,
        settings: DataSettings,
        *,
        transport: httpx2.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._settings = settings
        self._base = settings.esef_url
        self._transport = transport
        self._sleep = sleep
        self.as_of = settings.as_of.isoformat() if settings.as_of else None
        self._client: HttpClient | None = None
        self._flights = SingleFlight()

    # -- plumbing ----------------------------------------------------------------------------

    @property
    def http(self) -> HttpClient:
        if self._client is None:
            self._client = HttpClient(
                PROVIDER,
                headers={"User-Agent": USER_AGENT, "Accept-Encoding": "gzip, deflate"},
                rate_per_second=self._settings.esef_rate,
                cache=DiskCache(self._settings.cache_dir / "esef"),
                transport=self._transport,
                sleep=self._sleep,
                max_attempts=3,
                error_hint=_hint,
            )
        return self._client

    async def aclose(self) -> None:
        self._flights.cancel()
        if self._client is not None:
            await self._client.aclose()

    async def _once(self, key: str, load: Callable[[], Awaitable[T]]) -> T:
        return await self._flights.once(key, load)

    async def _get_json(
        self, url: str, *, params: dict[str, str | int] | None = None, ttl: float, what: str
    ) -> Any:
        try:
            return await self.http.get_json(url, params=params, ttl=ttl)
        except UpstreamError as error:
            self._explain(error, what)

    def _explain(self, error: UpstreamError, what: str) -> NoReturn:
        """The API's own JSON:API error, said in a sentence instead of a status and a body."""
        said = api_error_text(error.body)
        if error.status is not None and error.status >= 500:
            raise UpstreamError(
                f"{PROVIDER} failed while answering {what} (HTTP {error.status}"
                + (f": {said}" if said else "")
                + "). The fault is on its side.",
                status=error.status,
                url=error.url,
                body=error.body,
                hint="Try again later. " + TERMS_HINT,
            ) from None
        if error.status is not None and error.status >= 400:
            raise UpstreamError(
                f"{PROVIDER} refused {what} (HTTP {error.status}"
                + (f": {said}" if said else "")
                + ").",
                status=error.status,
                url=error.url,
                body=error.body,
                hint="The repository's API may have changed; " + TERMS_HINT,
            ) from None
        raise error

    # -- the index ---------------------------------------------------------------------------

    async def index_pages(self, url: str, *, what: str, max_pages: int) -> list[FilingsPage]:
        """Every page from `url` on, following `links.next` (at most `max_pages`)."""
        pages: list[FilingsPage] = []
        next_url: str | None = url
        while next_url is not None and len(pages) < max_pages:
            data = await self._get_json(next_url, ttl=INDEX_TTL, what=what)
            page = parse_filings_page(data, self._base)
            pages.append(page)
            next_url = page.next_url
        return pages

    async def entity(self, lei: str) -> EsefEntity:
        async def load() -> EsefEntity:
            url = f"{self._base}/api/entities/{lei}"
            try:
                data = await self._get_json(url, ttl=INDEX_TTL, what=f"the entity {lei}")
            except NotFound:
                raise UnknownIssuer(
                    lei,
                    f"{PROVIDER} has no issuer with the LEI {lei} (HTTP 404).",
                    hint="It holds ESEF annual reports of issuers on EU regulated markets (and "
                    "UK ones); check the LEI at https://search.gleif.org.",
                ) from None
            return parse_entity(data)

        return await self._once(f"entity:{lei}", load)

    async def entity_filings(self, lei: str) -> list[EsefFiling]:
        """Every filing of the issuer, as the index lists them (all languages, all years)."""

        async def load() -> list[EsefFiling]:
            url = f"{self._base}/api/entities/{lei}/filings?page%5Bsize%5D={PAGE_SIZE}"
            pages = await self.index_pages(
                url, what=f"the filings of {lei}", max_pages=MAX_FILING_PAGES
            )
            return [filing for page in pages for filing in page.filings]

        filings = await self._once(f"filings:{lei}", load)
        if self.as_of is not None:
            as_of = self.as_of
            filings = [f for f in filings if f.date_added and f.date_added <= as_of]
        return filings

    async def _find_by_name(self, name: str, country: str) -> EsefEntity:
        from dexter.data.sec.tickers import normalise_name

        wanted = normalise_name(name)
        url = (
            f"{self._base}/api/filings?filter%5Bcountry%5D={country}&include=entity"
            f"&page%5Bsize%5D={PAGE_SIZE}"
        )
        seen: dict[str, EsefEntity] = {}
        next_url: str | None = url
        pages = 0
        while next_url is not None and pages < MAX_NAME_PAGES:
            data = await self._get_json(
                next_url, ttl=INDEX_TTL, what=f"the filings of country {country}"
            )
            page = parse_filings_page(data, self._base)
            pages += 1
            for entity in page.entities:
                if wanted and wanted in normalise_name(entity.name):
                    seen[entity.lei] = entity
            # Filers recur on every page of their country; the first page naming any is enough.
            if seen:
                break
            next_url = page.next_url
        exact = [e for e in seen.values() if normalise_name(e.name) == wanted]
        if len(exact) == 1 or len(seen) == 1:
            return (exact or list(seen.values()))[0]
        if not seen:
            raise UnknownIssuer(
                name,
                f"No issuer named like {name!r} has an ESEF report from {country} at {PROVIDER}.",
                hint="Check the country (where the issuer files, e.g. NL for ASML), or name it "
                "by its LEI (https://search.gleif.org).",
            )
        listed = ", ".join(f"{e.name} (esef:{e.lei})" for e in seen.values())
        raise UnknownIssuer(
            name,
            f"Several {country} issuers are named like {name!r}: {listed}.",
            hint="Name one by its LEI, e.g. esef:<LEI>.",
        )

    # -- FinanceProvider ---------------------------------------------------------------------

    def claims(self, query: str) -> bool:
        """Whether `query` names an ESEF issuer (an LEI, or anything written `esef:…`)."""
        try:
            return parse_esef_name(query) is not None
        except ValueError:
            return True  # it says esef:, so the error about it is ours to give

    def _parsed(self, query: str) -> EsefName:
        try:
            parsed = parse_esef_name(query)
        except ValueError as error:
            raise UnknownIssuer(query, str(error)) from None
        if parsed is None:
            raise UnknownIssuer(query, f"{query!r} is not an LEI or an esef: name.")
        return parsed

    async def company(self, query: str) -> Company:
        parsed = self._parsed(query)
        if parsed.lei is not None:
            entity = await self.entity(parsed.lei)
        else:
            assert parsed.name is not None and parsed.country is not None
            entity = await self._find_by_name(parsed.name, parsed.country)
        # The LEI stands in for the ticker: every later call made with it comes back here.
        return Company(ticker=entity.lei, cik="", name=entity.name, exchange=None)

    async def _lei(self, ticker: str) -> str:
        parsed = self._parsed(ticker)
        return parsed.lei if parsed.lei is not None else (await self.company(ticker)).ticker

    def _yearly(self, filings: list[EsefFiling]) -> list[list[EsefFiling]]:
        """Per fiscal year, newest first: its filings, the one to read first at the head
        (with a report, English, then the latest received)."""
        by_year: dict[str, list[EsefFiling]] = {}
        for filing in filings:
            by_year.setdefault(filing.period_end, []).append(filing)

        def rank(filing: EsefFiling) -> tuple[bool, bool, str]:
            return (filing.json_url is not None, filing.language == "en", filing.date_added)

        return [
            sorted(by_year[end], key=rank, reverse=True)
            for end in sorted(by_year, reverse=True)
            if end
        ]

    async def _report(self, filing: EsefFiling, who: str | None = None) -> list[ReportFact]:
        url = filing.json_url
        if url is None:
            issuer = who or filing.entity_name or filing.lei
            raise NotFound(
                f"The {filing.period_end} annual report of {issuer} "
                f"({filing.fxo_id}) has no xBRL-JSON version at {PROVIDER}, so its figures "
                "cannot be read.",
                hint=(
                    f"The report package is at {filing.package_url}. " if filing.package_url else ""
                )
                + "The repository converts only reports that pass its checks.",
            )

        async def load() -> list[ReportFact]:
            data = await self._get_json(
                url, ttl=FOREVER, what=f"the xBRL-JSON report {filing.fxo_id}"
            )
            return await asyncio.to_thread(read_report, data, url=url)

        return await self._once(f"report:{url}", load)

    async def _statements(
        self,
        ticker: str,
        kind: StatementKind,
        *,
        period: Period = "annual",
        limit: int = 4,
        report_period_gte: str | None = None,
        report_period_lte: str | None = None,
    ) -> list[Any]:
        if period != "annual":
            raise Unavailable(
                f"{NAME} holds annual reports only; there are no {period} figures for {ticker}.",
                hint="Ask for period annual.",
            )
        lei = await self._lei(ticker)
        years = [
            year
            for year in self._yearly(await self.entity_filings(lei))
            if (report_period_gte is None or year[0].period_end >= report_period_gte)
            and (report_period_lte is None or year[0].period_end <= report_period_lte)
        ][:limit]
        chosen = [year[0] for year in years]
        if chosen and all(f.json_url is None for f in chosen):
            entity = await self.entity(lei)
            await self._report(chosen[0], entity.name)  # raises: says there is no xBRL-JSON
        readable = [f for f in chosen if f.json_url is not None]
        reports = await asyncio.gather(*(self._report(f) for f in readable))
        rows = [build_statement(kind, facts, f) for f, facts in zip(readable, reports, strict=True)]
        unread = [f for f in chosen if f.json_url is None]
        if unread and rows:
            # A year left out is said, so no one takes the gap for the company's history.
            said = ", ".join(f"{f.period_end} ({f.fxo_id})" for f in unread)
            note = f"No xBRL-JSON version of the report for {said} at {PROVIDER}; left out."
            rows[0] = rows[0].model_copy(update={"notes": [*(rows[0].notes or []), note]})
        return rows

    async def income_statements(self, ticker: str, **kw: Any) -> list[IncomeStatement]:
        return await self._statements(ticker, "income", **kw)

    async def balance_sheets(self, ticker: str, **kw: Any) -> list[BalanceSheet]:
        return await self._statements(ticker, "balance", **kw)

    async def cash_flow_statements(self, ticker: str, **kw: Any) -> list[CashFlowStatement]:
        return await self._statements(ticker, "cashflow", **kw)

    async def filings(
        self,
        ticker: str,
        *,
        forms: list[str] | None = None,
        limit: int = 10,
        filed_gte: str | None = None,
        filed_lte: str | None = None,
        **_: Any,
    ) -> list[Filing]:
        """The issuer's annual reports in the repository, newest period first; "filed" is the
        day the repository received the report (it publishes no filing date)."""
        lei = await self._lei(ticker)
        listed = sorted(
            await self.entity_filings(lei), key=lambda f: (f.period_end, f.fxo_id), reverse=True
        )
        rows = [
            Filing(
                cik="",
                accession_number=f.fxo_id,
                filing_type="ESEF",
                filing_date=f.date_added,
                report_date=f.period_end or None,
                ticker=lei,
                url=f.json_url or f.report_url or f.package_url or "",
                primary_document=(f.json_url or "").rsplit("/", 1)[-1] or None,
                description=f"{FORM} ({f.country}"
                + (f", {f.language}" if f.language else "")
                + (", xBRL-JSON" if f.json_url else ", no xBRL-JSON")
                + ")",
            )
            for f in listed
            if (filed_gte is None or f.date_added >= filed_gte)
            and (filed_lte is None or f.date_added <= filed_lte)
        ]
        return rows[:limit]

    # -- what this source does not have --------------------------------------------------------

    def _unavailable(self, what: str) -> NoReturn:
        raise Unavailable(f"{NAME} has annual-report statements only, not {what}.")

    async def financial_metrics(self, ticker: str, **kw: Any) -> NoReturn:
        self._unavailable("financial metrics")

    async def facts(self, ticker: str, concept: str) -> NoReturn:
        self._unavailable("XBRL fact histories")

    async def filing_section(self, ticker: str, **kw: Any) -> NoReturn:
        self._unavailable("filing sections")

    async def insider_trades(self, ticker: str, **kw: Any) -> NoReturn:
        self._unavailable("insider trades")

    async def institutional_holdings(self, **kw: Any) -> NoReturn:
        self._unavailable("institutional holdings")

    async def prices(self, ticker: str, **kw: Any) -> NoReturn:
        self._unavailable("prices")

    async def price_snapshot(self, ticker: str) -> NoReturn:
        self._unavailable("prices")

    async def news(self, ticker: str, **kw: Any) -> NoReturn:
        self._unavailable("news")

    async def segments(self, ticker: str, **kw: Any) -> NoReturn:
        self._unavailable("segments")

    async def screen(self, **kw: Any) -> NoReturn:
        self._unavailable("screening")
