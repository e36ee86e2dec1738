"""Jupyter notebooks: the code cells parsed as Python (magics removed), the Markdown cells read
as a memo, and what the notebook loads: data files, tickers, functions it defines."""

from __future__ import annotations

import json
import re
from typing import Any

from dexter.workspace import entities
from dexter.workspace.model import FUNCTION, IMPORT, PATH, PERIOD, TICKER, FileTags, Tag
from dexter.workspace.tag_code import tag_code

_MAGIC = re.compile(r"^\s*[%!?]")
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*$")


def tag_notebook(raw: bytes) -> FileTags:
    """Raises ValueError on a file that is not notebook JSON."""
    try:
        document = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"not notebook JSON: {error}") from None
    cells = document.get("cells") if isinstance(document, dict) else None
    if not isinstance(cells, list):
        raise ValueError("not notebook JSON: no cells")
    code_lines: list[str] = []
    # For each line of the joined code: the notebook cell (1-based, as Jupyter counts every
    # cell) and the line within it, so a tag says "cell 3, line 2".
    origin: list[tuple[int, int]] = []
    markdown: list[str] = []
    headings: list[str] = []
    code_cells = 0
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict):
            continue
        source = _source(cell.get("source"))
        if cell.get("cell_type") == "code":
            code_cells += 1
            lines = source.splitlines()
            code_lines += [("" if _MAGIC.match(line) else line) for line in lines]
            origin += [(number, k) for k in range(1, len(lines) + 1)]
            code_lines.append("")
            origin.append((number, len(lines) + 1))
        elif cell.get("cell_type") == "markdown":
            markdown.append(source)
            headings += [
                f"{m.group(1)} {m.group(2)}"
                for m in map(_HEADING.match, source.splitlines())
                if m is not None
            ]
    found = FileTags("notebook")
    code = "\n".join(code_lines)
    tag_code(code.encode("utf-8"), "python", into=found)
    found.kind = "notebook"
    found.tags = [_in_cell(tag, origin) for tag in found.tags]
    prose = "\n".join(markdown)
    literal = set(found.names(TICKER))
    for symbol in entities.tickers(prose):
        if symbol not in literal:
            found.add(symbol, TICKER, "ref")
    for period in entities.periods(prose + "\n" + code):
        found.add(period, PERIOD, "ref")
    for day in sorted(set(entities.dates(prose + "\n" + code))):
        found.add(day.isoformat(), PERIOD, "ref")
    for accession in entities.accessions(prose):
        found.add(accession, "accession", "ref")
    found.outline = [f"{code_cells} code cells, {len(markdown)} markdown cells"]
    found.outline += headings[:6]
    functions = found.names(FUNCTION, "def")
    if functions:
        found.outline.append("defines: " + ", ".join(functions[:10]))
    reads = found.names(PATH)
    if reads:
        found.outline.append("reads: " + ", ".join(reads[:8]))
    imports = [m for m in found.names(IMPORT) if not m.startswith(".")]
    if imports:
        found.outline.append("imports: " + ", ".join(_top_level(imports)[:10]))
    tickers = found.names(TICKER)
    if tickers:
        found.outline.append("tickers: " + ", ".join(tickers[:8]))
    return found


def _in_cell(tag: Tag, origin: list[tuple[int, int]]) -> Tag:
    """A tag of the joined code, placed in its cell: line 0 (a notebook has no lines of its
    own) and "cell N, line K" in front of its detail."""
    if not 0 < tag.line <= len(origin):
        return tag
    cell, line = origin[tag.line - 1]
    where = f"cell {cell}, line {line}"
    return tag._replace(line=0, detail=f"{where}: {tag.detail}" if tag.detail else where)


def _source(raw: Any) -> str:
    if isinstance(raw, list):
        return "".join(str(part) for part in raw)
    return str(raw or "")


def _top_level(modules: list[str]) -> list[str]:
    return list(dict.fromkeys(m.split(".")[0] for m in modules))


__all__ = ["tag_notebook"]
