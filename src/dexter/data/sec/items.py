"""Items of 10-K and 10-Q filings (Item 1A Risk Factors, Item 7 MD&A …) from their text.

Input is the text `documents.html_to_text` makes. Every "Item N." heading appears at least twice:
in the table of contents and at the real section, and the text quotes item names in passing. We keep
only lines shaped like headings, drop table-of-contents entries (runs of headings with nothing but
page numbers between them), and then take the longest chain of headings in the form's own order,
latest first, so neither the contents nor a stray heading-like line can pull a section out of place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dexter.data.errors import NotFound, Unavailable


@dataclass(frozen=True)
class ItemSpec:
    key: str  # "1A" for a 10-K, "Part-I,Item-2" for a 10-Q
    part: str | None  # "I" or "II" for 10-Q items
    number: str  # "1A"
    title: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class ItemSection:
    item: str  # the ItemSpec key
    title: str  # the item's title from the form instructions
    heading: str  # the heading line as the filing writes it
    text: str  # the section, starting with its heading


def _k(number: str, title: str, *aliases: str) -> ItemSpec:
    return ItemSpec(key=number, part=None, number=number, title=title, aliases=aliases)


def _q(part: str, number: str, title: str, *aliases: str) -> ItemSpec:
    return ItemSpec(f"Part-{part},Item-{number}", part, number, title, aliases)


_MDA = ("mda", "mdanda", "mdna", "managementsdiscussion", "managementdiscussion")
_MARKET_RISK = ("marketrisk", "quantitativeandqualitativedisclosures")

# Titles follow the Form 10-K and Form 10-Q instructions.
TEN_K_ITEMS: tuple[ItemSpec, ...] = (
    _k("1", "Business"),
    _k("1A", "Risk Factors", "risks"),
    _k("1B", "Unresolved Staff Comments"),
    _k("1C", "Cybersecurity"),
    _k("2", "Properties"),
    _k("3", "Legal Proceedings"),
    _k("4", "Mine Safety Disclosures"),
    _k(
        "5",
        "Market for Registrant's Common Equity, Related Stockholder Matters and Issuer "
        "Purchases of Equity Securities",
    ),
    _k("6", "[Reserved]", "selectedfinancialdata"),
    _k(
        "7",
        "Management's Discussion and Analysis of Financial Condition and Results of Operations",
        *_MDA,
    ),
    _k("7A", "Quantitative and Qualitative Disclosures About Market Risk", *_MARKET_RISK),
    _k("8", "Financial Statements and Supplementary Data"),
    _k("9", "Changes in and Disagreements with Accountants on Accounting and Financial Disclosure"),
    _k("9A", "Controls and Procedures"),
    _k("9B", "Other Information"),
    _k("9C", "Disclosure Regarding Foreign Jurisdictions that Prevent Inspections"),
    _k("10", "Directors, Executive Officers and Corporate Governance"),
    _k("11", "Executive Compensation"),
    _k(
        "12",
        "Security Ownership of Certain Beneficial Owners and Management and Related Stockholder "
        "Matters",
    ),
    _k("13", "Certain Relationships and Related Transactions, and Director Independence"),
    _k("14", "Principal Accountant Fees and Services"),
    _k("15", "Exhibits and Financial Statement Schedules", "exhibits"),
    _k("16", "Form 10-K Summary"),
)

TEN_Q_ITEMS: tuple[ItemSpec, ...] = (
    _q("I", "1", "Financial Statements"),
    _q(
        "I",
        "2",
        "Management's Discussion and Analysis of Financial Condition and Results of Operations",
        *_MDA,
    ),
    _q("I", "3", "Quantitative and Qualitative Disclosures About Market Risk", *_MARKET_RISK),
    _q("I", "4", "Controls and Procedures"),
    _q("II", "1", "Legal Proceedings"),
    _q("II", "1A", "Risk Factors", "risks"),
    _q("II", "2", "Unregistered Sales of Equity Securities and Use of Proceeds"),
    _q("II", "3", "Defaults Upon Senior Securities"),
    _q("II", "4", "Mine Safety Disclosures"),
    _q("II", "5", "Other Information"),
    _q("II", "6", "Exhibits"),
)


def catalogue(form: str) -> tuple[ItemSpec, ...]:
    """The items a form can have, in filing order."""
    base = form.strip().upper()
    if base.startswith("10-K"):
        return TEN_K_ITEMS
    if base.startswith("10-Q"):
        return TEN_Q_ITEMS
    raise Unavailable(
        f"Splitting a {form} into items is not supported.",
        hint="Items can be extracted from 10-K and 10-Q filings (and their amendments).",
    )


def resolve_item(form: str, item: str) -> ItemSpec:
    """The item a person means: "1A", "Item 1A", "risk factors", "MD&A", "Part I, Item 2" …

    For a 10-Q a bare number means Part I when Part I has it ("2" is MD&A), else Part II ("1A",
    "5", "6").
    """
    items = catalogue(form)
    words = " ".join(re.sub(r"[^a-z0-9]+", " ", item.lower()).split())
    match = re.fullmatch(r"(?:part (?P<part>i{1,2}|[12]) )?(?:item )?(?P<num>\d{1,2}[a-c]?)", words)
    if match is None:  # "Item 1A Risk Factors": the number decides, the title is decoration
        match = re.match(r"(?:part (?P<part>i{1,2}|[12]) )?item (?P<num>\d{1,2}[a-c]?)\b", words)
    if match:
        number = match.group("num").upper()
        part = _roman(match.group("part"))
        for spec in items:
            if spec.number == number and (part is None or spec.part in (None, part)):
                return spec
    else:
        squashed = _squash(item)
        if len(squashed) >= 3:
            for spec in items:
                if squashed == _squash(spec.title) or squashed in spec.aliases:
                    return spec
            for spec in items:
                if len(squashed) >= 4 and _squash(spec.title).startswith(squashed):
                    return spec
    raise NotFound(
        f"A {form} has no item {item!r}.",
        hint=f"Items are: {', '.join(_label(s) for s in items)}.",
    )


def extract_items(text: str, form: str) -> dict[str, ItemSection]:
    """Every item found in the filing's text, keyed and ordered as in `catalogue(form)`."""
    items = catalogue(form)
    order = {spec.key: i for i, spec in enumerate(items)}
    headings = [h for h in _headings(text, items) if h.key in order]
    chosen = _best_chain(_without_contents(text, headings), order)

    sections: dict[str, ItemSection] = {}
    by_key = {spec.key: spec for spec in items}
    for i, heading in enumerate(chosen):
        end = chosen[i + 1].start if i + 1 < len(chosen) else _document_end(text, heading.start)
        body = _trim_trailing_parts(text[heading.start : end])
        spec = by_key[heading.key]
        sections[spec.key] = ItemSection(spec.key, spec.title, heading.line, body)
    return dict(sorted(sections.items(), key=lambda kv: order[kv[0]]))


