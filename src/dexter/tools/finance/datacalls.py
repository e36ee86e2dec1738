"""The data calls as tools: one per `DataRouter` method, each formatting its records for the model.

The meta-tools (`routed.py`) offer these to their router model, and the `direct` mode binds them
as ordinary tools, so their argument models are written for a model to fill in: companies by
ticker, CIK or name; dates in several forms; limits clamped to a bound instead of refused. Data
errors come back as `ToolFailure` with the data layer's message and hint, which already say what
went wrong and what to do.
"""

from __future__ import annotations

import re
from abc import abstractmethod
from collections.abc import Callable, Sequence
from datetime import date
from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema

from dexter.data.errors import DataError, UnknownCompany
from dexter.data.models import Company, FilingList, Holdings, Period, StatementBase
from dexter.data.models import InsiderTrades as ResultTrades
from dexter.data.provider import Capability
from dexter.data.router import DataRouter
from dexter.data.sec import urls as sec_urls
from dexter.principal import ToolScope
from dexter.tools.base import Resources, Tool, ToolContext, ToolFailure, ToolResult
from dexter.tools.finance.format import (
    PriceRows,
    StatementKind,
    format_facts,
    format_filings,
    format_holdings,
    format_insider_trades,
    format_news,
    format_price_snapshot,
    format_prices,
    format_screen,
    format_section,
    format_segments,
    format_statements,
)
from dexter.tools.finance.format_docs import format_document, format_documents, format_search

ArgsT = TypeVar("ArgsT", bound=BaseModel)

DEFAULT_PERIODS = 4
MAX_PERIODS = 20

# ---------------------------------------------------------------------------------------------
# Argument types: lenient on input (models write "Annual", "2022", limit 500), strict in schema.


def _clamp(low: int, high: int) -> Callable[[object], object]:
    def clamp(value: object) -> object:
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            value = int(value.strip())
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool):
            # Over-asking is not an error: serve the maximum and let the output say so.
            return min(max(value, low), high)
        return value

    return clamp


def _bounds(low: int, high: int) -> WithJsonSchema:
    return WithJsonSchema({"type": "integer", "minimum": low, "maximum": high})


_PERIOD_WORDS = {
    "annual": "annual",
    "annually": "annual",
    "yearly": "annual",
    "year": "annual",
    "fy": "annual",
    "quarterly": "quarterly",
    "quarter": "quarterly",
    "q": "quarterly",
    "ttm": "ttm",
    "trailing": "ttm",
    "ltm": "ttm",
}


def _period_word(value: object) -> object:
    if isinstance(value, str):
        key = value.strip().lower().replace("-", " ").split(" ")[0]
        return _PERIOD_WORDS.get(key, value)
    return value


_DATE = re.compile(r"(\d{4})(?:-(\d{1,2}))?(?:-(\d{1,2}))?")


