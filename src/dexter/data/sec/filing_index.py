"""A filing folder's directory listing (`Archives/edgar/data/<cik>/<acc>/index.json`).

Submissions name only a filing's primary document; the listing is how we find the rest, above all
the raw XML of a Form 4 (whose primary document is an XSL-rendered view) and a 13F's information
table (a second XML file with no fixed name).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dexter.data.errors import NotFound, UpstreamError
from dexter.data.models import Record

# Files every folder has that are never the document a user means.
_BOOKKEEPING_SUFFIXES = ("-index.html", "-index-headers.html", "-index.htm", ".txt", ".zip")
_BOOKKEEPING_NAMES = {"FilingSummary.xml", "MetaLinks.json", "Financial_Report.xlsx"}


class FilingDocument(Record):
    name: str
    url: str
    size: int | None = None  # bytes; the SEC leaves it blank for generated pages
    last_modified: str | None = None


def parse_filing_index(data: Mapping[str, Any], *, folder_url: str) -> list[FilingDocument]:
    """The documents in a filing folder, in listing order. `folder_url` is the folder's URL."""
    directory = data.get("directory")
    items = directory.get("item") if isinstance(directory, Mapping) else None
    if not isinstance(items, list):
        raise UpstreamError("SEC filing index JSON has no directory.item list.", url=folder_url)
    base = folder_url.rstrip("/")
    documents = []
    for item in items:
        if not isinstance(item, Mapping) or not item.get("name"):
            continue
        name = str(item["name"])
        size = str(item.get("size") or "").strip()
        documents.append(
            FilingDocument(
                name=name,
                url=f"{base}/{name}",
                size=int(size) if size.isdigit() else None,
                last_modified=str(item["last-modified"]) if item.get("last-modified") else None,
            )
        )
    return documents


def content_documents(documents: Sequence[FilingDocument]) -> list[FilingDocument]:
    """The documents a filer wrote: no index pages, full-text bundles, or XBRL viewer output."""
    return [
        d
        for d in documents
        if not d.name.endswith(_BOOKKEEPING_SUFFIXES)
        and d.name not in _BOOKKEEPING_NAMES
        and not (d.name.startswith("R") and d.name[1:].removesuffix(".htm").isdigit())
        and not d.name.endswith((".css", ".js", ".jpg", ".gif", ".png"))
    ]


def is_xbrl_part(name: str) -> bool:
    """XBRL schema and linkbases (`*.xsd`, `*_lab.xml` …) and inline-XBRL extracts (`*_htm.xml`)."""
    lower = name.lower()
    return lower.endswith((".xsd", "_cal.xml", "_def.xml", "_lab.xml", "_pre.xml", "_htm.xml"))


def xml_documents(documents: Sequence[FilingDocument]) -> list[FilingDocument]:
    """The filer's own XML documents (ownership XML, 13F cover and table), not XBRL parts."""
    return [
        d
        for d in content_documents(documents)
        if d.name.lower().endswith(".xml") and not is_xbrl_part(d.name)
    ]


def find_information_table(documents: Sequence[FilingDocument]) -> FilingDocument:
    """The 13F information table: the XML file that is not the cover page (`primary_doc.xml`)."""
    candidates = [d for d in xml_documents(documents) if d.name.lower() != "primary_doc.xml"]
    if not candidates:
        raise NotFound(
            "This 13F filing has no information-table XML.",
            hint="Filings before 2013 used a text table, which is not supported.",
        )
    named = [d for d in candidates if "info" in d.name.lower() or "table" in d.name.lower()]
    pool = named or candidates
    # Without a telling name, the table is by far the largest XML in the folder.
    return max(pool, key=lambda d: d.size or 0)


def find_document(documents: Sequence[FilingDocument], name: str) -> FilingDocument:
    """A document by exact name, or NotFound listing what the folder does hold."""
    for d in documents:
        if d.name == name:
            return d
    available = ", ".join(d.name for d in content_documents(documents)) or "nothing"
    raise NotFound(f"The filing has no document named {name!r}.", hint=f"It holds: {available}.")
