"""Charts of a table's main lines: matplotlib images for files, Unicode bars for the terminal.

matplotlib is imported only when an image is drawn (it is part of the `reports` extra)."""

from __future__ import annotations

import io
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dexter.reports.model import CHART_LINES, Row, Table
from dexter.tools.finance.format import CellKind

_UNITS: dict[CellKind, str] = {
    "money": "millions",
    "shares": "millions of shares",
    "per_share": "per share",
    "per_share_computed": "per share",
    "percent": "%",
    "multiple": "×",
    "days": "days",
}
_PALETTE = ("#1f4e79", "#c55a11", "#548235", "#7f6000", "#7030a0")
BAR = "█"
PARTIAL = " ▏▎▍▌▋▊▉"


@dataclass(frozen=True)
class Chart:
    title: str
    unit: str
    periods: tuple[str, ...]
    lines: tuple[Row, ...]

    def scaled(self, value: float | None) -> float | None:
        if value is None:
            return None
        kind = self.lines[0].kind
        if kind in ("money", "shares"):
            return value / 1e6
        if kind == "percent":
            return value * 100
        return value


def charts_for(table: Table) -> list[Chart]:
    """The charts worth drawing for `table`: each group of its main lines present in it."""
    charts = []
    for group in CHART_LINES[table.kind]:
        rows = tuple(row for name in group if (row := table.row(name)) is not None)
        if not rows or len(table.periods) < 2:
            continue
        unit = _UNITS[rows[0].kind]
        if rows[0].kind in ("money", "per_share", "per_share_computed"):
            unit = f"{table.currency} {unit}"
        names = ", ".join(r.label.replace(" (computed)", "") for r in rows)
        charts.append(Chart(f"{table.ticker}: {names}", unit, table.periods, rows))
    return charts


def _figure(chart: Chart):  # type: ignore[no-untyped-def]
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        from dexter.install import missing_extra

        raise missing_extra("Chart images", "reports", "matplotlib") from None
    figure, axes = plt.subplots(figsize=(7.2, 3.4), dpi=110)
    x = list(range(len(chart.periods)))
    drawn: list[float] = []
    for index, row in enumerate(chart.lines):
        values = [chart.scaled(v) for v in row.values]
        points = [(i, v) for i, v in zip(x, values, strict=True) if v is not None]
        if not points:
            continue
        xs, ys = zip(*points, strict=True)
        drawn += ys
        axes.plot(
            xs,
            ys,
            marker="o",
            linewidth=2,
            color=_PALETTE[index % len(_PALETTE)],
            label=_literal(row.label.replace(" (computed)", ""), 48),
        )
    axes.set_xticks(
        x, [_literal(p, 16) for p in chart.periods], rotation=30 if len(x) > 6 else 0, fontsize=8
    )
    _from_zero(axes, drawn)
    axes.yaxis.set_major_formatter(_thousands)
    axes.tick_params(axis="y", labelsize=8)
    axes.set_ylabel(_literal(chart.unit, 32), fontsize=9)
    axes.set_title(_literal(chart.title, 80), fontsize=10, loc="left")
    axes.grid(True, axis="y", alpha=0.3)
    axes.spines[["top", "right"]].set_visible(False)
    # Below the plot, in a row: with the axis from zero, "best" put it across a line.
    axes.legend(
        fontsize=8,
        frameon=False,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.14 if len(x) <= 6 else -0.22),
        ncol=min(len(chart.lines), 4),
    )
    figure.tight_layout()
    return figure


def _from_zero(axes: Any, values: Sequence[float]) -> None:
    """The value axis includes zero, so a line's height is its size: an axis from 6.0 to 7.5
    drew EPS going from 6.08 to 7.46 as a cliff. Values on both sides of zero get a zero line."""
    if not values:
        return
    if min(values) >= 0:
        axes.set_ylim(bottom=0, top=max(values) * 1.08 or 1)
    elif max(values) <= 0:
        axes.set_ylim(bottom=min(values) * 1.08, top=0)
    else:
        axes.axhline(0, color="#888888", linewidth=0.8)


def _literal(text: str, limit: int) -> str:
    # matplotlib reads text between two `$` as math and raises on what does not parse: a company
    # name is shown as written, never as math (and never stops the report). Cut to what fits, so
    # a long name from a data source cannot push the plot off the image either.
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text.replace("$", r"\$")


def _thousands(value: float, _position: float) -> str:
    # matplotlib's default prints 400000; a reader expects 400,000.
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:,.4g}"


def images_available() -> bool:
    """Whether chart images can be drawn here (matplotlib comes with the `reports` extra)."""
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


def render_image(chart: Chart, fmt: str = "svg") -> bytes:
    """The chart as SVG or PNG bytes; ConfigError naming the install step without matplotlib."""
    figure = _figure(chart)
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    figure.savefig(buffer, format=fmt, metadata={"Date": None} if fmt == "svg" else None)
    plt.close(figure)
    return buffer.getvalue()


def terminal_chart(chart: Chart, width: int = 80) -> list[str]:
    """Horizontal bars, one block per line and a bar per period, fitted to `width` columns.
    Negative values are drawn from the same zero with a minus sign, never truncated."""
    label_width = max(len(p) for p in chart.periods)
    lines = textwrap.wrap(f"{chart.title} ({chart.unit})", width) or [chart.title]
    scaled = [[chart.scaled(v) for v in row.values] for row in chart.lines]
    # One scale for the whole chart: its lines share a unit, so capex must look small
    # beside operating cash flow rather than fill the width as well.
    everything = [abs(v) for values in scaled for v in values if v is not None]
    top = max(everything, default=0.0) or 1.0
    value_width = max(len(_number(v)) for values in scaled for v in values)
    room = max(10, width - label_width - value_width - 4)
    for row, values in zip(chart.lines, scaled, strict=True):
        present = [v for v in values if v is not None]
        if not present:
            continue
        texts = [_number(v) for v in values]
        lines.append(f"  {row.label.replace(' (computed)', '')}")
        for period, value, text in zip(chart.periods, values, texts, strict=True):
            bar = "" if value is None else _bar(abs(value) / top * room)
            lines.append(
                f"  {period.rjust(label_width)} {bar.ljust(room)} {text.rjust(value_width)}"
            )
    return lines


def _bar(length: float) -> str:
    whole = int(length)
    part = PARTIAL[int((length - whole) * 8)] if length - whole >= 0.125 else ""
    return BAR * whole + part.strip()


def _number(value: float | None) -> str:
    if value is None:
        return "—"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:,.2f}"


def table_charts(tables: Sequence[Table]) -> list[Chart]:
    return [chart for table in tables for chart in charts_for(table)]


__all__ = [
    "Chart",
    "charts_for",
    "images_available",
    "render_image",
    "table_charts",
    "terminal_chart",
]
