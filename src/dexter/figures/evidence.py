"""Every number the run's evidence holds, normalised and with its context, indexed by value.

Evidence is text: Dexter's Markdown tool results (statement tables with periods across and
"Units:" lines, XBRL fact tables with a period per row, filing sections with their own tables),
JSON, calculate results, the user's question. Each number becomes a `Found`: its value in the
answer's terms (whole currency units, percent), what kind of quantity it is, the field (row or
key) and period it belongs to, and two family ids (same field across periods, same period across
fields) that derivations pair operands by. `EvidenceIndex` holds them sorted by magnitude so a
figure's rounding window is one binary search, however much evidence a run read.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import date
from functools import lru_cache
from typing import Any, NamedTuple

from dexter.figures.fields import named
from dexter.figures.numbers import SCALES, Token, scan, simple_cell
from dexter.figures.periods import EvidencePeriod, header_period, years_in
from dexter.figures.types import Evidence

# Kinds of quantity. "number" is a number whose kind the evidence does not say.
MONEY = "money"
PERCENT = "percent"
PER_SHARE = "per_share"
SHARES = "shares"
MULTIPLE = "multiple"
NUMBER = "number"

_NOT_NUMBERS = frozenset({"year", "date", "date or identifier", "identifier", "citation"})


class Found(NamedTuple):
    """One number of the evidence (a tuple: thousands are made for each answer)."""

    value: float
    kind: str
    evidence: int
    field: str
    period: EvidencePeriod | None
    # As written in the evidence, e.g. "391,035".
    raw: str
    # Same field across periods (a statement row), and same period across fields (a column).
    field_family: int
    period_family: int
    # Percent read from a ratio written as a fraction (0.0643 -> 6.43).
    from_ratio: bool = False
    # Half the unit of the last digit written, in `value`'s terms (0 for exact JSON numbers).
    half: float = 0.0
    # The row of a record table (holdings, trades) it stands in, counted from the top; -1
    # elsewhere. A ranked list's "top five" are its first rows.
    rank: int = -1
    # The company (ticker) its section of the tool result is about; "#n" when unknown.
    company: str = ""
    # The data call its section of a merged tool result came from ("income_statements(...)").
    section: str = ""


@dataclass(slots=True)
class _Families:
    next_id: int = 0
    keyed: dict[tuple[object, ...], int] | None = None

    def new(self) -> int:
        self.next_id += 1
        return self.next_id

    def key(self, *key: object) -> int:
        if self.keyed is None:
            self.keyed = {}
        if key not in self.keyed:
            self.keyed[key] = self.new()
        return self.keyed[key]


# ---------------------------------------------------------------------------------------------
# Units a table or a label declares

_DECLARED_SCALE = re.compile(
    r"(?:(?i:\bin|\bUSD|US\$|\$|\bdollars(?:[ \u00a0]in)?|\bamounts[ \u00a0]in)|\b[A-Z]{3})"
    r"[ \u00a0]*"
    r"(?P<w>(?i:thousands|millions|billions))\b"
    r"|\((?P<w2>(?i:thousands|millions|billions))\)"
    r"|(?:\$|USD[ \u00a0]?)(?P<w3>000s|000's|'000|M|MM|mm|K|B|bn|mn)(?![A-Za-z])"
    r"|\bunit:[ \u00a0]*(?P<plain>[A-Z]{3})\b",
)
_SCALE_OF_DECL = {"000s": 1e3, "000's": 1e3, "'000": 1e3}


_SCALE_HINT = re.compile(
    r"(?i:thousand|million|billion|unit:)|000|[$A-Z][ \u00a0]?(?:M|MM|mm|K|B|bn|mn)\b"
)


@lru_cache(maxsize=4096)
def declared_scale(text: str) -> float | None:
    """The scale a caption, header or label declares ("USD millions", "(in thousands)", "$M")."""
    if _SCALE_HINT.search(text) is None:
        return None
    found: float | None = None
    for m in _DECLARED_SCALE.finditer(text):
        if m.group("plain"):
            found = 1.0
            continue
        word = (m.group("w") or m.group("w2") or m.group("w3") or "").lower()
        found = _SCALE_OF_DECL.get(word) or SCALES.get(word.rstrip("s")) or SCALES.get(word)
    return found


@dataclass(frozen=True, slots=True)
class TableScale:
    """What a table's caption says its numbers are in: money, share counts, and whether
    per-share amounts are excepted ("in millions, except number of shares, which are
    reflected in thousands, and per-share amounts")."""

    money: float | None = None
    shares: float | None = None
    except_per_share: bool = False
    # Declared earlier in the document, not for this table: amounts may also be as written.
    inherited: bool = False


def declared_scales(text: str) -> TableScale | None:
    if _SCALE_HINT.search(text) is None:
        return None
    money: float | None = None
    shares: float | None = None
    for m in _DECLARED_SCALE.finditer(text):
        if m.group("plain"):
            money = 1.0 if money is None else money
            continue
        word = (m.group("w") or m.group("w2") or m.group("w3") or "").lower()
        value = _SCALE_OF_DECL.get(word) or SCALES.get(word.rstrip("s")) or SCALES.get(word)
        exception = text.lower().rfind("except", 0, m.start())
        if exception >= 0 and "share" in text[exception : m.start()].lower():
            shares = value
        elif money is None:
            money = value
    if money is None and shares is None:
        return None
    per_share = bool(re.search(r"per[ -]share", text, re.IGNORECASE))
    if shares is None and re.search(r"\bshares? (?:in|as) (?:shares|units)\b", text, re.I):
        shares = 1.0  # "Units: shares in shares; values in USD millions"
    return TableScale(money, shares if shares is not None else money, per_share)


_PER_SHARE_LABEL = re.compile(
    r"per[ \u00a0_](?:common[ \u00a0_]|diluted[ \u00a0_]|basic[ \u00a0_])?share|\bEPS\b|"
    r"\((?:USD|\$|EUR|GBP)\)|\bprice\b|\bclose\b|\bopen\b|\bhigh\b|\blow\b|dividends? per",
    re.IGNORECASE,
)
_SHARES_LABEL = re.compile(r"\bshares?\b", re.IGNORECASE)
_PERCENT_LABEL = re.compile(r"\(%\)|\bin %|percent", re.IGNORECASE)


# ---------------------------------------------------------------------------------------------
# Reading one piece of evidence


def read_evidence(
    index: int, evidence: Evidence, families: _Families, sieve: Sieve | None = None
) -> Iterator[Found]:
    text = evidence.text
    context = _context(index, evidence, sieve)
    parsed = _json_body(text)
    if parsed is not None:
        yield from _walk_json(context, parsed, families, None)
        return
    yield from _read_text(context, text, families)


def _json_body(text: str) -> Any:
    body = text.lstrip()
    if body.startswith("#"):
        body = body.split("\n", 1)[1].lstrip() if "\n" in body else ""
    if body[:1] not in ("{", "["):
        return None
    try:
        return json.loads(body)
    except ValueError:
        return None


_PERIOD_KEYS = ("fiscal_period", "report_period", "calendar_date", "period_end", "date", "time")
_SKIP_KEYS = frozenset({"cik", "fiscal_year", "year", "accession_number", "sic", "zip"})


def _row_period(row: dict[str, Any]) -> EvidencePeriod | None:
    parts = [str(row[k]) for k in _PERIOD_KEYS if isinstance(row.get(k), str)]
    if isinstance(row.get("fiscal_year"), int) and not parts:
        parts.append(f"FY{row['fiscal_year']}")
    return header_period(" ".join(parts)) if parts else None


def _json_kind(key: str, value: float) -> list[tuple[float, str, bool]]:
    name = key.lower()
    if "per_share" in name or "per_common_share" in name or name in ("eps", "price", "close"):
        return [(value, PER_SHARE, False)]
    if name in ("open", "high", "low", "vwap"):
        return [(value, PER_SHARE, False)]
    if "shares" in name:
        return [(value, SHARES, False)]
    if (
        name.endswith(("_margin", "_growth", "_yield", "_rate"))
        or name.startswith("return_on_")
        or name in ("payout_ratio", "margin", "growth")
    ):
        return [(value * 100, PERCENT, True), (value, NUMBER, False)]
    if (
        "ratio" in name
        or "turnover" in name
        or name.startswith(("price_to_", "enterprise_value_to"))
    ):
        return [(value, MULTIPLE, False), (value * 100, PERCENT, True)]
    if name.startswith("days_") or name in ("operating_cycle", "volume", "count"):
        return [(value, NUMBER, False)]
    return [(value, MONEY, False)]


def _walk_json(
    context: _Context, node: Any, families: _Families, period: EvidencePeriod | None
) -> Iterator[Found]:
    if isinstance(node, list):
        for item in node:
            yield from _walk_json(context, item, families, period)
        return
    if not isinstance(node, dict):
        return
    row_period = _row_period(node) or period
    ticker = node.get("ticker") if isinstance(node.get("ticker"), str) else context.company
    row_family = (
        families.key("period", str(ticker).upper(), _period_key(row_period))
        if row_period is not None
        else 0
    )
    for key, value in node.items():
        if isinstance(value, (dict, list)):
            yield from _walk_json(context, value, families, row_period)
        elif isinstance(value, bool) or key in _SKIP_KEYS:
            continue
        elif isinstance(value, (int, float)):
            field_family = families.key("field", str(ticker).upper(), key.lower())
            for normalised, kind, from_ratio in _json_kind(key, float(value)):
                yield Found(
                    normalised,
                    kind,
                    context.index,
                    key,
                    row_period,
                    str(value),
                    field_family,
                    row_family or families.new(),
                    from_ratio,
                    0.0,
                    -1,
                    str(ticker).upper(),
                )
        elif isinstance(value, str) and len(value) > 40:
            yield from _read_text(context, value, families)


# ---------------------------------------------------------------------------------------------
# Text: tables and prose


_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")
_SENTENCE_END = re.compile(r"[.!?;]\s+(?=[A-Z(\"“])|\n")
# A line inside a filing's table that only names the rows below it ("CURRENT ASSETS:").
_SECTION_LINE = re.compile(r"^(?:[^0-9|]{1,80}|[^|]{1,80}:)$")
_COMPANY = re.compile(r"\bcompany=([A-Za-z0-9.\-]+)")
_CONCEPT = re.compile(r"\bconcept=(?:[a-z\-]+:)?([A-Za-z]+)")


def _is_table_line(line: str) -> bool:
    stripped = line.strip()
    return stripped.startswith("|") or " | " in stripped


def _cells(line: str) -> list[str]:
    stripped = line.strip()
    if stripped.startswith("|"):
        stripped = stripped[1:]
    if stripped.endswith("|"):
        stripped = stripped[:-1]
    return [c.strip() for c in stripped.split("|")]


# How a magnitude may be written in evidence: as is, in thousands ... trillions, as a percent
# of a ratio or a ratio of a percent (basis points too).
_WRITTEN_AS = (1.0, 1e-3, 1e-6, 1e-9, 1e-12, 1e2, 1e-2)
_DIGIT_RUN = re.compile(r"[0-9][0-9,]*(?:\.[0-9]+)?")


class Sieve:
    """The numbers worth reading in evidence prose: those that could be one of the answer's
    figures, at any scale. Prose numbers only ever match figures directly (derivations pair
    the rows and columns of tables), so a long filing's other sentences can be passed over."""

    def __init__(self, windows: Iterable[tuple[float, float]]) -> None:
        ranges: list[tuple[float, float]] = []
        for low, high in windows:
            for factor in _WRITTEN_AS:
                a, b = low * factor, high * factor
                # The evidence rounds too: half a unit, or a percent of a coarse number.
                pad = max(0.5, b * 0.01)
                ranges.append((a - pad, b + pad))
        ranges.sort()
        merged: list[tuple[float, float]] = []
        for a, b in ranges:
            if merged and a <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], b))
            else:
                merged.append((a, b))
        self._lows = [a for a, _ in merged]
        self._highs = [b for _, b in merged]

    def wants(self, magnitude: float) -> bool:
        at = bisect.bisect_right(self._lows, magnitude) - 1
        return at >= 0 and magnitude <= self._highs[at]


