"""`dexter cron …`, `dexter heartbeat …` and `dexter daemon`: schedules from the terminal.

Parsers use the standard library only; handlers import the cron package, rich and the runtime
when they run, so `dexter --help` stays fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from dexter.cli.open_runtime import open_runtime

if TYPE_CHECKING:
    from dexter.config import Settings
    from dexter.cron.model import DamagedJob, Job
    from dexter.cron.store import CronStore

_SCHEDULE_HELP = "exactly one of --every, --at, --cron"


def _schedule_flags(parser: argparse.ArgumentParser, *, required_message: bool) -> None:
    parser.add_argument("--every", metavar="INTERVAL", help="repeat every 30m, 1h, 1d … (min 1m)")
    parser.add_argument("--at", metavar="TIME", help="once at 2026-12-02T09:00 (or +2h)")
    parser.add_argument("--cron", metavar="EXPR", help='cron expression, e.g. "35 9 * * 1-5"')
    parser.add_argument("--tz", metavar="ZONE", help="IANA zone for --at, --cron and --active")
    parser.add_argument(
        "--message", required=required_message, help="what the agent should research each run"
    )
    parser.add_argument("--active", metavar="HH:MM-HH:MM", help="only run inside these hours")
    parser.add_argument("--days", metavar="DAYS", help="days for --active: mon-fri, sat-sun …")
    parser.add_argument(
        "--deliver",
        metavar="TARGET",
        help="outbox (default), desktop, file[:PATH] (inside DEXTER_HOME/alerts), telegram:CHAT, "
        "slack:CHANNEL, whatsapp:NUMBER",
    )
    parser.add_argument("-m", "--model", dest="job_model", help="provider:model for this job")
    parser.add_argument("--description", help="a note for yourself")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--once",
        dest="fulfillment",
        action="store_const",
        const="once",
        help="stop after the first alert",
    )
    mode.add_argument(
        "--ask",
        dest="fulfillment",
        action="store_const",
        const="ask",
        help="ask whether to keep monitoring when it alerts",
    )
    mode.add_argument(
        "--keep",
        dest="fulfillment",
        action="store_const",
        const="keep",
        help="keep running (default)",
    )


def add_cron_parser(commands: Any) -> None:
    """Register `cron`, `heartbeat` and `daemon` on the top-level subparsers."""
    cron = commands.add_parser(
        "cron",
        help="scheduled research jobs: add, list, show, edit, enable, disable, rm, run, logs",
        description="Jobs run unattended (by `dexter daemon` or the gateway) and deliver an "
        "alert only when something happened. A schedule is " + _SCHEDULE_HELP + ".",
    )
    cron.set_defaults(cron_run=_lazy("run_cron_command"))
    actions = cron.add_subparsers(dest="cron_command", metavar="ACTION", required=True)
    add = actions.add_parser("add", help="schedule a new job")
    add.add_argument("name", help='a short name, e.g. "NVDA 10-Q watch"')
    _schedule_flags(add, required_message=True)
    listing = actions.add_parser("list", help="every job with its owner, next run and last status")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.add_argument(
        "--principal",
        metavar="ID",
        help="only the jobs of this principal (operator, telegram:222 …; see `dexter principals`)",
    )
    show = actions.add_parser("show", help="one job in full, with its recent runs")
    show.add_argument("id", help="job id, unique prefix, or name")
    show.add_argument("--json", action="store_true", help="print JSON")
    edit = actions.add_parser("edit", help="change a job (only the flags you give)")
    edit.add_argument("id", help="job id, unique prefix, or name")
    edit.add_argument("--name", help="new name")
    _schedule_flags(edit, required_message=False)
    edit.add_argument("--always", action="store_true", help="drop the active hours")
    for name, text in (("enable", "resume a job"), ("disable", "pause a job"), ("rm", "delete")):
        sub = actions.add_parser(name, help=text)
        sub.add_argument("id", help="job id, unique prefix, or name")
    run = actions.add_parser("run", help="run a job now, here, and print what it found")
    run.add_argument("id", help="job id, unique prefix, or name")
    logs = actions.add_parser("logs", help="alerts in the outbox and recent runs")
    logs.add_argument("id", nargs="?", help="only this job")
    logs.add_argument("--limit", type=int, default=10, metavar="N", help="items (default 10)")
    logs.add_argument("--json", action="store_true", help="print JSON")

    heartbeat = commands.add_parser(
        "heartbeat",
        help="the periodic checklist review: show, edit, enable, disable",
        description="The heartbeat reviews HEARTBEAT.md in the Dexter home (a default checklist "
        "when the file is absent; nothing runs while it is empty) and alerts only when an item "
        "is noteworthy.",
    )
    heartbeat.set_defaults(cron_run=_lazy("run_heartbeat_command"))
    beats = heartbeat.add_subparsers(dest="heartbeat_command", metavar="ACTION", required=True)
    beats.add_parser("show", help="the checklist and the heartbeat's schedule")
    beats.add_parser("edit", help="open HEARTBEAT.md in $EDITOR (created from the default)")
    enable = beats.add_parser("enable", help="schedule the heartbeat")
    enable.add_argument("--every", default="30m", metavar="INTERVAL", help="default 30m")
    enable.add_argument("--active", metavar="HH:MM-HH:MM", help="e.g. 09:30-16:00")
    enable.add_argument("--tz", metavar="ZONE", help="zone for --active (default: yours)")
    enable.add_argument("--days", metavar="DAYS", help="e.g. mon-fri")
    enable.add_argument("--deliver", metavar="TARGET", help="where alerts go (default outbox)")
    enable.add_argument("-m", "--model", dest="job_model", help="provider:model")
    beats.add_parser("disable", help="stop the heartbeat")

    daemon = commands.add_parser(
        "daemon",
        help="run scheduled jobs in the foreground (Ctrl+C stops)",
        description="Runs due jobs and delivers alerts until stopped with Ctrl+C or SIGTERM. "
        "Several daemons (or a daemon and the gateway) may share one Dexter home: a lease lets "
        "only one run each job.",
    )
    daemon.set_defaults(cron_run=_lazy("run_daemon_command"))
    daemon.add_argument("--once", action="store_true", help="run what is due now, then exit")


def _lazy(function: str) -> Any:
    def run(args: argparse.Namespace) -> int:
        return int(globals()[function](args))

    return run


# --------------------------------------------------------------------------- helpers


def _settings() -> Settings:
    from dexter.config import load_settings

    return load_settings()


def _store(settings: Settings, *, create: bool) -> CronStore | None:
    from dexter.cron.store import CronStore

    runtime = open_runtime(settings)
    store = runtime.store if create else runtime.existing_store()
    return CronStore(store) if store is not None else None


def _now() -> datetime:
    return datetime.now(UTC)


def _job_zone(job: Job) -> str | None:
    tz = getattr(job.schedule, "tz", None)
    if tz is None and job.active is not None:
        tz = job.active.tz
    return tz


def _when(moment: datetime | None, tz: str | None) -> str:
    """A run time as one unbreakable piece, `12-02 09:35 EST`, with the year when it is not
    this year's (`2027-01-05 09:35 EST`); in zone `tz`, or the user's own when None."""
    from dexter.cron.schedule import ScheduleError, zone

    if moment is None:
        return "-"
    try:
        local = moment.astimezone(zone(tz)) if tz else moment.astimezone()
    except ScheduleError:  # a stored zone this system no longer has: say it in UTC
        local = moment.astimezone(UTC)
    this_year = _now().astimezone(local.tzinfo).year
    return local.strftime("%m-%d %H:%M %Z" if local.year == this_year else "%Y-%m-%d %H:%M %Z")


def _next_run(job: Job) -> str:
    """When the job runs next, in its own zone and (when that reads differently) yours."""
    if not job.enabled:
        return "disabled"
    moment = job.state.next_run_at
    in_zone = _when(moment, _job_zone(job))
    yours = _when(moment, None)
    # The same wall-clock time under another name (GMT and UTC in winter) is said once.
    same = yours.rsplit(" ", 1)[0] == in_zone.rsplit(" ", 1)[0]
    return in_zone if same else f"{in_zone} ({yours} your time)"


def _check_zone(tz: str | None) -> None:
    """A --tz the user gave is checked even where it is not used (`--every 1h --tz Mars/…`)."""
    from dexter.cron.schedule import zone

    if tz:
        zone(tz)


def _job_dict(job: Job) -> dict[str, Any]:
    from dexter.cron.schedule import to_dict

    state = job.state

    def iso(moment: datetime | None) -> str | None:
        return moment.isoformat() if moment else None

    return {
        "id": job.id,
        "name": job.name,
        "owner": job.owner,
        "kind": job.kind,
        "enabled": job.enabled,
        "schedule": to_dict(job.schedule),
        "message": job.message,
        "model": job.model,
        "fulfillment": job.fulfillment,
        "active": job.active.to_dict() if job.active else None,
        "target": job.target,
        "next_run_at": iso(state.next_run_at),
        "last_run_at": iso(state.last_run_at),
        "last_status": state.last_status,
        "last_error": state.last_error,
        "consecutive_errors": state.consecutive_errors,
    }


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False))


def _schedule_from(args: argparse.Namespace, tz: str, now: datetime) -> Any:
    from dexter.cron.jobs import build_schedule

    return build_schedule(every=args.every, at=args.at, cron=args.cron, tz=tz, now=now)


# --------------------------------------------------------------------------- cron


def run_cron_command(args: argparse.Namespace) -> int:
    from dexter.cron import jobs as job_api
    from dexter.cron.schedule import describe, local_zone_name
    from dexter.cron.targets import target_for
    from dexter.principal import OPERATOR

    settings = _settings()
    action = args.cron_command
    now = _now()
    if action in ("list", "show", "logs"):
        cron = _store(settings, create=False)
        if cron is None:
            if getattr(args, "json", False):
                _print_json([])
            else:
                print(
                    "No scheduled jobs. Add one with `dexter cron add NAME --every 1h --message …`."
                )
            return 0 if action == "list" else (0 if action == "logs" and not args.id else 1)
        if action == "list":
            return _list(cron, as_json=args.json, owner=args.principal)
        if action == "show":
            return _show(cron, cron.find_entry(args.id), as_json=args.json)
        return _logs(cron, args.id, limit=args.limit, as_json=args.json)

    _check_zone(getattr(args, "tz", None))
    cron = _store(settings, create=True)
    assert cron is not None
    tz = args.tz if getattr(args, "tz", None) else local_zone_name()
    # The terminal is the operator's: it acts on every principal's jobs, and a new job is theirs.
    if action == "add":
        job = job_api.create_job(
            cron,
            name=args.name,
            message=args.message,
            schedule=_schedule_from(args, tz, now),
            now=now,
            fulfillment=args.fulfillment,
            active=job_api.build_active(args.active, tz, args.days),
            target=target_for(args.deliver, by=OPERATOR, home=settings.home),
            model=args.job_model,
            description=args.description or "",
        )
        print(f"Added {job.name} ({job.id}): {describe(job.schedule)}, alerts to {job.target}.")
        print(f"Next run: {_next_run(job)}.")
        _warn_target(job.target)
        return 0
    if action == "rm":
        entry = cron.find_entry(args.id)
        cron.remove(entry.id)
        print(f"Removed {entry.name} ({entry.id}).")
        return 0
    job = cron.find(args.id)
    if action == "edit":
        changes: dict[str, object] = {}
        if args.name:
            changes["name"] = args.name
        if args.message is not None:
            changes["message"] = args.message
        if args.every or args.at or args.cron:
            changes["schedule"] = _schedule_from(args, tz, now)
        if args.always:
            changes["active"] = None
        elif args.active:
            changes["active"] = job_api.build_active(args.active, tz, args.days)
        if args.deliver is not None:
            changes["target"] = target_for(
                args.deliver, by=OPERATOR, owner=job.owner, home=settings.home
            )
        if args.fulfillment:
            changes["fulfillment"] = args.fulfillment
        if args.job_model is not None:
            changes["model"] = args.job_model.strip() or None
        if args.description is not None:
            changes["description"] = args.description
        if not changes:
            print("dexter: nothing to change; give the flags to set (see --help).", file=sys.stderr)
            return 2
        job = job_api.update_job(cron, job, now=now, **changes)
        print(f"Updated {job.name} ({job.id}). Next run: {_next_run(job)}.")
        return 0
    if action == "enable":
        job = job_api.update_job(cron, job, now=now, enabled=True)
        print(f"Enabled {job.name}. Next run: {_next_run(job)}.")
        return 0
    if action == "disable":
        cron.set_enabled(job, False, next_run_at=job.state.next_run_at)
        print(f"Disabled {job.name} ({job.id}).")
        return 0
    if action == "run":
        return _run_now(settings, job)
    raise AssertionError(action)


def _warn_target(target: str) -> None:
    from dexter.cron.delivery import target_scheme
    from dexter.cron.local import DesktopDeliverer

    scheme = target_scheme(target)
    if scheme == "desktop" and not DesktopDeliverer.available():
        print(
            "Note: notify-send is not installed, so desktop notifications will fail (alerts "
            "stay in the outbox). On Debian/Ubuntu: apt install libnotify-bin.",
            file=sys.stderr,
        )
    if scheme in ("telegram", "slack", "whatsapp"):
        print(
            f"Note: {scheme} alerts are sent while `dexter gateway run` is running; until then "
            "they wait in the outbox.",
            file=sys.stderr,
        )


def _list(cron: CronStore, *, as_json: bool, owner: str | None = None) -> int:
    from rich.console import Console
    from rich.text import Text

    from dexter.cli.tables import Col, Grid, render
    from dexter.cron.model import DamagedJob
    from dexter.principal import OPERATOR_ID

    jobs = cron.entries(owner=owner.strip() if owner else None)
    if as_json:
        _print_json([_entry_dict(j) for j in jobs])
        return 0
    if not jobs:
        if owner:
            print(f"No scheduled jobs of {owner}.")
            return 0
        print("No scheduled jobs. Add one with `dexter cron add NAME --every 1h --message …`.")
        return 0
    # Whose job it is matters once someone besides the operator has one.
    owners = any(job.owner != OPERATOR_ID for job in jobs)
    # Ids, owners and times are typed back or read as one piece: never split (`whole`). A job
    # in another zone shows its next run there, with yours under it.
    grid = Grid(
        title="",
        columns=[
            Col("ID", key=True, whole=True, style="cyan"),
            Col("Name", min_width=10),
            *((Col("Owner", whole=True),) if owners else ()),
            Col("Schedule", min_width=10),
            Col("Next run", whole=True),
            Col("Last", whole=True, optional=True),
        ],
    )
    damaged: list[DamagedJob] = []
    for job in jobs:
        who = (job.owner,) if owners else ()
        if isinstance(job, DamagedJob):
            grid.add_row(job.id, job.name, *who, "damaged", "-", "-")
            damaged.append(job)
            continue
        grid.add_row(
            job.id,
            job.name,
            *who,
            _short_schedule(job),
            _next_run(job).replace(" (", "\n(", 1).replace(" your time)", ")"),
            _last(job),
        )
    if any("\n(" in str(cells[-2]) for cells, _ in grid.rows):
        grid.caption = "Next run: in the job's zone, with your time (in brackets) where it differs."
    console = Console(soft_wrap=False)
    render(console, grid)
    # What is wrong with a damaged job is too long for a cell: said once, below the table.
    for job in damaged:
        console.print(
            Text(
                f"\n{job.id} is damaged: {job.problem}. It cannot run; remove it with "
                f"`dexter cron rm {job.id}` and add it again."
            )
        )
    return 0


def _last(job: Job) -> str:
    """The last run's status, with how many failed in a row when more than one did."""
    status = job.state.last_status or "never"
    errors = job.state.consecutive_errors
    return f"{status} ×{errors}" if errors > 1 else status


