"""Markdown → overlapping chunks on paragraph boundaries, with 1-based inclusive line ranges.

Sizes are in estimated tokens (about four characters each). Blank lines end a paragraph, except
inside fenced code blocks; a paragraph made only of headings is kept with the paragraph after it.
Paragraphs are packed greedily up to `target_tokens`; one that is bigger on its own is split on
line, then sentence, then word boundaries. Each chunk after the first starts with the trailing
paragraphs of the previous one, up to about `overlap_tokens`, so a fact near a boundary is found
whole in at least one chunk.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dexter.textpack import pack

CHARS_PER_TOKEN = 4
DEFAULT_TARGET_TOKENS = 400
DEFAULT_OVERLAP_TOKENS = 80

_HEADING = re.compile(r"^\s{0,3}#{1,6}(\s|$)")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+")
_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Chunk:
    text: str
    start_line: int
    end_line: int


@dataclass(frozen=True)
class _Unit:
    """A paragraph (with any headings above it), or a piece of an oversized one."""

    text: str
    start_line: int
    end_line: int


def estimate_tokens(text: str) -> int:
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def chunk_markdown(
    text: str,
    *,
    target_tokens: int = DEFAULT_TARGET_TOKENS,
    overlap_tokens: int = DEFAULT_OVERLAP_TOKENS,
) -> list[Chunk]:
    """Chunks of `text`; empty or whitespace-only text gives []."""
    if not text.strip():
        return []
    target = max(1, target_tokens) * CHARS_PER_TOKEN
    overlap = max(0, overlap_tokens) * CHARS_PER_TOKEN
    units: list[_Unit] = []
    for block in _blocks(text):
        units.extend(_split_oversized(block, target))
    return _pack(units, target, overlap)


def _blocks(text: str) -> list[_Unit]:
    """Paragraphs separated by blank lines, headings joined to the paragraph below them."""
    lines = [line.rstrip("\r") for line in text.split("\n")]
    paragraphs: list[tuple[int, int]] = []  # 0-based inclusive line indexes
    start: int | None = None
    in_fence = False
    for index, line in enumerate(lines):
        if _FENCE.match(line):
            in_fence = not in_fence
        if not line.strip() and not in_fence:
            if start is not None:
                paragraphs.append((start, index - 1))
                start = None
        elif start is None:
            start = index
    if start is not None:
        paragraphs.append((start, len(lines) - 1))

    blocks: list[_Unit] = []
    pending: int | None = None  # first line of heading-only paragraphs waiting for a body
    for first, last in paragraphs:
        heading_only = all(_HEADING.match(lines[i]) for i in range(first, last + 1))
        if heading_only:
            if pending is None:
                pending = first
            continue
        begin = first if pending is None else pending
        pending = None
        blocks.append(_unit(lines, begin, last))
    if pending is not None:
        blocks.append(_unit(lines, pending, paragraphs[-1][1]))
    return blocks


def _unit(lines: list[str], first: int, last: int) -> _Unit:
    body = "\n".join(lines[first : last + 1]).strip()
    return _Unit(body, first + 1, last + 1)


def _split_oversized(block: _Unit, target: int) -> list[_Unit]:
    """The block itself if it fits; else pieces of whole lines, or of sentences of one line."""
    if len(block.text) <= target:
        return [block]
    pieces: list[_Unit] = []
    # Lines of the block with their 1-based numbers, blank ones (inside fences, or between a
    # heading and its paragraph) kept so the text stays as written.
    numbered = list(enumerate(block.text.split("\n"), start=block.start_line))
    current: list[tuple[int, str]] = []

    def flush() -> None:
        if current:
            body = "\n".join(line for _, line in current).strip()
            if body:
                pieces.append(_Unit(body, current[0][0], current[-1][0]))
            current.clear()

    for number, line in numbered:
        if len(line) > target:
            flush()
            pieces.extend(_Unit(part, number, number) for part in _split_line(line, target))
            continue
        size = sum(len(text) + 1 for _, text in current) + len(line)
        if current and size > target:
            flush()
        current.append((number, line))
    flush()
    return pieces


def _split_line(line: str, target: int) -> list[str]:
    """One long line as pieces of at most `target` chars: on sentences, else words, else chars."""
    sentences = _SENTENCE_END.split(line.strip())
    return pack((piece for s in sentences for piece in _hard_split(s, target)), target, " ")


def _hard_split(text: str, target: int) -> list[str]:
    pieces: list[str] = []
    while len(text) > target:
        cut = text.rfind(" ", 0, target + 1)
        if cut <= 0:
            cut = target
        pieces.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    if text:
        pieces.append(text)
    return pieces


def _size(units: list[_Unit], first: int, end: int) -> int:
    """Length of units[first:end] joined by the separator."""
    if end <= first:
        return 0
    return sum(len(u.text) for u in units[first:end]) + len(_SEPARATOR) * (end - first - 1)


def _pack(units: list[_Unit], target: int, overlap: int) -> list[Chunk]:
    chunks: list[Chunk] = []
    start = 0
    while start < len(units):
        end = start + 1  # always at least one unit; each unit fits `target` after splitting
        while end < len(units) and _size(units, start, end + 1) <= target:
            end += 1
        chunks.append(
            Chunk(
                _SEPARATOR.join(u.text for u in units[start:end]),
                units[start].start_line,
                units[end - 1].end_line,
            )
        )
        if end >= len(units):
            break
        # Carry whole trailing units worth at most `overlap` chars into the next chunk, keeping
        # at least the first unit of this chunk out of it (else the next chunk repeats this one)
        # and leaving room for at least one new unit.
        nxt = end
        carried = 0
        while nxt - 1 > start and carried + len(units[nxt - 1].text) <= overlap:
            nxt -= 1
            carried += len(units[nxt].text)
        while nxt < end and _size(units, nxt, end + 1) > target:
            nxt += 1
        start = nxt
    return chunks
