"""`dexter model dcf|three-statement TICKER -o FILE.xlsx`: workbooks with live formulas built
from SEC filings."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from dexter.cli.open_runtime import open_runtime

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def add_model_parser(commands: Any) -> argparse.ArgumentParser:
    model: argparse.ArgumentParser = commands.add_parser(
        "model",
        help="build a spreadsheet model with live formulas from SEC filings (no key needed)",
        description="Build an XLSX model: every filed input beside its XBRL concept, period, "
        "accession and URL; assumptions in blue; every derived cell a formula; a Checks sheet.",
    )
    kinds = model.add_subparsers(dest="model_kind", metavar="MODEL", required=True)
    dcf = kinds.add_parser("dcf", help="discounted cash flow: forecast, WACC, value per share")
    dcf.add_argument("ticker", metavar="TICKER")
    dcf.add_argument("-o", "--output", metavar="PATH", required=True, help="the .xlsx to write")
    dcf.add_argument(
        "--years", type=int, default=5, help="forecast years (default 5, from 3 to 10)"
    )
    dcf.add_argument(
        "--history",
        type=int,
        default=4,
        help="filed growth years shown (default 4: five filed years; 2 to 10)",
    )
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
    three.add_argument("ticker", metavar="TICKER")
    three.add_argument("-o", "--output", metavar="PATH", required=True, help="the .xlsx to write")
    three.add_argument(
        "--years", type=int, default=5, help="forecast years (default 5, from 3 to 10)"
    )
    three.add_argument(
        "--history",
        type=int,
        default=4,
        help="filed growth years shown (default 4: five filed years; 2 to 10)",
    )
    comps = kinds.add_parser(
        "comps",
        help="comparable companies: market and enterprise value, EV/revenue, EV/EBITDA, P/E",
    )
    comps.add_argument("tickers", metavar="TICKER", nargs="+")
    comps.add_argument("-o", "--output", metavar="PATH", required=True, help="the .xlsx to write")
    comps.add_argument(
        "--price",
        action="append",
        default=[],
        metavar="TICKER=USD",
        help="a share price to use (repeatable); the others from the latest quotes",
    )
    return model


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
    if args.model_kind == "comps":
        try:
            args.prices = _prices(args.price)
        except ValueError as error:
            return _fail(str(error), EXIT_USAGE)
        if len(args.tickers) < 2:
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


def _fail(message: str, code: int) -> int:
    print(f"dexter: {message}", file=sys.stderr)
    return code


__all__ = ["add_model_parser", "run_model_command"]
