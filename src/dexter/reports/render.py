"""Render a `Report` as Markdown, HTML, PDF or XLSX.

HTML comes from a Jinja2 template with its own stylesheet and inline SVG charts; PDF is that
HTML laid out by WeasyPrint (pure Python over Debian's Pango, no browser), with page numbers;
XLSX (`reports.xlsx`) has a sheet per table with real numbers, units in the headers, and a
sources sheet. The heavy libraries are imported only here, when a report is made (the `reports`
extra).

What a report shows came from outside (the question, the model's answer, page titles, company
names): every format shows it as text and nothing in it runs or loads (`reports.markup`); the
PDF renderer fetches nothing and embeds no file; a report is written to the file named and
never through a symlink there (`dexter.outputfile`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from dexter.config import ConfigError
from dexter.figure_marks import MARK, footer, mark_in_place
from dexter.install import missing_extra
from dexter.outputfile import check_destination, refuse_link, write_output
from dexter.reports.charts import Chart, images_available, render_image, table_charts
from dexter.reports.figures import answer_html_with_figures, figure_rows
from dexter.reports.markup import (
    answer_html,
    md_answer,
    md_block,
    md_inline,
    plain,
    unsafe_markdown,
    web_url,
)
from dexter.reports.model import Report, Source, Table
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
# What each format imports (all from the `reports` extra); Markdown needs none of them.
_MODULES_FOR: dict[str, tuple[str, ...]] = {
    "md": (),
    "html": ("jinja2", "matplotlib"),
    "pdf": ("jinja2", "matplotlib", "weasyprint"),
    "xlsx": ("xlsxwriter",),
}
# Not inside a tag (a link's title): the rendered HTML escapes every `>` of text, so a raw one
# ahead before any `<` means the match sits in an attribute.
_CITATION = re.compile(r"\[(S\d+(?:\s*[,;]\s*S\d+)*)\](?![^<>]*>)")


def format_for(
    path: Path | None, requested: str | None, *, how_to_ask: str = "pass --format"
) -> Format:
    """The format asked for, else the one the file name implies, else Markdown. `how_to_ask`
    is how the caller's user names a format ("" when they cannot: the name must say it)."""
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
            alternative = f", or {how_to_ask}" if how_to_ask else ""
            raise ConfigError(
                f"cannot tell the format from {path.name!r}; name it .md, .html, .pdf or "
                f".xlsx{alternative}."
            )
        return found  # type: ignore[return-value]
    return "md"