@dataclass(frozen=True, slots=True)
class _Context:
    """What every number of one piece of evidence shares: its index, company and concept."""

    index: int
    company: str
    concept: str
    sieve: Sieve | None = None
    section: str = ""


def _context(index: int, evidence: Evidence, sieve: Sieve | None = None) -> _Context:
    company = _COMPANY.search(evidence.label)
    concept = _CONCEPT.search(evidence.label)
    words = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", concept.group(1)) if concept else ""
    return _Context(index, company.group(1).upper() if company else f"#{index}", words, sieve)


def _read_text(context: _Context, text: str, families: _Families) -> Iterator[Found]:
    lines = text.split("\n")
    offsets: list[int] = []
    at = 0
    for line in lines:
        offsets.append(at)
        at += len(line) + 1
    blocks: list[tuple[str, int, int]] = []  # ("prose" | "table", first line, end line)

    def next_row(j: int, within: bool = False) -> int | None:
        """The table line a run of up to three row-group titles ("CURRENT ASSETS:") leads to;
        inside a table also across a blank line ("Gross margin percentage:" after a gap),
        unless what follows is a new table's header."""
        for k in range(j, min(j + 5, len(lines))):
            line = lines[k]
            if _is_table_line(line) or _TABLE_SEPARATOR.match(line):
                if k > j and not line.strip():
                    return None
                if k > j and any(not x.strip() for x in lines[j:k]):
                    if _is_header_row(_cells(line)):
                        return None
                return k
            if not line.strip():
                if not within:
                    return None
                continue
            if not _SECTION_LINE.match(line.strip()):
                return None
        return None

    i = 0
    prose_start: int | None = None
    while i < len(lines):
        if not (_is_table_line(lines[i]) and next_row(i + 1) is not None):
            if lines[i].startswith("#") and prose_start is not None:
                # A section of a merged tool result starts: its own company, its own prose.
                blocks.append(("prose", prose_start, i))
                prose_start = None
            if prose_start is None:
                prose_start = i
            i += 1
            continue
        if prose_start is not None:
            blocks.append(("prose", prose_start, i))
            prose_start = None
        j = i + 1
        while (k := next_row(j, within=True)) is not None:
            j = k + 1
        blocks.append(("table", i, j))
        i = j
    if prose_start is not None:
        blocks.append(("prose", prose_start, len(lines)))
    sections = _sections(lines)
    for n, (kind, first, end) in enumerate(blocks):
        local = context
        for line_no, company, concept, call in sections:
            if line_no > first:
                break
            # A data call's section ("### ...") starts afresh; a title under it ("## ...")
            # adds to it.
            local = _Context(
                context.index,
                company or local.company,
                concept if call else (concept or local.concept),
                context.sieve,
                call or local.section,
            )
        if kind == "prose":
            start_char = offsets[first]
            end_char = offsets[end - 1] + len(lines[end - 1]) if end > first else start_char
            yield from _read_prose(local, text, start_char, end_char, families)
        else:
            scale = _table_scale(lines, blocks, n)
            yield from _read_table(local, lines[first:end], scale, families)


