"""Facts, contexts and labels of one filing's XBRL, read from its instance document.

EDGAR extracts every inline-XBRL filing's facts into `*_htm.xml` (an XBRL 2.1 instance) next to
the primary document, and older filings ship the instance itself; both are read here. Only what
the segment reader needs is kept: numeric facts with their period, explicit dimension members and
unit, and the company's own labels from its label linkbase (`*_lab.xml`). Pure functions over
bytes; fetching is the caller's job. The XML is untrusted, so it goes through `xmlsafe`.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

from dexter.data.errors import UpstreamError
from dexter.data.sec.xmlsafe import local_name, parse_xml

_INSTANCE_NS = "http://www.xbrl.org/2003/instance"
_DIMENSIONS_NS = "http://xbrl.org/2006/xbrldi"
_XLINK = "{http://www.w3.org/1999/xlink}"
_XSI_NIL = "{http://www.w3.org/2001/XMLSchema-instance}nil"
_NAMESPACE_DECLARATION = re.compile(rb'xmlns:([A-Za-z_][\w.-]*)\s*=\s*["\']([^"\']+)["\']')
# Label roles, best first: the terse label is the one the company prints in its tables
# ("North America"); the standard label is the taxonomy name ("North America Segment [Member]").
_LABEL_ROLES = (
    "http://www.xbrl.org/2003/role/terseLabel",
    "http://www.xbrl.org/2003/role/label",
    "http://www.xbrl.org/2003/role/verboseLabel",
)


@dataclass(frozen=True)
class Context:
    start: str | None  # YYYY-MM-DD; None for an instant
    end: str  # the instant, or the last day of the duration
    members: tuple[tuple[str, str], ...]  # (axis, member) QNames, sorted by axis
    typed: bool  # has a typed dimension (no member to name), which segment tables never use


@dataclass(frozen=True)
class Fact:
    concept: str  # "us-gaap:Revenues"
    context: Context
    unit: str  # "USD", "membership"
    value: float
    decimals: int | None  # None for INF or absent


@dataclass(frozen=True)
class Instance:
    facts: tuple[Fact, ...]
    document_type: str | None  # dei:DocumentType, "10-K"
    fiscal_year: int | None  # dei:DocumentFiscalYearFocus, the report's own fiscal year
    fiscal_period: str | None  # dei:DocumentFiscalPeriodFocus: "FY", "Q1", "Q2", "Q3"


def parse_instance(data: bytes, *, url: str | None = None) -> Instance:
    """The numeric facts of an XBRL instance or an inline-XBRL document (XHTML with `ix:`
    facts), each fact once (filers repeat them per table)."""
    root = parse_xml(data, what="XBRL instance", url=url)
    if local_name(root.tag) == "html":
        return _inline_instance(root, _prefixes(data), url=url)
    if local_name(root.tag) != "xbrl":
        raise UpstreamError(
            "The document is not an XBRL instance (its root is neither <xbrl> nor inline-XBRL "
            "<html>).",
            url=url,
        )
    prefixes = _prefixes(data)
    contexts = {
        c.get("id", ""): _context(c, prefixes) for c in root.iter(f"{{{_INSTANCE_NS}}}context")
    }
    units = {u.get("id", ""): _unit(u, prefixes) for u in root.iter(f"{{{_INSTANCE_NS}}}unit")}
    facts: dict[tuple[str, str, str], Fact] = {}
    dei: dict[str, str] = {}
    for element in root:
        ref = element.get("contextRef")
        if ref is None or not isinstance(element.tag, str):
            continue
        concept = _qname(element.tag, prefixes)
        raw = (element.text or "").strip()
        if concept.startswith("dei:") and raw:
            dei.setdefault(concept, raw)
        unit_ref = element.get("unitRef")
        context = contexts.get(ref)
        if unit_ref is None or context is None or element.get(_XSI_NIL) == "true":
            continue
        try:
            value = float(raw)
        except ValueError:
            continue
        decimals = element.get("decimals")
        fact = Fact(
            concept=concept,
            context=context,
            unit=units.get(unit_ref, unit_ref),
            value=int(value) if value.is_integer() else value,
            decimals=int(decimals) if decimals and decimals.lstrip("-").isdigit() else None,
        )
        facts.setdefault((concept, ref, fact.unit), fact)
    return _with_dei(tuple(facts.values()), dei)


def parse_labels(data: bytes, *, url: str | None = None) -> dict[str, str]:
    """Concept or member QName -> the company's label for it, from a label linkbase."""
    root = parse_xml(data, what="XBRL label linkbase", url=url)
    labels: dict[str, str] = {}
    for link in (
        e for e in root.iter() if isinstance(e.tag, str) and local_name(e.tag) == "labelLink"
    ):
        locators: dict[str, str] = {}
        resources: dict[str, dict[str, str]] = {}
        arcs: list[tuple[str, str]] = []
        for element in link:
            if not isinstance(element.tag, str):
                continue
            kind, name = local_name(element.tag), element.get(f"{_XLINK}label", "")
            if kind == "loc":
                fragment = element.get(f"{_XLINK}href", "").rpartition("#")[2]
                # Schema ids are `prefix_Local` ("us-gaap_NonUsMember", "amzn_AwsMember").
                prefix, _, local = fragment.partition("_")
                if local:
                    locators[name] = f"{prefix}:{local}"
            elif kind == "label" and element.text:
                role = element.get(f"{_XLINK}role", "")
                resources.setdefault(name, {})[role] = " ".join(element.text.split())
            elif kind == "labelArc":
                arcs.append((element.get(f"{_XLINK}from", ""), element.get(f"{_XLINK}to", "")))
        for source, target in arcs:
            concept, texts = locators.get(source), resources.get(target, {})
            text = next((texts[r] for r in _LABEL_ROLES if r in texts), None)
            if concept and text and concept not in labels:
                labels[concept] = text
    return labels


