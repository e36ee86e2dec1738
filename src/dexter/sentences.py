"""Where a sentence ends in English prose, which is not at every ". ".

"e.g. revenue", "i.e. the", "U.S. GAAP", "Apple Inc. reported" and "(e.g. a DCF)" do not end a
sentence: a full stop after an abbreviation or an initialism, one inside brackets, or one followed
by a lower-case word is part of the sentence. Used for a tool's one-line summary (the system
prompt and `tools list`) and for reading a user's message clause by clause (standing constraints).

Standard library only, importable from every layer.
"""

from __future__ import annotations

import re

# Words that end in a full stop without ending the sentence; compared without the stop.
_ABBREVIATIONS = frozenset(
    {
        # Latin and reference abbreviations
        "e.g",
        "eg",
        "i.e",
        "ie",
        "cf",
        "vs",
        "viz",
        "approx",
        "incl",
        "excl",
        "resp",
        "ca",
        "al",
        "fig",
        "p",
        "pp",
        # Company forms, which follow a name that may be followed by anything
        "inc",
        "corp",
        "co",
        "ltd",
        "llc",
        "plc",
        "bros",
        # Titles before a name
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "st",
        "jr",
        "sr",
    }
)
# One or more full stops, question or exclamation marks, then any closing quotes or brackets,
# then white space or the end: the places a sentence may end.
_CANDIDATE = re.compile(r"[.!?]+[\"'\u201d\u2019)\]]*(?=\s|$)")
# A.B or A.B.C (the final stop is the candidate): U.S., U.K., N.V.
_INITIALISM = re.compile(r"^(?:[A-Za-z]\.)+[A-Za-z]$")
_OPENERS = "([{"
_CLOSERS = ")]}"


def _ends_here(text: str, start: int, end: int, depth: int) -> bool:
    if depth > 0:
        return False  # "(e.g. a DCF)": a stop inside brackets belongs to them
    following = text[end:].lstrip()
    if following[:1].islower():
        return False  # "e.g. revenue", "Apple Inc. reported"
    if text[start] != "." or text[start:end].startswith(".."):
        return True  # "?", "!" and an ellipsis end what they close
    word = text[:start].rsplit(None, 1)[-1] if text[:start].strip() else ""
    word = word.lstrip("\"'\u201c\u2018([{")
    if len(word) == 1 and word.isalpha():
        return False  # an initial: "J. Smith"
    return not (word.casefold() in _ABBREVIATIONS or _INITIALISM.match(word))


def split_sentences(text: str) -> list[str]:
    """The sentences of `text`, stripped, in order; line breaks are left inside them."""
    sentences: list[str] = []
    begin = 0
    depth = 0
    scanned = 0
    for match in _CANDIDATE.finditer(text):
        start, end = match.span()
        for char in text[scanned:end]:
            if char in _OPENERS:
                depth += 1
            elif char in _CLOSERS:
                depth = max(0, depth - 1)
        scanned = end
        if _ends_here(text, start, end, depth):
            sentence = text[begin:end].strip()
            if sentence:
                sentences.append(sentence)
            begin = end
    rest = text[begin:].strip()
    if rest:
        sentences.append(rest)
    return sentences


def first_sentence(text: str) -> str:
    """The first sentence of `text` (all of it when it has one), or "" for blank text."""
    found = split_sentences(text)
    return found[0] if found else ""


__all__ = ["first_sentence", "split_sentences"]
