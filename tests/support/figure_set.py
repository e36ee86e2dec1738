"""The figure verifier's hand-labelled answer set, and the evidence each answer was written against.

Cases live in `tests/data/figure_answers/*.yaml` (one file per topic). A case names the data calls
whose results the answer was written from, never their output: the harness re-runs those calls
offline, through Dexter's own data and formatting code over the recorded fixtures, so the text
a case is checked against is exactly what the model would have read from the tool.

    - id: aapl-rev-growth-01
      evidence:
      - call: income_statements
        args: {company: AAPL, period: annual, limit: 3}
      - question: "What was Apple's revenue growth in FY2025?"
      answer: |
        Apple's revenue rose 6.4% to $416.2 billion ...
      figures:                      # every figure in the answer, in order of appearance
      - {text: "6.4%", label: derivable}
      - {text: "$416.2 billion", label: right}

Calls are Dexter's data calls with the arguments the router would give them (`company`,
`period`, `limit`, ...), run through the real `DataCall` tools over the SEC mirror, plus
`calculate` (the real calculate tool). Three data calls have no recorded EDGAR listing behind
them, so the harness feeds the recorded documents to the same parser and formatter the tool uses:
`insider_trades` (`files:` Form 3/4/5 XML under sec-documents), `institutional_holdings` (the
recorded 13F information table) and `stock_prices` (`file:` a recorded Yahoo chart response).
Arguments whose names start with `fixture_` or are `files`/`file` only say which recording
to read; they are not part of the call a model makes.

Each evidence is labelled as the wiring labels a tool result (`meta_tool (data_call(args))`)
and its text is the meta-tool's merged section (`### data_call(args)` then the data call's
output). The user's question is evidence labelled "your question".
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from dexter.figures.types import Evidence

CASES_DIR = Path(__file__).resolve().parents[1] / "data" / "figure_answers"

RIGHT = "right"
DERIVABLE = "derivable"
WRONG_LABELS = ("wrong-digit", "wrong-scale", "wrong-period", "invented")
LABELS = (RIGHT, DERIVABLE, *WRONG_LABELS)
QUESTION_LABEL = "your question"

_USER_AGENT = "Dexter figure-set dexter-figures@example.invalid"
# libyaml's loader when present: the set is a few thousand lines, and the pure-Python loader
# takes most of a second over it.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# Which meta-tool carries each data call, as the model sees it.
_META = {
    "income_statements": "get_financials",
    "balance_sheets": "get_financials",
    "cash_flow_statements": "get_financials",
    "financial_metrics": "get_financials",
    "xbrl_facts": "get_financials",
    "segments": "get_financials",
    "filing_section": "read_filings",
    "filing_document": "read_filings",
    "filing_documents": "read_filings",
    "filings": "read_filings",
    "insider_trades": "get_market_data",
    "institutional_holdings": "get_market_data",
    "stock_prices": "get_market_data",
}
_HARNESS_ARGS = frozenset({"file", "files"})


class CaseError(ValueError):
    """A case file that does not say what a case needs."""


@dataclass(frozen=True, slots=True)
class LabelledFigure:
    text: str
    label: str


@dataclass(frozen=True, slots=True)
class Call:
    name: str
    args: Mapping[str, Any]

    @property
    def key(self) -> str:
        return f"{self.name} {json.dumps(dict(self.args), sort_keys=True, default=str)}"

    @property
    def shown_args(self) -> dict[str, Any]:
        return {
            k: v
            for k, v in self.args.items()
            if k not in _HARNESS_ARGS and not k.startswith("fixture_")
        }


@dataclass(frozen=True, slots=True)
class FigureCase:
    topic: str
    id: str
    calls: tuple[Call, ...]
    question: str | None
    answer: str
    figures: tuple[LabelledFigure, ...]
    note: str | None = None


def load_cases(directory: Path = CASES_DIR) -> list[FigureCase]:
    """Every case, in file then listed order; a malformed case raises `CaseError` naming it."""
    cases: list[FigureCase] = []
    seen: set[str] = set()
    for path in sorted(directory.glob("*.yaml")):
        raw_cases = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER) or []
        if not isinstance(raw_cases, list):
            raise CaseError(f"{path.name}: expected a list of cases")
        for raw in raw_cases:
            case = _case(path.stem, raw)
            if case.id in seen:
                raise CaseError(f"{path.name}: duplicate case id {case.id!r}")
            seen.add(case.id)
            cases.append(case)
    return cases


def _case(topic: str, raw: Mapping[str, Any]) -> FigureCase:
    ident = str(raw.get("id") or "?")
    calls: list[Call] = []
    question: str | None = None
    for item in raw.get("evidence") or []:
        if "question" in item:
            question = str(item["question"])
        elif "call" in item:
            calls.append(Call(str(item["call"]), dict(item.get("args") or {})))
        else:
            raise CaseError(f"{topic}/{ident}: evidence item {item!r} has no call or question")
    answer = str(raw.get("answer") or "")
    figures = []
    for fig in raw.get("figures") or []:
        text, label = str(fig["text"]), str(fig["label"])
        if label not in LABELS:
            raise CaseError(f"{topic}/{ident}: unknown label {label!r} for {text!r}")
        figures.append(LabelledFigure(text, label))
    _check_order(topic, ident, answer, figures)
    return FigureCase(topic, ident, tuple(calls), question, answer, tuple(figures), raw.get("note"))


def _check_order(topic: str, ident: str, answer: str, figures: Sequence[LabelledFigure]) -> None:
    """Each labelled figure occurs in the answer, in the order listed."""
    at = 0
    for fig in figures:
        found = answer.find(fig.text, at)
        if found < 0:
            raise CaseError(f"{topic}/{ident}: {fig.text!r} not found in the answer after {at}")
        at = found + len(fig.text)


def locate(case: FigureCase) -> list[tuple[int, int, LabelledFigure]]:
    """Each labelled figure's character span in the answer (first match after the last one)."""
    spans: list[tuple[int, int, LabelledFigure]] = []
    at = 0
    for fig in case.figures:
        start = case.answer.find(fig.text, at)
        spans.append((start, start + len(fig.text), fig))
        at = start + len(fig.text)
    return spans