def _with_dei(facts: tuple[Fact, ...], dei: dict[str, str]) -> Instance:
    year = dei.get("dei:DocumentFiscalYearFocus", "")[:4]
    return Instance(
        facts,
        document_type=dei.get("dei:DocumentType"),
        fiscal_year=int(year) if year.isdigit() else None,
        fiscal_period=(dei.get("dei:DocumentFiscalPeriodFocus") or "").upper() or None,
    )


_INLINE_NS = "http://www.xbrl.org/2013/inlineXBRL"
_DIGITS = re.compile(r"[^0-9.]")


def _inline_instance(root: ET.Element, prefixes: dict[str, str], *, url: str | None) -> Instance:
    """Facts of an inline-XBRL document: `ix:nonFraction` values with their `scale`, `sign` and
    display `format`, contexts and units from its hidden `ix:resources`."""
    contexts: dict[str, Context] = {}
    units: dict[str, str] = {}
    for element in root.iter():
        if not isinstance(element.tag, str) or not element.tag.startswith(f"{{{_INSTANCE_NS}}}"):
            continue
        if local_name(element.tag) == "context":
            contexts[element.get("id", "")] = _context(element, prefixes)
        elif local_name(element.tag) == "unit":
            units[element.get("id", "")] = _unit(element, prefixes)
    if not contexts:
        raise UpstreamError("The document has no inline-XBRL contexts.", url=url)
    facts: dict[tuple[str, str, str], Fact] = {}
    dei: dict[str, str] = {}
    for element in root.iter(f"{{{_INLINE_NS}}}nonNumeric"):
        name, raw = element.get("name") or "", "".join(element.itertext()).strip()
        if name.startswith("dei:") and raw:
            dei.setdefault(name, raw)
    for element in root.iter(f"{{{_INLINE_NS}}}nonFraction"):
        concept, ref, unit_ref = (
            element.get("name"),
            element.get("contextRef"),
            element.get("unitRef"),
        )
        context = contexts.get(ref or "")
        if not concept or context is None or unit_ref is None or element.get(_XSI_NIL) == "true":
            continue
        value = _inline_value(element)
        if value is None:
            continue
        decimals = element.get("decimals")
        fact = Fact(
            concept=concept,
            context=context,
            unit=units.get(unit_ref, unit_ref),
            value=int(value) if value.is_integer() else value,
            decimals=int(decimals) if decimals and decimals.lstrip("-").isdigit() else None,
        )
        facts.setdefault((concept, ref or "", fact.unit), fact)
    return _with_dei(tuple(facts.values()), dei)


def _inline_value(element: ET.Element) -> float | None:
    """The number an `ix:nonFraction` stands for: displayed digits (in the format's decimal
    convention) times 10**scale, negated when `sign="-"`; `fixed-zero` dashes are 0."""
    shown = "".join(element.itertext()).strip()
    style = (element.get("format") or "").rpartition(":")[2].lower()
    if "zero" in style or shown in ("", "-", "—", "–"):
        number = 0.0
    else:
        if "comma-decimal" in style or "numcommadecimal" in style:
            shown = shown.replace(".", "").replace(" ", "").replace(",", ".")
        try:
            number = float(_DIGITS.sub("", shown))
        except ValueError:
            return None
    scale = element.get("scale") or "0"
    try:
        number *= 10.0 ** int(scale)
    except ValueError:
        return None
    number = round(number, 6)
    return -number if element.get("sign") == "-" else number


def _prefixes(data: bytes) -> dict[str, str]:
    """Namespace URI -> the prefix the filer declared (ElementTree keeps only the URI)."""
    found: dict[str, str] = {}
    for prefix, uri in _NAMESPACE_DECLARATION.findall(data):
        found.setdefault(uri.decode("utf-8", "replace"), prefix.decode("ascii", "replace"))
    return found


def _qname(tag: str, prefixes: dict[str, str]) -> str:
    if tag.startswith("{"):
        uri, _, local = tag[1:].partition("}")
        return f"{prefixes.get(uri, uri)}:{local}"
    return tag


def _context(element: ET.Element, prefixes: dict[str, str]) -> Context:
    start = end = None
    members: list[tuple[str, str]] = []
    typed = False
    for child in element.iter():
        if not isinstance(child.tag, str):
            continue
        name = local_name(child.tag)
        if name in ("startDate", "endDate", "instant"):
            day = (child.text or "").strip()[:10]
            if name == "startDate":
                start = day
            else:
                end = day
        elif name == "explicitMember":
            members.append(((child.get("dimension") or "").strip(), (child.text or "").strip()))
        elif name == "typedMember":
            typed = True
    return Context(start, end or "", tuple(sorted(members)), typed)


def _unit(element: ET.Element, prefixes: dict[str, str]) -> str:
    measures = [
        (m.text or "").strip().rpartition(":")[2]
        for m in element.iter()
        if isinstance(m.tag, str) and local_name(m.tag) == "measure"
    ]
    if len(measures) == 2 and any(local_name(c.tag) == "divide" for c in element):
        return f"{measures[0]}/{measures[1]}"
    return measures[0] if measures else (element.get("id") or "")
