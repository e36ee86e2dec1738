"""Which documents a filing holds and what each one is.

A filing folder's `index.json` lists file names only. The type of each document (the primary
8-K, EX-99.1, EX-10.1, GRAPHIC …) is in the submission header, served as
`{accession}-index-headers.html` (the SGML header with one `<DOCUMENT>` block per file), or in
the table of the human-readable `{accession}-index.htm`. Both are parsed here, leniently: a page
that does not parse just leaves the types unknown. Pure functions; fetching is the caller's job.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from pydantic import Field

from dexter.data.errors import NotFound
from dexter.data.models import Record, Source

# `&lt;TYPE&gt;EX-99.1` in the escaped <PRE> body, or `<TYPE>EX-99.1` in the raw header.
_BLOCK = re.compile(r"<DOCUMENT>(.*?)(?:</DOCUMENT>|(?=<DOCUMENT>)|\Z)", re.DOTALL | re.IGNORECASE)
_FIELD = re.compile(r"^<(TYPE|SEQUENCE|FILENAME|DESCRIPTION)>(.*)$", re.MULTILINE | re.IGNORECASE)
_HEADER_LINE = re.compile(r"^\s*([A-Z][A-Z0-9 \-]+?):\s*(.*?)\s*$", re.MULTILINE)
_ROW = re.compile(r"<tr[^>]*>(.*?)</tr>", re.DOTALL | re.IGNORECASE)
_CELL = re.compile(r"<td[^>]*>(.*?)</td>", re.DOTALL | re.IGNORECASE)
_HREF = re.compile(r'href="([^"]+)"', re.IGNORECASE)
_TAGS = re.compile(r"<[^>]+>")


class DocumentEntry(Record):
    """One document of a filing."""

    name: str
    url: str
    type: str | None = None  # as filed: "8-K", "EX-99.1", "GRAPHIC", "EX-101.SCH" …
    description: str | None = None
    sequence: int | None = None
    size: int | None = None


class FilingDocuments(Record):
    """A filing and every document in it, with types where the SEC's pages give them."""

    cik: str
    accession_number: str
    company_name: str | None = None
    form: str | None = None
    filing_date: str | None = None  # YYYY-MM-DD
    report_date: str | None = None
    items: list[str] = Field(default_factory=list)  # 8-K item descriptions or numbers
    index_url: str
    documents: list[DocumentEntry] = Field(default_factory=list)

    def primary(self) -> DocumentEntry:
        """The main document: sequence 1, else the one typed as the form, else the first."""
        readable = [d for d in self.documents if _is_readable(d.name)]
        for doc in readable:
            if doc.sequence == 1:
                return doc
        if self.form:
            for doc in readable:
                if (doc.type or "").upper() == self.form.upper():
                    return doc
        if readable:
            return readable[0]
        raise NotFound(f"Filing {self.accession_number} has no readable document.")


class DocumentText(Record):
    """One document's text, with where it came from."""

    cik: str
    accession_number: str
    company_name: str | None = None
    form: str | None = None
    filing_date: str | None = None
    name: str
    type: str | None = None
    description: str | None = None
    url: str
    cover_only: bool = False
    text: str
    source: Source


class HeaderInfo(Record):
    form: str | None = None
    filing_date: str | None = None
    report_date: str | None = None
    company_name: str | None = None
    items: list[str] = Field(default_factory=list)
    documents: list[DocumentEntry] = Field(default_factory=list)


def _date(raw: str | None) -> str | None:
    digits = (raw or "").strip()
    if len(digits) == 8 and digits.isdigit():
        return f"{digits[:4]}-{digits[4:6]}-{digits[6:]}"
    return None


def parse_index_headers(page: str | bytes, *, folder_url: str) -> HeaderInfo:
    """The `-index-headers.html` page: form, dates, filer, 8-K items, and each document's type."""
    text = page.decode("utf-8", "replace") if isinstance(page, bytes) else page
    # The readable copy sits in <PRE> with its angle brackets escaped; unescape to one form.
    body = text.split("<PRE>", 1)[-1] if "<PRE>" in text else text
    body = html.unescape(_TAGS.sub("", _a(body)))
    header = body.split("<DOCUMENT>", 1)[0]
    fields: dict[str, list[str]] = {}
    for key, value in _HEADER_LINE.findall(header):
        fields.setdefault(key.strip().upper(), []).append(value)
    documents: list[DocumentEntry] = []
    base = folder_url.rstrip("/")
    for block in _BLOCK.findall(body):
        values = {k.upper(): v.strip() for k, v in _FIELD.findall(block)}
        name = values.get("FILENAME")
        if not name:
            continue
        sequence = values.get("SEQUENCE", "")
        documents.append(
            DocumentEntry(
                name=name,
                url=f"{base}/{name}",
                type=values.get("TYPE") or None,
                description=values.get("DESCRIPTION") or None,
                sequence=int(sequence) if sequence.isdigit() else None,
            )
        )

    def first(key: str) -> str | None:
        found = fields.get(key)
        return found[0].strip() or None if found else None

    return HeaderInfo(
        form=first("CONFORMED SUBMISSION TYPE"),
        filing_date=_date(first("FILED AS OF DATE")),
        report_date=_date(first("CONFORMED PERIOD OF REPORT")),
        company_name=first("COMPANY CONFORMED NAME"),
        items=[v.strip() for v in fields.get("ITEM INFORMATION", []) if v.strip()],
        documents=documents,
    )


