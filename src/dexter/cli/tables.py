"""Tables that never cut a figure, at any width, on a terminal, in a pipe or in a file.

Every table the CLI prints is built as a `Grid` (columns, rows of cells) and then laid out for the
console's width: figures keep their full width and are never wrapped or cut; text columns wrap; when
the figures do not fit beside the key columns (a statement's line-item labels, a row's date and
name), the remaining columns fold onto further tables that repeat the key columns; when not even one
figure fits, each row is printed as a block of `header  value` lines. The same grid writes CSV, with
raw numbers rather than the display text, for scripts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from dexter import spreadsheet

# Below this a wrapped label is harder to read than a folded table.
_MIN_TEXT_WIDTH = 14
# Padding either side of a cell plus the column's left border.
_COLUMN_OVERHEAD = 3


@dataclass(frozen=True)
class Figure:
    """A cell shown as `text` whose CSV value is `value` (a raw number, not the formatted one)."""

    text: str
    value: float | int | str | None = None


Cell = str | Figure
# A value not reported: a dash on screen, an empty field in CSV.
MISSING = Figure("—", "")


@dataclass(frozen=True)
class Col:
    header: str
    figure: bool = False  # right-aligned, never wrapped or cut
    whole: bool = False  # left-aligned but, like a figure, never wrapped or cut (dates, ids)
    key: bool = False  # repeated in every folded part; identifies the row
    style: str | None = None
    csv_header: str | None = None  # when the display header is empty or abbreviated
    min_width: int = _MIN_TEXT_WIDTH
    # Shown only when the table fits on one screen width with it; dropped last-first otherwise.
    optional: bool = False
    # Written to CSV only (a document's URL: on screen it is printed whole below the table).
    csv_only: bool = False


@dataclass
class Grid:
    title: str
    columns: Sequence[Col]
    caption: str = ""
    rows: list[tuple[list[Cell], str | None]] = field(default_factory=list)
    lines: bool = False  # a rule between rows, for rows of several wrapped lines

    def add_row(self, *cells: Cell, style: str | None = None) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"row has {len(cells)} cells for {len(self.columns)} columns")
        self.rows.append((list(cells), style))


def _text(cell: Cell) -> str:
    return cell.text if isinstance(cell, Figure) else cell


def _natural(grid: Grid, index: int) -> int:
    lines = [grid.columns[index].header, *(_text(cells[index]) for cells, _ in grid.rows)]
    return max((len(line) for text in lines for line in text.split("\n")), default=0)


def _longest_word(grid: Grid, index: int) -> int:
    words = [w for cells, _ in grid.rows for w in _text(cells[index]).split()]
    words += grid.columns[index].header.split()
    return max((len(w) for w in words), default=0)


def _floor(grid: Grid, index: int) -> int:
    """The narrowest this column may become: a figure never shrinks, text wraps down to a floor,
    and never below the longest word of its header (a header is never cut: `Put/Cal` + `l`)."""
    natural = _natural(grid, index)
    column = grid.columns[index]
    if column.figure or column.whole:
        return natural
    header_word = max((len(word) for word in column.header.split()), default=0)
    return max(min(natural, max(column.min_width, 1)), header_word)


def _parts(grid: Grid, width: int) -> list[list[int]] | None:
    """Column indexes per folded table, or None when even one column beside the keys won't fit."""
    keys = [i for i, c in enumerate(grid.columns) if c.key]
    rest = [i for i, c in enumerate(grid.columns) if not c.key]
    budget = width - 1 - sum(_floor(grid, i) + _COLUMN_OVERHEAD for i in keys)
    if not rest:
        return [keys] if budget >= 0 else None
    parts: list[list[int]] = []
    current: list[int] = []
    used = 0
    for index in rest:
        need = _floor(grid, index) + _COLUMN_OVERHEAD
        if need > budget:
            return None
        if used + need > budget:
            parts.append(current)
            current, used = [], 0
        current.append(index)
        used += need
    parts.append(current)
    return [keys + part for part in _balanced(grid, rest, parts, budget)]


