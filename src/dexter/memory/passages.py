"""A chunk's passages: the pieces of it that each get their own vector.

A memory chunk holds several unrelated facts (a daily note's trades, market chatter and errands;
MEMORY.md's preferences), and one vector for the whole chunk averages them: a question about
one fact matches it only faintly, diluted by the rest ("do I borrow money to invest" against a
chunk of twelve rules and preferences). So each entry is embedded on its own and a chunk's
vector score is that of its best passage (measured in `bench/memory_retrieval.py`: recall@5 on
paraphrased questions 0.21 with one vector per chunk).

Passages: each list item (with the lines that continue it) and each other paragraph; headings
are not passages (they name the section, not a fact), nor are blank lines. Fenced code stays in
one passage. A passage longer than `MAX_PASSAGE_CHARS` is cut on sentence, then word
boundaries. A chunk with no passage (headings only) is one passage, its text.
"""

from __future__ import annotations

import re

from dexter.textpack import pack

__all__ = ["MAX_PASSAGE_CHARS", "passages"]

# About 200 tokens: within the local model's 256-token window, and one fact or a few.
MAX_PASSAGE_CHARS = 800

_HEADING = re.compile(r"^\s{0,3}#{1,6}(\s|$)")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_ITEM = re.compile(r"^\s{0,3}(?:[-*+]|\d{1,9}[.)])\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+")


def passages(text: str) -> list[str]:
    """The passages of one chunk's text, in order, list markers removed."""
    found: list[str] = []
    current: list[str] = []
    in_fence = False

    def flush() -> None:
        body = "\n".join(current).strip()
        current.clear()
        if body:
            found.extend(_split_long(body))

    for line in text.split("\n"):
        if _FENCE.match(line):
            if not in_fence:
                flush()
            in_fence = not in_fence
            current.append(line)
            if not in_fence:
                flush()
            continue
        if in_fence:
            current.append(line)
            continue
        if not line.strip() or _HEADING.match(line):
            flush()
            continue
        item = _ITEM.match(line)
        if item:
            flush()
            current.append(line[item.end() :])
        else:
            current.append(line.strip())
    flush()
    return found or ([text.strip()] if text.strip() else [])


def _split_long(body: str) -> list[str]:
    if len(body) <= MAX_PASSAGE_CHARS:
        return [body]
    pieces: list[str] = []
    for sentence in _SENTENCE_END.split(body):
        while len(sentence) > MAX_PASSAGE_CHARS:
            cut = sentence.rfind(" ", 0, MAX_PASSAGE_CHARS + 1)
            cut = cut if cut > 0 else MAX_PASSAGE_CHARS
            pieces.append(sentence[:cut].rstrip())
            sentence = sentence[cut:].lstrip()
        if sentence:
            pieces.append(sentence)
    return pack(pieces, MAX_PASSAGE_CHARS, " ")