def extract_item(text: str, form: str, item: str) -> ItemSection:
    """One item's section; NotFound names the item and lists the items the filing does have."""
    spec = resolve_item(form, item)
    sections = extract_items(text, form)
    if spec.key in sections:
        return sections[spec.key]
    found = ", ".join(_label(s) for s in catalogue(form) if s.key in sections) or "none"
    raise NotFound(
        f"Item {_label(spec)} ({spec.title}) was not found in this {form}.",
        hint=f"Items found: {found}.",
    )


# -- finding headings ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Heading:
    key: str
    start: int  # offset of the heading line
    end: int  # offset just after it
    line: str


_ITEM_LINE = re.compile(
    r"^(?:part\s+(?P<part>[iv]{1,3})\s*[,.:\-–—|]?\s*)?"
    r"item\s*(?P<num>\d{1,2}[a-c]?)(?![0-9a-z])\s*[.:\-–—|]?\s*(?P<rest>.*)$",
    re.IGNORECASE,
)
_PART_LINE = re.compile(r"^part\s+(?P<part>[iv]{1,3})\b(?!\s*,\s*item)", re.IGNORECASE)
_MAX_HEADING = 220


def _headings(text: str, items: tuple[ItemSpec, ...]) -> list[_Heading]:
    numbered = {spec.number for spec in items}
    ten_q = items[0].part is not None
    part: str | None = None
    found: list[_Heading] = []
    offset = 0
    for line in text.split("\n"):
        start, offset = offset, offset + len(line) + 1
        if len(line) > _MAX_HEADING:
            continue
        part_line = _PART_LINE.match(line)
        item_line = _ITEM_LINE.match(line)
        if part_line and len(line) < 80 and not item_line:
            part = part_line.group("part").upper()
            continue
        if not item_line:
            continue
        rest = item_line.group("rest").lstrip("| ")
        # "Item 1A of this report …" is a reference, not a heading: headings go on with a title.
        if rest and not (rest[0].isupper() or rest[0].isdigit() or rest[0] in "[(\"“'‘"):
            continue
        number = item_line.group("num").upper()
        if number not in numbered:
            continue
        if item_line.group("part"):
            part = item_line.group("part").upper()
        key = number
        if ten_q:
            # Without a "Part II" line, only Part II has items 1A, 5 and 6.
            in_part = part if part in ("I", "II") else ("II" if number in ("1A", "5", "6") else "I")
            key = f"Part-{in_part},Item-{number}"
        found.append(_Heading(key, start, offset, line))
    return found


