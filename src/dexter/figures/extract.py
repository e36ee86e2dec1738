"""The figures an answer states: each with its value, unit, display rounding, stated period and
company.

Prose and Markdown tables are read alike: a table cell takes its unit and scale from its column
header, row label or caption ("USD millions", "($B)", "(%)") and its period from the column or
row it stands in. A prose figure takes the period written with it ("$416.2 billion in FY2025",
"(2020: $2.79 billion)"), else the one before it in its clause, else the one its sentence or
paragraph is about; a figure compared against ("up from $391.0 billion", "vs $73.7 billion")
takes none, unless its clause says "a year earlier". Its company is the one named before it.
Years, dates, item and form numbers, citation markers, list numbering, ordinals, identifiers and
small counts in prose are not figures.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from dexter.figures.evidence import (
    MONEY,
    MULTIPLE,
    NUMBER,
    PER_SHARE,
    PERCENT,
    SHARES,
    declared_scale,
)
from dexter.figures.numbers import Token, scan
from dexter.figures.periods import Mention, StatedPeriod, mentions

ANY_SCALE = (1.0, 1e3, 1e6, 1e9)

_HEDGE = re.compile(
    r"(?:about|approximately|approx\.?|roughly|around|nearly|almost|close to|some|over|"
    r"more than|less than|under|above|below|just over|just under|~|≈|circa|c\.)[ \u00a0]*$",
    re.IGNORECASE,
)
_PER_SHARE_CONTEXT = re.compile(
    r"\b(?:EPS|earnings per share|per[- ]share|dividends?|book value|share price|stock price|"
    r"price target|target price|closed at|clos(?:e|ing) price|trad(?:ed|ing|es) at|price of|"
    r"priced at|per ADS|52-week|high of|low of|FCF per share)\b[^.;\n$€£]*$",
    re.IGNORECASE,
)
_SHARES_CONTEXT = re.compile(
    r"\b(?:shares outstanding|share count|outstanding shares|shares|diluted shares|"
    r"weighted[- ]average shares|buyback of|repurchased)\b[^.;\n$€£]*$",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])[ \u00a0]+(?=[A-Z(\"“*])|\n")
_ATTACHED_AFTER = re.compile(
    r"^\)?[ \u00a0]*(?:\((?:[^()]*)\)[ \u00a0]*)?(?:\[[^\]]*\][ \u00a0]*)*"
    r"(?:,?[ \u00a0]*(?:in|for|during|at|as[ \u00a0]of|of|over|through|by|ended|ending|on)"
    r"[ \u00a0]+(?:(?:the|end|of|fiscal|year|full|quarter|period|ended|ending|calendar|its|fy)"
    r"[ \u00a0]+)*)?\(?$",
    re.IGNORECASE,
)
# A period followed by its figure labels that figure: "(2020: $2.79 billion)", "Q3 942.1",
# "FY2026's $215.9 billion".
_LABELS_NEXT = re.compile(r"(?:['’]s)?[ \u00a0]*[:=]?[ \u00a0]*\(?[-−+]?(?:US\$|[$€£¥])?[0-9]")
_WORD = re.compile(r"[a-z][a-z&]+")


@dataclass(frozen=True, slots=True)
class Claim:
    """One figure as the answer states it, before it is checked."""

    text: str
    start: int
    end: int
    # Normalised as written: amounts in whole units, percents in percent.
    value: float
    unit: str
    kind: str
    # Evidence kinds it may be found as.
    kinds: frozenset[str]
    # The number before scale, its decimals, and the scales it may stand for (one unless the
    # answer does not say, as in a bare table cell).
    mantissa: float
    decimals: int
    scales: tuple[float, ...]
    # Half-width of the display rounding at scale 1 (times the scale for amounts).
    half_unit: float
    period: StatedPeriod | None
    # 3: attached or a table header; 2: just before it; 1: elsewhere in its sentence.
    period_strength: int
    sentence: int
    words: frozenset[str]
    in_table: bool = False
    row: tuple[int, int] | None = None
    column: tuple[int, int] | None = None
    sentence_text: str = field(default="", compare=False)
    # Its paragraph up to the end of its sentence, for what the sentence refers back to.
    context_text: str = field(default="", compare=False)
    # The ticker of the company the answer says the figure is about, when it says.
    company: str | None = None

    def tolerance(self, scale: float) -> float:
        return self.half_unit * (1.0 if self.kind == PERCENT else scale)


@dataclass(frozen=True, slots=True)
class _Span:
    start: int
    end: int


def extract(answer: str, companies: Mapping[str, str] | None = None) -> list[Claim]:
    """Every figure in the answer, in order. `companies` maps the names and tickers the
    answer may use (names lower-case) to tickers, to tell whose figure each one is."""
    table_cells = _table_cells(answer)
    periods = mentions(answer)
    sentences = _sentences(answer)
    claims: list[Claim] = []
    for token in scan(answer):
        line = table_cells.get(_line_start(answer, token.start))
        claim = _read(answer, token, line, sentences)
        if claim is not None:
            claims.append(claim)
    claims = _with_periods(answer, claims, periods, sentences, table_cells)
    if companies:
        claims = _with_companies(answer, claims, companies, sentences)
    return claims


# ---------------------------------------------------------------------------------------------
# Sentences and tables of the answer


def _sentences(text: str) -> list[_Span]:
    starts = [0] + [m.end() for m in _SENTENCE_END.finditer(text)]
    ends = [*starts[1:], len(text)]
    return [_Span(s, e) for s, e in zip(starts, ends, strict=True)]


def _sentence_of(sentences: Sequence[_Span], pos: int) -> int:
    lo, hi = 0, len(sentences) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if sentences[mid].start <= pos:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _line_start(text: str, pos: int) -> int:
    return text.rfind("\n", 0, pos) + 1


_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")


@dataclass(slots=True)
class _TableLine:
    table: int
    row: int
    header: list[str]
    caption: str
    cells: list[tuple[int, int]]  # (start, end) of each cell in the answer


def _table_cells(text: str) -> dict[int, _TableLine]:
    """Lines of Markdown tables by their start offset, with header and caption."""
    out: dict[int, _TableLine] = {}
    lines = text.split("\n")
    offsets = []
    at = 0
    for line in lines:
        offsets.append(at)
        at += len(line) + 1
    i = 0
    table = 0
    while i < len(lines):
        if (
            lines[i].lstrip().startswith("|")
            and i + 1 < len(lines)
            and _SEPARATOR.match(lines[i + 1])
        ):
            header = _split_cells(lines[i], offsets[i])
            header_text = [text[s:e].strip() for s, e in header]
            caption_lines = [ln for ln in lines[max(0, i - 3) : i] if ln.strip()]
            caption = caption_lines[-1] if caption_lines else ""
            table += 1
            out[offsets[i]] = _TableLine(table, 0, header_text, caption, header)
            j = i + 2
            row = 1
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                out[offsets[j]] = _TableLine(
                    table, row, header_text, caption, _split_cells(lines[j], offsets[j])
                )
                row += 1
                j += 1
            i = j
            continue
        i += 1
    return out


def _split_cells(line: str, offset: int) -> list[tuple[int, int]]:
    bars = [i for i, ch in enumerate(line) if ch == "|"]
    if not bars:
        return [(offset, offset + len(line))]
    cells = []
    edges = bars if line.lstrip().startswith("|") else [-1, *bars]
    for a, b in zip(edges, [*edges[1:], len(line)], strict=True):
        if b == len(line) and not line[a + 1 :].strip():
            break
        cells.append((offset + a + 1, offset + b))
    return cells


# ---------------------------------------------------------------------------------------------
# One token to one claim


_PROSE_SCALE = re.compile(
    r"\((?:in[ \u00a0])?(?:USD|US\$|\$|EUR|dollars)?[ \u00a0]?(?:thousands|millions|billions|"
    r"M|MM|K|B|bn|mn)\)|\bin[ \u00a0](?:USD[ \u00a0])?(?:thousands|millions|billions)\b",
    re.IGNORECASE,
)


def _clause(text: str, start: int, end: int, pos: int) -> tuple[int, int]:
    left, right = start, end
    for m in _CLAUSE_BREAK.finditer(text, start, end):
        if m.end() <= pos:
            left = m.end()
        elif m.start() >= pos:
            right = m.start()
            break
    return left, right


def _prose_scale(sentence: str) -> float | None:
    m = _PROSE_SCALE.search(sentence)
    return declared_scale(m.group(0).replace("(", "(in ")) if m else None


def _read(
    answer: str,
    token: Token,
    line: _TableLine | None,
    sentences: Sequence[_Span],
) -> Claim | None:
    column = None
    header = label = caption = corner = ""
    if line is not None:
        column = next((i for i, (s, e) in enumerate(line.cells) if s <= token.start < e), None)
        if line.row == 0:
            return None  # a header names periods and units, it states no figure
        if column is not None:
            header = line.header[column] if column < len(line.header) else ""
            label = answer[line.cells[0][0] : line.cells[0][1]].strip()
            caption = line.caption
            corner = line.header[0] if line.header else ""
    in_table = line is not None and column is not None and column > 0
    declared = None
    declared_percent = declared_multiple = per_share_cell = False
    if in_table:
        for text in (label, header, corner, caption):
            if declared is None:
                declared = declared_scale(text)
        unit_text = f"{label} {header}"
        per_share_cell = bool(
            re.search(r"\bEPS\b|per[ -]share|dividends? per|\bprice\b", unit_text, re.I)
        )
        if per_share_cell:
            declared = None
        declared_percent = bool(re.search(r"\(%\)|%|\bmargin\b|\bgrowth\b", unit_text, re.I))
        declared_multiple = bool(re.search(r"\(x\)", unit_text, re.I))
    s_index = _sentence_of(sentences, token.start)
    if not in_table and not (token.currency or token.scale_word or token.percent or token.bps):
        # "Quarterly revenue (USD millions): Q2 868.8, Q3 942.1": a sentence may declare the
        # scale of the bare numbers in it.
        sentence_span = sentences[s_index]
        declared = _prose_scale(answer[sentence_span.start : sentence_span.end])
        if declared is None:
            # Or the paragraph before it: "(USD millions): Q2 868.8, ... Operating losses
            # were (355.3), ..."
            paragraph = answer.rfind("\n\n", 0, token.start) + 1
            declared = _prose_scale(answer[paragraph : sentence_span.start])
    skip = token.skip
    if skip in ("small count",) and (declared or declared_percent):
        skip = None
    if in_table and line is not None and column == 0:
        return None
    if skip is not None:
        return None
    sentence = sentences[s_index]
    before = answer[max(sentence.start, token.start - 80) : token.start]
    # The words of the figure's own clause name what it measures ("..., and Q1 product
    # revenue grew 26%" does not draw on the EPS of the clause before).
    clause_start, clause_end = _clause(answer, sentence.start, sentence.end, token.start)
    words = frozenset(
        _WORD.findall(answer[clause_start:clause_end].lower())
        + (_WORD.findall(f"{label} {header} {caption}".lower()) if in_table else [])
    )
    mantissa = token.mantissa
    decimals = token.decimals
    half = 0.5 * 10.0 ** (-decimals)
    hedged = bool(_HEDGE.search(before))
    if hedged and decimals == 0:
        digits = str(int(abs(mantissa)))
        zeros = len(digits) - len(digits.rstrip("0"))
        half = 0.5 * 10.0**zeros
    kind: str
    kinds: frozenset[str]
    scales: tuple[float, ...] = (token.scale,)
    unit = token.currency or ""
    if token.percent or token.bps:
        kind, kinds, unit = PERCENT, frozenset({PERCENT}), "%"
        if token.bps:
            mantissa, half = mantissa / 100, half / 100
    elif token.multiple:
        kind, kinds, unit = MULTIPLE, frozenset({MULTIPLE, NUMBER}), "x"
    elif token.per_share or (
        token.currency
        and not token.scale_word
        and _PER_SHARE_CONTEXT.search(before)
        and declared in (None, 1.0)
    ):
        kind, kinds = PER_SHARE, frozenset({PER_SHARE, NUMBER, MONEY})
        unit = f"{token.currency or 'USD'}/share"
    elif token.shares or (
        token.scale_word and not token.currency and _SHARES_CONTEXT.search(before)
    ):
        kind, kinds, unit = SHARES, frozenset({SHARES, NUMBER}), "shares"
    elif token.scale_word:
        kind = MONEY
        kinds = frozenset({MONEY, NUMBER}) if token.currency else frozenset({MONEY, SHARES, NUMBER})
    elif token.currency:
        kind = MONEY
        if declared is not None:
            scales = (declared,)
            kinds = frozenset({MONEY, NUMBER})
        else:
            kinds = frozenset({MONEY, PER_SHARE, NUMBER})
    elif in_table and declared_percent:
        kind, kinds, unit = PERCENT, frozenset({PERCENT}), "%"
    elif in_table and declared_multiple:
        kind, kinds, unit = MULTIPLE, frozenset({MULTIPLE, NUMBER}), "x"
    elif declared is not None:
        kind = MONEY
        kinds = frozenset({MONEY, SHARES, NUMBER, PER_SHARE})
        scales = (declared,)
    else:
        kind = NUMBER
        kinds = frozenset({MONEY, SHARES, NUMBER, PER_SHARE, MULTIPLE, PERCENT})
        scales = ANY_SCALE if decimals == 0 or in_table else (1.0,)
    value = mantissa if kind == PERCENT else mantissa * scales[0]
    row_key = (line.table, line.row) if in_table and line is not None else None
    col_key = (line.table, column) if in_table and line is not None and column else None
    return Claim(
        text=token.text,
        start=token.start,
        end=token.end,
        value=value,
        unit=unit,
        kind=kind,
        kinds=kinds,
        mantissa=mantissa,
        decimals=decimals,
        scales=scales,
        half_unit=half,
        period=None,
        period_strength=0,
        sentence=s_index,
        words=words,
        in_table=in_table,
        row=row_key,
        column=col_key,
        sentence_text=answer[sentence.start : sentence.end],
        context_text=answer[answer.rfind("\n\n", 0, sentence.start) + 1 : sentence.end],
    )


# ---------------------------------------------------------------------------------------------
# Stated periods


_CLAUSE_BREAK = re.compile(
    r",[ \u00a0]+(?:and|but|while|whereas|although|though)\b|;|[ \u00a0]+(?:while|whereas)\b|"
    r"[ \u00a0]—[ \u00a0]|\.[ \u00a0]",
    re.IGNORECASE,
)
# A figure introduced as the thing compared against: "up 6.4% from $391.0 billion", "below
# a year earlier ($152.3 million)".
_COMPARED_BEFORE = re.compile(
    r"(?:(?:\bfrom|\bvs\.?|\bversus|\bcompared[ \u00a0](?:with|to)|\bagainst|\bthan|\(vs\.?)"
    r"[ \u00a0]+(?:(?:the|a|an|its|their|last|prior|previous|year-earlier|year-ago)[ \u00a0]+)*"
    r"|(?:a[ \u00a0]year[ \u00a0](?:earlier|ago|before)|(?:the[ \u00a0])?prior[- ]year|"
    r"year[- ]ago|last[ \u00a0]year|(?:the[ \u00a0])?previous[ \u00a0]year)"
    r"[ \u00a0]*[(:,]?[ \u00a0]*)$",
    re.IGNORECASE,
)
# A clause about the year before the one the paragraph is about: "A year earlier it paid
# $3.1 billion". Its figures are for the paragraph's period less a year.
_YEAR_EARLIER = re.compile(
    r"\b(?:a[ \u00a0]year[ \u00a0](?:earlier|ago|before)|in[ \u00a0]the[ \u00a0]"
    r"(?:prior|previous|year-ago)[ \u00a0](?:year|quarter|period)|the[ \u00a0]year[ \u00a0]before|"
    r"last[ \u00a0]year)\b",
    re.IGNORECASE,
)
_COMPARED_AFTER = re.compile(
    r"^[ \u00a0]*(?:\([^)]*\)[ \u00a0]*)?(?:a[ \u00a0]year[ \u00a0](?:earlier|ago|before)|"
    r"in[ \u00a0]the[ \u00a0](?:prior|previous|year-ago)[ \u00a0](?:year|quarter|period)|"
    r"the[ \u00a0](?:prior|previous)[ \u00a0](?:year|quarter)|last[ \u00a0]year|previously|"
    r"two[ \u00a0]years[ \u00a0]ago|a[ \u00a0]quarter[ \u00a0]earlier)",
    re.IGNORECASE,
)
_EVENT_DATE = re.compile(r"\bon[ \u00a0]+$", re.IGNORECASE)
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*+•]|[0-9]+[.)])[ \t]")


def _with_periods(
    answer: str,
    claims: list[Claim],
    periods: Sequence[Mention],
    sentences: Sequence[_Span],
    tables: dict[int, _TableLine],
) -> list[Claim]:
    figure_spans = [(c.start, c.end) for c in claims]
    periods = [m for m in periods if not any(s <= m.start < e for s, e in figure_spans)]
    paragraphs = paragraph_starts(answer)
    # A period written right after a figure ("$416.2 billion in FY2025", "$1.19 (FY2024)")
    # is that figure's: it does not also open the sentence for the figures around it.
    owned = {
        id(m)
        for claim in claims
        if not claim.in_table
        and (m := _attached_after(answer, claim, claims, periods, sentences)) is not None
    }
    asides = _asides(answer, claims, periods, sentences)
    out: list[Claim] = []
    for claim in claims:
        period, strength = _stated_period(
            answer, claim, claims, periods, sentences, tables, owned, asides
        )
        sentence_start, sentence_end = _bounds(sentences, claim)
        own = any(sentence_start <= m.start < sentence_end for m in periods)
        # A sentence that names periods of its own does not take the paragraph's.
        if period is None and not claim.in_table and not own:
            # Before the figure, in its clause: "A year earlier it paid $3.1 billion".
            clause_start, _ = _clause(answer, sentence_start, sentence_end, claim.start)
            earlier = _YEAR_EARLIER.search(answer, clause_start, claim.start)
            if earlier is not None or not _compared(answer, claim, claims):
                period = _inherited(answer, claim, periods, paragraphs, sentences, asides)
                if earlier is not None and period is not None:
                    period = _year_before(period)
                strength = 1 if period is not None else 0
        span = _clause_span(answer, *_segment(claims, claim, answer, sentence_start, sentence_end))
        if span is not None and not claim.in_table:
            # "Comparable sales were down 5.4% in the quarter": a quarter, not a year to date.
            period = replace(period, span=span) if period is not None else StatedPeriod(span=span)
            strength = max(strength, 1)
        out.append(replace(claim, period=period, period_strength=strength))
    return out


_QUARTER_SPAN = re.compile(
    r"\b(?:in|for|during|of)[ \u00a0]the[ \u00a0](?:fiscal[ \u00a0])?quarter\b|\bquarterly\b|"
    r"\bthe[ \u00a0]quarter['’]s\b|\b(?:thirteen|13)[- ]weeks?\b|\bthree[ \u00a0]months\b",
    re.IGNORECASE,
)
_YTD_SPAN = re.compile(
    r"\byear[- ]to[- ]date\b|\bYTD\b|\b(?:nine|six)[ \u00a0]months\b|\bfirst[ \u00a0]half\b|"
    r"\b(?:thirty-nine|twenty-six|39|26)[- ]weeks?\b",
    re.IGNORECASE,
)


def _segment(
    claims: Sequence[Claim], claim: Claim, answer: str, start: int, end: int
) -> tuple[int, int]:
    """The stretch of its clause that is the figure's own: up to the figures either side."""
    left, right = _clause(answer, start, end, claim.start)
    for other in claims:
        if other.sentence != claim.sentence or other is claim:
            continue
        if left <= other.end <= claim.start:
            left = other.end
        if claim.end <= other.start < right:
            right = other.start
    return left, right


