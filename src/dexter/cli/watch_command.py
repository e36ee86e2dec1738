"""`dexter watch …`: filing watches from the terminal. Parsers use the standard library only;
handlers import the watch package and the runtime when they run."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from dexter.cli.open_runtime import open_runtime

if TYPE_CHECKING:
    from dexter.runtime import Runtime
    from dexter.watch.model import Watch
    from dexter.watch.store import WatchStore


def add_watch_parser(commands: Any) -> None:
    watch = commands.add_parser(
        "watch",
        help="alerts on new SEC filings: add, list, show, rm, pause, resume, test",
        description="Watches poll SEC EDGAR (conditional requests, within SEC's 10 requests a "
        "second) from the schedules runner (`dexter daemon` or the gateway) and alert once per "
        "new filing: 8-K items with earnings-release figures, 10-K/10-Q risk factors added or "
        "removed, each with the filing's link and accession.",
    )
    watch.set_defaults(watch_run=run_watch_command)
    actions = watch.add_subparsers(dest="watch_command", metavar="ACTION", required=True)
    add = actions.add_parser("add", help="watch companies for new filings")
    add.add_argument("tickers", nargs="+", metavar="TICKER", help="e.g. NVDA AMD")
    add.add_argument("--forms", help="form types, comma-separated (default 8-K,10-Q,10-K,4)")
    add.add_argument("--items", help="only 8-Ks with these items, e.g. 2.02,5.02")
    add.add_argument(
        "--cluster",
        metavar="N/D",
        help="Form 4: one alert when N insiders report open-market sales within D days "
        "(default 3/7; off to disable)",
    )
    add.add_argument(
        "--deliver",
        metavar="TARGET",
        help="outbox (default), desktop, file[:PATH], telegram:CHAT, slack:CHANNEL, "
        "whatsapp:NUMBER",
    )
    actions.add_parser("list", help="every watch")
    for name, text in (
        ("show", "one watch with the filings it has alerted on"),
        ("rm", "delete a watch"),
        ("pause", "stop alerting (the watch is kept)"),
        ("resume", "alert again (filings made while paused are skipped)"),
    ):
        sub = actions.add_parser(name, help=text)
        sub.add_argument("id", help="watch id, unique prefix, or a ticker only it watches")
    test = actions.add_parser(
        "test", help="print the alert the latest filing of TICKER would give, as if new"
    )
    test.add_argument("ticker")
    test.add_argument("--forms", help="form types (default: the watch's, else 8-K,10-Q,10-K,4)")
    test.add_argument("--count", type=int, default=1, metavar="N", help="latest N filings")


def run_watch_command(args: argparse.Namespace) -> int:
    import asyncio  # not at import time: `dexter --help` imports every command's parser

    from dexter.config import load_settings

    settings = load_settings()

    async def go() -> int:
        async with open_runtime(settings) as runtime:
            return await _run(runtime, args)

    return asyncio.run(go())


async def _run(runtime: Runtime, args: argparse.Namespace) -> int:
    from dexter.cron.store import CronStore
    from dexter.data.sec.provider import SecEdgarProvider
    from dexter.principal import OPERATOR
    from dexter.watch.model import WatchError
    from dexter.watch.service import add_watch
    from dexter.watch.store import WatchStore

    watches = WatchStore(runtime.store)
    action = args.watch_command
    now = datetime.now(UTC)
    sec = runtime.data_router.provider_of_type(SecEdgarProvider)
    if action == "add":
        if sec is None:
            raise WatchError("Watches read SEC EDGAR, which is not configured.")
        # Each ticker is resolved now, so a typo is refused here rather than failing each poll.
        for ticker in args.tickers:
            await sec.company(ticker)
        made = add_watch(
            watches,
            CronStore(runtime.store),
            by=OPERATOR,
            tickers=args.tickers,
            forms=args.forms,
            items=args.items,
            deliver=args.deliver,
            now=now,
            cluster=args.cluster,
        )
        print(f"Added watch {made.describe()}")
        print("Alerts start with the next filing; `dexter daemon` (or the gateway) polls.")
        return 0
    if action == "list":
        listed = watches.all()
        if not listed:
            print("No watches. Add one with `dexter watch add NVDA --forms 8-K,10-Q`.")
        for w in listed:
            print(w.describe())
        return 0
    if action == "test":
        return await _test(watches, sec, args, now)
    found = watches.find(args.id)
    if action == "show":
        _show(watches, found)
    elif action == "rm":
        watches.remove(found.id)
        print(f"Removed watch {found.id} ({' '.join(found.tickers)}).")
    else:
        watches.set_paused(found.id, action == "pause")
        print(f"Watch {found.id} {'paused' if action == 'pause' else 'resumed'}.")
    return 0


def _show(watches: WatchStore, watch: Watch) -> None:
    print(watch.describe())
    for ticker in watch.tickers:
        cursor = watches.cursor(watch.id, ticker)
        print(f"  {ticker}: last seen {cursor or 'not polled yet'}")
    history = watches.history(watch.id)
    if not history:
        print("No filings alerted on yet.")
    for f in history:
        state = f.delivery or f.state
        print(f"  {f.filing_date} {f.ticker} {f.form} {f.accession}: {state}")


async def _test(watches: WatchStore, sec: Any, args: argparse.Namespace, now: datetime) -> int:
    from dexter.watch.model import DEFAULT_FORMS, Watch, WatchError, parse_forms, parse_tickers
    from dexter.watch.poller import Poller

    if sec is None:
        raise WatchError("Watches read SEC EDGAR, which is not configured.")
    (ticker,) = parse_tickers([args.ticker])
    if args.count < 1:
        raise WatchError("--count must be at least 1.")
    mine = [w for w in watches.all() if ticker in w.tickers]
    base = mine[0] if mine else None
    watch = Watch(
        id=base.id if base else "test",
        owner=base.owner if base else "operator",
        tickers=(ticker,),
        forms=parse_forms(args.forms) if args.forms else (base.forms if base else DEFAULT_FORMS),
        items=base.items if base and not args.forms else (),
        target=base.target if base else "outbox",
        created_at=now,
    )
    print(await Poller(watches, sec, now=lambda: now).replay(watch, ticker, count=args.count))
    return 0