def _short_schedule(job: Job) -> str:
    """The schedule for a table cell; its time and zone are in the next-run column."""
    from dexter.cron.schedule import At, describe

    schedule = job.schedule
    if isinstance(schedule, At):
        return "once"
    return f"cron {schedule.expr}" if schedule.kind == "cron" else describe(schedule)


def _entry_dict(entry: Job | DamagedJob) -> dict[str, Any]:
    from dexter.cron.model import DamagedJob

    if isinstance(entry, DamagedJob):
        return {"id": entry.id, "name": entry.name, "damaged": entry.problem}
    return _job_dict(entry)


def _show(cron: CronStore, job: Job | DamagedJob, *, as_json: bool) -> int:
    from dexter.cron.model import DamagedJob

    if isinstance(job, DamagedJob):
        if as_json:
            _print_json(_entry_dict(job))
        else:
            print(f"{job.name} ({job.id}): damaged: {job.problem}")
            print(f"It cannot run. Remove it with `dexter cron rm {job.id}` and add it again.")
        return 0
    runs = cron.runs(job.id, limit=10)
    if as_json:
        data = _job_dict(job)
        data["runs"] = [
            {
                "started_at": r.started_at.isoformat(),
                "status": r.status,
                "reason": r.reason,
                "error": r.error,
                "duration_ms": r.duration_ms,
            }
            for r in runs
        ]
        _print_json(data)
        return 0
    print(_job_text(job, runs))
    return 0


