"""Meta-tools: one natural-language request in, the right data calls made concurrently, one merged
result out.

The main model sees four small tools instead of fourteen schemas. A fast "router" model turns the
request into data calls (companies, periods, dates), which run in parallel with a timeout that
really cancels. Every result keeps its own section, so two calls for the same company (annual and
quarterly, say) never overwrite each other.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from dexter.models.base import Model, complete_by_streaming
from dexter.models.errors import ModelError
from dexter.models.types import ModelRequest, SystemMessage, ToolCall, UserMessage
from dexter.principal import ToolScope
from dexter.tools.base import Resources, Tool, ToolContext, ToolFailure, ToolResult
from dexter.tools.invoke import parse_arguments, run_tool, validate_arguments

_log = logging.getLogger(__name__)

DEFAULT_CALL_TIMEOUT = 30.0
MAX_CALLS = 12

ModelFactory = Callable[[], Model]


class RoutedArgs(BaseModel):
    # "The whole request at once" is said by each tool's description and the system prompt.
    query: str = Field(
        description="e.g. 'Apple and NVIDIA revenue and gross margin, last 4 fiscal years'"
    )


@dataclass(frozen=True)
class CallOutcome:
    call: ToolCall
    label: str
    content: str | None = None
    error: str | None = None
    data: Any = None
    # The router's arguments as parsed: `dexter model --from-session` reads the companies.
    args: dict[str, Any] | None = None


def describe_call(name: str, args: dict[str, Any]) -> str:
    shown = ", ".join(f"{k}={v}" for k, v in args.items() if v not in (None, "", []))
    return f"{name}({shown})"


class RoutedTool(Tool[RoutedArgs]):
    """A meta-tool over a set of data-call tools. Subclasses set name, description and guidance."""

    scope: ClassVar[ToolScope] = "public"

    Args = RoutedArgs
    concurrency_safe: ClassVar[bool] = True
    guidance: ClassVar[str] = ""

    def __init__(
        self,
        tools: Sequence[Tool[Any]],
        model_factory: ModelFactory,
        *,
        timeout: float = DEFAULT_CALL_TIMEOUT,
        today: Callable[[], date] = date.today,
    ) -> None:
        if not tools:
            raise ValueError(f"{self.name} needs at least one data call")
        self._tools = {tool.name: tool for tool in tools}
        self._model_factory = model_factory
        self._timeout = timeout
        self._today = today

    @property
    def model_factory(self) -> ModelFactory:
        return self._model_factory

    @property
    def inner_tools(self) -> list[Tool[Any]]:
        return list(self._tools.values())

    def _router_model(self) -> Model:
        # Asked every call, not cached: the factory follows a mid-session model switch, and the
        # runtime keeps one client per endpoint, so this is cheap.
        try:
            return self._model_factory()
        except Exception as exc:  # a missing key for the router model is a tool failure
            _log.debug("router model unavailable", exc_info=True)
            raise ToolFailure(f"the data router model is not available: {exc}") from None

    def system_prompt(self) -> str:
        today = self._today()
        return (
            f"You turn a research request into data calls. Today is {today.isoformat()}.\n\n"
            "Rules:\n"
            "- Answer only with tool calls, all of them in this one reply; they run in parallel. "
            "Never answer the request yourself.\n"
            "- Companies may be given by name; pass them as written or as the ticker you are sure "
            "of (the data calls resolve names).\n"
            "- One call per company for comparisons. Annual and quarterly data are separate "
            "calls.\n"
            "- Infer dates from today: 'last 5 years' means annual with limit 5; 'since 2022' "
            "means "
            "report_period_gte 2022-01-01; 'last 8 quarters' means quarterly with limit 8; 'YTD' "
            f"means from {today.year}-01-01. Use the smallest limit that answers.\n"
            "- If none of the calls can provide what is asked, reply in one sentence saying what "
            "is missing instead of calling anything.\n"
            + (f"\n{self.guidance}" if self.guidance else "")
        )

    def resources(self, args: RoutedArgs) -> Resources:
        return Resources.of(reads=["data"])

    async def run(self, args: RoutedArgs, ctx: ToolContext) -> ToolResult:
        calls = await self._plan(args.query, ctx)
        names = ", ".join(dict.fromkeys(call.name for call in calls))
        ctx.progress(f"fetching: {names}")
        outcomes = await asyncio.gather(*(self._execute(call, ctx) for call in calls))
        return self._merge(outcomes)

    async def _plan(self, query: str, ctx: ToolContext) -> list[ToolCall]:
        ctx.progress("planning data calls")
        request = ModelRequest(
            messages=[SystemMessage(self.system_prompt()), UserMessage(query)],
            tools=[tool.spec() for tool in self._tools.values()],
        )
        try:
            response = await complete_by_streaming(self._router_model(), request)
        except ModelError as error:
            raise ToolFailure(f"the data router model failed: {error.user_message()}") from None
        calls = list(response.message.tool_calls)
        if not calls:
            reason = response.message.content.strip()
            available = ", ".join(self._tools)
            raise ToolFailure(
                "not available from the configured data sources"
                + (f": {reason[:400]}" if reason else "")
                + f". Data calls available here: {available}."
            )
        return calls[:MAX_CALLS]

    async def _execute(self, call: ToolCall, ctx: ToolContext) -> CallOutcome:
        tool = self._tools.get(call.name)
        raw, problem = parse_arguments(call.arguments or "{}")
        label = describe_call(call.name, raw if problem is None else {})
        if tool is None:
            return CallOutcome(
                call, label, error=f"the router asked for an unknown data call `{call.name}`"
            )
        if problem is not None:
            return CallOutcome(
                call, label, error="the router sent arguments that are not a JSON object"
            )
        validated, problem = validate_arguments(tool, raw)
        if validated is None:
            return CallOutcome(call, label, error=problem)
        # The same invocation path as every other tool call, one data call at a time.
        outcome = await run_tool(tool, validated, ctx, time_limit=self._timeout)
        if outcome.error is not None:
            return CallOutcome(call, label, error=outcome.error)
        return CallOutcome(call, label, content=outcome.content, data=outcome.data, args=raw)

    def _merge(self, outcomes: Sequence[CallOutcome]) -> ToolResult:
        sections = []
        for outcome in outcomes:
            if outcome.error is None:
                sections.append(f"### {outcome.label}\n{outcome.content}")
            else:
                sections.append(f"### {outcome.label}\nNot available: {outcome.error}")
        content = "\n\n".join(sections)
        data = {
            "calls": [
                {
                    "call": o.label,
                    "tool": o.call.name,
                    "args": o.args,
                    "ok": o.error is None,
                    "error": o.error,
                    "data": o.data,
                }
                for o in outcomes
            ]
        }
        if all(o.error is not None for o in outcomes):
            raise ToolFailure("no data could be retrieved.\n\n" + content)
        return ToolResult(content=content, data=data)


class GetFinancials(RoutedTool):
    name: ClassVar[str] = "get_financials"
    description: ClassVar[str] = (
        "Company fundamentals from filings: income statements, balance sheets, cash flows, "
        "ratios, segments and raw XBRL facts, for one or several companies and periods. EU/UK "
        "issuers without SEC filings: annual statements from their ESEF reports, named by LEI "
        "or esef:name@country (e.g. esef:kone@FI)."
    )
    guidance: ClassVar[str] = (
        "Choose: revenue, margins, earnings -> income_statements; assets, debt, equity, cash -> "
        "balance_sheets; cash flow, capex, free cash flow -> cash_flow_statements; ratios, "
        "returns, growth -> financial_metrics; a specific reported line or concept -> xbrl_facts; "
        "revenue or operating income by business segment, region or product line -> segments. "
        "market cap, P/E, EV/EBITDA and other multiples on given days -> valuation. "
        "For a full picture call the three statements."
    )


class GetMarketData(RoutedTool):
    name: ClassVar[str] = "get_market_data"
    description: ClassVar[str] = (
        "Market and ownership data: prices and quotes, company news, insider transactions "
        "(Forms 4 and 5) and institutional holdings (13F)."
    )
    guidance: ClassVar[str] = (
        "Choose: current quote -> price_snapshot; history -> stock_prices with start_date and "
        "end_date; market cap and multiples (P/E, EV/EBITDA, yields) on given days -> valuation; "
        "news -> company_news; insider buying or selling -> insider_trades; a fund's "
        "portfolio -> institutional_holdings with the filer (all=true for every position)."
    )


class ReadFilings(RoutedTool):
    name: ClassVar[str] = "read_filings"
    description: ClassVar[str] = (
        "Read SEC filings of any form: 10-K/10-Q sections (risk factors, MD&A …), 8-K earnings "
        "releases (EX-99.1) and guidance, proxies (DEF 14A), 6-Ks, prospectuses and exhibits, "
        "and EDGAR full-text search; text trimmed to what was asked, with citations."
    )
    guidance: ClassVar[str] = (
        "Call filing_section with form (10-K for annual topics: business, risk factors; 10-Q "
        "for recent quarters), the item (1 business, 1A risk factors, 7 MD&A, 7A market risk, "
        "8 financial statements; for a 10-Q, 2 is MD&A), the fiscal year when one is named, and "
        "focus set to what the request wants to know. For anything else (8-K earnings "
        "releases and guidance: filing_document with form 8-K, items ['2.02'], document "
        "EX-99.1 and the filing dates; proxy statements and executive pay: form DEF 14A; "
        "6-K, S-1, 424B prospectuses; exhibits) use filing_document, or filing_documents to "
        "see what a filing holds. sec_search finds filings by their words across all of "
        "EDGAR. Use filings to list filings (with filed dates and 8-K items)."
    )


class StockScreener(RoutedTool):
    name: ClassVar[str] = "stock_screener"
    brief: ClassVar[str] = "rank every SEC filer by one reported value"
    description: ClassVar[str] = (
        "Screen companies on reported values, e.g. 'companies with revenue above $50B in "
        "2024': ranks every SEC filer by one XBRL concept for a period."
    )
    guidance: ClassVar[str] = (
        "Call screen_companies with an XBRL concept (Revenues, NetIncomeLoss, Assets, "
        "StockholdersEquity …), a period (CY2024 for a calendar year, CY2024Q3 for a quarter, "
        "CY2024Q4I for a balance-sheet instant) and min_value / max_value in USD."
    )


ROUTED_TOOLS: dict[type[RoutedTool], tuple[str, ...]] = {
    GetFinancials: (
        "income_statements", "balance_sheets", "cash_flow_statements", "financial_metrics",
        "segments", "xbrl_facts", "valuation",
    ),
    GetMarketData: (
        "price_snapshot", "stock_prices", "valuation", "company_news", "insider_trades",
        "institutional_holdings",
    ),
    ReadFilings: (
        "filing_section", "filings", "filing_documents", "filing_document", "sec_search",
    ),
    StockScreener: ("screen_companies",),
}  # fmt: skip


def routed_tools(
    data_calls: Sequence[Tool[Any]], model_factory: ModelFactory, **kwargs: Any
) -> list[RoutedTool]:
    """The meta-tools that have at least one available data call behind them."""
    by_name = {tool.name: tool for tool in data_calls}
    result: list[RoutedTool] = []
    for cls, names in ROUTED_TOOLS.items():
        inner = [by_name[n] for n in names if n in by_name]
        if inner:
            result.append(cls(inner, model_factory, **kwargs))
    return result