def _date(end: bool) -> Callable[[object], object]:
    """YYYY, YYYY-MM or YYYY-MM-DD; a partial date stands for its first (or last) day."""

    def parse(value: object) -> object:
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        if isinstance(value, date):
            return value.isoformat()
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            return value
        match = _DATE.fullmatch(value.strip()[:10])
        if match is None:
            raise ValueError(f"{value!r} is not a date; use YYYY-MM-DD")
        year, month, day = match.group(1), match.group(2), match.group(3)
        if month is None:
            return f"{year}-12-31" if end else f"{year}-01-01"
        if day is None:
            if not end:
                return f"{year}-{int(month):02d}-01"
            following = date(int(year) + int(month) // 12, int(month) % 12 + 1, 1)
            return date.fromordinal(following.toordinal() - 1).isoformat()
        return date(int(year), int(month), int(day)).isoformat()

    return parse


_STRING = WithJsonSchema({"type": "string"})
DateFrom = Annotated[str | None, BeforeValidator(_date(end=False)), _STRING]
DateTo = Annotated[str | None, BeforeValidator(_date(end=True)), _STRING]
StartDate = Annotated[str, BeforeValidator(_date(end=False)), _STRING]
StatementPeriod = Annotated[Period, BeforeValidator(_period_word)]
SegmentPeriod = Annotated[Literal["annual", "quarterly"], BeforeValidator(_period_word)]
OptionalText = Annotated[str | None, _STRING]
OptionalInt = Annotated[int | None, WithJsonSchema({"type": "integer"})]
OptionalNumber = Annotated[float | None, WithJsonSchema({"type": "number"})]
PeriodLimit = Annotated[
    int | None, BeforeValidator(_clamp(1, MAX_PERIODS)), _bounds(1, MAX_PERIODS)
]
Limit12 = Annotated[int, BeforeValidator(_clamp(1, 12)), _bounds(1, 12)]
Limit25 = Annotated[int, BeforeValidator(_clamp(1, 25)), _bounds(1, 25)]
Limit50 = Annotated[int, BeforeValidator(_clamp(1, 50)), _bounds(1, 50)]
Limit100 = Annotated[int, BeforeValidator(_clamp(1, 100)), _bounds(1, 100)]
Limit200 = Annotated[int, BeforeValidator(_clamp(1, 200)), _bounds(1, 200)]
CharLimit = Annotated[int, BeforeValidator(_clamp(2_000, 30_000)), _bounds(2_000, 30_000)]


# First words of SEC form names that have a space in them ("DEF 14A", "SC 13D", "PRE 14C").
_SPACED_FORM_PREFIXES = frozenset({"DEF", "DEFA", "DEFM", "DEFR", "PRE", "PREM", "PREC", "SC"})


def _forms(value: object) -> object:
    if isinstance(value, str):
        # "10-K 10-Q" and "10-K, 10-Q" are two forms; "DEF 14A" is one.
        value = [form for part in value.split(",") for form in _spaced_forms(part)]
    if isinstance(value, list):
        return [_form(str(v)) for v in value if str(v).strip()] or None
    return value


def _spaced_forms(text: str) -> list[str]:
    forms: list[str] = []
    for word in text.split():
        if forms and forms[-1].upper() in _SPACED_FORM_PREFIXES:
            forms[-1] = f"{forms[-1]} {word}"
        else:
            forms.append(word)
    return forms


def _form(value: str) -> str:
    """The SEC's spelling of a form type: 10k, 10K and 10-k all mean 10-K."""
    text = value.strip().upper()
    return re.sub(r"^(10|8|20|40|6|11)([KQF])\b", r"\1-\2", text)


FormList = Annotated[
    list[str] | None,
    BeforeValidator(_forms),
    WithJsonSchema({"type": "array", "items": {"type": "string"}}),
]
SectionForm = Annotated[Literal["10-K", "10-Q"], BeforeValidator(lambda v: _form(str(v)))]


def _screen_period(value: object) -> object:
    """A bare year or quarter means the calendar period the SEC's frames are keyed by."""
    if not isinstance(value, str):
        return value
    text = value.strip().replace(" ", "")
    if re.fullmatch(r"(?i)(CY)?\d{4}(Q[1-4]I?)?", text):
        return "CY" + text.upper().removeprefix("CY")
    return text


ScreenPeriod = Annotated[str, BeforeValidator(_screen_period)]

COMPANY = (
    "Ticker, CIK or company name (e.g. AAPL, 320193, 'nvidia corp'); for an EU/UK issuer's "
    "ESEF annual reports (statements only), its LEI or esef:name@country (e.g. esef:kone@FI)."
)
GTE = "Only periods ending on or after this date (YYYY-MM-DD); e.g. 'since 2022' = 2022-01-01."
LTE = "Only periods ending on or before this date (YYYY-MM-DD)."


class CallArgs(BaseModel):
    # A run binds the routed meta-tools; these arguments are validated (and their schemas built)
    # only when the router plans data calls, so their validators are built on first use.
    model_config = ConfigDict(defer_build=True)


class CompanyArgs(CallArgs):
    company: str = Field(description=COMPANY)


class StatementArgs(CompanyArgs):
    period: StatementPeriod = Field(
        "annual", description="annual (fiscal years), quarterly, or ttm (trailing twelve months)."
    )
    limit: PeriodLimit = Field(
        None,
        description=f"Most recent periods to return (default {DEFAULT_PERIODS}, or all within "
        f"the dates; max {MAX_PERIODS}).",
    )
    report_period_gte: DateFrom = Field(None, description=GTE)
    report_period_lte: DateTo = Field(None, description=LTE)


class FactsArgs(CompanyArgs):
    concept: str = Field(
        description="XBRL concept, e.g. Revenues, NetIncomeLoss, us-gaap:LongTermDebt, "
        "dei:EntityCommonStockSharesOutstanding."
    )
    limit: Limit100 = Field(20, description="Values to show, latest period first (max 100).")
    report_period_gte: DateFrom = Field(None, description=GTE)
    report_period_lte: DateTo = Field(None, description=LTE)


def _items(value: object) -> object:
    if isinstance(value, str):
        value = [part for part in re.split(r"[,\s]+", value) if part]
    if isinstance(value, list):
        return [str(v).strip().lower().removeprefix("item").strip() for v in value] or None
    return value


ItemList = Annotated[
    list[str] | None,
    BeforeValidator(_items),
    WithJsonSchema({"type": "array", "items": {"type": "string"}}),
]
Offset = Annotated[int, BeforeValidator(_clamp(0, 100_000_000)), _bounds(0, 100_000_000)]


class FilingsArgs(CompanyArgs):
    forms: FormList = Field(
        None,
        description="Form types to list, e.g. ['10-K'], ['8-K'], ['DEF 14A'], ['6-K'], "
        "['424B2']; omit for all.",
    )
    limit: Limit200 = Field(10, description="Filings to list, newest first (max 200).")
    filed_gte: DateFrom = Field(None, description="Only filings filed on or after this date.")
    filed_lte: DateTo = Field(None, description="Only filings filed on or before this date.")
    items: ItemList = Field(
        None,
        description="Only 8-Ks reporting one of these items, e.g. ['2.02'] for earnings "
        "releases, ['5.02'] for officer changes, ['1.01'] for material agreements.",
    )


class DocumentsArgs(CompanyArgs):
    accession_number: str = Field(description="The filing's accession number (from filings).")


class DocumentArgs(CompanyArgs):
    accession_number: OptionalText = Field(
        None,
        description="The filing's accession number. Omit to take the latest filing matching "
        "form / filed dates / items.",
    )
    form: OptionalText = Field(
        None, description="Without an accession number: the form to look for, e.g. 8-K."
    )
    filed_gte: DateFrom = Field(None, description="Without an accession number: filed on/after.")
    filed_lte: DateTo = Field(None, description="Without an accession number: filed on/before.")
    items: ItemList = Field(
        None, description="Without an accession number: 8-K items, e.g. ['2.02'] (earnings)."
    )
    document: str = Field(
        "primary",
        description="primary (the main document), cover (its cover page), an exhibit type "
        "such as EX-99.1 (an earnings release) or EX-10.1, or a file name from "
        "filing_documents.",
    )
    focus: OptionalText = Field(
        None,
        description="What you want from the document in a few words (e.g. 'guidance', 'total "
        "compensation'); a long document is trimmed to the matching paragraphs.",
    )
    offset: Offset = Field(
        0, description="Character to start at, to read a long document in order, part by part."
    )
    max_chars: CharLimit = Field(12_000, description="Most characters to return (2,000-30,000).")


class SearchArgs(CallArgs):
    query: str = Field(
        description='Words or a "quoted phrase" to find in filings, e.g. "raises full-year '
        'guidance" or "going concern".'
    )
    forms: FormList = Field(None, description="Only these forms, e.g. ['8-K'] or ['10-K'].")
    start_date: DateFrom = Field(None, description="Filed on or after (YYYY-MM-DD).")
    end_date: DateTo = Field(None, description="Filed on or before (YYYY-MM-DD).")
    company: OptionalText = Field(
        None, description="Only this company's filings (ticker, CIK or name)."
    )
    offset: Annotated[int, BeforeValidator(_clamp(0, 9_900)), _bounds(0, 9_900)] = Field(
        0, description="Hits to skip, for the next page (100 hits a page)."
    )


class SectionArgs(CompanyArgs):
    form: SectionForm = Field("10-K", description="10-K (annual) or 10-Q (quarterly).")
    item: str = Field(
        description="Item number or name: 1 business, 1A risk factors, 7 MD&A, 7A market risk, "
        "8 financial statements; for a 10-Q, 2 is MD&A and Part-II,Item-1A risk factors."
    )
    year: OptionalInt = Field(
        None,
        description="Fiscal year the report covers (the year its period ends); omit for "
        "the latest.",
    )
    accession_number: OptionalText = Field(
        None, description="A specific filing's accession number (overrides year)."
    )
    focus: OptionalText = Field(
        None,
        description="What you want from the item, in a few words (e.g. 'supply chain', 'China "
        "revenue'); long items are trimmed to the matching paragraphs.",
    )
    max_chars: CharLimit = Field(
        12_000, description="Most characters of item text to return (2,000-30,000)."
    )


class InsiderArgs(CompanyArgs):
    limit: Limit100 = Field(30, description="Most recent transactions to fetch (max 100).")
    insider: OptionalText = Field(
        None, description="Only this person's transactions, e.g. 'Jensen Huang' or 'Cook'."
    )


class HoldingsArgs(CallArgs):
    filer: OptionalText = Field(
        None,
        description="A 13F filer (investment manager) by CIK or name, to list its holdings.",
    )
    company: OptionalText = Field(
        None,
        description="A held company (ticker or name), to list institutions holding it; give "
        "this or filer, not both.",
    )
    limit: Limit200 = Field(25, description="Positions to list, largest value first (max 200).")
    all: bool = Field(
        False,
        description="List every position of the filer's report instead of the largest `limit` "
        "(a large manager holds thousands).",
    )


class PricesArgs(CompanyArgs):
    start_date: StartDate = Field(description="First day, YYYY-MM-DD.")
    end_date: DateTo = Field(None, description="Last day, YYYY-MM-DD (default today).")
    interval: Literal["day", "week", "month", "year"] = Field("day", description="Bar size.")
    rows: PriceRows = Field(
        "spread",
        description="Which bars to list when there are more than 30: spread (evenly over the "
        "range) or recent (the latest). The summary always covers the whole range.",
    )


class NewsArgs(CompanyArgs):
    limit: Limit25 = Field(10, description="Articles to return, newest first (max 25).")


class SegmentsArgs(CompanyArgs):
    period: SegmentPeriod = Field("annual", description="annual or quarterly.")
    limit: Limit12 = Field(DEFAULT_PERIODS, description="Most recent periods (max 12).")
    year: int | None = Field(
        None,
        ge=1993,
        le=2100,
        description="Fiscal year of the 10-K/10-Q to read (default: latest).",
    )


class ScreenArgs(CallArgs):
    concept: str = Field(
        description="XBRL concept to rank companies by, e.g. Revenues, NetIncomeLoss, Assets, "
        "StockholdersEquity."
    )
    period: ScreenPeriod = Field(
        description="CY2024 (calendar year), CY2024Q3 (quarter), or CY2024Q4I (instant, for "
        "balance-sheet items)."
    )
    unit: str = Field("USD", description="Unit of the values: USD, shares, USD/shares.")
    min_value: OptionalNumber = Field(
        None, description="Keep values at or above this, in the unit (USD, not millions)."
    )
    max_value: OptionalNumber = Field(
        None, description="Keep values at or below this, in the unit (USD, not millions)."
    )
    limit: Limit100 = Field(25, description="Companies to return, largest value first (max 100).")


# ---------------------------------------------------------------------------------------------
# Tools


def _provider_for(router: DataRouter, capability: Capability) -> str:
    """The provider a capability is routed to first: the name a source line should carry."""
    for provider in router.providers:
        if capability in provider.capabilities:
            return provider.name
    return "data provider"


class DataCall(Tool[ArgsT]):
    """One data call: resolve the company, ask the router, format with the run's ledger."""

    scope: ClassVar[ToolScope] = "public"

    capability: ClassVar[Capability]
    concurrency_safe: ClassVar[bool] = True
    needs_approval: ClassVar[bool] = False

    def __init__(self, router: DataRouter) -> None:
        self.router = router

    def resources(self, args: ArgsT) -> Resources:
        return Resources.of(reads=["data"])

    async def run(self, args: ArgsT, ctx: ToolContext) -> ToolResult:
        try:
            return await self.fetch(args, ctx)
        except DataError as error:
            raise ToolFailure(str(error)) from None

    @abstractmethod
    async def fetch(self, args: ArgsT, ctx: ToolContext) -> ToolResult: ...

    async def company(self, query: str) -> Company:
        return await self.router.company(query)


def _dump(records: Sequence[BaseModel]) -> list[dict[str, Any]]:
    return [r.model_dump(mode="json") for r in records]


def _within(day: str | None, gte: str | None, lte: str | None) -> bool:
    if day is None:
        return gte is None and lte is None
    return (gte is None or day[:10] >= gte) and (lte is None or day[:10] <= lte)


class _StatementCall(DataCall[StatementArgs]):
    Args: ClassVar[type[BaseModel]] = StatementArgs
    capability: ClassVar[Capability] = Capability.STATEMENTS
    kind: ClassVar[StatementKind]
    # The DataRouter method that serves this statement (income_statements, balance_sheets …).
    router_method: ClassVar[str] = ""

    async def load(self, ticker: str, args: StatementArgs, limit: int) -> Sequence[StatementBase]:
        method = getattr(self.router, self.router_method)
        records: Sequence[StatementBase] = await method(
            ticker,
            period=args.period,
            limit=limit,
            report_period_gte=args.report_period_gte,
            report_period_lte=args.report_period_lte,
        )
        return records

    async def fetch(self, args: StatementArgs, ctx: ToolContext) -> ToolResult:
        company = await self.company(args.company)
        dated = bool(args.report_period_gte or args.report_period_lte)
        limit = args.limit or (MAX_PERIODS if dated else DEFAULT_PERIODS)
        # One period more than shown tells us whether older ones exist, so the output can say
        # so instead of leaving the model to think it has the whole history.
        records = list(await self.load(company.ticker, args, limit + 1))
        more = len(records) > limit
        records = records[:limit]
        content = format_statements(records, kind=self.kind, ledger=ctx.sources, company=company)
        if more:
            content += (
                f"\nShowing the {limit} most recent periods; earlier ones exist (raise limit, "
                "or set report_period_gte / report_period_lte)."
            )
        return ToolResult(
            content=content,
            data={
                "company": company.model_dump(mode="json"),
                "period": args.period,
                "count": len(records),
                "more": more,
                "records": _dump(records),
            },
        )


class IncomeStatements(_StatementCall):
    name: ClassVar[str] = "income_statements"
    description: ClassVar[str] = (
        "Income statements for one company: revenue, costs, operating and net income, EPS, "
        "share counts, by fiscal year, quarter or TTM. USD millions, with source ids [S#]."
    )
    kind: ClassVar[StatementKind] = "income_statement"
    router_method: ClassVar[str] = "income_statements"


class BalanceSheets(_StatementCall):
    name: ClassVar[str] = "balance_sheets"
    description: ClassVar[str] = (
        "Balance sheets for one company: assets, cash, investments, debt, liabilities, equity, "
        "shares outstanding, at each period end. USD millions, with source ids [S#]."
    )
    kind: ClassVar[StatementKind] = "balance_sheet"
    router_method: ClassVar[str] = "balance_sheets"


class CashFlowStatements(_StatementCall):
    name: ClassVar[str] = "cash_flow_statements"
    description: ClassVar[str] = (
        "Cash flow statements for one company: operating cash flow, D&A, share-based pay, "
        "capex, free cash flow, buybacks, dividends, debt. USD millions, with source ids [S#]."
    )
    kind: ClassVar[StatementKind] = "cash_flow"
    router_method: ClassVar[str] = "cash_flow_statements"


class FinancialMetricsCall(_StatementCall):
    name: ClassVar[str] = "financial_metrics"
    description: ClassVar[str] = (
        "Financial ratios for one company per period: margins, returns (ROE, ROIC), growth, "
        "liquidity, leverage, turnover, per-share values, and valuation where prices exist."
    )
    capability: ClassVar[Capability] = Capability.METRICS
    kind: ClassVar[StatementKind] = "metrics"

    async def load(self, ticker: str, args: StatementArgs, limit: int) -> Sequence[StatementBase]:
        gte, lte = args.report_period_gte, args.report_period_lte
        if not (gte or lte):
            return await self.router.financial_metrics(ticker, period=args.period, limit=limit)
        # The metrics call has no date filter: fetch the widest window and filter here.
        rows = await self.router.financial_metrics(
            ticker, period=args.period, limit=MAX_PERIODS + 1
        )
        return [r for r in rows if _within(r.report_period, gte, lte)][:limit]


class XbrlFacts(DataCall[FactsArgs]):
    name: ClassVar[str] = "xbrl_facts"
    title: ClassVar[str] = "XBRL facts as filed"
    description: ClassVar[str] = (
        "Every value a company filed for one XBRL concept, exactly as reported, with period, "
        "form and filing. For line items the statements do not show."
    )
    Args: ClassVar[type[BaseModel]] = FactsArgs
    capability: ClassVar[Capability] = Capability.FACTS

    async def fetch(self, args: FactsArgs, ctx: ToolContext) -> ToolResult:
        company = await self.company(args.company)
        points = await self.router.facts(company.ticker, args.concept)
        gte, lte = args.report_period_gte, args.report_period_lte
        if gte or lte:
            points = [p for p in points if _within(p.end, gte, lte)]
        shown = points[: args.limit]
        content = format_facts(shown, ledger=ctx.sources, company=company, total=len(points))
        return ToolResult(
            content=content,
            data={
                "company": company.model_dump(mode="json"),
                "concept": shown[0].concept if shown else args.concept,
                "count": len(shown),
                "total": len(points),
                "records": _dump(shown),
            },
        )


class Filings(DataCall[FilingsArgs]):
    name: ClassVar[str] = "filings"
    description: ClassVar[str] = (
        "List a company's SEC filings (form, dates, accession number, link), newest first, "
        "optionally only some forms. Metadata only; filing_section reads the text."
    )
    Args: ClassVar[type[BaseModel]] = FilingsArgs
    capability: ClassVar[Capability] = Capability.FILINGS

    async def fetch(self, args: FilingsArgs, ctx: ToolContext) -> ToolResult:
        company = await self.company(args.company)
        found = await self.router.filings(
            company.ticker,
            forms=args.forms,
            limit=args.limit,
            **_filing_filters(args.filed_gte, args.filed_lte, args.items),
        )
        content = format_filings(found, ledger=ctx.sources, company=company)
        if self.router.as_of is not None:
            content += f"\n(As of {self.router.as_of.isoformat()}: later filings are hidden.)"
        data: dict[str, Any] = {
            "company": company.model_dump(mode="json"),
            "count": len(found),
            "records": _dump(found),
        }
        if isinstance(found, FilingList) and found.gaps:
            data["incomplete"] = _dump(found.gaps)
        return ToolResult(content=content, data=data)


def _filing_filters(gte: str | None, lte: str | None, items: list[str] | None) -> dict[str, Any]:
    """Only the filters given, so providers without them (Financial Datasets) still answer
    plain listings."""
    given = {"filed_gte": gte, "filed_lte": lte, "items": items}
    return {k: v for k, v in given.items() if v}


class FilingDocumentsCall(DataCall[DocumentsArgs]):
    name: ClassVar[str] = "filing_documents"
    description: ClassVar[str] = (
        "List every document in one SEC filing with its type (primary document, EX-99.1 "
        "earnings release, EX-10.x contracts …), for any form: 8-K, DEF 14A, 6-K, S-1, 424B."
    )
    Args: ClassVar[type[BaseModel]] = DocumentsArgs
    capability: ClassVar[Capability] = Capability.DOCUMENTS

    async def fetch(self, args: DocumentsArgs, ctx: ToolContext) -> ToolResult:
        company = await self.company(args.company)
        filing = await self.router.filing_documents(company.ticker, args.accession_number)
        return ToolResult(
            content=format_documents(filing, ledger=ctx.sources),
            data=filing.model_dump(mode="json"),
        )


class FilingDocumentCall(DataCall[DocumentArgs]):
    name: ClassVar[str] = "filing_document"
    description: ClassVar[str] = (
        "Read one document of any SEC filing (any form): the primary document, its cover "
        "page, an exhibit by type (EX-99.1 = the earnings release of an 8-K item 2.02) or by "
        "file name; trimmed to a focus, or read in parts with offset; cited with [S#]."
    )
    Args: ClassVar[type[BaseModel]] = DocumentArgs
    capability: ClassVar[Capability] = Capability.DOCUMENTS

    async def fetch(self, args: DocumentArgs, ctx: ToolContext) -> ToolResult:
        company = await self.company(args.company)
        accession = (args.accession_number or "").strip()
        if not accession:
            forms = [_form(args.form)] if args.form else None
            found = await self.router.filings(
                company.ticker,
                forms=forms,
                limit=1,
                **_filing_filters(args.filed_gte, args.filed_lte, args.items),
            )
            if not found:
                raise ToolFailure(
                    f"No {args.form or ''} filing of {company.name} matches those dates and "
                    "items; list its filings to choose one."
                )
            accession = found[0].accession_number
        doc = await self.router.filing_document(company.ticker, accession, document=args.document)
        content, window = format_document(
            doc,
            ledger=ctx.sources,
            offset=args.offset,
            max_chars=args.max_chars,
            focus=args.focus,
        )
        return ToolResult(
            content=content,
            data={
                "company": company.model_dump(mode="json"),
                "accession_number": doc.accession_number,
                "form": doc.form,
                "filing_date": doc.filing_date,
                "document": doc.name,
                "type": doc.type,
                "url": doc.url,
                "chars": window.total,
                "offset": window.start,
                "next_offset": window.end if 0 < window.end < window.total else None,
                "focused": window.focused,
            },
        )


class SecSearch(DataCall[SearchArgs]):
    name: ClassVar[str] = "sec_search"
    description: ClassVar[str] = (
        "EDGAR full-text search over every SEC filing and exhibit since 2001: words or a "
        "quoted phrase, optionally by form, filing dates and company. Hits are documents to "
        "open with filing_document."
    )
    Args: ClassVar[type[BaseModel]] = SearchArgs
    capability: ClassVar[Capability] = Capability.FULL_TEXT_SEARCH

    async def fetch(self, args: SearchArgs, ctx: ToolContext) -> ToolResult:
        page = await self.router.full_text_search(
            args.query,
            forms=args.forms,
            start_date=args.start_date,
            end_date=args.end_date,
            company=args.company,
            offset=args.offset,
        )
        as_of = self.router.as_of.isoformat() if self.router.as_of else None
        return ToolResult(
            content=format_search(page, ledger=ctx.sources, as_of=as_of),
            data=page.model_dump(mode="json"),
        )


class FilingSectionCall(DataCall[SectionArgs]):
    name: ClassVar[str] = "filing_section"
    description: ClassVar[str] = (
        "Read one item of a company's 10-K or 10-Q (e.g. 1A risk factors, 7 MD&A) as text, "
        "trimmed to the paragraphs matching `focus` when long, with the filing's source id."
    )
    Args: ClassVar[type[BaseModel]] = SectionArgs
    capability: ClassVar[Capability] = Capability.FILING_ITEMS

    async def fetch(self, args: SectionArgs, ctx: ToolContext) -> ToolResult:
        company = await self.company(args.company)
        section = await self.router.filing_section(
            company.ticker,
            form=args.form,
            item=args.item,
            year=args.year,
            accession_number=args.accession_number,
        )
        content = format_section(
            section, ledger=ctx.sources, focus=args.focus, max_chars=args.max_chars
        )
        return ToolResult(
            content=content,
            data={
                "company": company.model_dump(mode="json"),
                "form": section.filing_type,
                "accession_number": section.accession_number,
                "filing_date": section.filing_date,
                "report_date": section.report_date,
                "item": section.item,
                "title": section.title,
                "url": section.source.url,
                "chars": len(section.text),
                "focus": args.focus,
            },
        )


def _same_person(query: str, name: str) -> bool:
    """Every word of the query starts a word of the name, or the other way round, in any
    order: "Jensen Huang" finds "HUANG JEN HSUN", "Cook" finds "Cook Timothy D"."""
    wanted = re.findall(r"[a-z]+", query.lower())
    have = re.findall(r"[a-z]+", name.lower())
    return bool(wanted) and all(
        any(h.startswith(w) or w.startswith(h) for h in have) for w in wanted
    )


class InsiderTrades(DataCall[InsiderArgs]):
    name: ClassVar[str] = "insider_trades"
    description: ClassVar[str] = (
        "Insider transactions (SEC Forms 4 and 5) for one company: who bought, sold, gave or "
        "was awarded shares, when, how many and at what price, with totals by type."
    )
    Args: ClassVar[type[BaseModel]] = InsiderArgs
    capability: ClassVar[Capability] = Capability.INSIDER_TRADES

    async def fetch(self, args: InsiderArgs, ctx: ToolContext) -> ToolResult:
        company = await self.company(args.company)
        fetched = await self.router.insider_trades(company.ticker, limit=args.limit)
        trades = fetched
        if args.insider:
            mine = [t for t in fetched if _same_person(args.insider, t.name)]
            # Filtered, but still carrying what could not be read, so the output says so.
            if isinstance(fetched, ResultTrades):
                trades = ResultTrades(mine, fetched.failures, fetched.gaps)
            else:
                trades = mine
        content = format_insider_trades(trades, ledger=ctx.sources, company=company)
        if args.insider:
            content += (
                f"\nFiltered to {args.insider!r}: {len(trades)} of the {len(fetched)} most recent "
                "transactions fetched."
            )
        data: dict[str, Any] = {
            "company": company.model_dump(mode="json"),
            "count": len(trades),
            "records": _dump(trades),
        }
        if isinstance(fetched, ResultTrades) and (fetched.failures or fetched.gaps):
            data["unread_filings"] = fetched.failures
            data["incomplete"] = _dump(fetched.gaps)
        return ToolResult(content=content, data=data)


class InstitutionalHoldings(DataCall[HoldingsArgs]):
    name: ClassVar[str] = "institutional_holdings"
    description: ClassVar[str] = (
        "13F institutional holdings: a fund manager's reported portfolio (give filer), or, "
        "where the source supports it, the institutions holding a company (give company)."
    )
    Args: ClassVar[type[BaseModel]] = HoldingsArgs
    capability: ClassVar[Capability] = Capability.HOLDINGS

    async def fetch(self, args: HoldingsArgs, ctx: ToolContext) -> ToolResult:
        filer = (args.filer or "").strip()
        held = (args.company or "").strip()
        if bool(filer) == bool(held):
            raise ToolFailure(
                "Give exactly one of filer (a 13F manager's CIK or name, for its portfolio) or "
                "company (for the institutions holding it)."
            )
        company: Company | None = None
        limit = None if args.all else args.limit
        if held:
            company = await self.company(held)
            rows = await self.router.institutional_holdings(ticker=company.ticker, limit=limit)
        else:
            cik = filer if filer.isdigit() else await self._filer_cik(filer)
            rows = await self.router.institutional_holdings(filer_cik=cik, limit=limit)
        # Every position asked for is listed: the limit is the model's own choice of length.
        content = format_holdings(
            rows, ledger=ctx.sources, company=company, max_rows=max(len(rows), 1)
        )
        data: dict[str, Any] = {
            "company": company.model_dump(mode="json") if company else None,
            "filer": filer or None,
            "count": len(rows),
            "records": _dump(rows),
        }
        if isinstance(rows, Holdings):
            data["total_count"] = rows.total_count
            data["total_value_usd"] = rows.total_value_usd
            data["omitted_count"] = rows.omitted_count
            data["omitted_value_usd"] = rows.omitted_value_usd
        return ToolResult(content=content, data=data)

    async def _filer_cik(self, name: str) -> str:
        try:
            return (await self.company(name)).cik
        except DataError as error:
            raise ToolFailure(
                f"{error} Managers that are not listed companies are not in the ticker table: "
                "give the filer's CIK (from EDGAR company search) instead."
            ) from None


# Exchange suffixes (WSU.DE), currency pairs (EURUSD=X), indices (^GSPC): priced, never filers.
_MARKET_SYMBOL = re.compile(r"^[\^A-Z0-9][A-Z0-9.\-]*(=X|\.[A-Z]{1,3})$|^\^", re.IGNORECASE)


class _PricedCall(DataCall[ArgsT]):
    """Prices exist for more than SEC filers: a market symbol is taken as given."""

    async def company(self, query: str) -> Company:
        text = query.strip()
        if not _MARKET_SYMBOL.match(text):
            try:
                return await self.router.company(text)
            except UnknownCompany:
                if " " in text:
                    raise
        return Company(ticker=text.upper(), cik="", name=text.upper())


class StockPrices(_PricedCall[PricesArgs]):
    name: ClassVar[str] = "stock_prices"
    description: ClassVar[str] = (
        "Historical open/high/low/close/volume bars for one stock between two dates, with a "
        "summary of change, high and low over the whole range."
    )
    Args: ClassVar[type[BaseModel]] = PricesArgs
    capability: ClassVar[Capability] = Capability.PRICES

    def __init__(self, router: DataRouter, *, today: Callable[[], date] = date.today) -> None:
        super().__init__(router)
        self._today = today

    async def fetch(self, args: PricesArgs, ctx: ToolContext) -> ToolResult:
        company = await self.company(args.company)
        end = args.end_date or self._today().isoformat()
        prices = await self.router.prices(
            company.ticker, start_date=args.start_date, end_date=end, interval=args.interval
        )
        provider = _provider_for(self.router, self.capability)
        label = f"{provider} {args.interval} prices, {company.ticker}, {args.start_date} to {end}"
        content = format_prices(
            prices,
            ledger=ctx.sources,
            company=company,
            source_label=label,
            interval=args.interval,
            rows=args.rows,
        )
        return ToolResult(
            content=content,
            data={
                "company": company.model_dump(mode="json"),
                "start_date": args.start_date,
                "end_date": end,
                "count": len(prices),
                "records": _dump(prices),
            },
        )


class PriceSnapshotCall(_PricedCall[CompanyArgs]):
    name: ClassVar[str] = "price_snapshot"
    description: ClassVar[str] = "The latest price of one stock and its change on the day."
    Args: ClassVar[type[BaseModel]] = CompanyArgs
    capability: ClassVar[Capability] = Capability.PRICE_SNAPSHOT

    async def fetch(self, args: CompanyArgs, ctx: ToolContext) -> ToolResult:
        company = await self.company(args.company)
        snapshot = await self.router.price_snapshot(company.ticker)
        content = format_price_snapshot(snapshot, ledger=ctx.sources, company=company)
        return ToolResult(content=content, data=snapshot.model_dump(mode="json"))


class ValuationArgs(CompanyArgs):
    dates: list[DateTo] = Field(
        default_factory=list,
        max_length=24,
        description="Days to value the company on, YYYY-MM-DD (default: the latest close; at "
        "most 24, e.g. month-ends or year-ends for a history).",
    )


class ValuationCall(DataCall[ValuationArgs]):
    name: ClassVar[str] = "valuation"
    description: ClassVar[str] = (
        "Market cap, enterprise value, P/E, P/S, P/B, EV/EBITDA, EV/sales, dividend yield and FCF "
        "yield of one company on any days, point-in-time: each day's close and only the "
        "statements filed by that day (TTM flows), with formulas and sources."
    )
    Args: ClassVar[type[BaseModel]] = ValuationArgs
    capability: ClassVar[Capability] = Capability.PRICES

    def __init__(self, router: DataRouter, *, today: Callable[[], date] = date.today) -> None:
        super().__init__(router)
        self._today = today

    async def fetch(self, args: ValuationArgs, ctx: ToolContext) -> ToolResult:
        from dexter.data.valuation import valuations
        from dexter.tools.finance.format_valuation import format_valuation

        company = await self.company(args.company)
        last = self.router.as_of or self._today()
        days = sorted({date.fromisoformat(d[:10]) for d in args.dates if d}) or [last]
        rows = await valuations(self.router, company.ticker, days)
        priced_by = _provider_for(self.router, self.capability)
        content = format_valuation(rows, ledger=ctx.sources, company=company, priced_by=priced_by)
        return ToolResult(
            content=content,
            data={"company": company.model_dump(mode="json"), "records": _dump(rows)},
        )


class CompanyNews(DataCall[NewsArgs]):
    name: ClassVar[str] = "company_news"
    description: ClassVar[str] = (
        "Recent news headlines about one company (title, publisher, date, link), newest first."
    )
    Args: ClassVar[type[BaseModel]] = NewsArgs
    capability: ClassVar[Capability] = Capability.NEWS

    async def fetch(self, args: NewsArgs, ctx: ToolContext) -> ToolResult:
        company = await self.company(args.company)
        items = await self.router.news(company.ticker, limit=args.limit)
        content = format_news(items, ledger=ctx.sources, company=company)
        return ToolResult(
            content=content,
            data={
                "company": company.model_dump(mode="json"),
                "count": len(items),
                "records": _dump(items),
            },
        )


class Segments(DataCall[SegmentsArgs]):
    name: ClassVar[str] = "segments"
    description: ClassVar[str] = (
        "Revenue, operating income and assets broken down by business segment, product and "
        "geography, per period, in the company's own labels, checked against the reported "
        "total. USD millions, with source ids [S#]."
    )
    Args: ClassVar[type[BaseModel]] = SegmentsArgs
    capability: ClassVar[Capability] = Capability.SEGMENTS

    async def fetch(self, args: SegmentsArgs, ctx: ToolContext) -> ToolResult:
        company = await self.company(args.company)
        extra: dict[str, Any] = {"year": args.year} if args.year is not None else {}
        records = await self.router.segments(
            company.ticker, period=args.period, limit=args.limit, **extra
        )
        content = format_segments(records, ledger=ctx.sources, company=company)
        return ToolResult(
            content=content,
            data={
                "company": company.model_dump(mode="json"),
                "count": len(records),
                "records": records,
            },
        )


class ScreenCompanies(DataCall[ScreenArgs]):
    name: ClassVar[str] = "screen_companies"
    description: ClassVar[str] = (
        "Rank all filers by one reported value for a period (e.g. Revenues in CY2024 above "
        "50 billion USD), optionally within min/max bounds."
    )
    Args: ClassVar[type[BaseModel]] = ScreenArgs
    capability: ClassVar[Capability] = Capability.SCREEN

    async def fetch(self, args: ScreenArgs, ctx: ToolContext) -> ToolResult:
        rows = await self.router.screen(
            concept=args.concept,
            period=args.period,
            unit=args.unit,
            limit=args.limit + 1,
            min_value=args.min_value,
            max_value=args.max_value,
        )
        more = len(rows) > args.limit
        rows = rows[: args.limit]
        provider = _provider_for(self.router, self.capability)
        label = f"{provider} screen: {args.concept}, {args.period}, {args.unit}"
        if provider == "SEC EDGAR":
            taxonomy, _, tag = args.concept.rpartition(":")
            url = sec_urls.frames(taxonomy or "us-gaap", tag, args.unit, args.period.upper())
            label = f"SEC EDGAR XBRL frames, {args.concept}, {args.period}, {args.unit} ({url})"
        content = format_screen(
            rows,
            ledger=ctx.sources,
            concept=args.concept,
            period=args.period,
            unit=args.unit,
            min_value=args.min_value,
            max_value=args.max_value,
            source_label=label,
            more=more,
        )
        return ToolResult(
            content=content,
            data={"count": len(rows), "more": more, "records": _dump(rows)},
        )


DATA_CALLS: tuple[type[DataCall[Any]], ...] = (
    IncomeStatements,
    BalanceSheets,
    CashFlowStatements,
    FinancialMetricsCall,
    XbrlFacts,
    Filings,
    FilingSectionCall,
    FilingDocumentsCall,
    FilingDocumentCall,
    SecSearch,
    InsiderTrades,
    InstitutionalHoldings,
    StockPrices,
    PriceSnapshotCall,
    ValuationCall,
    CompanyNews,
    Segments,
    ScreenCompanies,
)


def data_call_tools(router: DataRouter) -> list[Tool[Any]]:
    """Every data call, whether or not a configured provider can serve it."""
    return [cls(router) for cls in DATA_CALLS]


def available_data_calls(router: DataRouter) -> list[Tool[Any]]:
    """The data calls some configured provider can serve: the only ones worth offering."""
    return [cls(router) for cls in DATA_CALLS if router.supports(cls.capability)]


__all__ = [
    "DATA_CALLS",
    "DataCall",
    "available_data_calls",
    "data_call_tools",
]