_FILLER_LINE = re.compile(
    r"^(?:[\s|\d.ivx]*|page|pages|table of contents|index|part\s+[iv]{1,3}\b.{0,60})$",
    re.IGNORECASE,
)


def _without_contents(text: str, headings: list[_Heading]) -> list[_Heading]:
    """Drop table-of-contents entries: consecutive headings with only filler between them.

    A real heading with nothing under it ("Item 6. [Reserved]") is kept, because its neighbours
    have text; contents entries come in runs.
    """
    empty = []
    for i, h in enumerate(headings):
        end = headings[i + 1].start if i + 1 < len(headings) else len(text)
        body = text[h.end : end].split("\n")
        empty.append(all(_FILLER_LINE.match(line.strip()) for line in body))
    kept = []
    for i, h in enumerate(headings):
        in_run = empty[i] and ((i > 0 and empty[i - 1]) or (i + 1 < len(headings) and empty[i + 1]))
        if not in_run:
            kept.append(h)
    return kept


def _best_chain(headings: list[_Heading], order: dict[str, int]) -> list[_Heading]:
    """The longest run of headings in the form's item order, each as late as possible.

    Real sections are the one place where most items appear in order, so the longest ordered
    chain finds them; preferring later headings skips contents entries and early mentions, and a
    stray heading cannot win because it breaks the chain.
    """
    rank = [order[h.key] for h in headings]
    count = len(headings)
    longest = [1] * count  # longest ordered chain starting at each heading
    for i in range(count - 1, -1, -1):
        for j in range(i + 1, count):
            if rank[j] > rank[i] and longest[j] + 1 > longest[i]:
                longest[i] = longest[j] + 1
    chain: list[_Heading] = []
    need = max(longest, default=0)
    after, last_rank = -1, -1
    while need:
        pick = after
        for i in range(after + 1, count):
            if rank[i] > last_rank and longest[i] == need:
                pick = i
        chain.append(headings[pick])
        after, last_rank, need = pick, rank[pick], need - 1
    return chain


_SIGNATURES = re.compile(r"^signatures?\s*$", re.IGNORECASE | re.MULTILINE)


def _document_end(text: str, start: int) -> int:
    """Where the last item ends: at the signatures, else the end of the text."""
    match = _SIGNATURES.search(text, start)
    return match.start() if match else len(text)


def _trim_trailing_parts(section: str) -> str:
    # The next part's heading ("PART II") sits just before the next item and belongs to it.
    lines = section.rstrip().split("\n")
    while len(lines) > 1 and (not lines[-1].strip() or _PART_LINE.match(lines[-1])):
        lines.pop()
    return "\n".join(lines).strip() + "\n"


def _squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower().replace("&", "and"))


def _roman(part: str | None) -> str | None:
    if part is None:
        return None
    return {"1": "I", "2": "II"}.get(part, part.upper())


def _label(spec: ItemSpec) -> str:
    return spec.key
