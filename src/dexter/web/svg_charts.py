"""A run's statement tables and their charts for the page: the reports' own model
(`dexter.reports`), so the page shows the same numbers as an exported report, and charts drawn
here as SVG (no library, no script): one line per row, each point with a <title> that the
browser shows on hover and a screen reader can reach, and the table beside it as the text
alternative.

All text in the SVG (company names, labels) is escaped here; it reaches the page as markup."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from html import escape
from typing import Any

from dexter.reports.charts import Chart, charts_for
from dexter.reports.model import Table

WIDTH, HEIGHT = 480, 250
# Room for the value labels on the left and half a period label either side.
LEFT, RIGHT, TOP, PLOT_BOTTOM = 64, 32, 12, 180
LEGEND_COLUMNS = 2
# The reports' palette, dark enough for 3:1 against white (WCAG non-text contrast).
PALETTE = ("#1f4e79", "#c55a11", "#548235", "#7f6000", "#7030a0")
DASHES = ("", "6 3", "2 3", "8 3 2 3", "1 2")


def _nice_ticks(low: float, high: float, count: int = 4) -> list[float]:
    if high == low:
        high = low + 1
    raw = (high - low) / count
    step = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * step:
            step *= factor
            break
    start = math.floor(low / step) * step
    ticks, value = [], start
    while value <= high + step * 0.5:
        ticks.append(round(value, 10))
        value += step
    return ticks


def _number(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:,.1f}"
    return f"{value:,.2f}"


def chart_svg(chart: Chart, key: str) -> str:
    """`chart` as an SVG line chart; `key` makes its element ids unique on the page."""
    series = [[chart.scaled(v) for v in row.values] for row in chart.lines]
    values = [v for line in series for v in line if v is not None]
    if not values:
        return ""
    low, high = min(0.0, *values), max(0.0, *values)
    ticks = _nice_ticks(low, high)
    low, high = min(low, ticks[0]), max(high, ticks[-1])
    plot_w, plot_h = WIDTH - LEFT - RIGHT, PLOT_BOTTOM - TOP
    count = len(chart.periods)
    rows = math.ceil(len(chart.lines) / LEGEND_COLUMNS)
    height = PLOT_BOTTOM + 26 + 18 * rows

    def x(i: int) -> float:
        return LEFT + (plot_w * i / (count - 1) if count > 1 else plot_w / 2)

    def y(v: float) -> float:
        return TOP + plot_h * (1 - (v - low) / (high - low))

    title_id = f"chart-{key}-title"
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-labelledby="{title_id}" xmlns="http://www.w3.org/2000/svg">',
        f'<title id="{title_id}">{escape(chart.title)} ({escape(chart.unit)}), '
        f"{escape(chart.periods[0])} to {escape(chart.periods[-1])}</title>",
    ]
    for tick in ticks:
        ty = y(tick)
        parts.append(
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{ty:.1f}" y2="{ty:.1f}" '
            f'class="{"zero" if tick == 0 else "grid"}"/>'
            f'<text x="{LEFT - 6}" y="{ty + 4:.1f}" text-anchor="end">{_number(tick)}</text>'
        )
    for i, period in enumerate(chart.periods):
        parts.append(
            f'<text x="{x(i):.1f}" y="{PLOT_BOTTOM + 16}" text-anchor="middle">'
            f"{escape(period)}</text>"
        )
    for index, (row, line) in enumerate(zip(chart.lines, series, strict=True)):
        color, dash = PALETTE[index % len(PALETTE)], DASHES[index % len(DASHES)]
        points = [(x(i), y(v)) for i, v in enumerate(line) if v is not None]
        path = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        parts.append(
            f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"{dashed}/>'
        )
        label = escape(row.label.replace(" (computed)", ""))
        for i, v in enumerate(line):
            if v is None:
                continue
            parts.append(
                f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="5" fill="{color}" class="point">'
                f"<title>{label}, {escape(chart.periods[i])}: {_number(v)} "
                f"{escape(chart.unit)}</title></circle>"
            )
    # The legend in rows of two, so long line names never run into each other.
    column = (WIDTH - LEFT) / LEGEND_COLUMNS
    for index, row in enumerate(chart.lines):
        lx = LEFT + (index % LEGEND_COLUMNS) * column
        ly = PLOT_BOTTOM + 40 + 18 * (index // LEGEND_COLUMNS)
        color, dash = PALETTE[index % len(PALETTE)], DASHES[index % len(DASHES)]
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        parts.append(
            f'<line x1="{lx:.1f}" x2="{lx + 22:.1f}" y1="{ly - 4}" y2="{ly - 4}" '
            f'stroke="{color}" stroke-width="2.5"{dashed}/>'
            f'<text x="{lx + 28:.1f}" y="{ly}">'
            f"{escape(row.label.replace(' (computed)', ''))}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def table_view(table: Table, key: str) -> dict[str, Any]:
    """A statement table as the page shows it: the reports' cells, units and charts."""
    from dexter.reports.render import _unit_header
    from dexter.tools.finance.format import format_cell

    return {
        "title": table.title,
        "key": key,
        "periods": list(table.periods),
        "rows": [
            {
                "label": row.label,
                "cells": [format_cell(row.kind, v) for v in row.values],
                "unit": _unit_header(table, row.kind),
            }
            for row in table.rows
        ],
        "charts": [
            {
                "caption": chart.title.split(": ", 1)[-1],
                "unit": chart.unit,
                "svg": chart_svg(chart, f"{key}-{n}"),
            }
            for n, chart in enumerate(charts_for(table))
        ],
    }


def run_tables(records: Iterable[Mapping[str, Any]], run_id: str) -> list[dict[str, Any]]:
    """The statement tables (with charts) a run's tool calls fetched, for the page."""
    from dexter.reports.build import tables_from_calls

    tag = "".join(c for c in run_id if c.isalnum())[-12:] or "run"
    return [table_view(t, f"{tag}-{n}") for n, t in enumerate(tables_from_calls(records))]


__all__ = ["chart_svg", "run_tables", "table_view"]