_FULFILLMENT_TEXT = {
    "keep": "keeps running after an alert",
    "once": "stops after its first alert",
    "ask": "asks whether to keep monitoring when it alerts",
}


def _job_text(job: Job, runs: list[Any]) -> str:
    """`cron show`: one job as labelled lines, each value wrapped under itself."""
    import shutil

    from dexter.cli.tables import labelled
    from dexter.cron.schedule import describe
    from dexter.principal import OPERATOR_ID

    state = job.state
    fields: list[tuple[str, str]] = []
    if job.owner != OPERATOR_ID:
        fields.append(("Owner", job.owner))
    fields.append(("Schedule", describe(job.schedule)))
    if job.active:
        fields.append(("Active hours", job.active.describe()))
    fields.append(("Next run", _next_run(job) if state.next_run_at or not job.enabled else "none"))
    last = "never"
    if state.last_run_at is not None:
        last = f"{_when(state.last_run_at, None)}, {state.last_status or 'unknown'}"
    fields.append(("Last run", last))
    if state.consecutive_errors:
        fields.append(
            ("Errors", f"{state.consecutive_errors} in a row; last: {state.last_error or '?'}")
        )
    fields.append(("Alerts", f"to {job.target}; {_FULFILLMENT_TEXT[job.fulfillment]}"))
    if job.model:
        fields.append(("Model", job.model))
    if job.description:
        fields.append(("Note", job.description))
    if job.kind == "job":
        fields.append(("Message", job.message))
    width = shutil.get_terminal_size().columns
    head = f"{job.name} ({job.id}){'' if job.enabled else ', disabled'}"
    lines = [head, labelled([(f"  {k}", v) for k, v in fields], width)]
    if runs:
        lines.append("\nRecent runs:")
        for run in runs:
            detail = run.error or run.reason
            lines.append(f"  {_when(run.started_at, None)}  {run.status:<10} {detail}".rstrip())
    return "\n".join(lines)