def _clause_span(answer: str, start: int, end: int) -> str | None:
    text = answer[start:end]
    quarter, ytd = _QUARTER_SPAN.search(text), _YTD_SPAN.search(text)
    if quarter and not ytd:
        return "quarter"
    if ytd and not quarter:
        return "ytd"
    return None


def _attached_after(
    answer: str,
    claim: Claim,
    claims: Sequence[Claim],
    periods: Sequence[Mention],
    sentences: Sequence[_Span],
) -> Mention | None:
    sentence = sentences[claim.sentence]
    first = next((m for m in periods if claim.end <= m.start < sentence.end), None)
    if first is None:
        return None
    if any(c is not claim and claim.end <= c.start < first.start for c in claims):
        return None
    if _LABELS_NEXT.match(answer, first.end):
        return None
    return first if _ATTACHED_AFTER.match(answer[claim.end : first.start]) else None


def _bounds(sentences: Sequence[_Span], claim: Claim) -> tuple[int, int]:
    sentence = sentences[claim.sentence]
    return sentence.start, sentence.end


def _year_before(period: StatedPeriod) -> StatedPeriod | None:
    """The same period a year earlier ("a year earlier it paid ..."), as far as it is known."""
    if period.ttm or period.year is None:
        return None
    return StatedPeriod(
        period.year - 1,
        period.fiscal,
        period.quarter,
        None,
        f"a year before {period.text}",
        period.month,
        None,
        period.first_year - 1 if period.first_year else None,
    )


