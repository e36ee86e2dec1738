"""HTML to readable markdown (the untrusted-data wrapper lives in `dexter.tools.untrusted`).

Extraction runs readability-lxml to find the main content, then markdownify (tables kept as
markdown tables). When readability keeps too little of the page (under 20% of its text, typical
of table-heavy filings and index pages) the whole body is converted instead.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from dexter.tools.untrusted import UNTRUSTED_NOTE, wrap_untrusted

__all__ = ["UNTRUSTED_NOTE", "Extracted", "html_to_markdown", "wrap_untrusted"]

_log = logging.getLogger(__name__)

MIN_READABLE_SHARE = 0.2
_DROPPED_TAGS = (
    "script",
    "style",
    "noscript",
    "template",
    "iframe",
    "object",
    "embed",
    "svg",
    "canvas",
    "form",
    "button",
    "select",
)
# lxml refuses a decoded string that still declares an encoding, which every inline-XBRL filing
# does (`<?xml version='1.0' encoding='ASCII'?>`); the text is already decoded, so drop it.
_XML_DECLARATION = re.compile(r"^\ufeff?\s*<\?xml[^>]*\?>", re.IGNORECASE)
_BLANK_RUNS = re.compile(r"\n[ \t]*(?:\n[ \t]*){2,}")


@dataclass(frozen=True)
class Extracted:
    title: str
    markdown: str
    used_readability: bool


def html_to_markdown(html: str | bytes, url: str | None = None) -> Extracted:
    """The page's title and main content as markdown."""
    # lxml, readability and markdownify (with bs4 under it) cost ~60 ms to import: only a fetch
    # that needs them pays it, not every run that merely offers the tool.
    from lxml import etree  # type: ignore[import-untyped]
    from readability import Document  # type: ignore[import-untyped]

    root = _parse(html)
    if root is None:
        return Extracted("", "", False)
    title = _title(root)
    _drop_noise(root)
    body = root.find(".//body")
    full_html = etree.tostring(body if body is not None else root, encoding="unicode")
    full_text_len = _text_len(body if body is not None else root)
    cleaned = etree.tostring(root, encoding="unicode")

    chosen = full_html
    used_readability = False
    try:
        doc = Document(cleaned, url=url)
        summary = str(doc.summary(html_partial=True))
        short = str(doc.short_title() or "").strip()
        title = title or short
        summary_root = _parse(summary)
        kept = _text_len(summary_root) if summary_root is not None else 0
        if full_text_len and kept >= MIN_READABLE_SHARE * full_text_len:
            chosen, used_readability = summary, True
    except Exception:
        _log.debug("readability failed; using the full body", exc_info=True)
        # readability gives up on some pages (e.g. no candidate blocks): use the full body.
        pass
    return Extracted(title, _to_markdown(chosen), used_readability)


def _parse(html: str | bytes) -> Any:
    import lxml.html  # type: ignore[import-untyped]
    from lxml import etree

    if isinstance(html, bytes):
        html = html.decode("utf-8", errors="replace")
    html = _XML_DECLARATION.sub("", html, count=1)
    if not html.strip():
        return None
    try:
        root = lxml.html.document_fromstring(html)
    except (etree.ParserError, ValueError):
        return None
    return root


def _title(root: Any) -> str:
    node = root.find(".//title")
    if node is not None and node.text_content().strip():
        return " ".join(node.text_content().split())
    h1 = root.find(".//h1")
    return " ".join(h1.text_content().split()) if h1 is not None else ""


def _drop_noise(root: Any) -> None:
    from lxml import etree

    for tag in _DROPPED_TAGS:
        for node in list(root.iter(tag)):
            node.drop_tree()
    for comment in list(root.iter(etree.Comment)):
        parent = comment.getparent()
        if parent is not None:
            parent.remove(comment)


def _text_len(root: Any) -> int:
    return len("".join(str(root.text_content()).split()))


def _to_markdown(html: str) -> str:
    from markdownify import markdownify

    text = str(
        markdownify(
            html,
            heading_style="ATX",
            bullets="-",
            strip=["img"],
            escape_underscores=False,
            escape_asterisks=False,
        )
    )
    lines = [line.rstrip() for line in text.splitlines()]
    return _BLANK_RUNS.sub("\n\n", "\n".join(lines)).strip()