def _need(module: str, what: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise missing_extra(what, "reports", module.split(".")[0]) from None


def _meta(report: Report) -> list[tuple[str, str]]:
    rows = [
        ("Model", report.model),
        ("Asked", _when(report.created_at)),
        ("Session", report.session_id),
        ("Run", report.run_id),
    ]
    if report.as_of:
        as_of = report.as_of
        if report.figures_after_as_of:
            later = report.latest_filing or max(e for t in report.tables for e in t.period_ends)
            as_of += f" (stated on request; the figures below are later, to {later})"
        rows.insert(2, ("As of", as_of))
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
    """Markdown; `chart_files` maps chart titles to image paths written beside the file. Every
    text from outside is escaped; the answer keeps its Markdown, minus anything live."""
    out = [f"# {md_inline(report.heading)}", ""]
    out += [f"- **{key}:** {md_inline(value)}" for key, value in _meta(report)]
    out += ["", "## Question", "", md_block(report.question), "", "## Answer", ""]
    # The answer's own headings go below the report's sections (## Question, ## Answer …).
    answer = mark_in_place(report.answer, report.verification).strip()
    out += [md_answer(_footnoted(answer, markdown=True), top=3), ""]
    unchecked = footer(report.verification)
    if unchecked:
        out += [f"*{md_inline(unchecked)}*", ""]
    out += _markdown_figures(report)
    for table in report.tables:
        out += [f"## {md_inline(table.title)}", "", *_markdown_table(table), ""]
        out += _markdown_period_sources(table)
    for title, path in (chart_files or {}).items():
        out += [f"![{md_inline(title)}]({quote(path)})", ""]
    if report.sources:
        out += ["## Sources", ""]
        out += [_footnote(source) for source in report.sources]
        out.append("")
    return "\n".join(out)


def _markdown_figures(report: Report) -> list[str]:
    rows = figure_rows(report.verification)
    if not rows:
        return []
    lines = [
        "## Figures checked",
        "",
        "| | Figure | Check | Source or calculation |",
        "|---|---|---|---|",
    ]
    for row in rows:
        status = f"**{row.status}** {MARK}" if row.unsupported else row.status
        lines.append(
            f"| {row.number} | {md_inline(row.figure.text)} | {status} | {md_inline(row.detail)} |"
        )
    return [*lines, ""]


def _footnote(source: Source) -> str:
    link = web_url(source.url)
    shown = f" <{link}>" if link else f" {md_inline(source.url)}" if source.url else ""
    line = f"[^{md_inline(source.id)}]: {md_inline(source.label)}{shown}"
    if unsafe_markdown(line):
        # Without footnote support, "[^S1]: javascript:…" is a link definition: a word first
        # and a dash after it keep the line from being one.
        line = f"[^{md_inline(source.id)}]: Source — {md_inline(source.label)}{shown}"
    return line


def _footnoted(answer: str, *, markdown: bool) -> str:
    """[S1] citations become footnote references so every figure links to its source."""
    if not markdown:
        return answer

    def replace(match: re.Match[str]) -> str:
        ids = re.findall(r"S\d+", match.group(1))
        return "".join(f"[^{i}]" for i in ids)

    return _CITATION.sub(replace, answer)


def _markdown_period_sources(table: Table) -> list[str]:
    if not any(table.period_sources):
        return []
    lines = ["Sources by period:", ""]
    for period, filed in table.filed_by_period():
        cited = "; ".join(
            md_inline(f.label) + (f" <{link}>" if (link := web_url(f.url)) else "") for f in filed
        )
        lines.append(f"- {md_inline(period)}: {cited or 'not stated by the source'}")
    return [*lines, ""]


def _markdown_table(table: Table) -> list[str]:
    header = ["", *(md_inline(p) for p in table.periods), "unit"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in table.rows:
        cells = [md_inline(format_cell(row.kind, v)) for v in row.values]
        unit = md_inline(_unit_header(table, row.kind))
        lines.append(f"| {md_inline(row.label)} | " + " | ".join(cells) + f" | {unit} |")
    return lines


# --------------------------------------------------------------------------- HTML


def _answer_html(report: Report) -> str:
    def cite(match: re.Match[str]) -> str:
        ids = re.findall(r"S\d+", match.group(1))
        links = ",".join(f'<a href="#src-{i}">{i}</a>' for i in ids)
        return f'<sup class="cite">[{links}]</sup>'

    marked = answer_html_with_figures(
        report.answer, report.verification, lambda text: answer_html(text, top=3)
    )
    return _CITATION.sub(cite, marked)


def to_html(report: Report, *, charts: list[Chart] | None = None, for_print: bool = False) -> str:
    jinja2 = _need("jinja2", "HTML and PDF reports")
    # Autoescape on for every template: the template's name ends in .j2, which Jinja's
    # select_autoescape(["html"]) would have treated as not HTML, leaving every label raw.
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("dexter.reports", "templates"), autoescape=True
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
            "filed": [
                {
                    "period": period,
                    "sources": [{"label": plain(f.label), "link": web_url(f.url)} for f in filed],
                }
                for period, filed in table.filed_by_period()
            ],
        }
        for table in report.tables
    ]
    sources = [
        {"id": s.id, "label": plain(s.label), "link": web_url(s.url), "url": plain(s.url or "")}
        for s in report.sources
    ]
    template = environment.get_template("report.html.j2")
    markup = jinja2.utils.markupsafe.Markup
    return str(
        template.render(
            report=report,
            meta=_meta(report),
            # Trusted markup, and only these two: the answer rendered by `answer_html` (HTML off,
            # no images, links checked) and matplotlib's own SVG (its text escaped by it).
            answer=markup(_answer_html(report)),
            unchecked=footer(report.verification),
            figures=[
                {
                    "number": row.number,
                    "anchor": row.anchor,
                    "text": plain(row.figure.text),
                    "status": row.status,
                    "kind": row.figure.status,
                    "detail": plain(row.detail),
                }
                for row in figure_rows(report.verification)
            ],
            tables=tables,
            sources=sources,
            charts=[(t, markup(s)) for t, s in svgs],
            for_print=for_print,
        )
    )