# ---------------------------------------------------------------------------------------------
# Evidence


class EvidenceMaker:
    """Runs the cases' calls offline over the fixtures, once per distinct call."""

    def __init__(self, fixtures: Path, cache_dir: Path) -> None:
        from dexter.data.router import DataRouter
        from dexter.data.sec.provider import SecEdgarProvider
        from dexter.data.settings import DataSettings
        from tests.support.filing_folder import buckle_folder
        from tests.support.sec_mirror import Mirror, mirror_transport

        self.fixtures = fixtures
        settings = DataSettings(cache_dir=cache_dir, sec_user_agent=_USER_AGENT)
        mirror = Mirror({**buckle_folder(), **_apple_folder()})
        self.sec = SecEdgarProvider(settings, transport=mirror_transport(mirror))
        self.router = DataRouter([self.sec])
        self._texts: dict[str, Evidence] = {}
        # One converted text per filing: (the first section read from it, the whole text).
        self._filings: dict[str, tuple[Any, str]] = {}

    async def aclose(self) -> None:
        await self.router.aclose()

    async def evidence(self, case: FigureCase) -> list[Evidence]:
        out = [await self.call(call) for call in case.calls]
        if case.question is not None:
            out.append(Evidence(QUESTION_LABEL, case.question))
        return out

    async def call(self, call: Call) -> Evidence:
        known = self._texts.get(call.key)
        if known is None:
            known = self._texts[call.key] = await self._run(call)
        return known

    async def _run(self, call: Call) -> Evidence:
        from dexter.tools.finance.routed import describe_call

        shown = describe_call(call.name, call.shown_args)
        if call.name == "calculate":
            return Evidence("calculate", await self._calculate(call.args))
        meta = _META.get(call.name)
        if meta is None:
            raise CaseError(f"unknown call {call.name!r}")
        if call.name == "filing_section":
            content = await self._filing_section(call.args)
        elif call.name == "insider_trades":
            content = await self._insider_trades(call.args)
        elif call.name == "institutional_holdings":
            content = self._holdings(call.args)
        elif call.name == "stock_prices":
            content = await self._prices(call.args)
        else:
            content = await self._data_call(call)
        return Evidence(f"{meta} ({shown})", f"### {shown}\n{content}")

    async def _data_call(self, call: Call) -> str:
        from dexter.tools.base import ToolContext
        from dexter.tools.finance.datacalls import data_call_tools

        tools = {tool.name: tool for tool in data_call_tools(self.router)}
        tool = tools[call.name]
        args = tool.Args.model_validate(call.shown_args)
        result = await tool.run(args, ToolContext())
        return result.content

    async def _filing_section(self, args: Mapping[str, Any]) -> str:
        """What `filing_section` returns. Converting a 10-K to text is the slow part (half a
        second), so each filing is converted once and its other items are cut from that text
        with the same `extract_item` the provider uses; the section is then formatted exactly
        as the tool formats it."""
        from dexter.data.models import FilingSection
        from dexter.data.sec.documents import html_to_text
        from dexter.data.sec.items import extract_item
        from dexter.tools.citations import SourceLedger
        from dexter.tools.finance.datacalls import SectionArgs
        from dexter.tools.finance.format import format_section

        parsed = SectionArgs.model_validate(dict(args))
        company = await self.router.company(parsed.company)
        key = f"{company.ticker}|{parsed.form}|{parsed.year}|{parsed.accession_number}"
        known = self._filings.get(key)
        if known is None:
            first = await self.router.filing_section(
                company.ticker,
                form=parsed.form,
                item=parsed.item,
                year=parsed.year,
                accession_number=parsed.accession_number,
            )
            raw = await self.sec.http.get_bytes(first.source.url)
            known = self._filings[key] = (first, html_to_text(raw))
        first, text = known
        cut = extract_item(text, parsed.form, parsed.item)
        section = FilingSection.model_validate(
            {**first.model_dump(), "item": cut.item, "title": cut.title, "text": cut.text}
        )
        return format_section(
            section, ledger=SourceLedger(), focus=parsed.focus, max_chars=parsed.max_chars
        )

    async def _calculate(self, args: Mapping[str, Any]) -> str:
        from dexter.tools.base import ToolContext
        from dexter.tools.finance.calculate import CalculateArgs, CalculateTool

        result = await CalculateTool().run(CalculateArgs.model_validate(dict(args)), ToolContext())
        return result.content

    async def _insider_trades(self, args: Mapping[str, Any]) -> str:
        """The recorded ownership documents, parsed and ordered as the SEC provider does, then
        formatted by the insider_trades tool's formatter."""
        from dexter.data.models import InsiderTrades
        from dexter.data.sec.ownership import parse_ownership_document
        from dexter.tools.citations import SourceLedger
        from dexter.tools.finance.format import format_insider_trades

        trades = []
        for name in args["files"]:
            path = self.fixtures / "sec-documents" / str(name)
            parsed = parse_ownership_document(path.read_bytes(), url=path.as_uri())
            trades += parsed.trades
        trades.sort(key=lambda t: (t.transaction_date or "", t.filing_date or ""), reverse=True)
        limit = int(args.get("limit", 30))
        company = await self.router.company(str(args["company"]))
        return format_insider_trades(
            InsiderTrades(trades[:limit]), ledger=SourceLedger(), company=company
        )

    def _holdings(self, args: Mapping[str, Any]) -> str:
        """The recorded 13F table as the SEC provider returns a filer's report (largest value
        first, with the whole report's count and value), formatted as the tool formats it."""
        from dexter.data.models import Holdings
        from dexter.tools.citations import SourceLedger
        from dexter.tools.finance.format import format_holdings
        from tests.support.fixtures import example_13f_holdings

        rows = example_13f_holdings()
        rows.sort(key=lambda h: h.value_usd or 0, reverse=True)
        limit = None if args.get("all") else int(args.get("limit", 25))
        shown = rows if limit is None else rows[:limit]
        total = sum(h.value_usd or 0 for h in rows)
        report = Holdings(shown, total_count=len(rows), total_value_usd=total)
        return format_holdings(report, ledger=SourceLedger(), max_rows=max(len(report), 1))

    async def _prices(self, args: Mapping[str, Any]) -> str:
        from dexter.tools.citations import SourceLedger
        from dexter.tools.finance.format import format_prices

        path = self.fixtures / "prices" / "yahoo" / str(args["file"])
        prices = yahoo_chart_prices(json.loads(path.read_bytes()))
        start, end = str(args["start_date"]), str(args["end_date"])
        prices = [p for p in prices if start <= p.time[:10] <= end]
        company = await self.router.company(str(args["company"]))
        interval = str(args.get("interval", "day"))
        label = f"Yahoo Finance {interval} prices, {company.ticker}, {start} to {end}"
        return format_prices(
            prices,
            ledger=SourceLedger(),
            company=company,
            source_label=label,
            interval=interval,
            rows=args.get("rows", "spread"),
        )


