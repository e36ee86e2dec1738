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
from dataclasses import dataclass
from typing import Any

from dexter.figures.numbers import SCALES, Token, scan
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


@dataclass(frozen=True, slots=True)
class Found:
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
    r"(?:\bin|\bUSD|US\$|\$|\bdollars(?:[ \u00a0]in)?|\bamounts[ \u00a0]in|[A-Z]{3})[ \u00a0]*"
    r"(?P<w>thousands|millions|billions)\b"
    r"|\((?P<w2>thousands|millions|billions)\)"
    r"|(?:\$|USD[ \u00a0]?)(?P<w3>000s|000's|'000|M|MM|mm|K|B|bn|mn)(?![A-Za-z])"
    r"|\bunit:[ \u00a0]*(?P<plain>[A-Z]{3})\b",
)
_SCALE_OF_DECL = {"000s": 1e3, "000's": 1e3, "'000": 1e3}


def declared_scale(text: str) -> float | None:
    """The scale a caption, header or label declares ("USD millions", "(in thousands)", "$M")."""
    found: float | None = None
    for m in _DECLARED_SCALE.finditer(text):
        if m.group("plain"):
            found = 1.0
            continue
        word = (m.group("w") or m.group("w2") or m.group("w3") or "").lower()
        found = _SCALE_OF_DECL.get(word) or SCALES.get(word.rstrip("s")) or SCALES.get(word)
    return found


_PER_SHARE_LABEL = re.compile(
    r"per[ \u00a0_](?:common[ \u00a0_]|diluted[ \u00a0_]|basic[ \u00a0_])?share|\bEPS\b|"
    r"\((?:USD|\$|EUR|GBP)\)|\bprice\b|\bclose\b|\bopen\b|\bhigh\b|\blow\b|dividends? per",
    re.IGNORECASE,
)
_SHARES_LABEL = re.compile(r"\bshares?\b", re.IGNORECASE)
_PERCENT_LABEL = re.compile(r"\(%\)|\bin %|percent", re.IGNORECASE)


# ---------------------------------------------------------------------------------------------
# Reading one piece of evidence


def read_evidence(index: int, evidence: Evidence, families: _Families) -> Iterator[Found]:
    text = evidence.text
    parsed = _json_body(text)
    if parsed is not None:
        yield from _walk_json(index, parsed, families, None)
        return
    yield from _read_text(index, text, families)


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
    index: int, node: Any, families: _Families, period: EvidencePeriod | None
) -> Iterator[Found]:
    if isinstance(node, list):
        for item in node:
            yield from _walk_json(index, item, families, period)
        return
    if not isinstance(node, dict):
        return
    row_period = _row_period(node) or period
    row_family = families.new() if row_period is not None else 0
    for key, value in node.items():
        if isinstance(value, (dict, list)):
            yield from _walk_json(index, value, families, row_period)
        elif isinstance(value, bool) or key in _SKIP_KEYS:
            continue
        elif isinstance(value, (int, float)):
            # JSON rows of one list share field names: a key is a field family per evidence.
            field_family = families.key("json", index, key)
            for normalised, kind, from_ratio in _json_kind(key, float(value)):
                yield Found(
                    normalised,
                    kind,
                    index,
                    key,
                    row_period,
                    str(value),
                    field_family,
                    row_family or families.new(),
                    from_ratio,
                )
        elif isinstance(value, str) and len(value) > 40:
            yield from _read_text(index, value, families)


# ---------------------------------------------------------------------------------------------
# Text: tables and prose


