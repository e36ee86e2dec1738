"""`dexter data …`: the data layer straight to the terminal, as tables or JSON."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import date, timedelta
from typing import Any

from pydantic import BaseModel
from rich.console import Console

from dexter.cli import data_render as render
from dexter.config import load_settings
from dexter.data.errors import ConfigurationNeeded, DataError, UnknownCompany
from dexter.data.router import DataRouter

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def run_data_command(args: argparse.Namespace) -> int:
    from dexter.config import ConfigError
    from dexter.runtime import Runtime

    console = Console()
    err = Console(stderr=True, highlight=False)
    limit = getattr(args, "limit", None)
    if limit is not None and limit < 1:
        err.print("dexter: --limit must be at least 1")
        return EXIT_USAGE
    try:
        router = Runtime(load_settings()).data_router
    except ConfigError as error:
        err.print(f"dexter: {error}", markup=False)
        return EXIT_USAGE

    async def run() -> int:
        try:
            return await _dispatch(args, router, console)
        finally:
            await router.aclose()

    try:
        return asyncio.run(run())
    except (ConfigurationNeeded, UnknownCompany) as error:
        err.print(f"dexter: {error}", markup=False)
        return EXIT_USAGE
    except DataError as error:
        err.print(f"dexter: {error}", markup=False)
        return EXIT_FAILED


def _emit_json(items: Any) -> None:
    def plain(value: Any) -> Any:
        if isinstance(value, BaseModel):
            return value.model_dump(mode="json", exclude_none=True)
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value

    print(json.dumps(plain(items), indent=2, ensure_ascii=False))


async def _dispatch(args: argparse.Namespace, router: DataRouter, console: Console) -> int:
    action: str = args.data_command
    as_json: bool = args.json
    if action == "holdings":
        rows = await router.institutional_holdings(filer_cik=args.filer, limit=args.limit)
        if as_json:
            _emit_json(rows)
        else:
            filer = rows[0].filer_name if rows and rows[0].filer_name else args.filer
            console.print(render.holdings_table(rows, title=f"13F holdings — {filer}"))
            render.print_sources(console, render.sources_of(rows[:1]))
        return EXIT_OK
    if action == "screen":
        screened = await router.screen(
            concept=args.concept,
            period=args.period,
            unit=args.unit,
            limit=args.limit,
            min_value=args.min_value,
            max_value=args.max_value,
        )
        if as_json:
            _emit_json(screened)
        else:
            title = f"{args.concept} ({args.unit}), {args.period}"
            console.print(render.screen_table(screened, title=title))
        return EXIT_OK

    company = await router.company(args.ticker)
    ticker, name = company.ticker, f"{company.name} ({company.ticker})"

    if action in ("income", "balance", "cashflow", "metrics"):
        kw: dict[str, Any] = {"period": args.period, "limit": args.limit}
        statements: list[Any]
        if action == "income":
            statements, kind = await router.income_statements(ticker, **kw), "income statement"
        elif action == "balance":
            statements, kind = await router.balance_sheets(ticker, **kw), "balance sheet"
        elif action == "cashflow":
            statements, kind = await router.cash_flow_statements(ticker, **kw), "cash flow"
        else:
            statements, kind = await router.financial_metrics(ticker, **kw), "financial metrics"
        if as_json:
            _emit_json(statements)
        elif not statements:
            console.print(f"No {args.period} {kind} data reported for {name}.")
        else:
            title = f"{name} — {kind}, {args.period}"
            console.print(
                render.statements_table(statements, title=title, metrics=action == "metrics")
            )
            render.print_sources(console, render.statement_sources(statements))
        return EXIT_OK
    if action == "filings":
        filings = await router.filings(ticker, forms=args.form, limit=args.limit)
        if as_json:
            _emit_json(filings)
        else:
            forms = ", ".join(args.form) if args.form else "all forms"
            console.print(render.filings_table(filings, title=f"{name} — filings ({forms})"))
            console.print("Documents", style="bold")
            # Plain writes: a wrapped URL cannot be clicked or copied.
            sys.stdout.write("".join(f"  {line}\n" for line in render.filing_links(filings)))
        return EXIT_OK
    if action == "filing-section":
        section = await router.filing_section(
            ticker,
            form=args.form,
            item=args.item,
            year=args.year,
            accession_number=args.accession,
        )
        if as_json:
            _emit_json(section)
        else:
            header, text = render.section_text(section)
            console.print(header, style="bold", markup=False)
            sys.stdout.write(text.rstrip() + "\n")
            render.print_sources(console, [section.source.cite()])
        return EXIT_OK
    if action == "insider-trades":
        trades = await router.insider_trades(ticker, limit=args.limit)
        if as_json:
            _emit_json(trades)
        else:
            console.print(render.insider_table(trades, title=f"{name} — insider transactions"))
            render.print_sources(console, render.sources_of(trades))
        return EXIT_OK
    if action == "facts":
        points = await router.facts(ticker, args.concept)
        if as_json:
            _emit_json(points)
        else:
            concept = points[0].concept if points else args.concept
            console.print(render.facts_table(points, title=f"{name} — {concept}"))
        return EXIT_OK
    if action == "prices":
        end = args.end or date.today().isoformat()
        start = args.start or (date.fromisoformat(end) - timedelta(days=30)).isoformat()
        prices = await router.prices(ticker, start_date=start, end_date=end)
        if as_json:
            _emit_json(prices)
        else:
            console.print(render.prices_table(prices, title=f"{name} — prices {start} to {end}"))
        return EXIT_OK
    if action == "news":
        news = await router.news(ticker, limit=args.limit)
        if as_json:
            _emit_json(news)
        else:
            console.print(render.news_table(news, title=f"{name} — news"))
        return EXIT_OK
    if action == "segments":
        segments = await router.segments(ticker, period=args.period, limit=args.limit)
        _emit_json(segments)  # segment trees are nested; JSON is their readable form
        return EXIT_OK
    raise AssertionError(f"unhandled data action {action}")
