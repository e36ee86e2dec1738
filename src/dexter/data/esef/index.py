"""The filings.xbrl.org index: its JSON:API pages of filings and entities, read into records.

A page holds `data` (filings or one entity), `included` (the entities asked for with
`include=entity`), `links.next` (the following page, absent on the last) and `meta.count`.
Each filing's `json_url`, `report_url` and `package_url` are paths on the same host; `json_url`
is null when the repository could not convert the report to xBRL-JSON.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

from dexter.data.errors import UpstreamError

PROVIDER = "filings.xbrl.org"
# The language of a report is the suffix of its file name: "-en.json", "-fi.json", " EN.json".
_LANGUAGE = re.compile(r"[-_ ]([A-Za-z]{2})\.json$")


@dataclass(frozen=True)
class EsefEntity:
    lei: str
    name: str


@dataclass(frozen=True)
class EsefFiling:
    api_id: str
    fxo_id: str  # "<LEI>-<period end>-ESEF-<country>-<n>": the repository's id of the filing
    lei: str
    entity_name: str | None
    country: str
    period_end: str  # YYYY-MM-DD
    date_added: str  # YYYY-MM-DD: when the repository received it (no filing date is published)
    json_url: str | None  # absolute URL of the xBRL-JSON report, None when there is none
    report_url: str | None  # absolute URL of the inline XBRL (XHTML) report
    package_url: str | None
    error_count: int

    @property
    def language(self) -> str | None:
        if self.json_url is None:
            return None
        match = _LANGUAGE.search(self.json_url)
        return match.group(1).lower() if match else None


@dataclass(frozen=True)
class FilingsPage:
    filings: list[EsefFiling]
    entities: list[EsefEntity]
    next_url: str | None
    count: int | None


def absolute(base: str, path: str) -> str:
    """A path from the index (it may hold spaces) or one of its links, on the configured base:
    recorded and live links name https://filings.xbrl.org, a mirror or a test server does not."""
    parts = urlsplit(path)
    if parts.scheme:
        rest = parts.path + (f"?{parts.query}" if parts.query else "")
        return base.rstrip("/") + rest
    return base.rstrip("/") + quote(path, safe="/%?=&[]:-._~")


def parse_entity(data: Any) -> EsefEntity:
    """`GET /api/entities/<LEI>`: one entity resource."""
    item = data.get("data") if isinstance(data, dict) else None
    attributes = item.get("attributes") if isinstance(item, dict) else None
    if not isinstance(attributes, dict) or not attributes.get("identifier"):
        raise UpstreamError(f"{PROVIDER} sent an entity without an identifier.")
    lei = str(attributes["identifier"])
    return EsefEntity(lei=lei, name=str(attributes.get("name") or lei))


def parse_filings_page(data: Any, base: str) -> FilingsPage:
    """One page of `GET /api/filings?...` or `GET /api/entities/<LEI>/filings`."""
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise UpstreamError(f"{PROVIDER} sent a filings page without a list of filings.")
    entities: dict[str, EsefEntity] = {}
    for item in data.get("included") or []:
        if isinstance(item, dict) and item.get("type") == "entity":
            attributes = item.get("attributes") or {}
            if attributes.get("identifier"):
                entities[str(item.get("id"))] = EsefEntity(
                    lei=str(attributes["identifier"]),
                    name=str(attributes.get("name") or attributes["identifier"]),
                )
    filings = [
        _filing(item, entities, base)
        for item in data["data"]
        if isinstance(item, dict) and item.get("type") == "filing"
    ]
    links = data.get("links") if isinstance(data.get("links"), dict) else {}
    next_link = links.get("next") if links else None
    meta = data.get("meta") if isinstance(data.get("meta"), dict) else {}
    count = meta.get("count") if meta else None
    return FilingsPage(
        filings=filings,
        entities=list(entities.values()),
        next_url=absolute(base, str(next_link)) if next_link else None,
        count=count if isinstance(count, int) else None,
    )


def _filing(item: dict[str, Any], entities: dict[str, EsefEntity], base: str) -> EsefFiling:
    attributes = item.get("attributes") or {}
    fxo_id = str(attributes.get("fxo_id") or "")
    relation = ((item.get("relationships") or {}).get("entity") or {}).get("data") or {}
    entity = entities.get(str(relation.get("id"))) if isinstance(relation, dict) else None
    # The fxo id starts with the LEI; the entity, when included, says the same with its name.
    lei = entity.lei if entity else fxo_id.split("-", 1)[0]

    def url(key: str) -> str | None:
        value = attributes.get(key)
        return absolute(base, str(value)) if value else None

    return EsefFiling(
        api_id=str(item.get("id") or ""),
        fxo_id=fxo_id,
        lei=lei,
        entity_name=entity.name if entity else None,
        country=str(attributes.get("country") or ""),
        period_end=str(attributes.get("period_end") or "")[:10],
        date_added=str(attributes.get("date_added") or "")[:10],
        json_url=url("json_url"),
        report_url=url("report_url"),
        package_url=url("package_url"),
        error_count=int(attributes.get("error_count") or 0),
    )


def api_error_text(body: str | None) -> str | None:
    """The titles and details of a JSON:API error body, e.g. "Invalid filters querystring
    parameter. (FilingSchema has no attribute abcdef)", or None when the body has none."""
    try:
        data = json.loads(body or "")
    except ValueError:
        return None
    errors = data.get("errors") if isinstance(data, dict) else None
    said = []
    for error in errors if isinstance(errors, list) else []:
        if not isinstance(error, dict):
            continue
        title = str(error.get("title") or "").strip()
        detail = str(error.get("detail") or "").strip()
        code = str(error.get("code") or "").strip()
        text = title.rstrip(".") if title else "error"
        extra = "; ".join(part for part in (detail, f"code {code}" if code else "") if part)
        said.append(f"{text} ({extra})" if extra else text)
    return "; ".join(said) or None
