"""`dexter worker` (runs what the team's front doors enqueue) and `dexter status` (the queue)."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_worker_parsers(commands: Any) -> None:
    def lazy(function: str) -> Any:
        def run(args: argparse.Namespace) -> int:
            return int(globals()[function](args))

        return run

    worker = commands.add_parser(
        "worker",
        help="run chat turns, scheduled jobs and web questions from the team's queue (team mode)",
        description="Takes runs that `dexter gateway run`, `dexter daemon` and `dexter web` "
        "enqueue on the team's Postgres database (DEXTER_DATABASE_URL) and runs them; start "
        "as many as you like, on any machine. One chat's messages are answered in order; "
        "different chats in parallel. A run whose worker dies is run again by another "
        "worker, and its answer is sent once. SIGTERM lets running runs finish first.",
    )
    worker.add_argument(
        "--concurrency",
        type=_positive,
        default=None,
        metavar="N",
        help="runs at once in this worker (default 4)",
    )
    worker.add_argument(
        "--only",
        choices=("chat", "schedule", "web"),
        help="take only chat turns, scheduled jobs or web questions (default: all)",
    )
    worker.set_defaults(command_run=lazy("run_worker_command"))

    status = commands.add_parser(
        "status",
        help="the team's queue: runs waiting, running and failed, workers alive",
    )
    status.add_argument("--json", action="store_true", help="print JSON")
    status.set_defaults(command_run=lazy("run_status_command"))


def _positive(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {raw!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _log(line: str) -> None:
    from datetime import datetime

    stamp = datetime.now().astimezone().strftime("%H:%M:%S")
    print(f"[worker {stamp}] {line}", file=sys.stderr, flush=True)


def run_worker_command(args: argparse.Namespace) -> int:
    import asyncio
    import logging

    from dexter.config import load_settings
    from dexter.work.engine import queue_url

    settings = load_settings()
    url = queue_url(settings)  # a clear error without a Postgres database
    from dexter.gateway.service import console_log

    # Each run's start and end, and anything that goes wrong, as it happens.
    console = console_log(sys.stderr)
    for name in ("dexter.work", "dexter.gateway"):
        logging.getLogger(name).addHandler(console)
    return asyncio.run(_work(settings, url, args))


async def _work(settings: Any, url: str, args: argparse.Namespace) -> int:
    import asyncio

    from dexter.cli.open_runtime import open_runtime
    from dexter.cli.signals import StopSignals
    from dexter.config import ConfigError
    from dexter.cron.owners import principal_for_job
    from dexter.cron.queued import schedule_handler
    from dexter.gateway.config import ConfigSource, config_path
    from dexter.gateway.principals import job_principals
    from dexter.gateway.queued import chat_handler
    from dexter.gateway.runs import RuntimeRunner
    from dexter.store.database_url import display_url
    from dexter.web.queued import web_handler
    from dexter.work.engine import PgQueue
    from dexter.work.queue import CHAT, DEFAULT_CONCURRENCY, KINDS, SCHEDULE, WEB, Limits

    signals = StopSignals(asyncio.Event())
    signals.install()
    limits = Limits(
        concurrency=args.concurrency or DEFAULT_CONCURRENCY,
        kinds=(args.only,) if args.only else KINDS,
    )
    pool = limits.concurrency + 2  # its runs, fetching and heartbeats, without waiting
    async with PgQueue(url, max_connections=pool) as queue, open_runtime(settings) as runtime:
        gateway = ConfigSource(config_path(runtime.settings.home))
        handlers = {
            CHAT: chat_handler(runtime, url, gateway.get),
            SCHEDULE: schedule_handler(
                runtime,
                url,
                # A chat user's job runs as them, with what gateway.json grants them.
                job_principals(lambda owner: principal_for_job(runtime.store, owner), gateway.get),
            ),
            WEB: web_handler(runtime, url),
        }
        # The first run's one-time costs (imports, skills, tool schemas) are paid before any
        # run waits for them.
        warm = RuntimeRunner(runtime, model=gateway.get().model)
        await warm.prepare()
        warm.close()
        try:
            # The model client's modules too: imported inside a run, they would hold the
            # event loop (and the heartbeat) for a second.
            await asyncio.to_thread(runtime.client, gateway.get().model)
        except ConfigError:
            pass  # each run reports it
        _log(
            f"started on {display_url(url)}: {', '.join(limits.kinds)}, "
            f"{limits.concurrency} at once (SIGTERM or Ctrl+C stops)"
        )
        await queue.work(handlers, limits, signals.stop)
        _log("stopped")
    return signals.exit_status


def run_status_command(args: argparse.Namespace) -> int:
    import json

    from dexter.config import load_settings
    from dexter.store.database_url import database_target, display_url

    settings = load_settings()
    target = database_target(settings)
    if not target.is_postgres or target.url is None:
        if args.json:
            print(json.dumps({"mode": "single-user", "queue": None}))
        else:
            print(
                "Single-user mode (SQLite): no queue; `dexter gateway run` and `dexter daemon` "
                "run everything themselves. Set DEXTER_DATABASE_URL for team mode."
            )
        return 0
    from dexter.store.pg import connect
    from dexter.work.status import read_status

    with connect(target.url) as conn:
        status = read_status(conn)
    if args.json:
        print(json.dumps({"mode": "team", "database": display_url(target.url)} | status.to_dict()))
        return 0
    print(f"Team mode: {display_url(target.url)}")
    if not status.installed:
        print("The queue is not set up yet: it is created when a worker or front door starts.")
        return 0
    print(f"{'queue':<10} {'waiting':>8} {'running':>8} {'failed':>8}")
    for q in status.queues:
        print(f"{q.queue:<10} {q.waiting:>8} {q.running:>8} {q.failed:>8}")
    silent = (
        f", {status.workers_silent} silent (their runs go back)" if status.workers_silent else ""
    )
    limit = f" (at most {status.team_limit} runs at once)" if status.team_limit else ""
    print(f"workers alive: {status.workers_alive}{silent}{limit}")
    print(f"replies waiting for the gateway: {status.replies_unsent}")
    return 0