def _sections(lines: Sequence[str]) -> list[tuple[int, str | None, str, str]]:
    """Where a merged tool result's sections start ("### income_statements(company=AAPL,
    ...)", "## NVIDIA CORP (NVDA) — ..."), with the company and XBRL concept each is about."""
    found: list[tuple[int, str | None, str, str]] = []
    for i, line in enumerate(lines):
        if not line.startswith("##"):
            continue
        call = line[4:].strip() if line.startswith("### ") else ""
        company = _COMPANY.search(line)
        heading = _HEADING_COMPANY.match(line)
        concept = _CONCEPT.search(line)
        ticker = (
            company.group(1).upper() if company else heading.group("ticker") if heading else None
        )
        words = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", concept.group(1)) if concept else ""
        if ticker or words or call:
            found.append((i, ticker, words, call))
    return found


def _table_scale(
    lines: Sequence[str], blocks: Sequence[tuple[str, int, int]], n: int
) -> TableScale | None:
    """The scale the table's caption or its "Units:" line declares; else the last one the
    document declared before it (a filing section's tables share "dollars in millions")."""
    _, first, end = blocks[n]
    # Dexter puts "Units: USD millions, ..." right under its tables.
    for line in lines[end : end + 3]:
        if line.lower().startswith(("units:", "values are", "(unit")):
            found = declared_scales(line)
            if found is not None:
                return TableScale(found.money, found.shares, True)
    # A filing's "(dollars in millions)" or a title's "(unit: USD)" comes before.
    back = first - 1
    looked = 0
    while back >= 0 and looked < 6:
        line = lines[back]
        if n > 0 and blocks[n - 1][0] == "table" and back < blocks[n - 1][2]:
            break
        found = declared_scales(line)
        if found is not None:
            return found
        if line.startswith("## "):
            return None
        if line.strip():
            looked += 1
        back -= 1
    for line in reversed(lines[:back]):
        if line.startswith("## "):
            return None
        found = declared_scales(line)
        if found is not None and found.money not in (None, 1.0):
            # Not declared for this table: its amounts may be in the document's scale or not.
            return TableScale(found.money, found.shares, found.except_per_share, inherited=True)
    return None


