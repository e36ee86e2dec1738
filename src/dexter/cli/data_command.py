"""`dexter data …`: the data layer straight to the terminal, as tables or JSON."""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from datetime import date, timedelta
from typing import Any

from pydantic import BaseModel
from rich.console import Console

from dexter import spreadsheet
from dexter.cli import data_render as render
from dexter.cli.open_runtime import open_runtime
from dexter.cli.output import drawing_width, output_console
from dexter.cli.progress import Waiting
from dexter.cli.tables import Grid, print_wrapped, write_csv
from dexter.cli.tables import render as render_grid
from dexter.config import load_settings
from dexter.data.errors import ConfigurationNeeded, DataError, UnknownCompany
from dexter.data.models import FilingList, Holdings, InsiderTrades
from dexter.data.provider import Capability
from dexter.data.router import DataRouter
from dexter.data.sec.history import before_edgar, missing_history
from dexter.data.settings import parse_as_of

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def run_data_command(args: argparse.Namespace) -> int:
    from dexter.config import ConfigError

    console = output_console()
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    limit = getattr(args, "limit", None)
    if limit is not None and limit < 1:
        err.print("dexter: --limit must be at least 1")
        return EXIT_USAGE
    if args.data_command == "segments" and args.csv:
        err.print(
            "dexter: --csv does not apply to `data segments`: segment trees are nested, so "
            "they are printed as JSON (--json)."
        )
        return EXIT_USAGE
    backwards = _backwards_range(args)
    if backwards:
        err.print(f"dexter: {backwards}", markup=False)
        return EXIT_USAGE
    try:
        runtime = open_runtime(load_settings())
        as_of = parse_as_of(getattr(args, "as_of", None))
        router = runtime.data_router_for(as_of) if as_of else runtime.data_router
    except DataError as error:
        err.print(f"dexter: --as-of: {error}", markup=False)
        return EXIT_USAGE
    except ConfigError as error:
        err.print(f"dexter: {error}", markup=False)
        return EXIT_USAGE

    # On a terminal, a spinner says what is being fetched while the SEC is slow.
    waiting = Waiting(err)

    async def run() -> int:
        waiting.start(f"fetching {args.data_command} from {_sources_named(router)}")
        try:
            return await _dispatch(args, router, console, waiting)
        finally:
            waiting.stop()
            await router.aclose()

    try:
        return asyncio.run(run())
    except (ConfigurationNeeded, UnknownCompany) as error:
        _warn(str(error))
        return EXIT_USAGE
    except DataError as error:
        _warn(str(error))
        return EXIT_FAILED


# Per command, its date range: (first option, its argument name), (last option, its name).
_RANGES = {
    "filings": (("--from", "filed_from"), ("--to", "filed_to")),
    "search": (("--from", "start"), ("--to", "end")),
    "prices": (("--from", "start"), ("--to", "end")),
}


def _backwards_range(args: argparse.Namespace) -> str | None:
    """A range that ends before it starts matches nothing: said, rather than an empty table."""
    ends = _RANGES.get(getattr(args, "data_command", ""))
    if ends is None:
        return None
    (first_option, first_name), (last_option, last_name) = ends
    first, last = getattr(args, first_name, None), getattr(args, last_name, None)
    if first and last and first > last:
        return (
            f"{first_option} {first} is after {last_option} {last}: nothing can fall in that "
            "range (swap the two dates?)."
        )
    return None


def _range_said(first: str | None, last: str | None) -> str:
    if first and last:
        return f" filed from {first} to {last}"
    if first:
        return f" filed on or after {first}"
    return f" filed on or before {last}" if last else ""


_FORM = re.compile(r"^(\d+)\s*-?\s*([A-Z]+)(/A)?$|^([A-Z]+)\s*-?\s*(\d+)(/A)?$")