def paragraph_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in re.finditer(r"\n[ \t]*\n", text)]


def _compared(answer: str, claim: Claim, claims: Sequence[Claim] = ()) -> bool:
    """Whether the figure is what another is compared against ("up from $391.0 billion"),
    or listed with or restating such a figure ("compared with $54.8 billion in 2023 and
    $51.3 billion in 2022", "the $836 million you mention ($836.1 million)")."""
    before = answer[max(0, claim.start - 40) : claim.start]
    if _COMPARED_BEFORE.search(before) or _COMPARED_AFTER.match(answer[claim.end :]):
        return True
    earlier = [c for c in claims if c.sentence == claim.sentence and c.end <= claim.start]
    if earlier and _COORDINATED.match(answer[earlier[-1].end : claim.start]):
        return _compared(answer, earlier[-1], claims)
    return False


_COORDINATED = re.compile(
    r"^(?:[ \u00a0]+(?:in|for|at|on|by)[ \u00a0][^,;.()$€£]{1,25})?"
    r"(?:[ \u00a0]*,[ \u00a0]*|[ \u00a0]+and[ \u00a0]+|[ \u00a0]*,[ \u00a0]*and[ \u00a0]+)$"
    r"|^[^.;,()]{0,25}\([ \u00a0]*$",
    re.IGNORECASE,
)


