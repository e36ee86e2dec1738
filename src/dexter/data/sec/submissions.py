"""Filings and company facts from the SEC submissions JSON (`data.sec.gov/submissions/CIK….json`).

The submissions file is columnar: `filings.recent` holds parallel arrays (one per field) for the
latest ~1,000 filings, and `filings.files` names older pages that hold the same columns at their top
level. Everything here is a pure function over that parsed JSON; fetching is the caller's job.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from pydantic import Field

from dexter.data.errors import UpstreamError
from dexter.data.models import Company, Filing, Record
from dexter.data.sec import urls

# Columns we cannot build a Filing without; the rest are optional and read leniently.
_REQUIRED_COLUMNS = ("accessionNumber", "filingDate", "form")


class SubmissionsPage(Record):
    """One older page of a filer's history, listed in `filings.files`."""

    name: str  # e.g. CIK0000320193-submissions-001.json
    filing_count: int | None = None
    filing_from: str | None = None  # YYYY-MM-DD, oldest filing on the page
    filing_to: str | None = None  # newest filing on the page

    def reaches_back_to(self, date: str) -> bool:
        """True when this page holds filings on or after `date` (so it is worth fetching)."""
        return self.filing_to is None or self.filing_to >= date

    def starts_after(self, date: str) -> bool:
        """True when every filing on this page is later than `date` (so a range ending on
        `date` needs nothing from it)."""
        return self.filing_from is not None and self.filing_from > date


class CompanyInfo(Record):
    """Who the filer is, from the top of its submissions file."""

    cik: str
    name: str
    tickers: list[str] = Field(default_factory=list)
    exchanges: list[str] = Field(default_factory=list)
    fiscal_year_end: str | None = None  # MMDD, e.g. "0926" for Apple
    sic: str | None = None
    sic_description: str | None = None
    entity_type: str | None = None
    category: str | None = None  # filer status, e.g. "Large accelerated filer"
    state_of_incorporation: str | None = None
    former_names: list[str] = Field(default_factory=list)

    def company(self, ticker: str | None = None) -> Company:
        """The `Company` record for one of the filer's tickers (its first when not given)."""
        chosen = ticker.upper() if ticker else (self.tickers[0] if self.tickers else "")
        exchange = None
        if chosen in self.tickers:
            index = self.tickers.index(chosen)
            if index < len(self.exchanges):
                exchange = self.exchanges[index] or None
        return Company(ticker=chosen, cik=self.cik, name=self.name, exchange=exchange)


def company_info(data: Mapping[str, Any]) -> CompanyInfo:
    """Name, tickers, exchanges, fiscal year end and SIC code of a filer."""
    cik = data.get("cik")
    name = data.get("name")
    if cik is None or not name:
        raise UpstreamError("SEC submissions JSON has no company name or CIK.")
    return CompanyInfo(
        cik=urls.pad_cik(cik),
        name=str(name),
        tickers=[str(t) for t in data.get("tickers") or []],
        exchanges=[str(e) for e in data.get("exchanges") or [] if e is not None],
        fiscal_year_end=_text(data.get("fiscalYearEnd")),
        sic=_text(data.get("sic")),
        sic_description=_text(data.get("sicDescription")),
        entity_type=_text(data.get("entityType")),
        category=_text(data.get("category")),
        state_of_incorporation=_text(data.get("stateOfIncorporation")),
        former_names=[
            str(f["name"])
            for f in data.get("formerNames") or []
            if isinstance(f, Mapping) and f.get("name")
        ],
    )


def older_pages(data: Mapping[str, Any]) -> list[SubmissionsPage]:
    """The older submissions pages, newest first, so a caller pages back only as far as needed."""
    files = (data.get("filings") or {}).get("files") or []
    pages = [
        SubmissionsPage(
            name=str(entry["name"]),
            filing_count=_int(entry.get("filingCount")),
            filing_from=_text(entry.get("filingFrom")),
            filing_to=_text(entry.get("filingTo")),
        )
        for entry in files
        if isinstance(entry, Mapping) and entry.get("name")
    ]
    return sorted(pages, key=lambda p: p.filing_to or "", reverse=True)