_PERIOD_HEADERS = re.compile(
    r"^(?:period|report(?:ing)? period|period end(?:ed)?|date|as of|fiscal (?:year|period)|"
    r"year|quarter|transaction date|trade date|end date)$",
    re.IGNORECASE,
)
# Columns of record tables that name, date or cite a row rather than measure it.
_NOT_FIGURE_COLUMNS = frozenset(
    {
        "form",
        "filed",
        "frame",
        "source",
        "sources",
        "filing's fiscal period",
        "accession",
        "accession number",
        "filing date",
        "ticker",
        "cik",
        "role",
        "insider",
        "type",
        "security",
        "filer",
        "#",
        "no.",
        "rank",
        "cusip",
        "class",
        "issuer",
        "put/call",
    }
)
_CHANGE_COLUMN = re.compile(r"^(?:%\s*)?(?:change|growth|increase|decrease)(?:\s*\(?%\)?)?$", re.I)
_GENERIC_COLUMNS = re.compile(r"^(?:value|amount|values?|total)$", re.IGNORECASE)


def _spread_header(row: Sequence[str], width: int) -> list[str]:
    """A header row aligned to the table's columns. A row of fewer titles than columns spans
    them evenly ("| Thirteen Weeks Ended | Thirty-Nine Weeks Ended" over four dates)."""
    titles = [c for c in row if c]
    values = width - 1
    if row and not row[0] and titles and len(titles) < values and values % len(titles) == 0:
        each = values // len(titles)
        return ["", *(t for t in titles for _ in range(each))]
    return [""] * (width - len(row)) + list(row)


_QUARTER_WORDS = re.compile(
    r"\b(?:thirteen|fourteen|13|14)[ -]weeks?\b|\bthree months\b|\bquarter\b", re.IGNORECASE
)
_YTD_WORDS = re.compile(
    r"\b(?:twenty-six|thirty-nine|26|39|52|53)[ -]weeks?\b|\b(?:six|nine) months\b|"
    r"\byear[- ]to[- ]date\b|\bYTD\b",
    re.IGNORECASE,
)


@lru_cache(maxsize=1024)
def _span_words(text: str) -> str | None:
    """The span a heading or sentence gives its figures: "13-week" a quarter, "39-week" or
    "nine months" a year to date."""
    quarter, ytd = _QUARTER_WORDS.search(text), _YTD_WORDS.search(text)
    if quarter and not ytd:
        return "quarter"
    if ytd and not quarter:
        return "ytd"
    return None


def _is_header_row(cells: Sequence[str]) -> bool:
    """A row of column titles: nothing in it is a figure (years and dates are not)."""
    for cell in cells[1:]:
        for token in scan(cell):
            if token.skip is None or token.skip == "small count":
                return False
    return any(cells)


