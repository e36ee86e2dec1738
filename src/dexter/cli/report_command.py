"""`dexter report SESSION_OR_RUN`: a report of a stored research answer as Markdown, HTML, PDF
or XLSX, with its sources, the tables the tools fetched and charts of them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

from dexter.cli.argtypes import iso_day
from dexter.cli.open_runtime import open_runtime

EXIT_OK, EXIT_USAGE = 0, 2


def add_report_parser(commands: Any) -> argparse.ArgumentParser:
    report: argparse.ArgumentParser = commands.add_parser(
        "report",
        help="export a research answer: Markdown, HTML, PDF or XLSX with tables and charts",
        description="Write a report of a stored answer: the question, the answer with footnoted "
        "sources, the statement tables the tools fetched and charts of their main lines. "
        "SESSION_OR_RUN is a session id (or prefix: its last answer) or a run id.",
    )
    report.add_argument("ref", metavar="SESSION_OR_RUN", help="see `dexter sessions list`")
    report.add_argument(
        "-f", "--format", choices=("md", "html", "pdf", "xlsx"), help="default: from -o, else md"
    )
    report.add_argument("-o", "--output", metavar="PATH", help="file to write (md: stdout)")
    report.add_argument(
        "--as-of",
        type=iso_day,
        metavar="DATE",
        help="state this as-of date (YYYY-MM-DD) on the title page; a warning if the figures "
        "are later",
    )
    return report


def run_report_command(args: argparse.Namespace) -> int:
    from dexter.config import ConfigError, load_settings

    runtime = open_runtime(load_settings())
    store = runtime.existing_store()
    if store is None:
        raise ConfigError("no research has been recorded yet; ask something first (`dexter ask`).")
    try:
        return export(runtime.settings.home, store, args.ref, args.output, args.format, args.as_of)
    finally:
        runtime.close_local()


def export(
    home: Path,
    store: Any,
    ref: str,
    output: str | None,
    fmt: str | None,
    as_of: str | None = None,
    *,
    how_to_ask: str = "pass --format",
    err: Console | None = None,
) -> int:
    """Build and write (or print) one report; shared by `dexter report` and `ask --output`.
    Writing a PDF takes seconds: on a terminal a spinner on stderr says so meanwhile."""
    from dexter.cli.progress import Waiting
    from dexter.reports.build import report_for
    from dexter.reports.render import charts_left_out, format_for, to_markdown

    path = Path(output).expanduser() if output else None
    chosen = format_for(path, fmt, how_to_ask=how_to_ask)
    report = report_for(store, home, ref, as_of=as_of)
    if report.figures_after_as_of:
        ends = [end for table in report.tables for end in table.period_ends]
        print(
            f"dexter: warning: the report states as of {as_of}, but its figures are later "
            f"(periods to {max(ends)}, filed up to {report.latest_filing or 'an unknown day'}); "
            "the title page says so next to the date.",
            file=sys.stderr,
        )
    if path is None and chosen == "md":
        sys.stdout.write(to_markdown(report))
        return EXIT_OK
    if err is None:
        from rich.console import Console

        err = Console(stderr=True, highlight=False)
    with Waiting(err) as waiting:
        waiting.start(f"writing {path or f'the {chosen} report'}")
        written = write_export(report, path, chosen)
    print(wrote(written, charts_left_out(report, chosen)), file=sys.stderr)
    return EXIT_OK


def write_export(report: Any, path: Path | None, fmt: str) -> list[Path]:
    """Write `report` as `fmt` to `path` (default: dexter-report-RUN.FMT here); the files
    written, the report first. Blocking: callers on an event loop run it in a thread."""
    from dexter.config import ConfigError
    from dexter.reports.render import write_report

    if path is None:
        path = Path(f"dexter-report-{report.run_id[-8:]}.{fmt}")
    try:
        return write_report(report, path, fmt)  # type: ignore[arg-type]
    except OSError as error:
        raise ConfigError(f"could not write {path}: {error.strerror or error}") from None


def wrote(written: list[Path], left_out: str | None = None) -> str:
    """What was written; `left_out` (see `render.charts_left_out`) follows on its own line."""
    path = written[0]
    size = path.stat().st_size
    extra = f" and {len(written) - 1} chart image(s)" if len(written) > 1 else ""
    note = f"\n{left_out}" if left_out else ""
    return f"Wrote {path} ({size / 1024:,.1f} KB){extra}.{note}"