def to_pdf(report: Report) -> bytes:
    return html_to_pdf(to_html(report, for_print=True))


def html_to_pdf(html: str) -> bytes:
    """`html` laid out as PDF, loading nothing: only images inline in the page (data: URLs)
    are read, never a file, a web or internal address; and no file is attached."""
    weasyprint = _need("weasyprint", "PDF reports")
    document = weasyprint.HTML(string=html, url_fetcher=_inline_only(weasyprint)).render()
    # `<link rel=attachment>` and `<a rel=attachment>` would embed what they name in the PDF.
    document.metadata.attachments = []
    for page in document.pages:
        page.links = [link for link in page.links if link[0] != "attachment"]
    result: bytes = document.write_pdf()
    return result


def _inline_only(weasyprint: Any) -> Any:
    class InlineOnly(weasyprint.urls.URLFetcher):  # type: ignore[misc]
        def fetch(self, url: str, headers: Any = None) -> Any:
            if not url[:11].lower().startswith("data:image/"):
                raise ValueError("a report loads nothing from outside itself")
            return super().fetch(url, headers)

    return InlineOnly(allowed_protocols=("data",), allow_redirects=False)


# --------------------------------------------------------------------------- XLSX


def to_xlsx(report: Report) -> bytes:
    from dexter.reports.xlsx import to_xlsx as workbook

    return workbook(report, _need("xlsxwriter", "XLSX reports"), _meta(report), _unit_header)


# --------------------------------------------------------------------------- files


def require_format(fmt: Format) -> None:
    """Raise the missing-extra error now if `fmt` cannot be rendered here, e.g. before a run
    whose answer is to be exported, rather than after it has been paid for."""
    import importlib.util

    for module in _MODULES_FOR[fmt]:
        if importlib.util.find_spec(module) is None:
            raise missing_extra(f"{fmt.upper()} reports", "reports", module)


def charts_left_out(report: Report, fmt: Format) -> str | None:
    """What a Markdown export without matplotlib left out, and how to get it; else None."""
    if fmt != "md" or images_available():
        return None
    count = len(table_charts(report.tables))
    if not count:
        return None
    from dexter.install import add_extra_command

    return (
        f"{count} chart image(s) left out: they need the optional `reports` extra "
        f"(`{add_extra_command('reports')}`); the tables hold the same figures."
    )


def write_report(report: Report, path: Path, fmt: Format) -> list[Path]:
    """Write the report (and, for Markdown, its chart images beside it); the paths written.
    Each file is written whole, or not at all; a symlink at any of their names, or a folder that
    does not exist, is refused before anything is written."""
    check_destination(path)
    if fmt != "md":
        renderers: dict[str, Callable[[Report], bytes]] = {
            "html": lambda r: to_html(r).encode("utf-8"),
            "pdf": to_pdf,
            "xlsx": to_xlsx,
        }
        write_output(path, renderers[fmt](report))
        return [path]
    # Charts are optional in Markdown: without matplotlib the file is written without them
    # (`charts_left_out` says so to the user), the tables carry the same figures.
    charts = table_charts(report.tables) if images_available() else []
    folder = path.with_name(path.stem + "_charts")
    images = [folder / f"chart-{number}.png" for number in range(1, len(charts) + 1)]
    if charts:
        refuse_link(folder)
        for image in images:
            refuse_link(image)
        folder.mkdir(exist_ok=True)
    files: dict[str, str] = {}
    for chart, image in zip(charts, images, strict=True):
        write_output(image, render_image(chart, "png"))
        files[chart.title] = f"{folder.name}/{image.name}"
    write_output(path, to_markdown(report, chart_files=files).encode("utf-8"))
    return [path, *images]


__all__ = [
    "FORMATS",
    "Format",
    "charts_left_out",
    "format_for",
    "html_to_pdf",
    "require_format",
    "to_html",
    "to_markdown",
    "to_pdf",
    "to_xlsx",
    "write_report",
]