def _read_table(
    context: _Context,
    rows: Sequence[str],
    scale: TableScale | None,
    families: _Families,
) -> Iterator[Found]:
    kept = [r for r in rows if not _TABLE_SEPARATOR.match(r) and _is_table_line(r)]
    if not kept:
        return
    parsed = [_cells(r) for r in kept]
    width = max(len(r) for r in parsed)
    # In a table whose rows do not start with a bar, a row that does has no label.
    bare = sum(1 for r in kept if not r.lstrip().startswith("|")) > len(kept) // 2
    parsed = [
        ["", *cells] if bare and r.lstrip().startswith("|") and len(cells) < width else cells
        for r, cells in zip(kept, parsed, strict=True)
    ]
    # Header rows: the first row, and the rows after it that hold no figures ("November 2,
    # 2024 | February 3, 2024"). Shorter rows align right: their empty first cell is dropped.
    head = 1
    while head < len(parsed) and head < 3 and _is_header_row(parsed[head]):
        head += 1
    headers = [_spread_header(r, width) for r in parsed[:head]]
    header = [" ".join(h[col] for h in headers if h[col]).strip() for col in range(width)]
    header_scale = [declared_scale(h) for h in header]
    column_periods: list[EvidencePeriod | None] = [None]
    for col in range(1, width):
        found = None
        for h in reversed(headers):
            found = header_period(h[col])
            if found is not None:
                break
        # "Thirteen Weeks Ended" over "November 2, 2024": a quarter, not a year to date.
        span = _span_words(header[col])
        if found is not None and span is not None:
            found = replace(found, span=span)
        column_periods.append(found)
    # "| 2024 | Change | 2023 | Change | 2022": a change column is its left neighbour's.
    for col in range(2, width):
        if column_periods[col] is None and _CHANGE_COLUMN.match(header[col].strip()):
            column_periods[col] = column_periods[col - 1]
    periods_across = any(p is not None for p in column_periods)
    period_column = next(
        (i for i, h in enumerate(header) if _PERIOD_HEADERS.match(h.strip())), None
    )
    header_flags = [_unit_flags(h) for h in header]
    column_fields: list[int] = []
    column_period_families: list[int] = []
    for col in range(width):
        period = column_periods[col]
        column_period_families.append(
            families.key("period", context.company, _period_key(period))
            if period is not None
            else families.new()
        )
        field = header[col]
        if _GENERIC_COLUMNS.match(field) and context.concept:
            field = context.concept
        column_fields.append(families.key("field", context.company, field.lower()))
    # Columns that are periods themselves, not their changes: a short row ("Percentage of
    # total net sales | 8% | 8% | 7%") holds one value for each.
    own_periods = [
        c
        for c in range(1, width)
        if column_periods[c] is not None and not _CHANGE_COLUMN.match(header[c].strip())
    ]
    cells: list[tuple[Found, int]] = []
    for rank, row in enumerate(parsed[head:]):
        if len(row) < width:
            if periods_across and len(row) - 1 == len(own_periods) < width - 1:
                spread = [row[0]] + [""] * (width - 1)
                for col, cell in zip(own_periods, row[1:], strict=True):
                    spread[col] = cell
                row = spread
            else:
                row = row + [""] * (width - len(row))
        label = row[0]
        if label == "Sources":
            continue  # Dexter's row of citation ids
        row_period: EvidencePeriod | None = None
        row_period_family = 0
        if not periods_across:
            if period_column is not None:
                row_period = header_period(row[period_column])
            if row_period is None:
                row_period = header_period(label)
            row_period_family = (
                families.key("period", context.company, _period_key(row_period))
                if row_period is not None
                else families.new()
            )
        row_field = families.key("field", context.company, label.lower())
        label_flags = _unit_flags(label)
        label_scale = declared_scale(label)
        for col in range(1, width) if periods_across else range(width):
            cell = row[col]
            if not cell or col == period_column:
                continue
            if not periods_across and header[col].lower() in _NOT_FIGURE_COLUMNS:
                continue
            if periods_across:
                period = column_periods[col]
                field = label
                field_family, period_family = row_field, column_period_families[col]
                flags = label_flags | header_flags[col]
            else:
                period = row_period
                field = header[col] or label
                if _GENERIC_COLUMNS.match(field) and context.concept:
                    field = context.concept
                field_family, period_family = column_fields[col], row_period_family
                flags = header_flags[col] | label_flags | _unit_flags(field)
            cell_scale = label_scale or header_scale[col]
            simple = simple_cell(cell)
            if simple is None and _DIGIT_IN.search(cell) is None:
                continue
            for token in (simple,) if simple is not None else scan(cell):
                if token.skip in _NOT_NUMBERS and not (token.currency or token.percent):
                    continue
                for value, kind, from_ratio in _cell_kinds(token, cell, flags, cell_scale, scale):
                    cells.append(
                        (
                            Found(
                                value,
                                kind,
                                context.index,
                                field,
                                period,
                                token.text,
                                field_family,
                                period_family,
                                from_ratio,
                                _half(token, value),
                                -1 if periods_across else rank,
                                context.company,
                                context.section,
                            ),
                            token.decimals,
                        )
                    )
    # A table prints its amounts to one precision and drops trailing zeros ("1,907.9" and
    # "-816" in one table): a shorter amount is exact to the table's precision.
    places = max((d for f, d in cells if f.kind == MONEY), default=0)
    for number, decimals in cells:
        if number.kind == MONEY and decimals < places and number.half:
            number = number._replace(half=number.half * 10.0 ** (decimals - places))
        yield number