def _logs(cron: CronStore, ref: str | None, *, limit: int, as_json: bool) -> int:
    from dexter.principal import OPERATOR_ID

    job = cron.find_entry(ref) if ref else None
    items = cron.outbox(job.id if job else None, limit=limit)
    runs = cron.runs(job.id, limit=limit) if job else []
    # Whose job each alert came from, so another principal's alerts are told apart.
    owners = {j.id: j.owner for j in ([job] if job else cron.entries())}
    if as_json:
        _print_json(
            {
                "alerts": [
                    {
                        "id": i.id,
                        "job_id": i.job_id,
                        "job_name": i.job_name,
                        "owner": owners.get(i.job_id),
                        "created_at": i.created_at.isoformat(),
                        "target": i.target,
                        "status": i.status,
                        "attempts": i.attempts,
                        "last_error": i.last_error,
                        "text": i.text,
                    }
                    for i in items
                ],
                "runs": [
                    {
                        "started_at": r.started_at.isoformat(),
                        "status": r.status,
                        "reason": r.reason,
                        "error": r.error,
                    }
                    for r in runs
                ],
            }
        )
    else:
        if not items:
            print("No alerts yet." if job is None else f"No alerts from {job.name} yet.")
        for item in items:
            state: str = item.status
            if item.status != "delivered" and item.last_error:
                state += f" after {item.attempts} attempt(s): {item.last_error}"
            owner = owners.get(item.job_id, OPERATOR_ID)
            mark = "" if owner == OPERATOR_ID else f" (for {owner})"
            print(
                f"#{item.id} {_when(item.created_at, None)}  {item.job_name}{mark} -> "
                f"{item.target} [{state}]"
            )
            for line in item.text.strip().splitlines():
                print(f"    {line}")
            print()
        if runs:
            print(f"Recent runs of {job.name if job else ''}:")
            for run in runs:
                detail = run.error or run.reason
                print(f"  {_when(run.started_at, None)}  {run.status:<10} {detail}".rstrip())
    cron.mark_seen([i.id for i in items])
    return 0


