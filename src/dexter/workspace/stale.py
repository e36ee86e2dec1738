"""What is stale: a model or memo whose inputs predate its ticker's latest 10-K or 10-Q.

A file's inputs are what it says it is based on: the filings it cites (accession numbers), the
fiscal periods and dates its headers cover, the dates its text is written on, and the date
ranges of the data files it reads. Each piece of evidence is compared with the newest annual or
quarterly report of each ticker the file is about (from SEC submissions, through the data
layer): a cited filing older than it, periods that end before its period, or text written before
it was filed. A file is stale when it has evidence and none of it reaches the latest report.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta
from typing import TYPE_CHECKING, Protocol

from dexter.workspace.model import ACCESSION, PERIOD, TICKER

if TYPE_CHECKING:
    from dexter.data.models import Filing
    from dexter.workspace.view import Snapshot

REPORTS = ("10-K", "10-Q")
# Code counts too: a Python DCF that reads last year's prices is a model on old inputs.
STALE_KINDS = frozenset({"workbook", "notebook", "memo", "code"})
MAX_TICKERS = 15
REPORT_DEPTH = 40
RECENT_DEPTH = 400
TICKERS_PER_FILE = 3
# Fiscal periods named by label end on a day we estimate from the filer's 10-K dates.
SLACK = timedelta(days=10)
_LABEL = re.compile(r"^(?:Q([1-4]) )?FY(\d{4})$")


class FilingSource(Protocol):
    async def filings(self, ticker: str, **kw: object) -> list[Filing]: ...


@dataclass(frozen=True)
class Evidence:
    """One thing a file is based on. `kind`: "filing" (an accession it cites), "period" (a
    period end its headers or data reach), "label" (a fiscal period named), "written" (a date
    in its text)."""

    kind: str
    value: str
    source: str  # the file it was found in (the file itself or a data file it reads)


@dataclass(frozen=True)
class Stale:
    path: str
    ticker: str
    based_on: str
    latest: Filing

    def describe(self) -> str:
        f = self.latest
        period = f" for the period ended {f.report_date}" if f.report_date else ""
        return (
            f"{self.path}: based on {self.based_on}; superseded by {self.ticker}'s "
            f"{f.filing_type} filed {f.filing_date}{period} (accession {f.accession_number})"
        )


@dataclass
class StaleReport:
    stale: list[Stale]
    checked: int  # files with a ticker and evidence, compared with filings
    notes: list[str]


def evidence_of(snapshot: Snapshot, path: str) -> list[Evidence]:
    """What `path` is based on, its own tags and the data files it reads one hop away."""
    found: list[Evidence] = []
    row = snapshot.files[path]
    for tag in snapshot.tags_by_file.get(path, []):
        if tag.kind == ACCESSION:
            found.append(Evidence("filing", tag.name, path))
        elif tag.kind == PERIOD:
            found.append(_period(tag.name, tag.detail, row.kind, path))
    reads = {u.target for u in snapshot.graph.uses_of(path) if "reads" in u.reasons}
    for source in sorted(reads):
        if snapshot.files[source].kind != "data":
            continue
        for tag in snapshot.tags_by_file.get(source, []):
            if tag.kind == PERIOD and tag.detail == "last date":
                found.append(Evidence("period", tag.name, source))
    return [e for e in found if e.kind != "skip"]


def _period(name: str, detail: str, kind: str, path: str) -> Evidence:
    if _LABEL.match(name):
        return Evidence("label", name, path)
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", name):
        return Evidence("skip", name, path)  # a projection (FY2026E) is not an input
    if detail in ("header date", "last date"):
        return Evidence("period", name, path)
    return Evidence("written", name, path)


def tickers_of(snapshot: Snapshot, path: str) -> list[str]:
    return [t.name for t in snapshot.tags_by_file.get(path, []) if t.kind == TICKER][
        :TICKERS_PER_FILE
    ]


async def find_stale(
    snapshot: Snapshot,
    filings: FilingSource,
    *,
    paths: list[str] | None = None,
) -> StaleReport:
    """The stale models and memos among `paths` (default: every one in the workspace)."""
    from dexter.data.errors import DataError, NotFound

    candidates = paths if paths is not None else sorted(snapshot.files)
    wanted: dict[str, list[tuple[str, list[Evidence]]]] = {}
    for path in candidates:
        row = snapshot.files.get(path)
        if row is None or row.kind not in STALE_KINDS:
            continue
        evidence = evidence_of(snapshot, path)
        if not evidence:
            continue
        for ticker in tickers_of(snapshot, path):
            wanted.setdefault(ticker.upper(), []).append((path, evidence))
    report = StaleReport([], 0, [])
    checked: set[str] = set()
    for number, (ticker, files) in enumerate(sorted(wanted.items(), key=lambda kv: -len(kv[1]))):
        if number >= MAX_TICKERS:
            report.notes.append(f"{len(wanted) - MAX_TICKERS} more tickers not checked")
            break
        try:
            history = await _history(filings, ticker, files)
        except NotFound:
            continue  # not a listed company's ticker: a word that looked like one
        except DataError as error:
            report.notes.append(f"{ticker}: {error}")
            continue
        latest = next((f for f in history if f.filing_type in REPORTS), None)
        if latest is None:
            continue
        for path, evidence in files:
            checked.add(path)
            verdict = _judge(evidence, history, latest)
            if verdict is not None:
                report.stale.append(Stale(path, ticker, verdict, latest))
    report.checked = len(checked)
    report.stale.sort(key=lambda s: (s.path, s.ticker))
    return report


async def _history(
    filings: FilingSource, ticker: str, files: list[tuple[str, list[Evidence]]]
) -> list[Filing]:
    """The ticker's annual and quarterly reports (ten years of them), and its recent filings of
    every form when a file cites one that is not among those reports (an 8-K, a proxy)."""
    reports = await filings.filings(ticker, forms=list(REPORTS), limit=REPORT_DEPTH)
    known = {f.accession_number for f in reports}
    cited = {e.value for _, evidence in files for e in evidence if e.kind == "filing"}
    if cited - known:
        recent = await filings.filings(ticker, limit=RECENT_DEPTH)
        reports = sorted(
            {f.accession_number: f for f in [*reports, *recent]}.values(),
            key=lambda f: f.filing_date,
            reverse=True,
        )
    return reports


def _judge(evidence: list[Evidence], history: list[Filing], latest: Filing) -> str | None:
    """None when some evidence reaches the latest report; else what the file is based on."""
    by_accession = {f.accession_number: f for f in history}
    fiscal_ends = _fiscal_ends(history)
    latest_period = _day(latest.report_date) or _day(latest.filing_date)
    latest_filed = _day(latest.filing_date)
    best: tuple[date, str] | None = None
    cited_best: tuple[date, str] | None = None
    relevant = False
    for item in evidence:
        if item.kind == "filing":
            cited = by_accession.get(item.value)
            if cited is None:
                continue  # another company's filing
            relevant = True
            filed = _day(cited.filing_date)
            if filed and latest_filed and filed >= latest_filed:
                return None
            text = f"{cited.filing_type} {item.value} filed {cited.filing_date}"
            candidate = (filed or date.min, text)
        elif item.kind == "label":
            end = _label_end(item.value, fiscal_ends)
            if end is None:
                continue
            relevant = True
            if latest_period and end + SLACK >= latest_period:
                return None
            candidate = (end, f"periods through {item.value}")
        elif item.kind == "period":
            day = _day(item.value)
            if day is None:
                continue
            relevant = True
            if latest_period and day + SLACK >= latest_period:
                return None
            where = "" if item.source.endswith((".xlsx", ".xlsm")) else f" in {item.source}"
            candidate = (day, f"data through {item.value}{where}")
        else:
            day = _day(item.value)
            if day is None:
                continue
            relevant = True
            if latest_filed and day >= latest_filed:
                return None
            candidate = (day, f"text dated up to {item.value}")
        if best is None or candidate[0] > best[0]:
            best = candidate
        if item.kind == "filing" and (cited_best is None or candidate[0] > cited_best[0]):
            cited_best = candidate
    # A cited filing says best what the file is based on; else the newest evidence.
    chosen = cited_best or best
    return chosen[1] if relevant and chosen is not None else None


def _fiscal_ends(history: list[Filing]) -> dict[int, date]:
    """Each fiscal year's end, from the 10-Ks' period dates (the year a fiscal year is named
    for is the calendar year it ends in)."""
    ends: dict[int, date] = {}
    for filing in history:
        if filing.filing_type == "10-K":
            day = _day(filing.report_date)
            if day is not None:
                ends.setdefault(day.year, day)
    return ends


def _label_end(label: str, fiscal_ends: dict[int, date]) -> date | None:
    match = _LABEL.match(label)
    if match is None:
        return None
    year = int(match.group(2))
    end = fiscal_ends.get(year)
    if end is None and fiscal_ends:
        pattern = fiscal_ends[max(fiscal_ends)]
        try:
            end = pattern.replace(year=year)
        except ValueError:
            end = pattern.replace(year=year, day=28)
    if end is None:
        end = date(year, 12, 31)
    quarter = match.group(1)
    if quarter:
        end -= timedelta(days=91 * (4 - int(quarter)))
    return end


def _day(text: str | None) -> date | None:
    if not text:
        return None
    try:
        return date.fromisoformat(text[:10])
    except ValueError:
        return None


__all__ = ["Evidence", "Stale", "StaleReport", "evidence_of", "find_stale"]