_DIGIT_IN = re.compile(r"[0-9]")


@dataclass(frozen=True, slots=True)
class _UnitFlags:
    """What a row label or column header says about its cells' unit."""

    percent: bool = False
    per_share: bool = False
    share_counts: bool = False
    shares_word: bool = False
    not_shares: bool = False

    def __or__(self, other: _UnitFlags) -> _UnitFlags:
        return _UnitFlags(
            self.percent or other.percent,
            self.per_share or other.per_share,
            self.share_counts or other.share_counts,
            self.shares_word or other.shares_word,
            self.not_shares or other.not_shares,
        )

    @property
    def share_count(self) -> bool:
        return self.share_counts or (self.shares_word and not self.not_shares)


_NO_FLAGS = _UnitFlags()


@lru_cache(maxsize=4096)
def _unit_flags(text: str) -> _UnitFlags:
    if not text:
        return _NO_FLAGS
    return _UnitFlags(
        bool(_PERCENT_LABEL.search(text)),
        bool(_PER_SHARE_LABEL.search(text)),
        bool(_SHARE_COUNTS.search(text.strip())),
        bool(_SHARES_LABEL.search(text)),
        bool(_NOT_SHARE_COUNTS.search(text)),
    )


def _period_key(period: EvidencePeriod) -> tuple[object, ...]:
    return (period.fiscal_years, period.quarter, period.end, period.span)


_NOT_SHARE_COUNTS = re.compile(
    r"issu|purchas|repurchas|proceeds|payment|paid|value|cost|compensation|price|per share|"
    r"dividend|premium|capital|par\b",
    re.IGNORECASE,
)
_SHARE_COUNTS = re.compile(
    r"number of shares|shares (?:purchased|outstanding|repurchased|issued)|share count|"
    r"weighted[- ]average shares|shares \((?:millions|thousands)\)|\bshares \(net\)|^shares$|"
    r"^volume$|^owned after$|shares owned",
    re.IGNORECASE,
)
# Per-share amounts are small; a "(USD)" column of large numbers holds amounts.
_PER_SHARE_LIMIT = 10_000


def _cell_kinds(
    token: Token,
    cell: str,
    flags: _UnitFlags,
    cell_scale: float | None,
    scale: TableScale | None,
) -> list[tuple[float, str, bool]]:
    money_scale = scale.money if scale is not None else None
    if token.percent or token.bps or (flags.percent and not token.multiple):
        return [(token.value, PERCENT, False)]
    if token.multiple:
        return [(token.value, MULTIPLE, False), (token.value * 100, PERCENT, True)]
    if token.scale_word:
        kind = SHARES if token.shares or flags.share_count else MONEY
        return [(token.value, kind, False)]
    if token.per_share:
        return [(token.value, PER_SHARE, False)]
    if cell_scale is not None and cell_scale != 1.0:
        kind = SHARES if flags.share_count else MONEY
        return [(token.mantissa * cell_scale, kind, False)]
    small = abs(token.mantissa) < _PER_SHARE_LIMIT
    if (flags.per_share or (cell_scale == 1.0 and token.currency)) and small:
        out = [(token.mantissa, PER_SHARE, False)]
        if token.currency and money_scale not in (None, 1.0):
            # A cell that slipped into a per-share column (rows with fewer cells than the
            # header) may be an amount in the table's scale.
            out.append((token.mantissa * (money_scale or 1.0), MONEY, False))
        return out
    if flags.share_count:
        shares_scale = scale.shares if scale is not None and scale.shares else 1.0
        return [(token.mantissa * shares_scale, SHARES, False)]
    if "days" in cell.lower():
        return [(token.mantissa, NUMBER, False)]
    if money_scale is not None:
        out = [(token.mantissa * money_scale, MONEY, False)]
        if scale is not None and scale.inherited:
            out.append((token.mantissa, MONEY if token.currency or not small else NUMBER, False))
        # Per-share amounts in a table of thousands are written with cents.
        if (
            scale is not None
            and scale.except_per_share
            and token.decimals == 2
            and small
            and money_scale != 1.0
        ):
            out.append((token.mantissa, PER_SHARE, False))
        return out
    kind = MONEY if token.currency else NUMBER
    out = [(token.mantissa, kind, False)]
    if not token.currency and token.decimals >= 2 and abs(token.mantissa) < 10:
        out.append((token.mantissa * 100, PERCENT, True))
    return out


