"""`dexter model dcf TICKER -o FILE.xlsx`: a DCF workbook with live formulas from SEC filings."""

from __future__ import annotations

import argparse
import asyncio
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
        "--history", type=int, default=4, help="filed years shown (default 4, from 2 to 10)"
    )
    dcf.add_argument(
        "--price",
        type=float,
        metavar="USD",
        help="share price for the WACC weights and the upside (default: the latest quote)",
    )
    return model


def run_model_command(args: argparse.Namespace) -> int:
    from dexter.config import ConfigError, load_settings
    from dexter.data.errors import DataError

    if not 3 <= args.years <= 10 or not 2 <= args.history <= 10:
        return _fail("--years must be 3 to 10 and --history 2 to 10", EXIT_USAGE)
    if args.price is not None and not args.price > 0:
        return _fail("--price must be a positive number", EXIT_USAGE)
    output = Path(args.output).expanduser()
    if output.suffix.lower() != ".xlsx":
        return _fail(f"{output}: the model is written as .xlsx; name the file so", EXIT_USAGE)
    try:
        runtime = open_runtime(load_settings())
    except ConfigError as error:
        return _fail(str(error), EXIT_USAGE)
    try:
        data = asyncio.run(_build(runtime.data_router, args))
    except DataError as error:
        return _fail(str(error), EXIT_FAILED)
    from dexter.outputfile import write_output

    try:
        write_output(output, data[0])
    except (ConfigError, OSError) as error:
        return _fail(str(error), EXIT_FAILED)
    print(f"wrote {output}: {data[1]}")
    return EXIT_OK


async def _build(router: Any, args: argparse.Namespace) -> tuple[bytes, str]:
    from dexter.data.errors import DataError
    from dexter.workbooks.dcf import dcf_workbook, default_assumptions
    from dexter.workbooks.history import annual_history
    from dexter.workbooks.xlsx import to_xlsx

    try:
        history = await annual_history(router, args.ticker, args.history)
        if args.price is not None:
            price, basis = args.price, "given with --price"
        else:
            try:
                quote = await router.price_snapshot(history.ticker)
            except DataError as error:
                raise DataError(
                    f"no share price for {history.ticker} ({error}); pass --price."
                ) from error
            price = float(quote.price)
            basis = f"quote {quote.time or ''} ({quote.source.provider if quote.source else ''})"
    finally:
        await router.aclose()
    assumptions = default_assumptions(history, price, basis.strip(), args.years)
    book, values = await asyncio.to_thread(dcf_workbook, history, assumptions)
    data = await asyncio.to_thread(to_xlsx, book)
    said = (
        f"{history.ticker} DCF, {history.years[0]}..{history.years[-1]} filed, "
        f"{len(assumptions.growth)} forecast years; WACC {values.wacc:.2%}, value per share "
        f"{values.per_share:,.2f} USD vs price {price:,.2f}"
    )
    return data, said


def _fail(message: str, code: int) -> int:
    print(f"dexter: {message}", file=sys.stderr)
    return code


__all__ = ["add_model_parser", "run_model_command"]
