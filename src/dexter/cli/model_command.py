"""`dexter model dcf|three-statement|comps TICKER... -o FILE.xlsx` (or `--from-session SESSION`):
workbooks with live formulas built from SEC filings."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from dexter.cli.open_runtime import open_runtime

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
_FROM_SESSION = (
    "build it for the company a stored research session (id or prefix, see `dexter sessions "
    "list`) looked at instead of TICKER: %s. The figures still come from the filed data, "
    "not from the session's answer."
)


def _from_session(parser: argparse.ArgumentParser, which: str) -> None:
    parser.add_argument("--from-session", metavar="SESSION", help=_FROM_SESSION % which)


def add_model_parser(commands: Any) -> argparse.ArgumentParser:
    model: argparse.ArgumentParser = commands.add_parser(
        "model",
        help="build a spreadsheet model with live formulas from SEC filings (no key needed)",
        description="Build an XLSX model: every filed input beside its XBRL concept, period, "
        "accession and URL; assumptions in blue; every derived cell a formula; a Checks sheet.",
    )
    kinds = model.add_subparsers(dest="model_kind", metavar="MODEL", required=True)
    dcf = kinds.add_parser("dcf", help="discounted cash flow: forecast, WACC, value per share")
    _one_company_arguments(dcf)
    dcf.add_argument(
        "--price",
        type=float,
        metavar="USD",
        help="share price for the WACC weights and the upside (default: the latest quote)",
    )
    three = kinds.add_parser(
        "three-statement",
        help="linked income statement, balance sheet and cash flow forecast that balance",
    )
    _one_company_arguments(three)
    comps = kinds.add_parser(
        "comps",
        help="comparable companies: market and enterprise value, EV/revenue, EV/EBITDA, P/E",
    )
    comps.add_argument("tickers", metavar="TICKER", nargs="*")
    _from_session(comps, "every company it used, in order of first use")
    comps.add_argument("-o", "--output", metavar="PATH", required=True, help="the .xlsx to write")
    comps.add_argument(
        "--price",
        action="append",
        default=[],
        metavar="TICKER=USD",
        help="a share price to use (repeatable); the others from the latest quotes",
    )
    return model


def _one_company_arguments(parser: argparse.ArgumentParser) -> None:
    """What the one-company models (dcf, three-statement) share: the company, where to write,
    how many years forward and back."""
    parser.add_argument("ticker", metavar="TICKER", nargs="?")
    _from_session(parser, "the first company it used")
    parser.add_argument("-o", "--output", metavar="PATH", required=True, help="the .xlsx to write")
    parser.add_argument(
        "--years", type=int, default=5, help="forecast years (default 5, from 3 to 10)"
    )
    parser.add_argument(
        "--history",
        type=int,
        default=4,
        help="filed growth years shown (default 4: five filed years; 2 to 10)",
    )


def _prices(given: list[str]) -> dict[str, float]:
    """`--price NVDA=180` pairs; ValueError with the one that is not."""
    prices: dict[str, float] = {}
    for pair in given:
        ticker, _, number = pair.partition("=")
        try:
            price = float(number)
        except ValueError:
            price = 0.0
        if not ticker.strip() or not price > 0:
            raise ValueError(f"--price {pair}: write it as TICKER=USD, e.g. --price NVDA=180")
        prices[ticker.strip().upper()] = price
    return prices


def run_model_command(args: argparse.Namespace) -> int:
    from dexter.config import ConfigError, load_settings
    from dexter.data.errors import ConfigurationNeeded, DataError, UnknownCompany

    years, history = getattr(args, "years", 5), getattr(args, "history", 4)
    if not 3 <= years <= 10 or not 2 <= history <= 10:
        return _fail("--years must be 3 to 10 and --history 2 to 10", EXIT_USAGE)
    named = args.tickers if args.model_kind == "comps" else [args.ticker] if args.ticker else []
    if bool(named) == bool(args.from_session):
        return _fail(
            "name the company (TICKER) or a research session (--from-session SESSION), one of "
            "the two",
            EXIT_USAGE,
        )
    if args.model_kind == "comps":
        try:
            args.prices = _prices(args.price)
        except ValueError as error:
            return _fail(str(error), EXIT_USAGE)
        if named and len(named) < 2:
            return _fail("comps compares at least two companies", EXIT_USAGE)
    elif getattr(args, "price", None) is not None and not args.price > 0:
        return _fail("--price must be a positive number", EXIT_USAGE)
    output = Path(args.output).expanduser()
    if output.suffix.lower() != ".xlsx":
        return _fail(f"{output}: the model is written as .xlsx; name the file so", EXIT_USAGE)
    try:
        runtime = open_runtime(load_settings())
    except ConfigError as error:
        return _fail(str(error), EXIT_USAGE)
    if args.from_session:
        try:
            _take_session_companies(runtime, args)
        except ConfigError as error:
            return _fail(str(error), EXIT_USAGE)
        finally:
            runtime.close_local()
    import asyncio  # not at import time: `dexter --help` imports every command's parser

    from dexter.cli.model_build import build

    try:
        data = asyncio.run(build(runtime.data_router, args))
    except (ConfigurationNeeded, UnknownCompany) as error:
        return _fail(str(error), EXIT_USAGE)
    except DataError as error:
        return _fail(str(error), EXIT_FAILED)
    from dexter.outputfile import write_output

    try:
        write_output(output, data[0])
    except (ConfigError, OSError) as error:
        return _fail(str(error), EXIT_FAILED)
    print(f"wrote {output}: {data[1]}")
    return EXIT_OK


def _take_session_companies(runtime: Any, args: argparse.Namespace) -> None:
    """Set the ticker(s) from the session's finance tool calls; ConfigError saying what to do."""
    from dexter.cli.model_session import session_companies
    from dexter.config import ConfigError

    store = runtime.existing_store()
    if store is None:
        raise ConfigError("no research has been recorded yet; ask something first (`dexter ask`).")
    session, companies = session_companies(store, runtime.settings.home, args.from_session)
    if args.model_kind != "comps":
        args.ticker = companies[0]
    elif len(companies) < 2:
        raise ConfigError(
            f"session {session} looked at one company ({companies[0]}); comps compares at "
            f"least two: name them, e.g. `dexter model comps {companies[0]} PEER -o comps.xlsx`."
        )
    else:
        args.tickers = companies
    print(f"dexter: session {session} looked at {', '.join(companies)}", file=sys.stderr)


def _fail(message: str, code: int) -> int:
    print(f"dexter: {message}", file=sys.stderr)
    return code


__all__ = ["add_model_parser", "run_model_command"]