def _read_prose(
    context: _Context, text: str, start: int, end: int, families: _Families
) -> Iterator[Found]:
    sieve = context.sieve
    if sieve is None:
        starts = [start] + [m.end() for m in _SENTENCE_END.finditer(text, start, end)]
        bounds = list(zip(starts, [*starts[1:], end], strict=True))
    else:
        # Only the sentences holding a number the answer could be quoting.
        bounds = []
        for m in _DIGIT_RUN.finditer(text, start, end):
            if bounds and m.start() < bounds[-1][1]:
                continue
            if sieve.wants(float(m.group().replace(",", "") or 0)):
                bounds.append(_sentence_around(text, m.start(), start, end))
    for s_start, s_end in bounds:
        if s_end <= s_start:
            continue
        period: EvidencePeriod | None = None
        period_read = False
        family = 0
        for token in scan(text, start=s_start, end=s_end):
            if token.skip in _NOT_NUMBERS:
                continue
            if not period_read:
                sentence = text[s_start:s_end]
                period = years_in(sentence)
                span = _span_words(sentence)
                if period is not None and span is not None:
                    period = replace(period, span=span)
                period_read = True
                family = families.new()
            for value, kind, from_ratio in _prose_kinds(token):
                yield Found(
                    value,
                    kind,
                    context.index,
                    "",
                    period,
                    token.text,
                    families.new(),
                    family,
                    from_ratio,
                    _half(token, value),
                    -1,
                    context.company,
                    context.section,
                )


_SENTENCE_BREAKS = (". ", "; ", "? ", "! ", ".\n", "\n")


def _sentence_around(text: str, pos: int, start: int, end: int) -> tuple[int, int]:
    """The sentence around a position, by its punctuation (near enough for the years it
    names)."""
    left = start
    for mark in _SENTENCE_BREAKS:
        found = text.rfind(mark, start, pos)
        if found >= 0:
            left = max(left, found + len(mark))
    right = end
    for mark in _SENTENCE_BREAKS:
        found = text.find(mark, pos, end)
        if found >= 0:
            right = min(right, found + 1)
    return left, right


def _half(token: Token, value: float) -> float:
    """Half the unit of the token's last digit, in the normalised value's terms."""
    if token.mantissa == 0:
        return 0.5 * 10.0 ** (-token.decimals)
    return 0.5 * 10.0 ** (-token.decimals) * abs(value / token.mantissa)


def _prose_kinds(token: Token) -> list[tuple[float, str, bool]]:
    if token.percent or token.bps:
        return [(token.value, PERCENT, False)]
    if token.multiple:
        return [(token.value, MULTIPLE, False), (token.value * 100, PERCENT, True)]
    if token.per_share:
        return [(token.value, PER_SHARE, False)]
    if token.shares:
        return [(token.value, SHARES, False)]
    if token.currency or token.scale_word:
        kind = MONEY if token.scale_word or abs(token.mantissa) >= 1000 else PER_SHARE
        out = [(token.value, kind, False)]
        if kind == PER_SHARE:
            out.append((token.value, MONEY, False))
        return out
    out = [(token.value, NUMBER, False)]
    if token.decimals >= 2 and abs(token.mantissa) < 10:
        out.append((token.value * 100, PERCENT, True))
    return out


# ---------------------------------------------------------------------------------------------
# The index


def _is_calculation(evidence: Evidence) -> bool:
    return evidence.label.startswith("calculate")


def _calculation(
    index: int,
    evidence: Evidence,
    families: _Families,
    found: Sequence[Found],
    keys: Sequence[float],
) -> list[Found]:
    numbers = list(read_evidence(index, evidence, families))
    votes: dict[float, int] = {}
    for number in numbers:
        if number.kind != NUMBER or number.from_ratio:
            continue
        for scale in (1e3, 1e6, 1e9):
            size = abs(number.value) * scale
            at = bisect.bisect_left(keys, size - number.half * scale)
            if at < len(keys) and keys[at] <= size + number.half * scale:
                votes[scale] = votes.get(scale, 0) + 1
    if not votes:
        return numbers
    scale = max(votes, key=lambda s: votes[s])
    scaled = [
        f._replace(value=f.value * scale, half=f.half * scale)
        if f.kind == NUMBER and not f.from_ratio
        else f
        for f in numbers
    ]
    return numbers + scaled