def yahoo_chart_prices(recording: Mapping[str, Any]) -> list[Any]:
    """Daily bars of a recorded Yahoo chart response, dated in the exchange's time zone."""
    from dexter.data.models import Price

    result = recording["response"]["bodyJson"]["chart"]["result"][0]
    meta = result["meta"]
    offset = timedelta(seconds=int(meta.get("gmtoffset") or 0))
    quote = result["indicators"]["quote"][0]
    bars = []
    for i, stamp in enumerate(result.get("timestamp") or []):
        day = (datetime.fromtimestamp(stamp, UTC) + offset).date().isoformat()
        bars.append(
            Price(
                ticker=str(meta["symbol"]),
                time=day,
                open=quote["open"][i],
                high=quote["high"][i],
                low=quote["low"][i],
                close=quote["close"][i],
                volume=quote["volume"][i],
            )
        )
    return bars


def _apple_folder() -> dict[str, bytes]:
    """Apple's FY2024 10-K folder listing, in index.json's documented shape (the recorded
    document itself is in the mirror)."""
    listing = {
        "directory": {
            "item": [
                {"name": "aapl-20240928.htm", "size": "1500000"},
                {"name": "aapl-20240928_htm.xml", "size": "900000"},
                {"name": "0000320193-24-000123.txt", "size": ""},
            ]
        }
    }
    folder = "www.sec.gov/Archives/edgar/data/320193/000032019324000123"
    return {f"{folder}/index.json": json.dumps(listing).encode()}


