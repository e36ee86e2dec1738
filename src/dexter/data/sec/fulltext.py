"""EDGAR full-text search (`efts.sec.gov/LATEST/search-index`), the JSON behind the SEC's
full-text search page: every document filed since 2001, no key.

The endpoint is undocumented but stable. A request takes `q` (words, or a "quoted phrase"),
`forms` (comma-separated), `dateRange=custom` with `startdt`/`enddt`, `ciks` (ten-digit,
comma-separated) and `from` (offset; 100 hits a page). Each hit's `_id` is
`{accession}:{file name}` and its `_source` carries `adsh`, `ciks`, `display_names`, `form`,
`file_type`, `file_date`, `period_ending` and `items`; the document's URL is built from the
first CIK, the accession without dashes and the file name. Pure functions here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field

from dexter.data.errors import UpstreamError
from dexter.data.models import Record
from dexter.data.sec import urls

PAGE_SIZE = 100
SEARCH_PATH = "/LATEST/search-index"


class SearchHit(Record):
    accession_number: str
    cik: str  # ten digits: the first filer named on the hit
    ciks: list[str] = Field(default_factory=list)
    company_names: list[str] = Field(default_factory=list)
    form: str | None = None
    file_type: str | None = None  # the document's type: 10-K, EX-99.1 …
    file_name: str
    file_description: str | None = None
    filing_date: str | None = None
    period_ending: str | None = None
    items: list[str] = Field(default_factory=list)
    url: str


class SearchPage(Record):
    query: str
    total: int
    total_is_exact: bool = True
    offset: int = 0
    hits: list[SearchHit] = Field(default_factory=list)
    url: str  # the request, for citation


def search_url(efts_base: str) -> str:
    return efts_base.rstrip("/") + SEARCH_PATH


def search_params(
    query: str,
    *,
    forms: Sequence[str] | None = None,
    start_date: str | None = None,
    end_date: str | None = None,
    ciks: Sequence[str | int] | None = None,
    offset: int = 0,
) -> dict[str, str]:
    params: dict[str, str] = {"q": query.strip()}
    if forms:
        params["forms"] = ",".join(f.strip().upper() for f in forms if f.strip())
    if start_date or end_date:
        params["dateRange"] = "custom"
        # EDGAR full-text search covers 2001 onward; an open end means today.
        params["startdt"] = start_date or "2001-01-01"
        if end_date:
            params["enddt"] = end_date
    if ciks:
        params["ciks"] = ",".join(urls.pad_cik(c) for c in ciks)
    if offset:
        params["from"] = str(offset)
    return params


def parse_search(
    data: Any, *, query: str, url: str, www_base: str = urls.DEFAULT_WWW_URL, offset: int = 0
) -> SearchPage:
    if not isinstance(data, Mapping) or not isinstance(data.get("hits"), Mapping):
        raise UpstreamError("EDGAR full-text search sent a reply without hits.", url=url)
    outer = data["hits"]
    total_raw = outer.get("total")
    exact = True
    if isinstance(total_raw, Mapping):
        total = int(total_raw.get("value") or 0)
        exact = str(total_raw.get("relation") or "eq") == "eq"
    else:
        total = int(total_raw or 0)
    hits: list[SearchHit] = []
    for raw in outer.get("hits") or []:
        hit = _hit(raw, www_base)
        if hit is not None:
            hits.append(hit)
    return SearchPage(
        query=query, total=total, total_is_exact=exact, offset=offset, hits=hits, url=url
    )


def _hit(raw: Any, www_base: str) -> SearchHit | None:
    if not isinstance(raw, Mapping):
        return None
    source = raw.get("_source")
    if not isinstance(source, Mapping):
        return None
    identifier = str(raw.get("_id") or "")
    accession_from_id, _, file_name = identifier.partition(":")
    accession = str(source.get("adsh") or accession_from_id).strip()
    ciks = [str(c) for c in source.get("ciks") or [] if str(c).strip().isdigit()]
    if not accession or not file_name or not ciks:
        return None
    cik = urls.pad_cik(ciks[0])
    return SearchHit(
        accession_number=accession,
        cik=cik,
        ciks=[urls.pad_cik(c) for c in ciks],
        company_names=[str(n) for n in source.get("display_names") or []],
        form=_text(source.get("form")),
        file_type=_text(source.get("file_type")),
        file_name=file_name,
        file_description=_text(source.get("file_description")),
        filing_date=_text(source.get("file_date")),
        period_ending=_text(source.get("period_ending")),
        items=[str(i) for i in source.get("items") or []],
        url=urls.filing_document(cik, accession, file_name, www_base),
    )


def _text(value: Any) -> str | None:
    text = str(value).strip() if value is not None else ""
    return text or None