_TOPIC_SHIFT = re.compile(
    r"[ \t*_-]*(?:separately|in addition|additionally|meanwhile|elsewhere|also|besides|"
    r"on another note|unrelated)\b",
    re.IGNORECASE,
)


def _inherited(
    answer: str,
    claim: Claim,
    periods: Sequence[Mention],
    paragraphs: Sequence[int],
    sentences: Sequence[_Span],
    asides: set[int],
) -> StatedPeriod | None:
    """The one period a paragraph, or the lead-in of a list, is about, if it names only one
    (leaving out asides: periods in parentheses and the periods of comparisons)."""
    sentence = sentences[claim.sentence]
    if _TOPIC_SHIFT.match(answer, sentence.start):
        return None
    start = max(p for p in paragraphs if p <= claim.start)
    named = [m for m in periods if start <= m.start < sentence.start and id(m) not in asides]
    if not named:
        line_start = _line_start(answer, claim.start)
        if not (_LIST_ITEM.match(answer[line_start : line_start + 8]) and start > 0):
            return None
        # A list set off by a blank line from the line that introduces it.
        lead_end = start - 1
        while lead_end > 0 and answer[lead_end - 1] in "\n \t":
            lead_end -= 1
        lead_start = _line_start(answer, lead_end)
        if not answer[lead_start:lead_end].rstrip().endswith(":"):
            return None
        named = [m for m in periods if lead_start <= m.start < lead_end and id(m) not in asides]
    distinct = {m.period.key for m in named}
    return named[0].period if len(distinct) == 1 else None


