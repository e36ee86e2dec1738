"""One poll of every active watch: a conditional GET of each watched company's submissions file
(one per company however many watches name it; a 304 costs no body), new filings detected
against each watch's cursor, then one alert per watch written to the cron outbox, which the
schedules runner delivers.

The first poll of a watch (or of a ticker newly added to it) only sets its cursor: filings that
were public before the watch existed are not news. `replay` (`dexter watch test`) builds the
alert for the latest filings without touching any state.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from dexter.data.errors import DataError
from dexter.data.models import Filing
from dexter.data.sec import urls
from dexter.data.sec.documents import html_to_text
from dexter.data.sec.items import extract_item
from dexter.data.sec.ownership import ownership_xml_name, parse_ownership_document
from dexter.data.sec.provider import SecEdgarProvider
from dexter.data.sec.submissions import filings_from_submissions, form_matches
from dexter.watch.alerts import FilingDetails, compose
from dexter.watch.clusters import Cluster, InsiderSale, describe, find_cluster, sale_of
from dexter.watch.earnings import key_figures
from dexter.watch.model import ClusterRule, Watch
from dexter.watch.sections import diff_sections
from dexter.watch.store import DetectedFiling, WatchStore

# Filings newer than a cursor that is no longer in the recent list (it should always be): at most
# this many are treated as new, so a damaged cursor cannot flood a chat.
MAX_NEW_PER_TICKER = 20
_PERIODIC = ("10-K", "10-Q")
# Form 4 is due two business days after the trade; earlier Form 4s filed this many days beyond
# the cluster window before a new one are read, so late filers still count.
_FILING_LAG_DAYS = 5
_MAX_CLUSTER_FILINGS = 40


@dataclass(slots=True)
class PollReport:
    tickers: int = 0
    requests: int = 0
    not_modified: int = 0
    detected: int = 0
    alerts: list[int] = field(default_factory=list)  # outbox ids
    errors: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Fetched:
    cik: str
    filings: list[Filing] | None  # None: not modified since the last poll


def wanted(watch: Watch, filing: DetectedFiling | Filing) -> bool:
    form = filing.form if isinstance(filing, DetectedFiling) else filing.filing_type
    if not form_matches(form, watch.forms, include_amendments=True):
        return False
    if watch.items and form.upper().startswith("8-K"):
        return any(item in watch.items for item in filing.items)
    return True


def _detected(watch_id: str, f: Filing) -> DetectedFiling:
    return DetectedFiling(
        watch_id=watch_id,
        accession=f.accession_number,
        ticker=f.ticker or "",
        cik=f.cik,
        form=f.filing_type,
        filing_date=f.filing_date,
        items=tuple(f.items),
        primary_document=f.primary_document,
    )


def newer_than(filings: Sequence[Filing], cursor: str) -> list[Filing]:
    """Filings above `cursor` in the newest-first list."""
    fresh: list[Filing] = []
    for f in filings:
        if f.accession_number == cursor:
            return fresh
        fresh.append(f)
    return fresh[:MAX_NEW_PER_TICKER]


class Poller:
    def __init__(
        self,
        watches: WatchStore,
        sec: SecEdgarProvider,
        *,
        now: Callable[[], datetime],
    ) -> None:
        self.watches = watches
        self.sec = sec
        self.now = now

    # --- the poll ---------------------------------------------------------------------------

    async def poll(self, job_id: str) -> PollReport:
        report = PollReport()
        active = [w for w in await asyncio.to_thread(self.watches.all) if not w.paused]
        tickers = sorted({t for w in active for t in w.tickers})
        report.tickers = len(tickers)
        # A ticker some watch has no cursor for, or left detected-but-unqueued filings of (a
        # crash), is fetched in full: a 304 would give nothing to compare or to alert with.
        full: set[str] = set()
        for watch in active:
            pending = {f.ticker for f in await asyncio.to_thread(self.watches.detected, watch.id)}
            for ticker in watch.tickers:
                cursor = await asyncio.to_thread(self.watches.cursor, watch.id, ticker)
                if cursor is None or ticker in pending:
                    full.add(ticker)
        before = self.sec.http.requests_sent
        fetched = await asyncio.gather(
            *(self._fetch(t, conditional=t not in full) for t in tickers), return_exceptions=True
        )
        report.requests = self.sec.http.requests_sent - before
        results: dict[str, _Fetched] = {}
        for ticker, outcome in zip(tickers, fetched, strict=True):
            if isinstance(outcome, DataError):
                report.errors.append(f"{ticker}: {outcome}")
            elif isinstance(outcome, BaseException):
                raise outcome
            else:
                results[ticker] = outcome
                report.not_modified += outcome.filings is None
        for watch in active:
            report.detected += await self._detect(watch, results)
            outbox_id = await self._queue(watch, job_id, results)
            if outbox_id is not None:
                report.alerts.append(outbox_id)
        return report

    async def _fetch(self, ticker: str, *, conditional: bool) -> _Fetched:
        company = await self.sec.company(ticker)
        url = urls.submissions(company.cik, self.sec.data_url)
        etag, modified = (
            await asyncio.to_thread(self.watches.validators, url) if conditional else (None, None)
        )
        reply = await self.sec.http.get_if_changed(url, etag=etag, last_modified=modified)
        if not reply.changed:
            return _Fetched(company.cik, None)
        try:
            data: Any = json.loads(reply.body)
        except ValueError as exc:
            raise DataError(
                f"SEC sent a submissions file for {ticker} that is not JSON ({exc})."
            ) from None
        filings = filings_from_submissions(
            data, ticker=ticker, www_base=self.sec.www_url, cik=company.cik
        )
        # Saved once parsed; detection reads the same body this poll, and a crash before it is
        # recorded refetches in full (the ticker then has no cursor or pending filings to skip).
        await asyncio.to_thread(self.watches.save_validators, url, reply.etag, reply.last_modified)
        return _Fetched(company.cik, filings)

    async def _detect(self, watch: Watch, results: dict[str, _Fetched]) -> int:
        count = 0
        for ticker in watch.tickers:
            got = results.get(ticker)
            if got is None or got.filings is None or not got.filings:
                continue
            cursor = await asyncio.to_thread(self.watches.cursor, watch.id, ticker)
            newest = got.filings[0].accession_number
            if cursor == newest:
                continue
            fresh = [] if cursor is None else newer_than(got.filings, cursor)
            found = [_detected(watch.id, f) for f in fresh if wanted(watch, f)]
            await asyncio.to_thread(
                self.watches.record_detected, watch.id, ticker, newest, found, self.now()
            )
            count += len(found)
        return count

    async def _queue(self, watch: Watch, job_id: str, results: dict[str, _Fetched]) -> int | None:
        pending = await asyncio.to_thread(self.watches.detected, watch.id)
        if not pending:
            return None
        history = {t: r.filings or [] for t, r in results.items()}
        text = await self.alert_text(pending, history, cluster=watch.cluster)
        return await asyncio.to_thread(
            self.watches.queue, watch, pending, job_id=job_id, text=text, now=self.now()
        )

    # --- what is in a filing ----------------------------------------------------------------

    async def alert_text(
        self,
        filings: Sequence[DetectedFiling],
        history: dict[str, list[Filing]],
        *,
        cluster: ClusterRule | None = None,
    ) -> str:
        details = {f.accession: await self.details(f, history.get(f.ticker, [])) for f in filings}
        text = compose(filings, details)
        if cluster is None:
            return text
        blocks: list[str] = []
        for ticker in sorted({f.ticker for f in filings}):
            found = await self.cluster(
                [f for f in filings if f.ticker == ticker], history.get(ticker, []), cluster
            )
            if found is not None:
                blocks.append("\n".join(describe(ticker, found)))
        # The cluster leads: it is the news; the filings' own lines follow.
        return "\n\n".join([*blocks, text])

    async def cluster(
        self, new: Sequence[DetectedFiling], history: Sequence[Filing], rule: ClusterRule
    ) -> Cluster | None:
        """The insider-sale cluster the new Form 4s of one company complete or extend, if any."""
        fresh = [f for f in new if f.form.split("/")[0] == "4" and f.primary_document]
        if not fresh:
            return None
        since = min(date.fromisoformat(f.filing_date) for f in fresh) - timedelta(
            days=rule.days + _FILING_LAG_DAYS
        )
        known = {f.accession for f in fresh}
        earlier = [
            h
            for h in history
            if h.filing_type.split("/")[0] == "4"
            and h.accession_number not in known
            and h.primary_document
            and since <= date.fromisoformat(h.filing_date[:10])
        ][:_MAX_CLUSTER_FILINGS]
        # The new Form 4s first: earlier ones are only read when a new one is a sale.
        sales = await self._sales([(f.cik, f.accession, f.primary_document or "") for f in fresh])
        if not sales:
            return None
        sales += await self._sales(
            [(h.cik, h.accession_number, h.primary_document or "") for h in earlier]
        )
        return find_cluster(sales, known, rule)

    async def _sales(self, filings: Sequence[tuple[str, str, str]]) -> list[InsiderSale]:
        read = await asyncio.gather(*(self._sale(*f) for f in filings), return_exceptions=True)
        sales: list[InsiderSale] = []
        for outcome in read:
            if isinstance(outcome, InsiderSale):
                sales.append(outcome)
            elif isinstance(outcome, BaseException) and not isinstance(outcome, DataError):
                raise outcome
        # A Form 4 that could not be read leaves the cluster smaller, never the alert unsent.
        return sales

    async def _sale(self, cik: str, accession: str, document: str) -> InsiderSale | None:
        url = urls.filing_document(cik, accession, ownership_xml_name(document), self.sec.www_url)
        xml = await self.sec.fetch_sec_url(url)
        parsed = parse_ownership_document(xml, url=url, accession_number=accession)
        link = urls.filing_index_page(cik, accession, self.sec.www_url)
        return sale_of(parsed, accession=accession, link=link)

    async def details(self, f: DetectedFiling, history: Sequence[Filing]) -> FilingDetails:
        link = urls.filing_index_page(f.cik, f.accession, self.sec.www_url)
        notes: list[str] = []
        documents: int | None = None
        figures: tuple[str, ...] = ()
        source: str | None = None
        diff = None
        previous: str | None = None
        form = f.form.upper()
        try:
            if form.startswith("8-K"):
                listing = await self.sec.filing_documents(f.ticker, f.accession)
                documents = len(listing.documents)
                if "2.02" in f.items:
                    release = next(
                        (d for d in listing.documents if (d.type or "").upper() == "EX-99.1"),
                        None,
                    )
                    if release is None:
                        notes.append("no EX-99.1 earnings release in the filing")
                    else:
                        text = html_to_text(await self.sec.fetch_sec_url(release.url))
                        figures, source = tuple(key_figures(text)), "EX-99.1"
            elif form.split("/")[0] in _PERIODIC and f.primary_document:
                prior = next(
                    (
                        h
                        for h in history
                        if h.filing_type.upper() == form.split("/")[0]
                        and h.accession_number != f.accession
                        and h.filing_date <= f.filing_date
                    ),
                    None,
                )
                if prior is None:
                    notes.append(f"no earlier {form} to compare with")
                else:
                    base = form.split("/")[0]
                    now_text = await self._item_1a(f.cik, f.accession, f.primary_document, base)
                    then_text = await self._item_1a(
                        prior.cik, prior.accession_number, prior.primary_document or "", base
                    )
                    diff, previous = diff_sections(then_text, now_text), prior.accession_number
        except DataError as exc:
            notes.append(f"details not read: {exc}")
        return FilingDetails(
            link=link,
            documents=documents,
            figures=figures,
            figures_source=source,
            risk_diff=diff,
            compared_with=previous,
            notes=tuple(notes),
        )

    async def _item_1a(self, cik: str, accession: str, document: str, form: str) -> str:
        url = urls.filing_document(cik, accession, document, self.sec.www_url)
        text = html_to_text(await self.sec.fetch_sec_url(url))
        return extract_item(text, form, "1A").text

    # --- dexter watch test ------------------------------------------------------------------

    async def replay(self, watch: Watch, ticker: str, *, count: int = 1) -> str:
        """The alert the latest `count` wanted filings of `ticker` would give, as if new."""
        company = await self.sec.company(ticker)
        url = urls.submissions(company.cik, self.sec.data_url)
        data = json.loads(await self.sec.http.get_bytes(url))
        filings = filings_from_submissions(
            data, ticker=ticker, www_base=self.sec.www_url, cik=company.cik
        )
        latest = [_detected(watch.id, f) for f in filings if wanted(watch, f)][:count]
        if not latest:
            return f"{ticker} has no {', '.join(watch.forms)} filings in its recent list."
        return await self.alert_text(latest, {ticker: filings}, cluster=watch.cluster)
