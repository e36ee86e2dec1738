"""The checks a unit case can name (`kind`), each calling the code a user's question reaches."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

from dexter.data.errors import DataError, UnknownCompany
from dexter.data.http import HttpClient, Params, build_url
from dexter.data.router import DataRouter
from dexter.data.sec.provider import SecEdgarProvider
from dexter.data.sec.tickers import TickerTable
from dexter.data.settings import DataSettings, parse_as_of
from dexter.evals.units.mirror import mirror_transport
from dexter.evals.units.runner import Case, CaseResult, same

_TEXT_KEYS = frozenset({"contains", "not_contains", "starts_with", "min_chars", "matches"})
_USER_AGENT = "Dexter finance-units dexter-units@example.invalid"
# Enough records to reach every period a case names (Apple has 17 years, 68 quarters).
_ALL_RECORDS = 400


class _ParsedOnce(HttpClient):
    """One client for the run, keeping each parsed JSON response: the providers for each as-of
    date then share one parse of each multi-megabyte companyfacts file (each filters it to its
    date without changing it)."""

    def __init__(self, transport: Any) -> None:
        super().__init__("SEC EDGAR", headers={"User-Agent": _USER_AGENT}, transport=transport)
        self._parsed: dict[str, Any] = {}

    async def get_json(
        self, url: str, *, params: Params | None = None, ttl: float | None = None
    ) -> Any:
        key = build_url(url, params)
        if key not in self._parsed:
            self._parsed[key] = await super().get_json(url, params=params, ttl=ttl)
        return self._parsed[key]


class _MirrorProvider(SecEdgarProvider):
    """The real SEC provider, answering from the recorded mirror through the shared client.
    A dated copy reads the ticker table of the undated one (`tickers_from`): the table does not
    change with the date, and building it from 10,000 rows for every date is most of the cost
    of an as-of case."""

    def __init__(
        self,
        settings: DataSettings,
        client: HttpClient,
        tickers_from: SecEdgarProvider | None = None,
    ) -> None:
        super().__init__(settings)
        self._shared = client
        self._tickers_from = tickers_from

    @property
    def http(self) -> HttpClient:
        return self._shared

    async def _tickers(self) -> TickerTable:
        if self._tickers_from is not None:
            return await self._tickers_from._tickers()
        return await super()._tickers()


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def text_failures(expect: Mapping[str, Any], text: str) -> list[str]:
    """What a text fails of `{contains, not_contains, starts_with, min_chars, matches}`;
    whitespace runs count as one space so layout does not matter."""
    flat = _squash(text)
    wrong: list[str] = []
    for needle in expect.get("contains") or []:
        if _squash(needle) not in flat:
            wrong.append(f"missing {needle!r}")
    for needle in expect.get("not_contains") or []:
        if _squash(needle) in flat:
            wrong.append(f"should not contain {needle!r}")
    start = expect.get("starts_with")
    if start and not flat.lstrip().startswith(_squash(start)):
        wrong.append(f"starts {flat.lstrip()[:60]!r}, not {start!r}")
    if len(flat) < int(expect.get("min_chars") or 0):
        wrong.append(f"{len(flat)} characters, expected at least {expect['min_chars']}")
    pattern = expect.get("matches")
    if pattern and not re.search(pattern, flat):
        wrong.append(f"no match for /{pattern}/")
    return wrong


class Checker:
    def __init__(self, fixtures: Path, cache: Path) -> None:
        self.fixtures = fixtures
        self._settings = DataSettings(cache_dir=cache, sec_user_agent=_USER_AGENT)
        self._client = _ParsedOnce(mirror_transport(fixtures / "sec-mirror"))
        self.sec: SecEdgarProvider = _MirrorProvider(self._settings, self._client)
        self._statements: dict[tuple[str, str, str], list[Any]] = {}
        self._texts: dict[str, str] = {}
        # One router per research date, as the runtime keeps one per AgentSpec.as_of.
        self._dated: dict[date, DataRouter] = {}

    def _data_as_of(self, args: Mapping[str, Any]) -> Any:
        """The plain provider, or with `as_of` in the case a router whose SEC provider drops
        everything filed after that day (the same settings `build_router(as_of=...)` uses)."""
        raw = args.get("as_of")
        if raw is None:
            return self.sec
        as_of = parse_as_of(str(raw))
        if as_of is None:
            raise ValueError(f"as_of {raw!r} is not a date")
        router = self._dated.get(as_of)
        if router is None:
            sec = _MirrorProvider(self._settings.with_as_of(as_of), self._client, self.sec)
            router = self._dated[as_of] = DataRouter([sec], as_of=as_of)
        return router

    async def aclose(self) -> None:
        await self.sec.aclose()
        for router in self._dated.values():
            await router.aclose()
        await self._client.aclose()

    async def check(self, case: Case) -> CaseResult:
        method = getattr(self, f"_{case.kind}", None)
        if method is None:
            return CaseResult(case, False, error=f"unknown case kind {case.kind!r}")
        try:
            actual = await method(case.args)
        except (DataError, LookupError, ValueError) as error:
            return CaseResult(case, False, error=f"{type(error).__name__}: {error}")
        expect = case.expect
        if isinstance(actual, str) and isinstance(expect, Mapping) and _TEXT_KEYS >= expect.keys():
            wrong = text_failures(expect, actual)
            return CaseResult(case, not wrong, _squash(actual)[:200], "; ".join(wrong) or None)
        return CaseResult(case, same(expect, actual), actual)

    # -- companies and statements --------------------------------------------------------------

    async def _resolve(self, args: Mapping[str, Any]) -> dict[str, str]:
        company = await self.sec.company(str(args["query"]))
        return {"ticker": company.ticker, "cik": company.cik, "name": company.name}

    async def _suggest(self, args: Mapping[str, Any]) -> str:
        """What a user who typed a name that matches nothing is told (with its suggestions)."""
        query = str(args["query"])
        try:
            company = await self.sec.company(query)
        except UnknownCompany as error:
            return str(error)
        raise ValueError(f"{query!r} resolved to {company.ticker}; expected no match")

    async def _statement_rows(self, args: Mapping[str, Any]) -> Any:
        """The record ending `report_period`: from every record of its kind, loaded once; or,
        as of a date, that one record from the data filed by then."""
        ticker, statement, period = str(args["ticker"]), str(args["statement"]), str(args["period"])
        wanted = str(args["report_period"])
        if args.get("as_of"):
            rows = await self._load_statements(
                ticker, statement, period, data=self._data_as_of(args), only=wanted
            )
        else:
            key = (ticker, statement, period)
            if key not in self._statements:
                self._statements[key] = await self._load_statements(
                    ticker, statement, period, limit=_ALL_RECORDS
                )
            rows = self._statements[key]
        for row in rows:
            if row.report_period == wanted:
                return row
        raise LookupError(f"no {period} {statement} statement for {ticker} ending {wanted}")

    async def _load_statements(
        self,
        ticker: str,
        statement: str,
        period: str,
        *,
        data: Any = None,
        limit: int = 40,
        only: str | None = None,
    ) -> list[Any]:
        """Records newest first; `only` (a period end) asks for that one record."""
        if period not in ("annual", "quarterly", "ttm"):
            raise ValueError(f"unknown period {period!r}")
        chosen: Literal["annual", "quarterly", "ttm"] = period  # type: ignore[assignment]
        source = self.sec if data is None else data
        kw: dict[str, Any] = {"period": chosen, "limit": limit}
        if only is not None:
            kw.update(report_period_gte=only, report_period_lte=only)
        if statement == "income":
            return list(await source.income_statements(ticker, **kw))
        if statement == "balance":
            return list(await source.balance_sheets(ticker, **kw))
        if statement == "cashflow":
            return list(await source.cash_flow_statements(ticker, **kw))
        raise ValueError(f"unknown statement {statement!r}")

    async def _statement(self, args: Mapping[str, Any]) -> Any:
        """One field of one record; `places` (not a provider argument) rounds a per-share
        amount restated for a split, whose exact value can repeat forever."""
        row = await self._statement_rows(args)
        value = getattr(row, str(args["field"]))
        if "places" in args and value is not None:
            value = round(Decimal(str(value)), int(args["places"]))
        return value

    async def _latest(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """The newest statement a user asking on `as_of` gets, and its `field` as then filed."""
        ticker, statement, period = str(args["ticker"]), str(args["statement"]), str(args["period"])
        rows = await self._load_statements(
            ticker, statement, period, data=self._data_as_of(args), limit=1
        )
        if not rows:
            raise LookupError(f"no {period} {statement} statement for {ticker} by {args['as_of']}")
        row = rows[0]
        return {
            "fiscal_period": row.fiscal_period,
            "report_period": row.report_period,
            "value": getattr(row, str(args["field"])),
        }

    async def _citation(self, args: Mapping[str, Any]) -> dict[str, Any]:
        row = await self._statement_rows(args)
        source = row.sources.get(str(args["field"]))
        if source is None:
            raise LookupError(f"{args['field']} has no source")
        return {
            "accession_number": source.accession_number,
            "form": source.form,
            "concept": source.concept,
            "url": source.url,
            "cite": source.cite(),
        }

    # -- filings, items, documents ---------------------------------------------------------------

    async def _filing(self, args: Mapping[str, Any]) -> dict[str, Any]:
        index = int(args.get("index", 0))
        found = await self._data_as_of(args).filings(
            str(args["ticker"]), forms=[str(args["form"])], limit=index + 1, page_back=False
        )
        if len(found) <= index:
            raise LookupError(f"only {len(found)} {args['form']} filings")
        filing = found[index]
        return {
            "accession_number": filing.accession_number,
            "filing_date": filing.filing_date,
            "report_date": filing.report_date,
            "url": filing.url,
        }

    async def _item(self, args: Mapping[str, Any]) -> str:
        """One item of a filing through `filing_section`. Converting a 10-K to text is the slow
        part, so later items of the same filing are cut from text converted once, with the
        same `extract_item` that `filing_section` uses."""
        from dexter.data.sec.documents import html_to_text
        from dexter.data.sec.items import extract_item

        ticker, form, year = str(args["ticker"]), str(args["form"]), args.get("year")
        key = f"{ticker}|{form}|{year}"
        text = self._texts.get(key)
        if text is None:
            section = await self.sec.filing_section(
                ticker, form=form, item=str(args["item"]), year=year
            )
            raw = await self.sec.http.get_bytes(section.source.url)
            self._texts[key] = html_to_text(raw)
            return f"{section.title}\n{section.text}"
        cut = extract_item(text, form.upper(), str(args["item"]))
        return f"{cut.title}\n{cut.text}"

    async def _document(self, args: Mapping[str, Any]) -> str:
        from dexter.data.sec.documents import html_to_text

        return html_to_text((self.fixtures / str(args["file"])).read_bytes())

    async def _ownership(self, args: Mapping[str, Any]) -> dict[str, Any]:
        from dexter.data.sec.ownership import parse_ownership_document

        path = self.fixtures / str(args["file"])
        filing = parse_ownership_document(path.read_bytes(), url=path.as_uri())
        trades = [t.model_dump(mode="json", exclude={"source"}) for t in filing.trades]
        return {
            "form": filing.form,
            "ticker": filing.ticker,
            "issuer_name": filing.issuer_name,
            "report_date": filing.report_date,
            "owners": [o.name for o in filing.owners],
            "trade_count": len(filing.trades),
            "holding_count": len(filing.holdings),
            "trade": trades[int(args["trade"])] if "trade" in args else None,
        }

    async def _holdings13f(self, args: Mapping[str, Any]) -> dict[str, Any]:
        from dexter.data.sec.holdings13f import parse_information_table

        path = self.fixtures / str(args["file"])
        rows = parse_information_table(
            path.read_bytes(),
            filer_cik=None,
            filer_name=None,
            report_period=None,
            filing_date=None,
            accession_number=None,
            url=path.as_uri(),
        )
        dumped = [r.model_dump(mode="json", exclude={"source"}) for r in rows]
        wanted = args.get("row")
        return {
            "rows": len(rows),
            "row": dumped[int(wanted)] if wanted is not None else None,
            "total_value": sum(Decimal(str(r.get("value_usd") or 0)) for r in dumped),
        }

    async def _routing(self, args: Mapping[str, Any]) -> str:
        """A meta-tool given `query`, its router model scripted to plan `calls`: the data calls
        named in `offered` must be among those the router was shown, and the merged result is
        what the case's text expectation checks."""
        from dexter.data.router import DataRouter
        from dexter.models.scripted import ScriptedModel, calls
        from dexter.tools.base import ToolContext
        from dexter.tools.finance.datacalls import available_data_calls
        from dexter.tools.finance.routed import RoutedArgs, routed_tools

        plan = [(str(c["name"]), dict(c["args"])) for c in args["calls"]]
        router_model = ScriptedModel([calls(*plan)])
        data = DataRouter([self.sec])  # not closed here: the provider is closed with the checker
        tools = {t.name: t for t in routed_tools(available_data_calls(data), lambda: router_model)}
        tool = tools[str(args["tool"])]
        result = await tool.run(RoutedArgs(query=str(args["query"])), ToolContext())
        shown = {spec.name for spec in router_model.requests[0].tools}
        missing = sorted(set(args.get("offered") or ()) - shown)
        if missing:
            raise ValueError(f"{args['tool']} did not offer {missing}; offered {sorted(shown)}")
        failed = [c["call"] for c in (result.data or {}).get("calls", []) if not c["ok"]]
        if failed:
            raise ValueError(f"data calls failed: {failed}: {result.content[:300]}")
        return result.content

    # -- tools -----------------------------------------------------------------------------------

    async def _calculate(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """`places` (not a tool argument) rounds the exact result the case compares."""
        from dexter.tools.base import ToolContext
        from dexter.tools.finance.calculate import CalculateArgs, CalculateTool

        tool_args = {k: v for k, v in args.items() if k != "places"}
        result = await CalculateTool().run(CalculateArgs.model_validate(tool_args), ToolContext())
        data = dict(result.data or {})
        exact = Decimal(str(data["result"]))
        if "places" in args:
            exact = round(exact, int(args["places"]))
        return {"result": exact, "display": data["display"], "unit": data["unit"]}