def normalise_form(form: str) -> str:
    """`10k`, `10-k`, `10 K` → `10-K`; `s1` → `S-1`; anything else upper-cased as typed."""
    text = form.strip().upper()
    match = _FORM.match(text)
    if not match:
        return text
    if match.group(1):
        return f"{match.group(1)}-{match.group(2)}{match.group(3) or ''}"
    return f"{match.group(4)}-{match.group(5)}{match.group(6) or ''}"


def _sources_named(router: DataRouter) -> str:
    names = [getattr(p, "name", "") for p in getattr(router, "providers", [])]
    return ", ".join(n for n in names if n) or "the data sources"


def _emit_json(items: Any) -> None:
    def plain(value: Any) -> Any:
        if isinstance(value, BaseModel):
            return value.model_dump(mode="json", exclude_none=True)
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value

    print(json.dumps(plain(items), indent=2, ensure_ascii=False))


def _show(
    args: argparse.Namespace,
    console: Console,
    items: Any,
    grid: Grid,
    waiting: Waiting,
    *,
    as_of: date | None = None,
    empty: str = "",
) -> bool:
    """JSON or CSV when asked for (then True: nothing else to print), else the table, titled
    with the as-of date when there is one; a sentence instead of a table with no rows."""
    waiting.stop()
    if args.json:
        _emit_json(items)
        return True
    if getattr(args, "csv", False):
        write_csv(grid, sys.stdout)
        return True
    if as_of is not None:
        grid.title = f"{grid.title} (as of {as_of})"
    if not grid.rows:
        said = empty or f"Nothing to show for {grid.title}"
        when = f" on or before the as-of date {as_of}" if as_of and empty else ""
        print_wrapped(console, f"{said}{when}.")
        note = before_edgar(as_of.isoformat()) if as_of is not None else None
        if note:
            print_wrapped(console, note, style="dim")
        return True
    render_grid(console, grid)
    return False


# Exchange suffixes (WSU.DE), currency pairs (EURUSD=X) and indices (^GSPC) are market symbols,
# never SEC filers: looked up as typed.
_MARKET_SYMBOL = re.compile(r"^[\^A-Z0-9][A-Z0-9.\-]*(=X|\.[A-Z]{1,3})$|^\^", re.IGNORECASE)
_INTERVALS = {"1d": "day", "1wk": "week", "1mo": "month"}


async def _price_subject(router: DataRouter, text: str) -> tuple[str, str]:
    """(symbol, name shown) for a price command: a filer's ticker, or a market symbol as typed
    when it is one or no filer matches (ETFs, funds and foreign listings file nothing)."""
    if not _MARKET_SYMBOL.match(text.strip()):
        try:
            company = await router.company(text)
            return company.ticker, f"{company.name} ({company.ticker})"
        except UnknownCompany:
            if " " in text.strip():
                raise
        except DataError:
            pass  # the SEC unreachable or unconfigured: prices need neither
    symbol = text.strip().upper()
    return symbol, symbol


async def _prices(
    args: argparse.Namespace, router: DataRouter, console: Console, waiting: Waiting
) -> int:
    as_of = getattr(router, "as_of", None)
    ticker, name = await _price_subject(router, args.ticker)
    if args.data_command == "quote":
        quote = await router.price_snapshot(ticker)
        grid = render.quote_table(quote, title=f"{name} — quote")
        if not _show(args, console, quote, grid, waiting, as_of=as_of) and quote.source:
            render.print_sources(console, [f"{quote.source.provider} {quote.source.url}"])
        return EXIT_OK
    last = as_of or date.today()
    end = args.end or last.isoformat()
    start = args.start or (date.fromisoformat(end) - timedelta(days=30)).isoformat()
    if start > end:  # --from after the default end, today
        waiting.stop()
        print(f"dexter: --from {start} is after the end date {end}.", file=sys.stderr)
        return EXIT_USAGE
    prices = await router.prices(
        ticker, start_date=start, end_date=end, interval=_INTERVALS[args.interval]
    )
    title = f"{name} — prices {start} to {end}" + (
        f", {args.interval}" if args.interval != "1d" else ""
    )
    empty = f"No prices for {name} from {start} to {end} (no trading days in that window?)"
    grid = render.prices_table(prices, title=title)
    _show(args, console, prices, grid, waiting, as_of=as_of, empty=empty)
    return EXIT_OK


