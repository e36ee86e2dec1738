"""Memos (Markdown and plain text): headings, tickers, dates and periods, cited accessions, and
links to other files of the workspace."""

from __future__ import annotations

import re

from dexter.workspace import entities
from dexter.workspace.model import ACCESSION, PATH, PERIOD, TICKER, FileTags

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_SETEXT = re.compile(r"^(=+|-+)\s*$")
# A file of the workspace named in prose: "the rate comes from models/wacc.py".
_MENTIONED = re.compile(
    r"(?<![\w/.])((?:[\w.-]+/)*[\w.-]+\.(?:py|ipynb|xlsx|xlsm|csv|tsv|parquet|md|ts|js))\b"
)
_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?\s*(?:\"[^\"]*\")?\)")
MAX_HEADINGS = 12


def tag_memo(text: str) -> FileTags:
    found = FileTags("memo")
    lines = text.splitlines()
    headings: list[str] = []
    for number, line in enumerate(lines, 1):
        match = _HEADING.match(line)
        title = None
        if match:
            title = f"{match.group(1)} {match.group(2)}"
        elif number > 1 and _SETEXT.match(line) and lines[number - 2].strip():
            title = ("# " if line.startswith("=") else "## ") + lines[number - 2].strip()
        if title:
            headings.append(title)
            found.add(title.lstrip("# "), "heading", "def", number, title)
        for accession in entities.accessions(line):
            found.add(accession, ACCESSION, "ref", number, line.strip()[:160])
        targets = [t for t in _LINK.findall(line) if "://" not in t]
        targets += [t for t in _MENTIONED.findall(line) if not any(t in x for x in targets)]
        for target in targets:
            if not target.startswith(("#", "mailto:")):
                found.add(target.split("#", 1)[0], PATH, "ref", number)
    symbols = entities.tickers(text)
    # A ticker alone in a heading ("# AAPL update") is what the memo is about.
    for heading in headings:
        symbols += [w for w in entities.tickers(heading, min_bare=1) if w not in symbols]
    for symbol in symbols:
        found.add(symbol, TICKER, "ref", _first_line(lines, symbol))
    covered = entities.periods(text)
    for period in covered:
        found.add(period, PERIOD, "ref")
    for day in sorted(set(entities.dates(text))):
        found.add(day.isoformat(), PERIOD, "ref")
    title = headings[0] if headings else (lines[0].strip()[:100] if lines else "")
    found.outline = [title] if title else []
    found.outline += [h for h in headings[1:MAX_HEADINGS]]
    cited = found.names(ACCESSION)
    if symbols:
        found.outline.append("tickers: " + ", ".join(symbols[:8]))
    if cited:
        found.outline.append("cites: " + ", ".join(cited[:6]))
    return found


def _first_line(lines: list[str], word: str) -> int:
    pattern = re.compile(rf"(?<![\w]){re.escape(word)}(?![\w])")
    for number, line in enumerate(lines, 1):
        if pattern.search(line):
            return number
    return 0


__all__ = ["tag_memo"]
