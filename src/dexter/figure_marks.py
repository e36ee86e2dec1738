"""How an answer's unchecked figures are shown to a person, and how a check is stored.

The figure verifier (`dexter.figures`) says which figures of an answer it could not find in, or
derive from, the data the run saw. Every surface that shows the answer (the terminal, a chat,
the MCP `research` tool, a scheduled job's alert, a report) marks those the same way: a dagger
right after the figure, in place, and one footer line naming them, so nothing unchecked goes
out looking checked and nothing is silently dropped. Verified and derived figures carry no
mark: a clean answer reads exactly as the model wrote it.

The answer itself is never rewritten here for storage or for `--json`: the marks are applied
where the answer is shown, from the figures' offsets.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from dexter.figures.types import Figure, FigureStatus, Verification

MARK = "†"
# Figures named in the footer before "and N more".
FOOTER_FIGURES = 6

_STATUSES: tuple[FigureStatus, ...] = ("verified", "derived", "unsupported")


def unchecked_spans(answer: str, verification: Verification | None) -> list[tuple[int, int]]:
    """Where each unsupported figure stands in `answer`, in order, without overlaps.

    The verifier's offsets are used when they still point at the figure's text; otherwise (an
    answer stored before a change, offsets off by a character) the figure's text is looked for,
    left to right, so a figure is marked wherever it can be found."""
    if verification is None:
        return []
    spans: list[tuple[int, int]] = []
    taken_to = 0
    for figure in sorted(verification.unsupported, key=lambda f: f.start):
        text = figure.text
        if not text:
            continue
        start = figure.start
        if not (start >= taken_to and answer[start : figure.end] == text):
            start = answer.find(text, taken_to)
            if start < 0:
                continue
        spans.append((start, start + len(text)))
        taken_to = start + len(text)
    return spans


def mark_in_place(
    answer: str,
    verification: Verification | None,
    wrap: Callable[[str], str] = lambda figure: figure + MARK,
) -> str:
    """`answer` with every unsupported figure passed through `wrap` (default: a dagger after it);
    everything else unchanged."""
    spans = unchecked_spans(answer, verification)
    if not spans:
        return answer
    parts: list[str] = []
    at = 0
    for start, end in spans:
        parts += [answer[at:start], wrap(answer[start:end])]
        at = end
    parts.append(answer[at:])
    return "".join(parts)


def footer(verification: Verification | None, *, mark: str = MARK) -> str | None:
    """One line naming the figures that could not be checked, or None when there are none:
    "† 1 figure could not be checked against the data: $391,305 million"."""
    if verification is None or not verification.unsupported:
        return None
    texts = list(dict.fromkeys(figure.text for figure in verification.unsupported))
    count = len(verification.unsupported)
    shown = "; ".join(texts[:FOOTER_FIGURES])
    if len(texts) > FOOTER_FIGURES:
        shown += f"; and {len(texts) - FOOTER_FIGURES} more"
    noun = "figure" if count == 1 else "figures"
    return f"{mark} {count} {noun} could not be checked against the data: {shown}".lstrip()


def marked_answer(answer: str, verification: Verification | None) -> str:
    """The answer as plain text for a person: unsupported figures marked in place, and the
    footer line after it. Unchanged when nothing is unsupported (or nothing was checked)."""
    line = footer(verification)
    if line is None:
        return answer
    return f"{mark_in_place(answer, verification).rstrip()}\n\n{line}"


def summary_line(verification: Verification | None) -> str | None:
    """A short count for a status line: "7 figures checked" or "6 of 7 figures checked";
    None when nothing was checked. (A correction was announced when it was asked for.)"""
    if verification is None:
        return None
    total = len(verification.figures)
    if not total:
        return None
    good = total - len(verification.unsupported)
    noun = "figure" if total == 1 else "figures"
    return f"{total} {noun} checked" if good == total else f"{good} of {total} {noun} checked"


# --------------------------------------------------------------------------- stored form


def verification_to_dict(verification: Verification) -> dict[str, Any]:
    """Everything about a check, offsets included, for a stored turn or a scratchpad."""
    return {
        "repaired": verification.repaired,
        "figures": [
            {
                "text": f.text,
                "value": f.value,
                "unit": f.unit,
                "status": f.status,
                "source": f.source,
                "formula": f.formula,
                "start": f.start,
                "end": f.end,
            }
            for f in verification.figures
        ],
    }


def verification_from_dict(data: object) -> Verification | None:
    """The check stored by `verification_to_dict`; None for anything else (no check stored, or
    a record this version cannot read), so an odd row never breaks a listing or a report."""
    if not isinstance(data, Mapping):
        return None
    figures: list[Figure] = []
    for item in data.get("figures") or ():
        if not isinstance(item, Mapping) or item.get("status") not in _STATUSES:
            continue
        try:
            figures.append(
                Figure(
                    text=str(item.get("text") or ""),
                    value=float(item.get("value") or 0.0),
                    unit=str(item.get("unit") or ""),
                    status=item["status"],
                    source=_optional_text(item.get("source")),
                    formula=_optional_text(item.get("formula")),
                    start=int(item.get("start") or 0),
                    end=int(item.get("end") or 0),
                )
            )
        except (TypeError, ValueError):
            continue
    try:
        repaired = int(data.get("repaired") or 0)
    except (TypeError, ValueError):
        repaired = 0
    return Verification(tuple(figures), repaired=repaired)


def _optional_text(value: object) -> str | None:
    return str(value) if value is not None else None


__all__ = [
    "MARK",
    "footer",
    "mark_in_place",
    "marked_answer",
    "summary_line",
    "unchecked_spans",
    "verification_from_dict",
    "verification_to_dict",
]