async def _valuation(
    args: argparse.Namespace,
    router: DataRouter,
    console: Console,
    waiting: Waiting,
    ticker: str,
    name: str,
) -> int:
    from dexter.data.valuation import month_ends, valuations

    days: list[date] = []
    for given in args.on:
        first, _, last = given.partition("..")
        if last:
            days += month_ends(date.fromisoformat(first), date.fromisoformat(last))
        else:
            days.append(date.fromisoformat(first))
    if router.as_of is not None:
        days = [day for day in days if day <= router.as_of] or [router.as_of]
    rows = await valuations(router, ticker, days)
    grid = render.valuation_table(rows, title=f"{name} — valuation")
    notes = render.valuation_notes(rows)
    if _show(args, console, rows, grid, waiting, as_of=router.as_of):
        if not args.json and notes:
            _warn("; ".join(notes))
        return EXIT_OK
    render.print_sources(console, render.valuation_sources(rows))
    for note in notes:
        print_wrapped(console, note, style="dim")
    return EXIT_OK


def _warn(text: str) -> None:
    """An error or a note about the answer, on stderr (it never mixes with --json or --csv
    output): wrapped between words on a terminal, one line otherwise (COLUMNS or not)."""
    err = Console(stderr=True, highlight=False)
    if err.is_terminal:
        print_wrapped(err, f"dexter: {text}")
    else:
        sys.stderr.write(f"dexter: {text}\n")


def _text_as_csv(fields: list[tuple[str, Any]]) -> None:
    """One record (a document or section with its text) as a header line and one CSV row."""
    spreadsheet.write_csv(sys.stdout, [[name for name, _ in fields], [v for _, v in fields]])


def _print_charts(action: str, statements: list[Any], company: Any, width: int) -> None:
    """The statement's main lines as Unicode bars, oldest period at the top, fitted to the
    console; plain writes so a pipe or file keeps every figure."""
    from dexter.reports.charts import charts_for, terminal_chart
    from dexter.reports.model import table_from_records

    records = [s.model_dump(mode="json") for s in statements]
    table = table_from_records(action, records, company.model_dump(mode="json"))  # type: ignore[arg-type]
    drawn = charts_for(table) if table is not None else []
    if not drawn:
        sys.stdout.write("\nNot enough periods to chart (need two or more).\n")
        return
    for chart in drawn:
        sys.stdout.write("\n" + "\n".join(terminal_chart(chart, width=width)) + "\n")
    sys.stdout.write("\n")


