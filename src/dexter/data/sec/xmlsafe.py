"""Parsing untrusted SEC XML safely, and reading it without caring about namespaces.

Filings are written by anyone with EDGAR access, so the bytes are untrusted. The ownership and 13F
schemas never use a DTD, so rather than depend on defusedxml we refuse any document that declares a
DOCTYPE or ENTITY before it reaches the parser: that closes entity expansion ("billion laughs") and
external-entity tricks, and the stdlib parser resolves no external resources anyway.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator

from dexter.data.errors import UpstreamError

_DECLARATION = re.compile(r"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)


def parse_xml(data: bytes | str, *, what: str, url: str | None = None) -> ET.Element:
    """The root element of `data`, or an UpstreamError that names `what` failed and why."""
    text = _as_text(data, what=what, url=url)
    if not text.strip():
        raise UpstreamError(f"The {what} is empty.", url=url)
    if _DECLARATION.search(text):
        raise UpstreamError(
            f"Refusing to parse the {what}: it declares a DOCTYPE or ENTITY, which SEC "
            "documents never need and which can be used to attack XML parsers.",
            url=url,
        )
    try:
        return ET.fromstring(text)
    except ET.ParseError as exc:
        raise UpstreamError(
            f"The {what} is malformed or truncated XML ({exc}).",
            url=url,
            body=text[:500],
            hint="Fetch it again; if it keeps failing, the filing itself is broken.",
        ) from exc


def _as_text(data: bytes | str, *, what: str, url: str | None) -> str:
    if isinstance(data, str):
        return _strip_declaration(data)
    # Decoding ourselves means the DOCTYPE check sees the same characters the parser would,
    # whatever the encoding (a UTF-16 document would hide "<!DOCTYPE" from a bytes search).
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        encoding = "utf-16"
    elif data.startswith(b"\xef\xbb\xbf"):
        encoding = "utf-8-sig"
    else:
        match = re.match(rb"\s*<\?xml[^>]*encoding=[\"']([A-Za-z0-9._-]+)", data)
        encoding = match.group(1).decode("ascii") if match else "utf-8"
    try:
        text = data.decode(encoding)
    except (LookupError, UnicodeDecodeError):
        # Mislabelled encodings are common in old filings; Latin-1 never fails and keeps ASCII.
        text = data.decode("latin-1")
    if "\x00" in text[:64]:
        raise UpstreamError(f"The {what} is not text XML.", url=url)
    return _strip_declaration(text)


def _strip_declaration(text: str) -> str:
    # The parser rejects str input whose declaration names a different encoding than it sees.
    return re.sub(r"^\s*<\?xml[^>]*\?>", "", text, count=1)


def local_name(tag: str) -> str:
    """`{namespace}infoTable` -> `infoTable`."""
    return tag.rsplit("}", 1)[-1]


def children(element: ET.Element, name: str) -> Iterator[ET.Element]:
    """Direct children with local name `name`, in any namespace."""
    return (c for c in element if isinstance(c.tag, str) and local_name(c.tag) == name)


def child(element: ET.Element | None, *path: str) -> ET.Element | None:
    """The first element down `path` (local names), or None."""
    current = element
    for name in path:
        if current is None:
            return None
        current = next(children(current, name), None)
    return current


def descendants(element: ET.Element, name: str) -> Iterator[ET.Element]:
    """All descendants with local name `name`, in document order."""
    return (e for e in element.iter() if isinstance(e.tag, str) and local_name(e.tag) == name)


def text(element: ET.Element | None, *path: str) -> str | None:
    """Stripped text at `path`, or None when absent or blank."""
    found = child(element, *path) if path else element
    if found is None or found.text is None:
        return None
    value = " ".join(found.text.split())
    return value or None
