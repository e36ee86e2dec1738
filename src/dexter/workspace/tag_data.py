"""Data files: CSV/TSV columns, row count and the range of a date column; Parquet columns when
pyarrow happens to be installed (it is not a dependency: without it a Parquet file gets a coarse
outline)."""

from __future__ import annotations

import csv
import io
from datetime import date

from dexter.workspace import entities
from dexter.workspace.model import PERIOD, TICKER, FileTags

# Enough rows to find the date column and its range in a typical export; the tail is read too.
HEAD_BYTES = 1024 * 1024
TAIL_BYTES = 64 * 1024
MAX_COLUMNS_SHOWN = 12


def tag_csv(raw: bytes, *, delimiter: str = ",") -> FileTags:
    found = FileTags("data")
    text = _decode(raw[:HEAD_BYTES])
    rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    if not rows:
        found.outline = ["empty"]
        return found
    header = [h.strip() for h in rows[0]]
    body = rows[1:]
    if len(raw) > HEAD_BYTES:
        # The first rows and the last: a time series sorted either way shows its whole range.
        tail = _decode(raw[-TAIL_BYTES:]).split("\n", 1)[-1]
        body += list(csv.reader(io.StringIO(tail), delimiter=delimiter))
    for number, column in enumerate(header):
        found.add(column, "column", "def", 1, f"{column} (column {number + 1})")
    span = _date_range(header, body)
    count = raw.count(b"\n") - (0 if raw.endswith(b"\n") else -1) - 1
    shown = ", ".join(header[:MAX_COLUMNS_SHOWN]) + ("…" if len(header) > MAX_COLUMNS_SHOWN else "")
    found.outline = [f"columns: {shown}", f"{max(count, 0):,} rows"]
    if span is not None:
        first, last = span
        found.outline.append(f"dates {first.isoformat()} .. {last.isoformat()}")
        found.add(last.isoformat(), PERIOD, "ref", 0, "last date")
        found.add(first.isoformat(), PERIOD, "ref", 0, "first date")
    for symbol in _ticker_columns(header, body):
        found.add(symbol, TICKER, "ref")
    return found


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8-sig", errors="replace")


def _date_range(header: list[str], body: list[list[str]]) -> tuple[date, date] | None:
    best: tuple[date, date] | None = None
    # The first rows and the last (the tail read from a big file): both ends of a series.
    sample = body if len(body) <= 6000 else body[:5000] + body[-1000:]
    for column in range(len(header)):
        days = [d for row in sample if column < len(row) for d in entities.dates(row[column][:40])]
        if len(days) >= max(1, len([r for r in sample if column < len(r)]) // 2):
            span = (min(days), max(days))
            named = "date" in header[column].lower() or "period" in header[column].lower()
            if best is None or named:
                best = span
            if named:
                break
    return best


def _ticker_columns(header: list[str], body: list[list[str]]) -> list[str]:
    found: list[str] = []
    for column, name in enumerate(header):
        if name.lower() in ("ticker", "symbol", "tickers", "symbols"):
            found += [row[column].strip() for row in body[:2000] if column < len(row)]
        elif entities.is_ticker_literal(name):
            found.append(name)  # wide price tables: one column per ticker
    return [s for s in dict.fromkeys(found) if entities.is_ticker_literal(s)]


def tag_parquet(path: str) -> FileTags:
    found = FileTags("data")
    try:
        import pyarrow.parquet as pq  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        found.outline = ["Parquet (columns not read: pyarrow is not installed)"]
        return found
    schema = pq.read_schema(path)
    names = [str(n) for n in schema.names]
    for number, column in enumerate(names):
        found.add(column, "column", "def", 1, f"{column} (column {number + 1})")
    rows = pq.ParquetFile(path).metadata.num_rows
    found.outline = [f"columns: {', '.join(names[:MAX_COLUMNS_SHOWN])}", f"{rows:,} rows"]
    return found


__all__ = ["tag_csv", "tag_parquet"]
