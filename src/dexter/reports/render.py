"""Render a `Report` as Markdown, HTML, PDF or XLSX.

HTML comes from a Jinja2 template with its own stylesheet and inline SVG charts; PDF is that
HTML laid out by WeasyPrint (pure Python over Debian's Pango, no browser), with page numbers;
XLSX has a sheet per table with real numbers, units in the headers, and a sources sheet. The
heavy libraries are imported only here, when a report is made (the `reports` extra).
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from dexter.config import ConfigError
from dexter.reports.charts import Chart, render_image, table_charts
from dexter.reports.model import Report, Table
from dexter.tools.finance.format import format_cell

Format = Literal["md", "html", "pdf", "xlsx"]
FORMATS: tuple[Format, ...] = ("md", "html", "pdf", "xlsx")
_SUFFIXES = {".md": "md", ".markdown": "md", ".html": "html", ".htm": "html", ".pdf": "pdf"}
_SUFFIXES[".xlsx"] = "xlsx"
_UNIT_NOTES = {
    "money": "millions",
    "shares": "millions",
    "per_share": "per share",
    "per_share_computed": "per share",
    "percent": "%",
    "multiple": "×",
    "days": "days",
}
_CITATION = re.compile(r"\[(S\d+(?:\s*[,;]\s*S\d+)*)\]")


def format_for(path: Path | None, requested: str | None) -> Format:
    """The format asked for, else the one the file name implies, else Markdown."""
    if requested:
        value = requested.strip().lower().lstrip(".")
        value = {"markdown": "md", "htm": "html", "excel": "xlsx"}.get(value, value)
        if value not in FORMATS:
            raise ConfigError(
                f"unknown report format {requested!r}; use one of {', '.join(FORMATS)}."
            )
        return value
    if path is not None:
        found = _SUFFIXES.get(path.suffix.lower())
        if found is None:
            raise ConfigError(
                f"cannot tell the format from {path.name!r}; name it .md, .html, .pdf or .xlsx, "
                "or pass --format."
            )
        return found  # type: ignore[return-value]
    return "md"


def _need(module: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise ConfigError(
            f"this report format needs the optional package {module.split('.')[0]!r}: run "
            "`uv sync --extra reports`."
        ) from None


def _meta(report: Report) -> list[tuple[str, str]]:
    rows = [
        ("Model", report.model),
        ("Asked", _when(report.created_at)),
        ("Session", report.session_id),
        ("Run", report.run_id),
    ]
    if report.as_of:
        rows.insert(2, ("As of", report.as_of))
    ends = [end for table in report.tables for end in table.period_ends if end]
    if ends:
        # A reader needs to know how fresh the figures are, not only when the question was asked.
        rows.insert(2, ("Figures to", max(ends)))
    if report.status != "answered":
        rows.append(("Status", report.status))
    return rows


def _when(stamp: str) -> str:
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return stamp
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _unit_header(table: Table, kind: str) -> str:
    note = _UNIT_NOTES.get(kind, "")
    if kind in ("money", "per_share", "per_share_computed"):
        note = f"{table.currency} {note}"
    return note


# --------------------------------------------------------------------------- Markdown


def to_markdown(report: Report, *, chart_files: dict[str, str] | None = None) -> str:
    """Markdown; `chart_files` maps chart titles to image paths written beside the file."""
    out = [f"# {report.heading}", ""]
    out += [f"- **{key}:** {value}" for key, value in _meta(report)]
    out += ["", "## Question", "", report.question.strip(), "", "## Answer", ""]
    out += [_footnoted(report.answer.strip(), markdown=True), ""]
    for table in report.tables:
        out += [f"## {table.title}", "", *_markdown_table(table), ""]
    for title, path in (chart_files or {}).items():
        out += [f"![{title}]({path})", ""]
    if report.sources:
        out += ["## Sources", ""]
        for source in report.sources:
            link = f" <{source.url}>" if source.url else ""
            out.append(f"[^{source.id}]: {source.label}{link}")
        out.append("")
    return "\n".join(out)


def _footnoted(answer: str, *, markdown: bool) -> str:
    """[S1] citations become footnote references so every figure links to its source."""
    if not markdown:
        return answer

    def replace(match: re.Match[str]) -> str:
        ids = re.findall(r"S\d+", match.group(1))
        return "".join(f"[^{i}]" for i in ids)

    return _CITATION.sub(replace, answer)


def _markdown_table(table: Table) -> list[str]:
    header = ["", *table.periods, "unit"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in table.rows:
        cells = [format_cell(row.kind, v) for v in row.values]
        lines.append(
            f"| {row.label} | " + " | ".join(cells) + f" | {_unit_header(table, row.kind)} |"
        )
    return lines


# --------------------------------------------------------------------------- HTML


def _answer_html(answer: str) -> str:
    from markdown_it import MarkdownIt

    # The answer is model output: raw HTML in it is shown as text, never rendered.
    parser = MarkdownIt("commonmark", {"html": False}).enable("table")
    html: str = parser.render(answer)

    def cite(match: re.Match[str]) -> str:
        ids = re.findall(r"S\d+", match.group(1))
        links = ",".join(f'<a href="#src-{i}">{i}</a>' for i in ids)
        return f'<sup class="cite">[{links}]</sup>'

    return _CITATION.sub(cite, html)


def to_html(report: Report, *, charts: list[Chart] | None = None, for_print: bool = False) -> str:
    jinja2 = _need("jinja2")
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("dexter.reports", "templates"),
        autoescape=jinja2.select_autoescape(["html"]),
    )
    drawn = charts if charts is not None else table_charts(report.tables)
    svgs = []
    for chart in drawn:
        svg = render_image(chart, "svg").decode("utf-8")
        svgs.append((chart.title, svg[svg.index("<svg") :]))
    tables = [
        {
            "title": table.title,
            "periods": table.periods,
            "rows": [
                {
                    "label": row.label,
                    "unit": _unit_header(table, row.kind),
                    "cells": [format_cell(row.kind, v) for v in row.values],
                }
                for row in table.rows
            ],
        }
        for table in report.tables
    ]
    template = environment.get_template("report.html.j2")
    return str(
        template.render(
            report=report,
            meta=_meta(report),
            answer=jinja2.utils.markupsafe.Markup(_answer_html(report.answer)),
            tables=tables,
            charts=[(t, jinja2.utils.markupsafe.Markup(s)) for t, s in svgs],
            for_print=for_print,
        )
    )


def to_pdf(report: Report) -> bytes:
    weasyprint = _need("weasyprint")
    html = to_html(report, for_print=True)
    document = weasyprint.HTML(string=html)
    result: bytes = document.write_pdf()
    return result


# --------------------------------------------------------------------------- XLSX


def to_xlsx(report: Report) -> bytes:
    xlsxwriter = _need("xlsxwriter")
    buffer = io.BytesIO()
    book = xlsxwriter.Workbook(buffer, {"in_memory": True, "strings_to_numbers": False})
    bold = book.add_format({"bold": True})
    wrap = book.add_format({"text_wrap": True, "valign": "top"})
    formats = {
        "money": book.add_format({"num_format": "#,##0.0"}),
        "shares": book.add_format({"num_format": "#,##0.0"}),
        "per_share": book.add_format({"num_format": "0.00"}),
        "per_share_computed": book.add_format({"num_format": "0.00"}),
        "percent": book.add_format({"num_format": "0.0%"}),
        "multiple": book.add_format({"num_format": "0.00"}),
        "days": book.add_format({"num_format": "0.0"}),
    }
    summary = book.add_worksheet("Report")
    summary.set_column(0, 0, 14)
    summary.set_column(1, 1, 100)
    summary.write(0, 0, report.heading, bold)
    line = 2
    for key, value in [*_meta(report), ("Question", report.question), ("Answer", report.answer)]:
        summary.write(line, 0, key, bold)
        summary.write_string(line, 1, value, wrap)
        line += 1
    used: set[str] = {"Report", "Sources"}
    for table in report.tables:
        sheet = book.add_worksheet(_sheet_name(f"{table.ticker} {table.kind}", used))
        sheet.write(0, 0, table.title, bold)
        sheet.write_row(2, 0, ["Line", "Unit", *table.periods], bold)
        sheet.write_row(3, 0, ["Period end", "", *table.period_ends])
        sheet.set_column(0, 0, 34)
        sheet.set_column(1, 1, 14)
        sheet.set_column(2, 1 + len(table.periods), 14)
        for index, row in enumerate(table.rows, start=4):
            kind = row.kind
            sheet.write(index, 0, row.label)
            money = kind in ("money", "shares")
            unit = _unit_header(table, kind)
            sheet.write(index, 1, unit)
            for column, number in enumerate(row.values, start=2):
                if number is None:
                    continue
                # Money and share counts in millions, as the header says; real numbers.
                sheet.write_number(index, column, number / 1e6 if money else number, formats[kind])
    sources = book.add_worksheet("Sources")
    sources.write_row(0, 0, ["Id", "Source", "Link"], bold)
    sources.set_column(0, 0, 6)
    sources.set_column(1, 1, 80)
    sources.set_column(2, 2, 80)
    for index, source in enumerate(report.sources, start=1):
        sources.write_row(index, 0, [source.id, source.label])
        if source.url:
            sources.write_url(index, 2, source.url, string=source.url)
    book.close()
    return buffer.getvalue()


def _sheet_name(wanted: str, used: set[str]) -> str:
    base = re.sub(r"[\[\]:*?/\\]", " ", wanted)[:28].strip() or "Table"
    name, n = base, 2
    while name in used:
        name, n = f"{base[:25]} {n}", n + 1
    used.add(name)
    return name


# --------------------------------------------------------------------------- files


def write_report(report: Report, path: Path, fmt: Format) -> list[Path]:
    """Write the report (and, for Markdown, its chart images beside it); the paths written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    written = [path]
    if fmt == "md":
        charts = table_charts(report.tables)
        files: dict[str, str] = {}
        if charts:
            folder = path.with_name(path.stem + "_charts")
            folder.mkdir(exist_ok=True)
            for number, chart in enumerate(charts, 1):
                image = folder / f"chart-{number}.png"
                image.write_bytes(render_image(chart, "png"))
                files[chart.title] = f"{folder.name}/{image.name}"
                written.append(image)
        path.write_text(to_markdown(report, chart_files=files), encoding="utf-8")
        return written
    renderers: dict[str, Callable[[Report], bytes]] = {
        "html": lambda r: to_html(r).encode("utf-8"),
        "pdf": to_pdf,
        "xlsx": to_xlsx,
    }
    path.write_bytes(renderers[fmt](report))
    return written


__all__ = [
    "FORMATS",
    "Format",
    "format_for",
    "to_html",
    "to_markdown",
    "to_pdf",
    "to_xlsx",
    "write_report",
]
