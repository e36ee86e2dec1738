"""What the model reads for filing documents and full-text search hits.

Document text is filing text, written by someone else: it is framed as untrusted data the same
way web pages are (one framing helper for both), and every block carries its source id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from dexter.data.models import Source
from dexter.tools.citations import SourceLedger
from dexter.tools.finance.format import GAP, cite, source_legend, trim_text
from dexter.tools.untrusted import wrap_untrusted

if TYPE_CHECKING:
    from dexter.data.sec.filing_docs import DocumentText, FilingDocuments
    from dexter.data.sec.fulltext import SearchPage

# Files in every folder that are not documents anyone means to read.
_NOISE_TYPES = ("EX-101.", "XML", "ZIP", "EXCEL", "JSON", "GRAPHIC")


def _visible(kind: str | None, name: str) -> bool:
    upper = (kind or "").upper()
    if upper.startswith(_NOISE_TYPES):
        return False
    return not name.endswith(("-index.html", "-index-headers.html", ".txt", ".xsd", ".css", ".js"))


def format_documents(filing: FilingDocuments, *, ledger: SourceLedger) -> str:
    source = Source(
        provider="SEC EDGAR",
        url=filing.index_url,
        form=filing.form,
        accession_number=filing.accession_number,
        filing_date=filing.filing_date,
    )
    sid = cite(ledger, source)
    who = filing.company_name or f"CIK {int(filing.cik)}"
    period = f", period {filing.report_date}" if filing.report_date else ""
    lines = [
        f"## {who} {filing.form or 'filing'} filed {filing.filing_date or '?'}{period}, "
        f"acc. {filing.accession_number} [{sid}]"
    ]
    if filing.items:
        lines.append("Items: " + "; ".join(filing.items))
    shown = [d for d in filing.documents if _visible(d.type, d.name)]
    hidden = len(filing.documents) - len(shown)
    table = ["| Seq | Type | Document | Description | Size |", "|---|---|---|---|---|"]
    for doc in shown:
        size = f"{doc.size:,} B" if doc.size else ""
        table.append(
            f"| {doc.sequence or ''} | {doc.type or '?'} | {doc.name} | "
            f"{doc.description or ''} | {size} |"
        )
    # Descriptions are the filer's words.
    lines.append(wrap_untrusted(filing.index_url, "\n".join(table)))
    if hidden:
        lines.append(f"({hidden} XBRL, index and bundle files not shown.)")
    lines.append(
        "Read one with filing_document: document = primary, cover, an exhibit type (EX-99.1) "
        "or a file name."
    )
    lines += source_legend(ledger, [sid])
    return "\n".join(lines)


@dataclass(frozen=True)
class Window:
    text: str
    start: int
    end: int  # exclusive; the next call's offset when below total
    total: int
    focused: bool


def document_window(text: str, *, offset: int, max_chars: int, focus: str | None) -> Window:
    """The part of a document to show. With a focus and no offset, a long document is cut to
    the paragraphs that match; otherwise a plain window from `offset`, ending at a line break
    when one is near, so consecutive offsets cover the text exactly once."""
    total = len(text)
    if focus and offset == 0 and total > max_chars:
        trimmed = trim_text(text, focus=focus, max_chars=max_chars)
        if trimmed.matched:
            return Window(trimmed.text, 0, 0, total, True)
    start = min(max(offset, 0), total)
    end = min(start + max_chars, total)
    if end < total:
        cut = text.rfind("\n", start, end)
        if cut > start + max_chars // 2:
            end = cut + 1
    return Window(text[start:end], start, end, total, False)


def format_document(
    doc: DocumentText, *, ledger: SourceLedger, offset: int, max_chars: int, focus: str | None
) -> tuple[str, Window]:
    sid = cite(ledger, doc.source)
    who = doc.company_name or f"CIK {int(doc.cik)}"
    kind = doc.type or "document"
    what = "cover page of " if doc.cover_only else ""
    lines = [
        f"## {who} {doc.form or ''} filed {doc.filing_date or '?'} — {what}{kind} "
        f"{doc.name} [{sid}]".replace("  ", " "),
        f"URL: {doc.url}",
    ]
    if doc.description and doc.description.upper() != kind.upper():
        lines.append(f"Description: {doc.description}")
    window = document_window(doc.text, offset=offset, max_chars=max_chars, focus=focus)
    if window.focused:
        lines.append(
            f"(the paragraphs matching {focus!r} from {window.total:,} characters, omissions "
            f"marked {GAP}; read it in order with offset=0 and no focus)"
        )
    elif window.start or window.end < window.total:
        lines.append(f"(characters {window.start:,} to {window.end:,} of {window.total:,})")
    body = window.text if window.text.strip() else "(no readable text in this part)"
    lines.append(wrap_untrusted(doc.url, body))
    if not window.focused and window.end < window.total:
        lines.append(
            f"[More follows: call filing_document again with offset={window.end} to continue.]"
        )
    lines += source_legend(ledger, [sid])
    return "\n".join(lines), window


def format_search(page: SearchPage, *, ledger: SourceLedger, as_of: str | None = None) -> str:
    exact = "" if page.total_is_exact else "more than "
    lines = [f"## EDGAR full-text search: {page.query!r} — {exact}{page.total:,} documents"]
    if as_of:
        lines.append(f"(limited to documents filed on or before {as_of})")
    if not page.hits:
        lines.append("No documents matched. Try fewer or other words, or a wider date range.")
        return "\n".join(lines)
    table = [
        "| # | Filed | Company | Form | Document type | Accession | File | Source |",
        "|---|---|---|---|---|---|---|---|",
    ]
    ids: list[str | None] = []
    for n, hit in enumerate(page.hits, start=page.offset + 1):
        form = hit.form
        if hit.file_type and hit.file_type != hit.form:
            form = " ".join(x for x in (hit.form, hit.file_type) if x)
        source = Source(
            provider="SEC EDGAR",
            url=hit.url,
            form=form,
            accession_number=hit.accession_number,
            filing_date=hit.filing_date,
        )
        sid = cite(ledger, source)
        ids.append(sid)
        company = "; ".join(hit.company_names) or f"CIK {int(hit.cik)}"
        table.append(
            f"| {n} | {hit.filing_date or ''} | {company} | {hit.form or ''} | "
            f"{hit.file_type or ''} | {hit.accession_number} | {hit.file_name} | [{sid}] |"
        )
    # Company names and descriptions in hits are filer-written text.
    lines.append(wrap_untrusted(page.url, "\n".join(table)))
    following = page.offset + len(page.hits)
    if following < page.total:
        lines.append(f"More hits: call sec_search again with offset={following}.")
    lines.append(
        "Open a hit with filing_document (company = the CIK, accession_number, document = the "
        "file name), or web_fetch its URL."
    )
    lines += source_legend(ledger, ids)
    return "\n".join(lines)