def _a(text: str) -> str:
    # Keep nothing of the links but drop them whole, so "Document 1 - file: x" noise goes too.
    return re.sub(r"<a\b[^>]*>.*?</a>", "", text, flags=re.DOTALL | re.IGNORECASE)


def parse_index_page(page: str | bytes, *, folder_url: str) -> list[DocumentEntry]:
    """The document table of `-index.htm`: Seq | Description | Document | Type | Size."""
    text = page.decode("utf-8", "replace") if isinstance(page, bytes) else page
    base = folder_url.rstrip("/")
    documents: list[DocumentEntry] = []
    for row in _ROW.findall(text):
        cells = _CELL.findall(row)
        if len(cells) < 4:
            continue
        link = _HREF.search(cells[2])
        name = html.unescape(_TAGS.sub("", cells[2])).strip()
        if link:
            name = link.group(1).rsplit("/", 1)[-1] or name
        name = name.split("?", 1)[0].removeprefix("ix?doc=")
        if not name or " " in name:
            continue
        seq = html.unescape(_TAGS.sub("", cells[0])).strip()
        size = html.unescape(_TAGS.sub("", cells[4])).strip() if len(cells) > 4 else ""
        documents.append(
            DocumentEntry(
                name=name,
                url=f"{base}/{name}",
                type=html.unescape(_TAGS.sub("", cells[3])).strip() or None,
                description=html.unescape(_TAGS.sub("", cells[1])).strip() or None,
                sequence=int(seq) if seq.isdigit() else None,
                size=int(size) if size.isdigit() else None,
            )
        )
    return documents


def merge_documents(
    listed: Sequence[DocumentEntry], typed: Sequence[DocumentEntry]
) -> list[DocumentEntry]:
    """Folder listing (every file, sizes) joined with the typed entries (type, description)."""
    by_name = {d.name: d for d in typed}
    merged: list[DocumentEntry] = []
    for doc in listed:
        info = by_name.pop(doc.name, None)
        if info is None:
            merged.append(doc)
        else:
            merged.append(
                doc.model_copy(
                    update={
                        "type": info.type,
                        "description": info.description,
                        "sequence": info.sequence,
                        "size": doc.size or info.size,
                    }
                )
            )
    merged += by_name.values()  # typed documents the listing did not show
    # Filed documents first in filing order, then the rest of the folder as listed.
    order = {id(d): i for i, d in enumerate(merged)}
    return sorted(
        merged,
        key=lambda d: (d.sequence is None, d.sequence or 0, order[id(d)]),
    )


def _is_readable(name: str) -> bool:
    return name.lower().endswith((".htm", ".html", ".txt", ".xml", ".pdf"))


def normalise_type(value: str) -> str:
    """`ex99.1`, `99.1`, `EX 99.1`, `Exhibit 99.1` -> `EX-99.1`; other types upper-cased."""
    text = value.strip().upper().replace("EXHIBIT", "EX")
    text = re.sub(r"^EX[\s\-_.]*", "EX-", text)
    if re.fullmatch(r"\d+(\.\d+)?[A-Z]?", text):
        text = "EX-" + text
    return text


COVER_WORDS = ("cover", "cover page", "coverpage")
PRIMARY_WORDS = ("", "primary", "main", "primary document", "main document")


def choose_document(filing: FilingDocuments, wanted: str | None) -> tuple[DocumentEntry, bool]:
    """The document a request names: primary (default), cover (the primary's cover page), an
    exhibit type (`EX-99.1`, `99.1`; `EX-99` takes the first EX-99.x), or a file name.
    Returns the document and whether only its cover page is wanted."""
    text = (wanted or "").strip()
    lower = text.lower()
    if lower in PRIMARY_WORDS:
        return filing.primary(), False
    if lower in COVER_WORDS:
        return filing.primary(), True
    for doc in filing.documents:
        if doc.name == text or doc.name.lower() == lower:
            return doc, False
    kind = normalise_type(text)
    exact = [d for d in filing.documents if (d.type or "").upper() == kind]
    if exact:
        return exact[0], False
    prefixed = [d for d in filing.documents if (d.type or "").upper().startswith(kind + ".")]
    if prefixed:
        return prefixed[0], False
    described = [d for d in filing.documents if lower and lower in (d.description or "").lower()]
    if described:
        return described[0], False
    shown = "; ".join(
        f"{d.name} ({d.type})" if d.type else d.name
        for d in filing.documents
        if _is_readable(d.name)
    )
    raise NotFound(
        f"Filing {filing.accession_number} has no document {text!r}.",
        hint=f"It holds: {shown or 'no readable documents'}. Ask for primary, cover, an "
        "exhibit type such as EX-99.1, or one of these file names.",
    )


_COVER_END = re.compile(
    r"^\s*(?:table of contents|part\s+i\b|item\s+1\.?\s|index\b)", re.IGNORECASE | re.MULTILINE
)
COVER_MAX_CHARS = 8_000


def cover_page(text: str) -> str:
    """The cover page of a document: up to the table of contents or Part I, at most 8,000
    characters (an 8-K's cover is usually the whole primary document)."""
    head = text[: COVER_MAX_CHARS * 2]
    found = _COVER_END.search(head, 400)
    end = found.start() if found else len(head)
    return text[: min(end, COVER_MAX_CHARS)].rstrip() + "\n"