def _run_now(settings: Settings, job: Job) -> int:
    import asyncio

    from dexter.cron.service import make_runner

    async def go() -> int:
        async with open_runtime(settings) as runtime:
            runner = make_runner(runtime, log=_stderr_log)
            result = await runner.run_now(job)
            if result is None:
                print("dexter: another runner is running this job right now.", file=sys.stderr)
                return 1
            if result.status == "ok" and result.alert_id is not None:
                item = next(
                    i for i in runner.cron.outbox(job.id, limit=5) if i.id == result.alert_id
                )
                print(item.text)
                return 0
            if result.status == "error":
                print(f"dexter: {job.name} failed: {result.error}", file=sys.stderr)
                return 1
            print(f"{job.name}: nothing to report ({result.status}: {result.reason}).")
            return 0

    return asyncio.run(go())


def _stderr_log(line: str) -> None:
    stamp = datetime.now().astimezone().strftime("%H:%M:%S")
    print(f"[cron {stamp}] {line}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- heartbeat


def run_heartbeat_command(args: argparse.Namespace) -> int:
    import os
    import shlex
    import subprocess

    from dexter.cron import jobs as job_api
    from dexter.cron.prompts import (
        DEFAULT_CHECKLIST,
        HEARTBEAT_FILE,
        checklist_is_empty,
        read_heartbeat,
    )
    from dexter.cron.schedule import describe, local_zone_name

    settings = _settings()
    path = settings.home / HEARTBEAT_FILE
    action = args.heartbeat_command
    if action == "show":
        text = read_heartbeat(settings.home)
        if text is not None:
            print(f"{path}:\n\n{text.rstrip()}\n")
            if checklist_is_empty(text):
                print("The checklist is empty, so heartbeat runs are skipped.")
        else:
            print(f"No {path}; the default checklist is used:\n\n{DEFAULT_CHECKLIST}")
        cron = _store(settings, create=False)
        job = cron.heartbeat() if cron else None
        if job is None or not job.enabled:
            print("Heartbeat: off. Start it with `dexter heartbeat enable --every 30m`.")
        else:
            active = f", {job.active.describe()}" if job.active else ""
            print(
                f"Heartbeat: {describe(job.schedule)}{active}, alerts to {job.target}; next run "
                f"{_when(job.state.next_run_at, None)}."
            )
        return 0
    if action == "edit":
        if not path.exists():
            from dexter.atomicfile import PRIVATE, private_dir, write_text

            private_dir(path.parent)
            write_text(path, "# Heartbeat checklist\n\n" + DEFAULT_CHECKLIST, mode=PRIVATE)
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        try:
            return subprocess.call([*shlex.split(editor), str(path)])
        except OSError as exc:
            print(
                f"dexter: cannot start the editor {editor!r} ({exc}); edit {path} directly or "
                "set EDITOR.",
                file=sys.stderr,
            )
            return 1
    cron = _store(settings, create=True)
    assert cron is not None
    if action == "disable":
        job = cron.heartbeat()
        if job is None:
            print("The heartbeat is not set up; nothing to disable.")
            return 0
        cron.set_enabled(job, False, next_run_at=job.state.next_run_at)
        print("Heartbeat disabled.")
        return 0
    _check_zone(args.tz)
    tz = args.tz or local_zone_name()
    job = job_api.set_heartbeat(
        cron,
        every=args.every,
        now=_now(),
        active=job_api.build_active(args.active, tz, args.days),
        target=args.deliver,
        model=args.job_model,
        home=settings.home,
    )
    print(
        f"Heartbeat on: {describe(job.schedule)}"
        + (f", {job.active.describe()}" if job.active else "")
        + f". Next run {_when(job.state.next_run_at, None)}. Runs need `dexter daemon` (or the "
        "gateway) running."
    )
    return 0


# --------------------------------------------------------------------------- daemon


def run_daemon_command(args: argparse.Namespace) -> int:
    import asyncio
    import contextlib

    from dexter.cli.signals import StopSignals
    from dexter.cron.service import make_runner

    settings = _settings()

    async def go() -> int:
        from dexter.work.team import team_queue

        queue = team_queue(settings)
        async with open_runtime(settings) as runtime, contextlib.AsyncExitStack() as stack:
            if queue is not None:
                # Team mode: jobs' agent runs go to `dexter worker`s.
                await stack.enter_async_context(queue)
            runner = make_runner(runtime, log=_stderr_log, queue=queue)
            if args.once:
                results = await runner.run_due()
                failed = sum(1 for r in results if r.status == "error")
                _stderr_log(f"ran {len(results)} job(s), {failed} failed")
                return 1 if failed else 0
            signals = StopSignals(asyncio.Event())
            signals.install()
            _stderr_log(f"daemon started for {settings.home} (Ctrl+C stops)")
            await runner.run_forever(signals.stop)
            return signals.exit_status

    return asyncio.run(go())