def form_matches(
    form: str, wanted: Collection[str] | None, *, include_amendments: bool = False
) -> bool:
    """Whether a filed form type is one the caller asked for.

    "10-K" matches "10-K" only, or also "10-K/A" with `include_amendments`; asking for "10-K/A"
    explicitly always matches amendments. Comparison ignores case and surrounding space.
    """
    if not wanted:
        return True
    filed = form.strip().upper()
    for w in wanted:
        target = w.strip().upper()
        if filed == target or (include_amendments and filed == f"{target}/A"):
            return True
    return False


def filings_from_submissions(
    data: Mapping[str, Any],
    *,
    ticker: str | None,
    forms: Collection[str] | None = None,
    limit: int | None = None,
    www_base: str = urls.DEFAULT_WWW_URL,
    include_amendments: bool = False,
    cik: str | int | None = None,
) -> list[Filing]:
    """Filings from a submissions file (its `filings.recent`) or from an older page, newest first.

    Older pages carry no CIK of their own, so pass `cik` for them.
    """
    columns = _columns(data)
    filer = cik if cik is not None else data.get("cik")
    if filer is None:
        raise UpstreamError(
            "This submissions page carries no CIK.", hint="Pass the filer's CIK with the page."
        )
    padded = urls.pad_cik(filer)

    rows = _rows(columns)
    # The SEC lists newest first already; sorting makes that a guarantee rather than a hope,
    # and acceptance time breaks ties between same-day filings.
    rows.sort(
        key=lambda r: (r.get("filingDate", ""), r.get("acceptanceDateTime", "")), reverse=True
    )

    filings: list[Filing] = []
    for row in rows:
        form = str(row.get("form") or "")
        if not form_matches(form, forms, include_amendments=include_amendments):
            continue
        filings.append(_filing(row, cik=padded, ticker=ticker, www_base=www_base))
        if limit is not None and len(filings) >= limit:
            break
    return filings


def _filing(row: Mapping[str, Any], *, cik: str, ticker: str | None, www_base: str) -> Filing:
    accession = str(row["accessionNumber"])
    primary = _text(row.get("primaryDocument"))
    url = (
        urls.filing_document(cik, accession, primary, www_base)
        if primary
        else urls.filing_index_page(cik, accession, www_base)
    )
    description = _text(row.get("primaryDocDescription"))
    items = _text(row.get("items"))
    if items:  # 8-K item numbers (2.02 = results of operations) are worth keeping visible
        description = f"{description}; items {items}" if description else f"items {items}"
    return Filing(
        cik=cik,
        accession_number=accession,
        filing_type=str(row["form"]),
        filing_date=str(row["filingDate"]),
        report_date=_text(row.get("reportDate")),
        ticker=ticker.upper() if ticker else None,
        url=url,
        primary_document=primary,
        description=description,
        items=[i.strip() for i in (items or "").split(",") if i.strip()],
    )


def _columns(data: Mapping[str, Any]) -> Mapping[str, Any]:
    filings = data.get("filings")
    if isinstance(filings, Mapping):
        recent = filings.get("recent")
        if isinstance(recent, Mapping):
            return recent
        raise UpstreamError("SEC submissions JSON has no filings.recent table.")
    # An older page: the same columns sit at the top level.
    if "accessionNumber" in data:
        return data
    raise UpstreamError("SEC submissions JSON has neither filings.recent nor filing columns.")


def _rows(columns: Mapping[str, Any]) -> list[dict[str, Any]]:
    missing = [c for c in _REQUIRED_COLUMNS if not isinstance(columns.get(c), list)]
    if missing:
        raise UpstreamError(f"SEC submissions JSON lacks the column(s) {', '.join(missing)}.")
    count = len(columns["accessionNumber"])
    lists: dict[str, Sequence[Any]] = {
        k: v for k, v in columns.items() if isinstance(v, list) and len(v) == count
    }
    short = [c for c in _REQUIRED_COLUMNS if c not in lists]
    if short:
        raise UpstreamError(
            f"SEC submissions JSON is inconsistent: column(s) {', '.join(short)} "
            f"do not have {count} entries like accessionNumber."
        )
    return [{k: v[i] for k, v in lists.items()} for i in range(count)]


def _text(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