def _asides(
    answer: str,
    claims: Sequence[Claim],
    periods: Sequence[Mention],
    sentences: Sequence[_Span],
) -> set[int]:
    """Mentions that do not set a paragraph's period: in parentheses, after "vs" or "from",
    or attached to a figure that is itself a comparison."""
    out: set[int] = set()
    for m in periods:
        line_start = _line_start(answer, m.start)
        before = answer[line_start : m.start]
        if before.count("(") > before.count(")"):
            out.add(id(m))
        elif _COMPARED_BEFORE.search(answer[max(line_start, m.start - 30) : m.start]):
            out.add(id(m))
        elif m.period.day is not None and _EVENT_DATE.search(answer, max(0, m.start - 4), m.start):
            # "on December 23, 2021": the day of an event, not the period a paragraph is about
            out.add(id(m))
    for claim in claims:
        if not claim.in_table and _compared(answer, claim, claims):
            attached = _attached_after(answer, claim, claims, periods, sentences)
            if attached is not None:
                out.add(id(attached))
    return out


def _first(found: list[Mention]) -> StatedPeriod | None:
    return found[0].period if found else None


def _stated_period(
    answer: str,
    claim: Claim,
    claims: Sequence[Claim],
    periods: Sequence[Mention],
    sentences: Sequence[_Span],
    tables: dict[int, _TableLine],
    owned: set[int],
    asides: set[int],
) -> tuple[StatedPeriod | None, int]:
    if claim.in_table:
        line = tables.get(_line_start(answer, claim.start))
        if line is not None and claim.column is not None:
            column = claim.column[1]
            header = line.header[column] if column < len(line.header) else ""
            found = _first(mentions(header))
            if found is not None:
                return found, 3
            label = answer[line.cells[0][0] : line.cells[0][1]]
            found = _first(mentions(label))
            if found is not None:
                return found, 3
            found = _first(mentions(line.caption))
            return (found, 1) if found is not None else (None, 0)
    sentence = sentences[claim.sentence]
    in_sentence = [m for m in periods if sentence.start <= m.start < sentence.end]
    if not in_sentence:
        return None, 0
    others = [c for c in claims if c is not claim and c.sentence == claim.sentence]
    text = answer[sentence.start : sentence.end]
    # "... were $416.2 billion and $391.0 billion for FY2025 and FY2024, respectively."
    if "respectively" in text.lower():
        same = sorted([c for c in [claim, *others] if c.kind == claim.kind], key=lambda c: c.start)
        if len(same) == len(in_sentence):
            return in_sentence[same.index(claim)].period, 3

    def figure_between(a: int, b: int) -> bool:
        return any(a <= o.start < b for o in others)

    def broken(a: int, b: int) -> bool:
        return _CLAUSE_BREAK.search(answer, a, b) is not None

    attached = _attached_after(answer, claim, claims, periods, sentences)
    if attached is not None:
        return attached.period, 3
    after = [m for m in in_sentence if m.start >= claim.end and id(m) not in owned | asides]
    before = [m for m in in_sentence if m.end <= claim.start and id(m) not in owned]
    if before:
        last = before[-1]
        if not figure_between(last.end, claim.start) and not broken(last.end, claim.start):
            return last.period, 2
    # "it rose 125.9% in FY2024 (to $130.5 billion)": a parenthesis right after a period
    # elaborates on that period.
    prior = [m for m in in_sentence if m.end <= claim.start]
    if prior and re.fullmatch(
        r"[ \u00a0]*\((?:[a-z]+[ \u00a0]+){0,3}", answer[prior[-1].end : claim.start]
    ):
        return prior[-1].period, 2
    if _compared(answer, claim, claims):
        return None, 0
    before = [m for m in before if id(m) not in asides]
    if before:
        # The sentence's first period governs it, across "..., and ..." too when it opens
        # the sentence and no other period is named before the figure.
        opening = before[0]
        leads = opening.start - sentence.start <= 12 and len(before) == 1
        if leads or not broken(opening.end, claim.start):
            return opening.period, 1
    if after and not broken(claim.end, after[0].start):
        return after[0].period, 1
    # "... averaged 15.0 million in FY2025, and basic weighted shares were 15,343.8 million":
    # a sentence about one period is about it throughout.
    main = {m.period.key: m.period for m in in_sentence if id(m) not in asides}
    if len(main) == 1:
        return next(iter(main.values())), 1
    return None, 0


