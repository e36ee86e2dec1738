"""Readable text from SEC filing HTML, including inline XBRL.

Built on the stdlib `html.parser` so that no C extension is needed: EDGAR HTML is either XHTML
(inline XBRL, well formed) or old, loosely closed HTML, and a forgiving tag stack covers both.
Tables become pipe-separated rows so a number stays next to its label and its column peers.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from html.parser import HTMLParser

# Item extraction works on this module's text; importing it here gives callers one entry point.
from dexter.data.sec.items import ItemSection, extract_item, extract_items

__all__ = ["ItemSection", "extract_item", "extract_items", "html_to_text"]

# Elements whose boundaries start a new paragraph.
_BLOCK = frozenset(
    "address article aside blockquote body caption center dd div dl dt fieldset figcaption figure "
    "footer form h1 h2 h3 h4 h5 h6 header hr li main nav ol p pre section ul".split()
)
# Elements whose content a reader never sees.
_HIDDEN = frozenset({"script", "style", "head", "title", "noscript", "template", "ix:header"})
# Elements that never have an end tag, so must not be pushed on the stack.
_VOID = frozenset("area base br col embed hr img input link meta param source track wbr".split())
_DISPLAY_NONE = re.compile(r"display\s*:\s*none", re.IGNORECASE)
# Table cells that belong to a neighbour: "$" before a number, ")" or "%" after one.
_LEADING_CELL = frozenset({"$", "(", "($", "$("})
_TRAILING_CELL = re.compile(r"^(\)|%|\)%|%\))$")
_LOOKS_LIKE_HTML = re.compile(r"<(html|body|div|p|table|font|br|pre)\b", re.IGNORECASE)


def html_to_text(html: bytes | str) -> str:
    """Visible text of an SEC HTML document: paragraphs separated by blank lines, tables as
    `cell | cell` rows, hidden inline-XBRL data, scripts and styles dropped, entities decoded."""
    source = _decode(html) if isinstance(html, bytes) else html
    if not _LOOKS_LIKE_HTML.search(source):
        return _tidy(source)  # old filings are plain text, whose line breaks are the layout
    parser = _TextExtractor()
    parser.feed(source)
    parser.close()
    return _tidy(parser.result())


def _decode(data: bytes) -> str:
    # EDGAR documents are declared ASCII, UTF-8 or Windows-1252 (often wrongly): try strict UTF-8
    # first, then cp1252, whose only undefined bytes are replaced.
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


@dataclass
class _Table:
    rows: list[list[str]] = field(default_factory=list)
    row: list[str] | None = None
    cell: list[str] | None = None

    def close_cell(self) -> None:
        if self.cell is not None:
            if self.row is None:
                self.row = []
            self.row.append(" ".join("".join(self.cell).split()))
            self.cell = None

    def close_row(self) -> None:
        self.close_cell()
        if self.row is not None:
            self.rows.append(self.row)
            self.row = None

    def render(self) -> str:
        self.close_row()
        lines = [_render_row(r) for r in self.rows]
        return "\n".join(line for line in lines if line)


def _render_row(cells: list[str]) -> str:
    merged: list[str] = []
    pending = ""
    for cell in cells:
        if not cell:
            continue
        if cell in _LEADING_CELL:
            pending += cell
            continue
        if _TRAILING_CELL.match(cell) and merged:
            merged[-1] += cell
            continue
        merged.append(pending + cell)
        pending = ""
    if pending:
        merged.append(pending)
    # A header row leaves the label column blank; keeping that blank keeps its years over the
    # figures below them.
    if len(merged) > 1 and cells and not cells[0]:
        merged.insert(0, "")
    return " | ".join(merged).strip()


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self._out: list[str] = []
        self._stack: list[tuple[str, bool]] = []  # (tag, hides its content)
        self._hidden = 0
        self._tables: list[_Table] = []

    def result(self) -> str:
        while self._tables:
            self._end_table()
        return "".join(self._out)

    # -- stack ---------------------------------------------------------------------------------

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        hides = tag in _HIDDEN or any(
            name == "style" and value and _DISPLAY_NONE.search(value) for name, value in attrs
        )
        if tag not in _VOID:
            self._stack.append((tag, hides))
            if hides:
                self._hidden += 1
        if self._hidden:
            return
        self._open(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        # `<div/>` or `<br/>`: an element with no content, so only its boundary matters.
        if not self._hidden:
            self._open(tag)
            if tag not in _VOID:
                self._close(tag)

    def handle_endtag(self, tag: str) -> None:
        if not any(t == tag for t, _ in self._stack):
            return  # a stray end tag, common in old EDGAR HTML
        while self._stack:
            name, hides = self._stack.pop()
            if hides:
                self._hidden -= 1
            elif not self._hidden:
                self._close(name)
            if name == tag:
                break

    def handle_data(self, data: str) -> None:
        if self._hidden or not data:
            return
        text = data.replace("\xa0", " ")
        table = self._tables[-1] if self._tables else None
        if table is not None:
            if table.cell is None:
                table.cell = []  # text loose in a row still belongs to the table
            table.cell.append(text)
        elif any(tag == "pre" for tag, _ in self._stack):
            self._out.append(text)  # preformatted: its line breaks are the layout
        else:
            self._out.append(re.sub(r"\s+", " ", text))

    # -- structure -----------------------------------------------------------------------------

    def _open(self, tag: str) -> None:
        table = self._tables[-1] if self._tables else None
        if tag == "table":
            self._break(2)
            self._tables.append(_Table())
        elif table is not None:
            if tag == "tr":
                table.close_row()
                table.row = []
            elif tag in ("td", "th"):
                table.close_cell()
                table.cell = []
            elif tag == "br" or tag in _BLOCK:
                self._space_in_cell(table)
        elif tag == "br":
            self._out.append("\n")
        elif tag in _BLOCK:
            self._break(2)

    def _close(self, tag: str) -> None:
        table = self._tables[-1] if self._tables else None
        if tag == "table" and table is not None:
            self._end_table()
        elif table is not None:
            if tag in ("td", "th"):
                table.close_cell()
            elif tag == "tr":
                table.close_row()
            elif tag in _BLOCK:
                self._space_in_cell(table)
        elif tag in _BLOCK:
            self._break(2)

    def _end_table(self) -> None:
        rendered = self._tables.pop().render()
        if self._tables:  # a table nested in a cell reads as part of that cell
            outer = self._tables[-1]
            if outer.cell is None:
                outer.cell = []
            outer.cell.append(" " + rendered.replace("\n", " ; ") + " ")
        elif rendered:
            self._break(2)
            self._out.append(rendered)
            self._break(2)

    def _space_in_cell(self, table: _Table) -> None:
        if table.cell is not None:
            table.cell.append(" ")

    def _break(self, newlines: int) -> None:
        self._out.append("\n" * newlines)


_PAGE_NUMBER = re.compile(r"^(?:page\s+)?(?:\d{1,3}|[ivxlc]{1,6}|[a-z]-\d{1,3})$", re.IGNORECASE)
_NAV_LINES = frozenset(
    {"table of contents", "back to contents", "return to table of contents", "index"}
)
_TRAILING_NUMBER = re.compile(r"(?:^|(?<=[\s|]))\d{1,3}$")


def _tidy(raw: str) -> str:
    lines = [" ".join(line.split()) for line in raw.split("\n")]
    lines = _drop_page_furniture(lines)
    text = "\n".join(lines)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip() + "\n"


def _drop_page_furniture(lines: list[str]) -> list[str]:
    """Remove page numbers and running footers ("Apple Inc. | 2024 Form 10-K | 17").

    A footer is a short line that, with its trailing page number masked, repeats on many pages.
    """
    masked: list[str] = []
    numbers: dict[str, set[str]] = {}
    for line in lines:
        number = _TRAILING_NUMBER.search(line) if len(line) < 100 else None
        key = line[: number.start()] + "#" if number else ""
        masked.append(key)
        if number:
            numbers.setdefault(key, set()).add(number.group())
    counts = Counter(masked)
    # Page numbers change from page to page; a repeated table row keeps its figure.
    footers = {
        key
        for key, seen in numbers.items()
        if len(key) > 1 and counts[key] >= 5 and len(seen) >= 0.8 * counts[key]
    }
    # Links back to the contents, repeated at the top of every page.
    nav = Counter(line.lower() for line in lines if line.lower() in _NAV_LINES)
    return [
        line
        for line, key in zip(lines, masked, strict=True)
        if not _PAGE_NUMBER.match(line) and key not in footers and nav.get(line.lower(), 0) < 3
    ]