class EvidenceIndex:
    """All numbers of a run's evidence, sorted by magnitude for window queries."""

    def __init__(self, evidence: Sequence[Evidence], sieve: Sieve | None = None) -> None:
        self.evidence = tuple(evidence)
        families = _Families()
        calculations = [i for i, e in enumerate(self.evidence) if _is_calculation(e)]
        found = [
            f
            for i, e in enumerate(self.evidence)
            if i not in calculations
            for f in read_evidence(i, e, families, sieve)
        ]
        found.sort(key=lambda f: abs(f.value))
        if calculations:
            # A calculation's numbers carry no unit: they are in the scale its inputs were
            # taken in, which the other evidence tells.
            keys = [abs(f.value) for f in found]
            for i in calculations:
                found += _calculation(i, self.evidence[i], families, found, keys)
            found.sort(key=lambda f: abs(f.value))
        self.found: tuple[Found, ...] = tuple(found)
        self._keys = [abs(f.value) for f in found]
        # The most recent period end each company's evidence reaches ("TTM" means up to it).
        self._companies = [_context(i, e).company for i, e in enumerate(self.evidence)]
        # Per company: the latest end of each span ("annual", "quarter", "ytd"), of each
        # quarter number ("q3"), and of any period ("trailing", what "TTM" runs to).
        self.latest: dict[str, dict[str, date]] = {}
        self._ends: dict[tuple[str, str], set[date]] = {}
        for f in found:
            period = f.period
            if period is None or period.end is None:
                continue
            if period.span not in ("ttm", "annual", "quarter", "ytd"):
                continue
            groups = [period.span or ""]
            if period.span != "ytd":
                groups.append("trailing")
            if period.quarter is not None:
                groups.append(f"q{period.quarter}")
            owner = f.company or self._companies[f.evidence]
            self._ends.setdefault((owner, period.span or ""), set()).add(period.end)
            ends = self.latest.setdefault(owner, {})
            for group in groups:
                known = ends.get(group)
                if known is None or period.end > known:
                    ends[group] = period.end
        self.by_field_family: dict[int, list[Found]] = {}
        self.by_period_family: dict[int, list[Found]] = {}
        for f in found:
            self.by_field_family.setdefault(f.field_family, []).append(f)
            self.by_period_family.setdefault(f.period_family, []).append(f)
        # Each row's field, company and the kinds of number in it.
        self._fields: dict[int, tuple[str, str, frozenset[str]]] = {
            family: (members[0].field, members[0].company, frozenset(m.kind for m in members))
            for family, members in self.by_field_family.items()
            if members[0].field
        }

    def named_families(self, words: frozenset[str], claim: Any) -> frozenset[int]:
        """The rows (field families) of the claim's company and kind its words name."""
        kinds: frozenset[str] = claim.kinds
        company: str | None = claim.company
        out = []
        for family, (field, owner, family_kinds) in self._fields.items():
            if company is not None and owner not in (company, "") and not owner.startswith("#"):
                continue
            if kinds & family_kinds and named(field, words):
                out.append(family)
        return frozenset(out)

    def window(self, low: float, high: float) -> Iterable[Found]:
        """Numbers whose magnitude lies in [low, high]."""
        lo = bisect.bisect_left(self._keys, low)
        hi = bisect.bisect_right(self._keys, high)
        return self.found[lo:hi]

    def label(self, found: Found) -> str:
        return self.evidence[found.evidence].label

    def newest_of_its_quarter(self, found: Found) -> bool:
        """Whether no later period of the company and span ends a whole number of years after
        this one (the same quarter, or year to date, of a later year)."""
        period = found.period
        if period is None or period.end is None or period.span not in ("quarter", "ytd"):
            return True
        company = found.company or self._companies[found.evidence]
        for later in self._ends.get((company, period.span), ()):
            days = (later - period.end).days
            if days > 300 and min(days % 365, 365 - days % 365) <= 12:
                return False
        return True

    def latest_ends(self, found: Found) -> dict[str, date]:
        """The latest fiscal year, quarter and trailing period of the number's company."""
        return self.latest.get(found.company or self._companies[found.evidence], {})

    def company(self, found: Found) -> str | None:
        """The ticker of the company the number is about, when its tool result says."""
        company = found.company or self._companies[found.evidence]
        return None if company.startswith("#") else company


_HEADING_COMPANY = re.compile(
    r"^## (?P<name>[^\n(]{2,80}?) \((?P<ticker>[A-Z][A-Z0-9.\-]{0,9})\)", re.M
)
_HEADING_FILING = re.compile(
    r"^## (?P<name>[A-Za-z][^\n]{1,60}?) (?:10-K|10-Q|8-K|20-F|6-K|40-F|S-1|DEF 14A)\b", re.M
)
_NAME_SUFFIX = re.compile(
    r"[,.]?\s+(?:inc|incorporated|corp|corporation|co|company|ltd|limited|plc|holdings|group|"
    r"n\.?v|s\.?a|ag|se)\.?$",
    re.IGNORECASE,
)


def company_names(evidence: Sequence[Evidence]) -> dict[str, str]:
    """How an answer may name the companies the evidence is about: ticker, name, short name
    ("NVIDIA CORP (NVDA)" -> NVDA, "nvidia corp", "nvidia"). Names are lower-case."""
    names: dict[str, str] = {}

    def add(raw_name: str, ticker: str) -> None:
        names.setdefault(ticker, ticker)
        name = raw_name.strip()
        while (short := _NAME_SUFFIX.sub("", name)) != name:
            name = short
        name = re.sub(r"^the\s+", "", name, flags=re.IGNORECASE).strip(" ,.")
        if len(name) >= 3 and name.upper() != ticker:
            names.setdefault(name.lower(), ticker)
            first = name.split()[0].strip(",.")
            if len(first) >= 4:
                names.setdefault(first.lower(), ticker)

    for e in evidence:
        labelled = _COMPANY.search(e.label)
        current = labelled.group(1).upper() if labelled else None
        if current:
            names.setdefault(current, current)
        for line in re.finditer(r"^##.*$", e.text, re.M):
            heading = line.group()
            called = _COMPANY.search(heading)
            if called:
                current = called.group(1).upper()
                names.setdefault(current, current)
                continue
            titled = _HEADING_COMPANY.match(heading)
            if titled:
                add(titled.group("name"), titled.group("ticker"))
                continue
            filing = _HEADING_FILING.match(heading)
            if filing and current:
                # "## BUCKLE INC 8-K filed 2024-11-22", under its call's company.
                add(filing.group("name"), current)
    return names
