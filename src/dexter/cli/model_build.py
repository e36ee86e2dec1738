"""Building a model workbook for `dexter model`: figures from the data router, the workbook
written off the event loop (imported when the command runs, not for `dexter --help`)."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any


async def build(router: Any, args: argparse.Namespace) -> tuple[bytes, str]:
    if args.model_kind == "three-statement":
        return await _build_three_statement(router, args)
    if args.model_kind == "comps":
        return await _build_comps(router, args)
    return await _build_dcf(router, args)


async def _build_three_statement(router: Any, args: argparse.Namespace) -> tuple[bytes, str]:
    from dexter.workbooks.history import (
        THREE_STATEMENT_LINES,
        THREE_STATEMENT_REQUIRED,
        annual_history,
    )
    from dexter.workbooks.three_statement import default_drivers, three_statement_workbook
    from dexter.workbooks.xlsx import to_xlsx

    try:
        history = await annual_history(
            router, args.ticker, args.history, THREE_STATEMENT_LINES, THREE_STATEMENT_REQUIRED
        )
    finally:
        await router.aclose()
    drivers = default_drivers(history, args.years)
    book, values = await asyncio.to_thread(three_statement_workbook, history, drivers)
    data = await asyncio.to_thread(to_xlsx, book)
    said = (
        f"{history.ticker} three statements, {history.years[0]}..{history.years[-1]} filed, "
        f"{len(drivers.growth)} forecast years; total assets in the last forecast year "
        f"{values.total_assets[-1] / 1e6:,.0f} M USD, balancing"
    )
    return data, said


async def _build_comps(router: Any, args: argparse.Namespace) -> tuple[bytes, str]:
    from dexter.workbooks.comps import COMPS_LINES, COMPS_REQUIRED, Peer, comps_workbook
    from dexter.workbooks.history import annual_history
    from dexter.workbooks.xlsx import to_xlsx

    peers = []
    try:
        for query in args.tickers:
            history = await annual_history(router, query, 1, COMPS_LINES, COMPS_REQUIRED)
            price, basis = await _price(router, history.ticker, args.prices.get(history.ticker))
            peers.append(Peer(history, price, basis))
    finally:
        await router.aclose()
    book, values = await asyncio.to_thread(comps_workbook, peers)
    data = await asyncio.to_thread(to_xlsx, book)
    shown = ", ".join(
        f"{v.ticker} EV/EBITDA {v.ev_ebitda:.1f}"
        if isinstance(v.ev_ebitda, float)
        else f"{v.ticker} EV/EBITDA n/m"
        for v in values
    )
    return data, f"comparable companies: {shown}"


async def _price(router: Any, ticker: str, given: float | None) -> tuple[float, str]:
    from dexter.data.errors import DataError

    if given is not None:
        return given, "given with --price"
    try:
        quote = await router.price_snapshot(ticker)
    except DataError as error:
        raise DataError(f"no share price for {ticker} ({error}); pass --price.") from error
    provider = quote.source.provider if quote.source else ""
    return float(quote.price), f"quote {quote.time or ''} ({provider})".strip()


async def _build_dcf(router: Any, args: argparse.Namespace) -> tuple[bytes, str]:
    from dexter.workbooks.dcf import dcf_workbook, default_assumptions
    from dexter.workbooks.history import annual_history
    from dexter.workbooks.xlsx import to_xlsx

    try:
        history = await annual_history(router, args.ticker, args.history)
        price, basis = await _price(router, history.ticker, args.price)
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
