"""What a cited source holds, from the run's own scratchpad: the passages of a filing section or
document the run read, the XBRL facts of a filing it used, or a web page, with the part that
supports the citing sentence marked.

Everything here is plain data for a template (autoescaped): filing and web text is outside text
and is never passed on as HTML. The passage is found by the figures of the sentence that cites
the source (391,035 in "$391,035 million [S1]"), else by the words it shares with that sentence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dexter.tools.untrusted import UNTRUSTED_NOTE, UNTRUSTED_TAG

_CITE_GROUP = re.compile(r"\[(S\d+(?:\s*[,;]\s*S\d+)*)\]")
_NUMBER = re.compile(
    r"(?<![\w.])(\$|US\$)?\s?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?\s*(%|percent|million|billion|bn|m\b|b\b)?",
    re.IGNORECASE,
)
_SCALE = {"million": 1e6, "m": 1e6, "billion": 1e9, "bn": 1e9, "b": 1e9}
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{4,}")
_BODY = re.compile(rf"<{UNTRUSTED_TAG} source=\"[^\"]*\">\n?(.*?)\n?</{UNTRUSTED_TAG}>", re.S)
# Paragraphs shown around the marked ones in a long document; the rest is summarised.
CONTEXT_PARAGRAPHS = 3
MAX_PARAGRAPHS = 400


@dataclass(frozen=True)
class Figure:
    """A number as a sentence states it: what it may stand for, each with how far off a value
    may be and still round to it (a bare number may be in millions, as tables state money)."""

    text: str
    digits: str  # the number as written, without separators: "391035", "46.2"
    readings: tuple[tuple[float, float], ...]  # (value, tolerance)

    def matches(self, value: float) -> bool:
        return any(abs(value - v) <= tolerance + 1e-9 for v, tolerance in self.readings)


@dataclass
class Segment:
    text: str
    marked: bool = False


@dataclass
class Paragraph:
    segments: list[Segment]
    hit: bool = False
    anchor: str = ""


@dataclass
class Fact:
    concept: str
    label: str
    period: str
    period_end: str
    value: str
    form: str
    accession: str
    filed: str
    url: str | None
    hit: bool = False
    anchor: str = ""


@dataclass
class Passage:
    """One tool result that showed the source."""

    tool: str
    heading: str
    paragraphs: list[Paragraph | None] = field(default_factory=list)  # None: an omission
    facts: list[Fact] = field(default_factory=list)


@dataclass
class SourceView:
    id: str
    label: str
    url: str | None
    kind: str  # "filing", "web", "other"
    sentences: list[str]
    passages: list[Passage]
    found: bool  # was a passage or fact marked?


def citing_sentences(answer: str, source_id: str, occurrence: int | None = None) -> list[str]:
    """The sentences of `answer` that cite `source_id` (only the `occurrence`-th citation's,
    counting every [S…] group of the answer from 0, when given)."""
    sentences: list[str] = []
    count = -1
    for line in answer.splitlines():
        for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z*\[(|-])", line):
            for match in _CITE_GROUP.finditer(sentence):
                count += 1
                ids = re.findall(r"S\d+", match.group(1))
                wanted = occurrence is None or occurrence == count
                said = _plain_sentence(sentence)
                if source_id in ids and wanted and said not in sentences:
                    sentences.append(said)
    return sentences


def _plain_sentence(sentence: str) -> str:
    """A sentence of Markdown as a reader sees it: no list or table marks, no emphasis."""
    text = re.sub(r"^\s*(?:[-*+]|\d+[.)]|>|\|)\s+", "", sentence.strip())
    return re.sub(r"(\*\*|__|\*|`)", "", text).strip(" |")


def figures_in(text: str) -> list[Figure]:
    clean = _CITE_GROUP.sub(" ", text)
    found: list[Figure] = []
    for match in _NUMBER.finditer(clean):
        dollar, whole, frac, unit = match.groups()
        number = float(whole.replace(",", "") + (frac or ""))
        decimals = len(frac) - 1 if frac else 0
        unit = (unit or "").lower()
        if not dollar and not unit and not frac and 1900 <= number <= 2100 and "," not in whole:
            continue  # a year
        if number < 10 and not unit and not frac and not dollar:
            continue  # "3 segments", list numbers
        half = 0.5 * 10**-decimals
        if unit in ("%", "percent"):
            readings: tuple[tuple[float, float], ...] = ((number / 100, half / 100),)
        elif unit in _SCALE:
            readings = ((number * _SCALE[unit], half * _SCALE[unit]),)
        else:
            readings = ((number, half), (number * 1e6, half * 1e6))
        digits = whole.replace(",", "") + (frac or "")
        found.append(Figure(match.group(0).strip(), digits, readings))
    return found


def _states(written: str, figures: Sequence[Figure]) -> bool:
    """Does a number of the source, as written, state one of `figures`: the same digits, or a
    value that rounds to it (filings state money in millions: "391,035" is "$391.0 billion")?"""
    digits = written.replace(",", "")
    if any(f.digits == digits for f in figures):
        return True
    value = float(digits)
    if "," not in written and "." not in written and 1900 <= value <= 2100:
        return False  # a year
    return any(f.matches(value) or f.matches(value * 1e6) for f in figures if len(f.digits) > 1)


def _marked(text: str, figures: Sequence[Figure]) -> tuple[list[Segment], bool]:
    """`text` cut where it states one of `figures`."""
    segments: list[Segment] = []
    last, hit = 0, False
    for match in re.finditer(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?", text):
        if _states(match.group(0), figures):
            if match.start() > last:
                segments.append(Segment(text[last : match.start()]))
            segments.append(Segment(match.group(0), marked=True))
            last, hit = match.end(), True
    if last < len(text):
        segments.append(Segment(text[last:]))
    return segments, hit


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(_CITE_GROUP.sub(" ", text))}


def _body(result: str) -> tuple[str, str]:
    """(the heading lines a tool wrote, the outside text it framed) of a tool result."""
    match = _BODY.search(result)
    if match is None:
        return "", result
    before = result[: match.start()].replace(UNTRUSTED_NOTE, "").strip()
    return before, match.group(1)


def text_passage(
    tool: str, result: str, figures: Sequence[Figure], sentences: Sequence[str]
) -> Passage:
    heading, body = _body(result)
    raw = [p.strip() for p in re.split(r"\n\s*\n|\n(?=\S)", body) if p.strip()][:MAX_PARAGRAPHS]
    paragraphs = []
    for text in raw:
        segments, hit = _marked(text, figures)
        paragraphs.append(Paragraph(segments, hit=hit))
    if not any(p.hit for p in paragraphs) and sentences:
        # No figure to find: the paragraph sharing most words with the citing sentence.
        words = set().union(*(_words(s) for s in sentences))
        scores = [len(words & _words(text)) for text in raw]
        best = max(range(len(raw)), key=lambda i: scores[i], default=None)
        if best is not None and scores[best] >= 2:
            paragraphs[best].hit = True
    return Passage(
        tool, heading.splitlines()[0].lstrip("# ") if heading else tool, _around_hits(paragraphs)
    )


def _around_hits(paragraphs: list[Paragraph]) -> list[Paragraph | None]:
    """A long text cut to its marked paragraphs and a few either side (None where cut)."""
    hits = [i for i, p in enumerate(paragraphs) if p.hit]
    if not hits or len(paragraphs) <= 4 * CONTEXT_PARAGRAPHS:
        return list(paragraphs)
    keep = {j for i in hits for j in range(i - CONTEXT_PARAGRAPHS, i + CONTEXT_PARAGRAPHS + 1)}
    shown: list[Paragraph | None] = []
    for i, paragraph in enumerate(paragraphs):
        if i in keep:
            shown.append(paragraph)
        elif shown and shown[-1] is not None:
            shown.append(None)
    return shown


def _source_label(raw: Mapping[str, Any]) -> str:
    from dexter.data.models import Source

    try:
        return Source.model_validate(dict(raw)).cite(concept=False)
    except ValueError:
        return ""


def fact_passage(
    tool: str, data: Mapping[str, Any], label: str, url: str | None, figures: Sequence[Figure]
) -> Passage | None:
    """The XBRL facts of a statement call that came from the cited filing."""
    from dexter.reports.markup import web_url
    from dexter.reports.model import TOOL_KINDS, fiscal_label
    from dexter.tools.finance.format import cell_kind, field_label, format_cell

    metric = TOOL_KINDS.get(tool) == "metrics"
    company = data.get("company") if isinstance(data.get("company"), Mapping) else {}
    facts: list[Fact] = []
    for record in data.get("records") or []:
        if not isinstance(record, Mapping):
            continue
        sources = record.get("sources") if isinstance(record.get("sources"), Mapping) else {}
        for name, raw in (sources or {}).items():
            value = record.get(name)
            if not isinstance(raw, Mapping) or not isinstance(value, int | float):
                continue
            if _source_label(raw) != label and not (url and raw.get("url") == url):
                continue
            number = float(value)
            facts.append(
                Fact(
                    concept=str(raw.get("concept") or ""),
                    label=field_label(name),
                    period=fiscal_label(
                        str(record.get("fiscal_period") or ""), str(record.get("period") or "")
                    ),
                    period_end=str(record.get("report_period") or ""),
                    value=format_cell(cell_kind(name, metric=metric), number)
                    + (" (millions)" if abs(number) >= 1e5 else ""),
                    form=str(raw.get("form") or ""),
                    accession=str(raw.get("accession_number") or ""),
                    filed=str(raw.get("filing_date") or ""),
                    url=web_url(str(raw.get("url") or "")),
                    hit=any(f.matches(number) for f in figures),
                )
            )
    if not facts:
        return None
    name = (company or {}).get("name") or (company or {}).get("ticker") or ""
    return Passage(tool, f"{name} {tool.replace('_', ' ')}: XBRL facts".strip(), facts=facts)


def source_view(
    records: Iterable[Mapping[str, Any]],
    answer: str,
    source_id: str,
    occurrence: int | None = None,
) -> SourceView | None:
    """The view of source `source_id` of a run from its scratchpad `records` and `answer`;
    None when the run lists no such source."""
    from dexter.reports.model import TOOL_KINDS

    records = list(records)
    done: Mapping[str, Any] = next((r for r in reversed(records) if r.get("type") == "answer"), {})
    entry = next(
        (
            s
            for s in done.get("sources") or []
            if isinstance(s, Mapping) and s.get("id") == source_id
        ),
        None,
    )
    if entry is None:
        return None
    label, url = str(entry.get("label") or ""), entry.get("url") or None
    sentences = citing_sentences(answer, source_id, occurrence) or citing_sentences(
        answer, source_id
    )
    figures = [f for s in sentences for f in figures_in(s)]
    marker = f"[{source_id}]"
    passages: list[Passage] = []
    for record in records:
        if record.get("type") != "tool_call" or record.get("error"):
            continue
        tool, result = str(record.get("tool") or ""), str(record.get("result") or "")
        if marker not in result:
            continue
        data = record.get("data")
        calls = data.get("calls") if isinstance(data, Mapping) else None
        inner = (
            [(str(c.get("tool")), c.get("data")) for c in calls if isinstance(c, Mapping)]
            if isinstance(calls, list)
            else [(tool, data)]
        )
        facts = [
            p
            for name, d in inner
            if name in TOOL_KINDS
            and isinstance(d, Mapping)
            and (p := fact_passage(name, d, label, url, figures)) is not None
        ]
        passages.extend(facts or [text_passage(tool, result, figures, sentences)])
    kind = (
        "filing"
        if label.startswith("SEC EDGAR") or "sec.gov" in (url or "")
        else ("web" if url else "other")
    )
    found = False
    for passage in passages:
        items: list[Fact | Paragraph] = [*passage.facts]
        items += [p for p in passage.paragraphs if p is not None]
        for item in items:
            if item.hit:
                item.anchor = "passage" if not found else ""
                found = True
    return SourceView(source_id, label, url, kind, sentences, passages, found)


__all__ = ["SourceView", "citing_sentences", "figures_in", "source_view"]
