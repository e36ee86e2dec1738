"""`/export [md|html|pdf|xlsx] [PATH]`: the report of the session's latest answered turn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

_FORMAT_WORDS = {"md", "markdown", "html", "htm", "pdf", "xlsx", "excel"}


def parse_export(arg: str) -> tuple[str | None, Path | None]:
    """(format, path) from the command's argument; either may be missing. A first word that
    names a format is the format; the rest is the path (which may contain spaces)."""
    text = arg.strip()
    head, _, rest = text.partition(" ")
    if head.lower().lstrip(".") in _FORMAT_WORDS:
        fmt: str | None = head
        text = rest.strip()
    else:
        fmt = None
    return fmt, Path(text).expanduser() if text else None


def export_session(store: Any, home: Path, session_id: str, arg: str) -> str:
    """Write the report and say what was written. Blocking (renders charts, PDF): the app runs
    it in a worker thread. Raises ConfigError with a message for the user."""
    from dexter.cli.report_command import write_export, wrote
    from dexter.reports.build import report_for
    from dexter.reports.render import charts_left_out, format_for

    fmt, path = parse_export(arg)
    chosen = format_for(
        path,
        fmt if fmt is not None or path is not None else "html",
        how_to_ask="put the format first: /export pdf PATH",
    )
    report = report_for(store, home, session_id)
    return wrote(write_export(report, path, chosen), charts_left_out(report, chosen))
