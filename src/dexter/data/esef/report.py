"""An xBRL-JSON report (XBRL International's xBRL-JSON 1.0) read into plain numeric facts.

A report is `{"documentInfo": {"documentType", "namespaces", "taxonomy"}, "facts": {id: fact}}`;
each fact has a `value` (a string), optional `decimals`, and `dimensions`: the core ones
(`concept`, `entity`, `period`, `unit`, `language`) and any taxonomy-defined ones (e.g.
`ifrs-full:SegmentsAxis`). Only facts with no taxonomy-defined dimension are kept: a dimensional
fact is one segment or one component of equity, never the statement's total.

Periods are instants or `start/end` intervals of date-times; an end at midnight
(`2023-01-01T00:00:00`) is the end of the day before, so it is read as 2022-12-31.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from dexter.data.errors import UpstreamError

DOCUMENT_TYPE = "https://xbrl.org/2021/xbrl-json"
CORE_DIMENSIONS = frozenset({"concept", "entity", "period", "unit", "language", "noteId"})
_IFRS_NAMESPACE_HOST = "xbrl.ifrs.org/taxonomy/"


@dataclass(frozen=True)
class ReportFact:
    concept: str  # local name in the IFRS taxonomy, e.g. "Revenue"
    value: float
    start: date | None  # None for an instant
    end: date
    unit: str | None  # "EUR", "EUR/shares", "shares"
    decimals: int | None  # None: exact (the spec's "INF", or absent)

    @property
    def days(self) -> int:
        return (self.end - self.start).days + 1 if self.start else 0


def _day(text: str, *, end: bool) -> date:
    """A date or date-time of the spec; a midnight that ends a period closes the previous day."""
    text = text.strip()
    if "T" not in text:
        return date.fromisoformat(text[:10])
    moment = datetime.fromisoformat(text.rstrip("Z"))
    if end and moment.time() == datetime.min.time():
        return (moment - timedelta(days=1)).date()
    return moment.date()


def parse_period(text: str) -> tuple[date | None, date]:
    if "/" in text:
        start, finish = text.split("/", 1)
        return _day(start, end=False), _day(finish, end=True)
    return None, _day(text, end=True)


def _unit(text: str | None) -> str | None:
    """`iso4217:EUR` -> EUR; `iso4217:EUR/xbrli:shares` -> EUR/shares."""
    if not text:
        return None
    return "/".join(part.strip().rpartition(":")[2] for part in text.split("/"))


def _ifrs_prefixes(namespaces: dict[str, str]) -> set[str]:
    """The prefixes bound to an IFRS Foundation `ifrs-full` taxonomy namespace (any year)."""
    found = {
        prefix
        for prefix, uri in namespaces.items()
        if _IFRS_NAMESPACE_HOST in uri and uri.rstrip("/").endswith("/ifrs-full")
    }
    return found or {"ifrs-full"}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None  # a text, date or boolean fact


def _decimals(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def read_report(data: Any, *, url: str) -> list[ReportFact]:
    """The report's non-dimensional numeric `ifrs-full` facts."""
    if not isinstance(data, dict) or not isinstance(data.get("facts"), dict):
        raise UpstreamError(f"The xBRL-JSON report at {url} has no facts object.", url=url)
    info = data.get("documentInfo") if isinstance(data.get("documentInfo"), dict) else {}
    doc_type = info.get("documentType") if info else None
    if doc_type != DOCUMENT_TYPE:
        raise UpstreamError(
            f"The report at {url} is not xBRL-JSON 1.0 (documentType {doc_type!r}).", url=url
        )
    raw_namespaces = info.get("namespaces") if info else None
    namespaces = {str(k): str(v) for k, v in (raw_namespaces or {}).items()}
    ifrs = _ifrs_prefixes(namespaces)
    facts: list[ReportFact] = []
    for fact in data["facts"].values():
        if not isinstance(fact, dict) or not isinstance(fact.get("dimensions"), dict):
            continue
        dims: dict[str, Any] = fact["dimensions"]
        if not CORE_DIMENSIONS.issuperset(dims):
            continue  # a segment, an equity component, a class of shares …
        prefix, _, local = str(dims.get("concept") or "").partition(":")
        if prefix not in ifrs or not local or not isinstance(dims.get("period"), str):
            continue
        value = _number(fact.get("value"))
        if value is None:
            continue
        try:
            start, end = parse_period(dims["period"])
        except ValueError:
            continue
        facts.append(
            ReportFact(
                concept=local,
                value=value,
                start=start,
                end=end,
                unit=_unit(dims.get("unit")),
                decimals=_decimals(fact.get("decimals")),
            )
        )
    return facts