async def prepare_evidence(
    cases: Sequence[FigureCase], fixtures: Path
) -> dict[str, list[Evidence]]:
    """Each case's evidence by case id; distinct calls run once."""
    with tempfile.TemporaryDirectory(prefix="dexter-figures-") as cache:
        maker = EvidenceMaker(fixtures, Path(cache))
        try:
            return {case.id: await maker.evidence(case) for case in cases}
        finally:
            await maker.aclose()


def prepare_evidence_sync(cases: Sequence[FigureCase], fixtures: Path) -> dict[str, list[Evidence]]:
    return asyncio.run(prepare_evidence(cases, fixtures))


# ---------------------------------------------------------------------------------------------
# Scoring: what the bench prints and the test asserts


@dataclass(frozen=True, slots=True)
class Scored:
    """One labelled figure and what the verifier made of it (None: not extracted)."""

    case: FigureCase
    figure: LabelledFigure
    status: str | None
    detail: str | None = None

    @property
    def wrong(self) -> bool:
        return self.figure.label in WRONG_LABELS

    @property
    def flagged(self) -> bool:
        return self.status == "unsupported"


@dataclass(frozen=True, slots=True)
class Unlabelled:
    """A figure the verifier extracted that the case does not label."""

    case: FigureCase
    text: str
    status: str


@dataclass
class CaseScore:
    scored: list[Scored]
    unlabelled: list[Unlabelled]


def score_case(case: FigureCase, verification: Any) -> CaseScore:
    """Match the verifier's figures to the labelled ones by overlapping character spans."""
    figures = list(verification.figures)
    used: set[int] = set()
    scored: list[Scored] = []
    for start, end, labelled in locate(case):
        match = None
        for i, fig in enumerate(figures):
            if i not in used and fig.start < end and start < fig.end:
                match = i
                break
        if match is None:
            scored.append(Scored(case, labelled, None))
            continue
        used.add(match)
        fig = figures[match]
        scored.append(Scored(case, labelled, fig.status, fig.source or fig.formula))
    unlabelled = [
        Unlabelled(case, fig.text, fig.status) for i, fig in enumerate(figures) if i not in used
    ]
    return CaseScore(scored, unlabelled)


@dataclass
class Totals:
    scored: list[Scored]
    unlabelled: list[Unlabelled]

    @property
    def wrong(self) -> list[Scored]:
        return [s for s in self.scored if s.wrong]

    @property
    def good(self) -> list[Scored]:
        return [s for s in self.scored if not s.wrong]

    def recall(self, label: str | None = None) -> float:
        pool = [s for s in self.wrong if label is None or s.figure.label == label]
        return sum(1 for s in pool if s.flagged) / len(pool) if pool else 1.0

    def false_alarm_rate(self) -> float:
        pool = self.good
        return sum(1 for s in pool if s.flagged) / len(pool) if pool else 0.0

    @property
    def missed(self) -> list[Scored]:
        """Wrong figures let through (not flagged, including not extracted)."""
        return [s for s in self.wrong if not s.flagged]

    @property
    def false_alarms(self) -> list[Scored]:
        return [s for s in self.good if s.flagged]

    @property
    def not_extracted(self) -> list[Scored]:
        return [s for s in self.scored if s.status is None]


def total(scores: Sequence[CaseScore]) -> Totals:
    return Totals([s for c in scores for s in c.scored], [u for c in scores for u in c.unlabelled])