async def _dispatch(
    args: argparse.Namespace, router: DataRouter, console: Console, waiting: Waiting
) -> int:
    action: str = args.data_command
    as_json: bool = args.json
    as_of = getattr(router, "as_of", None)
    if action == "holdings":
        rows = await router.institutional_holdings(filer_cik=args.filer, limit=args.limit)
        filer = rows[0].filer_name if rows and rows[0].filer_name else args.filer
        period = rows[0].report_period if rows and rows[0].report_period else None
        title = f"13F holdings — {filer}" + (f", period ending {period}" if period else "")
        ranked = isinstance(rows, Holdings)
        grid = render.holdings_table(rows, title=title, ranked=ranked)
        shown = render.holdings_shown(rows) if isinstance(rows, Holdings) else None
        if not _show(args, console, rows, grid, waiting, as_of=as_of):
            if shown:
                print_wrapped(console, shown)
            render.print_sources(console, render.sources_of(rows[:1]))
        elif shown and isinstance(rows, Holdings) and rows.omitted_count:
            # --json / --csv: the note on stderr keeps stdout parseable, but is never dropped.
            _warn(shown)
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
        title = f"{args.concept} ({args.unit}), {args.period}"
        grid = render.screen_table(screened, title=title)
        empty = f"No filer's {args.concept} for {args.period} is within the --min/--max bounds"
        _show(args, console, screened, grid, waiting, as_of=as_of, empty=empty)
        return EXIT_OK

    if action == "search":
        page = await router.full_text_search(
            args.query,
            forms=[normalise_form(f) for f in args.form] if args.form else None,
            start_date=args.start,
            end_date=args.end,
            company=args.company,
            offset=args.offset,
        )
        empty = f"No EDGAR document matches {args.query!r}"
        if not _show(args, console, page, render.search_table(page), waiting, empty=empty):
            sys.stdout.write("".join(f"  {hit.url}\n" for hit in page.hits))
            if as_of:
                console.print(f"As of {as_of}: later filings are hidden.")
        return EXIT_OK

    if action in ("prices", "quote"):
        return await _prices(args, router, console, waiting)

    company = await router.company(args.ticker)
    ticker, name = company.ticker, f"{company.name} ({company.ticker})"

    if action == "metrics" and args.on:
        return await _valuation(args, router, console, waiting, ticker, name)
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
        if not statements and not as_json:
            waiting.stop()
            when = f" on or before the as-of date {as_of}" if as_of else ""
            console.print(f"No {args.period} {kind} data reported for {name}{when}.")
            return EXIT_OK
        title = f"{name} — {kind}, {args.period}"
        grid = render.statements_table(statements, title=title, metrics=action == "metrics")
        if not _show(args, console, statements, grid, waiting, as_of=as_of):
            if args.chart:
                _print_charts(action, statements, company, drawing_width(console))
            render.print_sources(console, render.statement_sources(statements))
            if action == "metrics" and router.supports(Capability.PRICES):
                console.print(
                    "Valuation on any day (from that day's close and the statements filed by "
                    f"then): dexter data metrics {ticker} --on YYYY-MM-DD",
                    style="dim",
                    markup=False,
                )
        return EXIT_OK
    if action == "filings":
        forms_wanted = [normalise_form(form) for form in args.form] if args.form else None
        filters: dict[str, Any] = {
            "filed_gte": args.filed_from,
            "filed_lte": args.filed_to,
            "items": args.item,
        }
        filters = {k: v for k, v in filters.items() if v}
        filings = await router.filings(
            ticker, forms=forms_wanted, limit=min(args.limit, 1000), **filters
        )
        forms = ", ".join(forms_wanted) if forms_wanted else "all forms"
        grid = render.filings_table(filings, title=f"{name} — filings ({forms})")
        empty = f"No filings ({forms}) by {name}" + _range_said(args.filed_from, args.filed_to)
        if args.item:
            empty += f" reporting item {' or '.join(args.item)}"
        if not _show(args, console, filings, grid, waiting, as_of=as_of, empty=empty):
            console.print("Documents", style="bold")
            # Plain writes: a wrapped URL cannot be clicked or copied.
            sys.stdout.write("".join(f"  {line}\n" for line in render.filing_links(filings)))
        gaps = filings.gaps if isinstance(filings, FilingList) else []
        if gaps:
            _warn(f"this list is incomplete. {missing_history(gaps)}")
            return EXIT_FAILED
        return EXIT_OK
    if action == "documents":
        listing = await router.filing_documents(ticker, args.accession)
        grid = render.documents_table(listing)
        if not _show(args, console, listing, grid, waiting, as_of=as_of):
            sys.stdout.write(f"  {listing.index_url}\n")
        return EXIT_OK
    if action == "document":
        doc = await router.filing_document(ticker, args.accession, document=args.document)
        waiting.stop()
        start = max(args.offset, 0)
        end = len(doc.text) if args.max_chars is None else start + max(args.max_chars, 1)
        if as_json:
            _emit_json(doc.model_copy(update={"text": doc.text[start:end]}))
            return EXIT_OK
        if args.csv:
            _text_as_csv(
                [
                    ("company", doc.company_name),
                    ("form", doc.form),
                    ("filing_date", doc.filing_date),
                    ("accession_number", doc.accession_number),
                    ("document", doc.name),
                    ("type", doc.type),
                    ("url", doc.url),
                    ("offset", start),
                    ("text", doc.text[start:end]),
                ]
            )
            return EXIT_OK
        what = "cover page of " if doc.cover_only else ""
        console.print(
            f"{doc.company_name} {doc.form or ''} filed {doc.filing_date} — {what}"
            f"{doc.type or 'document'} {doc.name}",
            style="bold",
            markup=False,
        )
        sys.stdout.write(doc.text[start:end].rstrip() + "\n")
        if end < len(doc.text):
            console.print(
                f"(characters {start:,} to {end:,} of {len(doc.text):,}; continue with "
                f"--offset {end})",
                markup=False,
            )
        render.print_sources(console, [f"{doc.source.cite()} {doc.url}"])
        return EXIT_OK
    if action == "filing-section":
        section = await router.filing_section(
            ticker,
            form=normalise_form(args.form),
            item=args.item,
            year=args.year,
            accession_number=args.accession,
        )
        waiting.stop()
        if as_json:
            _emit_json(section)
        elif args.csv:
            _text_as_csv(
                [
                    ("ticker", section.ticker),
                    ("form", section.filing_type),
                    ("filing_date", section.filing_date),
                    ("report_date", section.report_date),
                    ("accession_number", section.accession_number),
                    ("item", section.item),
                    ("title", section.title),
                    ("url", section.source.url),
                    ("text", section.text),
                ]
            )
        else:
            header, text = render.section_text(section)
            console.print(header, style="bold", markup=False)
            sys.stdout.write(text.rstrip() + "\n")
            render.print_sources(console, [section.source.cite()])
        return EXIT_OK
    if action == "insider-trades":
        trades = await router.insider_trades(ticker, limit=args.limit)
        grid = render.insider_table(trades, title=f"{name} — insider transactions")
        empty = f"No insider transactions (Forms 4 and 5) were found for {name}"
        if not _show(args, console, trades, grid, waiting, as_of=as_of, empty=empty):
            render.print_sources(console, render.sources_of(trades))
        if not isinstance(trades, InsiderTrades):
            return EXIT_OK
        # On stderr, so --json and --csv stay parseable, but never silently; and exit 1, so a
        # script cannot take a partial list for the whole one.
        if trades.failures:
            _warn(
                f"{len(trades.failures)} ownership filing(s) (Form 4 or 5) could not be read, so "
                f"these transactions may be incomplete; first: {trades.failures[0]}"
            )
        if trades.gaps:
            _warn(f"these transactions may be incomplete. {missing_history(trades.gaps)}")
        return EXIT_FAILED if trades.failures or trades.gaps else EXIT_OK
    if action == "facts":
        points = await router.facts(ticker, args.concept)
        concept = points[0].concept if points else args.concept
        grid = render.facts_table(points, title=f"{name} — {concept}")
        _show(args, console, points, grid, waiting, as_of=as_of)
        return EXIT_OK
    if action == "news":
        news = await router.news(ticker, limit=args.limit)
        grid = render.news_table(news, title=f"{name} — news")
        _show(args, console, news, grid, waiting, as_of=as_of, empty=f"No news found for {name}")
        return EXIT_OK
    if action == "segments":
        extra = {"year": args.year} if getattr(args, "year", None) is not None else {}
        segments = await router.segments(ticker, period=args.period, limit=args.limit, **extra)
        waiting.stop()
        if args.json or not all("breakdowns" in s for s in segments):
            _emit_json(segments)  # a vendor's segment trees are nested; JSON is their form
            return EXIT_OK
        from dexter.tools.citations import SourceLedger
        from dexter.tools.finance.format import format_segments

        ledger = SourceLedger()
        sys.stdout.write(format_segments(segments, ledger=ledger).rstrip() + "\n")
        return EXIT_OK
    raise AssertionError(f"unhandled data action {action}")