_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+(?=[A-Z(\"“])|\n")


def _is_table_line(line: str) -> bool:
    stripped = line.strip()
    return stripped.startswith("|") or stripped.count(" | ") >= 1


def _cells(line: str) -> list[str]:
    stripped = line.strip()
    if stripped.startswith("|"):
        stripped = stripped[1:]
    if stripped.endswith("|"):
        stripped = stripped[:-1]
    return [c.strip() for c in stripped.split("|")]


def _read_text(index: int, text: str, families: _Families) -> Iterator[Found]:
    lines = text.split("\n")
    offsets: list[int] = []
    at = 0
    for line in lines:
        offsets.append(at)
        at += len(line) + 1
    i = 0
    prose_start: int | None = None
    blocks: list[tuple[str, int, int]] = []  # ("prose"|"table", first line, end line)
    while i < len(lines):
        if (
            _is_table_line(lines[i])
            and (_TABLE_SEPARATOR.match(lines[i + 1]) if i + 1 < len(lines) else False)
        ) or (
            _is_table_line(lines[i])
            and i + 1 < len(lines)
            and _is_table_line(lines[i + 1])
            and not _TABLE_SEPARATOR.match(lines[i])
        ):
            if prose_start is not None:
                blocks.append(("prose", prose_start, i))
                prose_start = None
            j = i + 1
            while j < len(lines) and _is_table_line(lines[j]):
                j += 1
            blocks.append(("table", i, j))
            i = j
            continue
        if prose_start is None:
            prose_start = i
        i += 1
    if prose_start is not None:
        blocks.append(("prose", prose_start, len(lines)))
    for n, (kind, first, end) in enumerate(blocks):
        if kind == "prose":
            start_char = offsets[first]
            end_char = offsets[end - 1] + len(lines[end - 1]) if end > first else start_char
            yield from _read_prose(index, text, start_char, end_char, families)
        else:
            scale = _table_scale(lines, blocks, n)
            yield from _read_table(index, lines[first:end], scale, families)


def _table_scale(
    lines: Sequence[str], blocks: Sequence[tuple[str, int, int]], n: int
) -> float | None:
    """The scale the table's caption or its "Units:" line declares."""
    _, first, end = blocks[n]
    # Dexter puts "Units: USD millions, ..." right under its tables.
    for line in lines[end : end + 3]:
        if line.lower().startswith(("units:", "values are", "(unit")):
            found = declared_scale(line)
            if found is not None:
                return found
    # A filing's "(dollars in millions)" or a title's "(unit: USD)" comes before.
    back = first - 1
    looked = 0
    while back >= 0 and looked < 6:
        line = lines[back]
        if back < first - 1 and any(b[0] == "table" and b[2] == back + 1 for b in blocks):
            break
        found = declared_scale(line)
        if found is not None:
            return found
        if line.startswith("## "):
            break
        if line.strip():
            looked += 1
        back -= 1
    return None


_PERIOD_HEADERS = re.compile(
    r"^(?:period|report(?:ing)? period|period end(?:ed)?|date|as of|fiscal (?:year|period)|"
    r"year|quarter|transaction date|trade date|end date)$",
    re.IGNORECASE,
)


def _read_table(
    index: int, rows: Sequence[str], scale: float | None, families: _Families
) -> Iterator[Found]:
    header = _cells(rows[0])
    body = [_cells(r) for r in rows[1:] if not _TABLE_SEPARATOR.match(r)]
    width = max([len(header), *(len(r) for r in body)])
    if len(header) < width:
        header = [""] * (width - len(header)) + header
    header_scale = [declared_scale(h) for h in header]
    column_periods = [header_period(h) if i else None for i, h in enumerate(header)]
    periods_across = any(p is not None for p in column_periods)
    period_column = next(
        (i for i, h in enumerate(header) if _PERIOD_HEADERS.match(h.strip())), None
    )
    column_families = [families.new() for _ in header]
    for row in body:
        if len(row) < width:
            row = row + [""] * (width - len(row))
        label = row[0]
        row_family = families.new()
        row_period: EvidencePeriod | None = None
        if not periods_across:
            if period_column is not None:
                row_period = header_period(row[period_column])
            if row_period is None:
                row_period = header_period(label)
        label_scale = declared_scale(label)
        for col in range(1, width) if periods_across else range(width):
            cell = row[col]
            if not cell or col == period_column:
                continue
            if periods_across:
                period = column_periods[col]
                field, field_family, period_family = label, row_family, column_families[col]
            else:
                period = row_period
                field = header[col] or label
                field_family, period_family = column_families[col], row_family
            unit_text = f"{label} {header[col]}"
            cell_scale = label_scale or header_scale[col]
            for token in scan(cell):
                if token.skip in _NOT_NUMBERS and not (token.currency or token.percent):
                    continue
                for value, kind, from_ratio in _cell_kinds(
                    token, cell, unit_text, cell_scale, scale
                ):
                    yield Found(
                        value,
                        kind,
                        index,
                        field,
                        period,
                        token.text,
                        field_family,
                        period_family,
                        from_ratio,
                        _half(token, value),
                    )


def _cell_kinds(
    token: Token, cell: str, unit_text: str, cell_scale: float | None, table_scale: float | None
) -> list[tuple[float, str, bool]]:
    if token.percent or token.bps or (_PERCENT_LABEL.search(unit_text) and not token.multiple):
        return [(token.value, PERCENT, False)]
    if token.multiple:
        return [(token.value, MULTIPLE, False), (token.value * 100, PERCENT, True)]
    if token.scale_word:
        kind = SHARES if token.shares or _SHARES_LABEL.search(unit_text) else MONEY
        return [(token.value, kind, False)]
    if token.per_share:
        return [(token.value, PER_SHARE, False)]
    if cell_scale is not None and cell_scale != 1.0:
        kind = SHARES if _SHARES_LABEL.search(unit_text) else MONEY
        return [(token.mantissa * cell_scale, kind, False)]
    if _PER_SHARE_LABEL.search(unit_text) or (cell_scale == 1.0 and token.currency):
        return [(token.mantissa, PER_SHARE, False)]
    if _SHARES_LABEL.search(unit_text):
        return [(token.mantissa * (table_scale or 1.0), SHARES, False)]
    if "days" in cell.lower():
        return [(token.mantissa, NUMBER, False)]
    if table_scale is not None:
        return [(token.mantissa * table_scale, MONEY, False)]
    kind = MONEY if token.currency else NUMBER
    out = [(token.mantissa, kind, False)]
    if not token.currency and token.decimals >= 2 and abs(token.mantissa) < 10:
        out.append((token.mantissa * 100, PERCENT, True))
    return out


def _read_prose(
    index: int, text: str, start: int, end: int, families: _Families
) -> Iterator[Found]:
    sentence_starts = [start] + [m.end() for m in _SENTENCE_END.finditer(text, start, end)]
    bounds = list(zip(sentence_starts, [*sentence_starts[1:], end], strict=True))
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
                period = years_in(text[s_start:s_end])
                period_read = True
                family = families.new()
            for value, kind, from_ratio in _prose_kinds(token):
                yield Found(
                    value,
                    kind,
                    index,
                    "",
                    period,
                    token.text,
                    families.new(),
                    family,
                    from_ratio,
                    _half(token, value),
                )


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


class EvidenceIndex:
    """All numbers of a run's evidence, sorted by magnitude for window queries."""

    def __init__(self, evidence: Sequence[Evidence]) -> None:
        self.evidence = tuple(evidence)
        families = _Families()
        found = [f for i, e in enumerate(self.evidence) for f in read_evidence(i, e, families)]
        found.sort(key=lambda f: abs(f.value))
        self.found: tuple[Found, ...] = tuple(found)
        self._keys = [abs(f.value) for f in found]
        self.by_field_family: dict[int, list[Found]] = {}
        self.by_period_family: dict[int, list[Found]] = {}
        for f in found:
            self.by_field_family.setdefault(f.field_family, []).append(f)
            self.by_period_family.setdefault(f.period_family, []).append(f)

    def window(self, low: float, high: float) -> Iterable[Found]:
        """Numbers whose magnitude lies in [low, high]."""
        lo = bisect.bisect_left(self._keys, low)
        hi = bisect.bisect_right(self._keys, high)
        return self.found[lo:hi]

    def label(self, found: Found) -> str:
        return self.evidence[found.evidence].label