def _balanced(grid: Grid, rest: list[int], greedy: list[list[int]], budget: int) -> list[list[int]]:
    """The same number of parts, evenly filled (3 + 2 rather than 4 + 1) when that still fits."""
    count = len(greedy)
    if count == 1:
        return greedy
    size = -(-len(rest) // count)
    even = [rest[i : i + size] for i in range(0, len(rest), size)]
    fits = all(sum(_floor(grid, i) + _COLUMN_OVERHEAD for i in part) <= budget for part in even)
    return even if fits and len(even) == count else greedy


def _widths(grid: Grid, indexes: list[int], width: int) -> dict[int, int]:
    """Floors first, then the spare width to text columns, up to their natural widths."""
    widths = {i: _floor(grid, i) for i in indexes}
    spare = width - 1 - sum(w + _COLUMN_OVERHEAD for w in widths.values())
    growable = [i for i in indexes if not (grid.columns[i].figure or grid.columns[i].whole)]
    while spare > 0 and growable:
        short = [i for i in growable if widths[i] < _natural(grid, i)]
        if not short:
            break
        share = max(spare // len(short), 1)
        for i in short:
            grow = min(share, _natural(grid, i) - widths[i], spare)
            widths[i] += grow
            spare -= grow
            if spare <= 0:
                break
    return widths


def _table(grid: Grid, indexes: list[int], widths: dict[int, int]) -> Table:
    table = Table(
        box=box.HEAVY_HEAD,
        show_lines=grid.lines,
    )
    for i in indexes:
        column = grid.columns[i]
        # Cells are data (filing labels, questions citing [S1]), never Rich markup.
        table.add_column(
            Text(column.header),
            justify="right" if column.figure else "left",
            no_wrap=column.figure or column.whole,
            overflow="fold",
            style=column.style,
            width=widths[i],
            min_width=widths[i],
            max_width=widths[i],
        )
    for cells, style in grid.rows:
        table.add_row(*[Text(_text(cells[i])) for i in indexes], style=style)
    return table


def _subset(grid: Grid, indexes: list[int]) -> Grid:
    sub = Grid(grid.title, [grid.columns[i] for i in indexes], grid.caption, lines=grid.lines)
    sub.rows = [([cells[i] for i in indexes], style) for cells, style in grid.rows]
    return sub


def _without_optional(grid: Grid, width: int) -> Grid:
    """Drop optional columns, last first, until the rest fits in one table (or none are left)."""
    keep = list(range(len(grid.columns)))
    optional = [i for i in keep if grid.columns[i].optional]
    current = grid
    while optional:
        parts = _parts(current, width)
        if parts is not None and len(parts) == 1:
            break
        keep.remove(optional.pop())
        current = _subset(grid, keep)
    return current


def render(console: Console, grid: Grid) -> None:
    """Print `grid` within the console's width without cutting any cell."""
    width = console.width
    if any(column.csv_only for column in grid.columns):
        grid = _subset(grid, [i for i, c in enumerate(grid.columns) if not c.csv_only])
    grid = _without_optional(grid, width)
    parts = _parts(grid, width)
    if parts is None:
        _render_vertical(console, grid)
        return
    for number, indexes in enumerate(parts):
        if grid.title:
            # Above the table at the console's width, not inside it at the table's: a title
            # wider than a narrow table wrapped there mid-word, and was padded with spaces.
            title = grid.title if number == 0 else f"{grid.title} (continued)"
            print_wrapped(console, title, style="italic")
        console.print(_table(grid, indexes, _widths(grid, indexes, width)))
    if grid.caption:
        print_wrapped(console, grid.caption, style="dim")


def print_wrapped(console: Console, text: str, *, style: str = "", indent: int = 0) -> None:
    """`text` wrapped between words to the console's width, continuation lines indented by
    `indent`, with no trailing spaces (rich's own wrapping leaves one where it breaks)."""
    import textwrap

    margin = " " * indent
    lines = textwrap.wrap(
        text,
        max(console.width, indent + 20),
        initial_indent=margin,
        subsequent_indent=margin,
        break_on_hyphens=False,
    )
    console.print(Text("\n".join(lines or [margin + text]), style=style), soft_wrap=True)


def _render_vertical(console: Console, grid: Grid) -> None:
    """One block per row: too narrow for columns, but every value is still whole."""
    if grid.title:
        print_wrapped(console, grid.title, style="bold")
    keys = [i for i, c in enumerate(grid.columns) if c.key] or [0]
    rest = [i for i in range(len(grid.columns)) if i not in keys]
    label_width = max((len(grid.columns[i].header) for i in rest), default=0)
    for cells, _ in grid.rows:
        console.print()
        console.print(Text(" · ".join(_text(cells[i]) for i in keys), style="bold"))
        for i in rest:
            header = grid.columns[i].header or grid.columns[i].csv_header or ""
            console.print(Text(f"  {header:<{label_width}}  {_text(cells[i])}"))
    if grid.caption:
        console.print()
        print_wrapped(console, grid.caption, style="dim")


def write_csv(grid: Grid, out: IO[str]) -> None:
    """Headers, then one line per row; figures as their raw values, and text that a spreadsheet
    would take for a formula (a question starting with `=`) kept as text."""
    header = [c.csv_header or c.header for c in grid.columns]
    rows = (
        [
            (cell.text if cell.value is None else cell.value) if isinstance(cell, Figure) else cell
            for cell in cells
        ]
        for cells, _ in grid.rows
    )
    spreadsheet.write_csv(out, [header, *rows])


def labelled(fields: Sequence[tuple[str, str]], width: int) -> str:
    """`Label  value` lines, each value wrapped under itself within `width`; words (paths, ids)
    are never cut, so a line may run over rather than break one."""
    import textwrap

    indent = max((len(label) for label, _ in fields), default=0) + 2
    return "\n".join(
        textwrap.fill(
            value,
            max(width, indent + 20),
            initial_indent=f"{label:<{indent}}",
            subsequent_indent=" " * indent,
            break_on_hyphens=False,
            break_long_words=False,
        )
        for label, value in fields
    )