# ---------------------------------------------------------------------------------------------
# Whose figure


def _company_mentions(answer: str, companies: Mapping[str, str]) -> list[tuple[int, str]]:
    tickers = [name for name in companies if name.isupper()]
    names = [name for name in companies if not name.isupper()]
    found: list[tuple[int, str]] = []
    if tickers:
        pattern = r"(?<![A-Za-z0-9])(?:" + "|".join(map(re.escape, tickers)) + r")(?![A-Za-z0-9])"
        found += [(m.start(), companies[m.group()]) for m in re.finditer(pattern, answer)]
    if names:
        pattern = r"\b(?:" + "|".join(map(re.escape, sorted(names, key=len, reverse=True))) + r")\b"
        found += [
            (m.start(), companies[m.group().lower()])
            for m in re.finditer(pattern, answer, re.IGNORECASE)
        ]
    return sorted(found)


def _with_companies(
    answer: str,
    claims: list[Claim],
    companies: Mapping[str, str],
    sentences: Sequence[_Span],
) -> list[Claim]:
    """Each figure's company: the last one named before it in its sentence ("NVIDIA's $8.6
    billion"), else the only one its paragraph names before it, else the only one the answer
    names."""
    named = _company_mentions(answer, companies)
    if not named:
        return claims
    everywhere = {ticker for _, ticker in named}
    paragraphs = paragraph_starts(answer)
    out: list[Claim] = []
    for claim in claims:
        if not claim.in_table and _compared(answer, claim, claims):
            # "($157.3 billion vs $73.7 billion)": the figure compared against is the other's.
            out.append(claim)
            continue
        sentence = sentences[claim.sentence]
        before = [t for pos, t in named if sentence.start <= pos < claim.start]
        company: str | None = before[-1] if before else None
        if company is None:
            start = max(p for p in paragraphs if p <= claim.start)
            in_paragraph = {t for pos, t in named if start <= pos < claim.start}
            if len(in_paragraph) == 1:
                company = next(iter(in_paragraph))
            elif not in_paragraph and len(everywhere) == 1:
                company = next(iter(everywhere))
        out.append(replace(claim, company=company) if company else claim)
    return out
