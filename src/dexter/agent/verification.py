"""Checking an answer's figures before it is sent, and the one repair round.

After the model's final round the loop hands the answer here. Its figures are looked for in the
run's evidence (`dexter.figures.verify_answer`): every tool result the run saw, in full (results
the context stored out of sight included: the scratchpad holds them whole), calculations and
sub-agents' answers among them, the user's question, and what earlier runs of the same
conversation saw. In `repair` mode, figures found nowhere are sent back to the model once, with
the request to correct each, show its calculation or remove it; the revised answer is checked
again. Whatever is still unsupported is marked where the answer is shown
(`dexter.figure_marks`), never dropped.

The loop stays thin: it asks `FigureCheck` for the verdict, the repair request and the final
count, and makes the one extra model call itself.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from dexter.agent.scratchpad import ToolRecord
from dexter.figures.types import Evidence, Figure, Verification

VerifyMode = Literal["off", "flag", "repair"]
VERIFY_MODES: tuple[VerifyMode, ...] = ("off", "flag", "repair")
DEFAULT_VERIFY_MODE: VerifyMode = "repair"

QUESTION_LABEL = "your question"
EARLIER_QUESTION_LABEL = "your earlier question"
# Earlier runs of a conversation whose evidence a later answer may draw on.
MAX_EARLIER_RUNS = 8
LABEL_ARGS_CHARS = 80
# Characters of the answer either side of a figure quoted in the repair request.
CONTEXT_CHARS = 70
# A revision shorter than this share of an answer of at least REVISION_CHECKED_CHARS dropped
# more than figures: a reply such as "Nothing to do." is not the answer.
MIN_REVISION_SHARE = 0.5
REVISION_CHECKED_CHARS = 120

Verifier = Callable[[str, Sequence[Evidence]], Verification]


def _verify_answer(answer: str, evidence: Sequence[Evidence]) -> Verification:
    from dexter.figures import verify_answer  # loaded with the first answer checked

    verification: Verification = verify_answer(answer, evidence)
    return verification


# --------------------------------------------------------------------------- evidence


def evidence_label(tool: str, args: dict[str, Any]) -> str:
    """How a person would name a tool result: `get_financials (query="Apple revenue")`."""
    parts = []
    for key, value in args.items():
        shown = json.dumps(value, ensure_ascii=False, default=str)
        parts.append(f"{key}={shown}")
    text = ", ".join(parts)
    if len(text) > LABEL_ARGS_CHARS:
        text = text[: LABEL_ARGS_CHARS - 1] + "…"
    return f"{tool} ({text})" if text else tool


def tool_evidence(records: Iterable[ToolRecord]) -> list[Evidence]:
    """Every tool result the run saw, in full (a failed call's message too, labelled so: an
    answer may quote it)."""
    return [
        Evidence(evidence_label(r.tool, r.args) + (" [failed]" if r.is_error else ""), r.result)
        for r in records
        if r.result.strip()
    ]


def evidence_from_scratchpad(path: Path) -> list[Evidence]:
    """What a finished run saw, read back from its scratchpad (a resumed conversation's earlier
    turns): its question and every tool result. Unreadable lines are skipped; a missing file is
    no evidence."""
    found: list[Evidence] = []
    try:
        handle = path.open(encoding="utf-8", errors="replace")
    except OSError:
        return []
    with handle:
        for line in handle:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if not isinstance(record, dict):
                continue
            if record.get("type") == "init" and isinstance(record.get("content"), str):
                found.append(Evidence(EARLIER_QUESTION_LABEL, record["content"]))
            elif record.get("type") == "tool_call" and isinstance(record.get("result"), str):
                args = record.get("args")
                label = evidence_label(
                    str(record.get("tool")), args if isinstance(args, dict) else {}
                )
                failed = " [failed]" if record.get("error") else ""
                found.append(Evidence(label + failed, record["result"]))
    return found


class EarlierEvidence:
    """What the last few runs of one conversation saw, so a follow-up ("and in billions?") is
    checked against the data it builds on. Cleared with the conversation."""

    def __init__(self, max_runs: int = MAX_EARLIER_RUNS) -> None:
        self.max_runs = max(1, max_runs)
        self._runs: deque[tuple[Evidence, ...]] = deque(maxlen=self.max_runs)

    def add(self, question: str, evidence: Sequence[Evidence]) -> None:
        kept = [Evidence(EARLIER_QUESTION_LABEL, question), *evidence]
        self._runs.append(tuple(kept))

    def add_scratchpads(self, paths: Iterable[Path]) -> None:
        """Earlier runs of a resumed conversation, oldest first."""
        for path in paths:
            found = evidence_from_scratchpad(path)
            if found:
                self._runs.append(tuple(found))

    def items(self) -> list[Evidence]:
        return [item for run in self._runs for item in run]

    def clear(self) -> None:
        self._runs.clear()

    def __len__(self) -> int:
        return len(self._runs)


def run_evidence(
    question: str, records: Iterable[ToolRecord], earlier: Sequence[Evidence] = ()
) -> list[Evidence]:
    """Everything an answer's figures may come from: this run's tool results first, then the
    question, then earlier runs of the conversation."""
    return [*tool_evidence(records), Evidence(QUESTION_LABEL, question), *earlier]


# --------------------------------------------------------------------------- the repair round


def _in_context(answer: str, figure: Figure) -> str:
    start, end = figure.start, figure.end
    if answer[start:end] != figure.text:
        start = answer.find(figure.text)
        if start < 0:
            return ""
        end = start + len(figure.text)
    before = answer[max(0, start - CONTEXT_CHARS) : start]
    after = answer[end : end + CONTEXT_CHARS]
    text = " ".join(f"{before}{figure.text}{after}".split())
    return f"…{text}…"


def repair_request(answer: str, verification: Verification) -> str:
    """The message that asks the model, once, to fix what the check could not support."""
    lines = [
        "Before this answer reaches the user, each figure in it was checked against the data "
        "the tools returned in this conversation (and the user's own words). These figures were "
        "not found there, and do not follow from figures there by a simple calculation:",
        "",
    ]
    for figure in verification.unsupported:
        where = _in_context(answer, figure)
        line = f"- {figure.text}" + (f"  (in: {where})" if where else "")
        if figure.source:  # found, but for another period than the answer says
            line += f"; {figure.source}"
        lines.append(line)
    lines += [
        "",
        "For each one, do exactly one of these: correct it to the value the data shows; show "
        "the calculation that produces it from figures in the data (operands and result); or "
        "remove it. Do not call tools. Reply with the complete corrected answer only, in the "
        "same format and with the same citations, changing nothing else.",
    ]
    return "\n".join(lines)


def count_repaired(first: Verification, second: Verification) -> int:
    """How many of the first check's unsupported figures the revision fixed: corrected,
    explained or removed. A figure still written the same way and still unsupported is not."""
    still = {(f.text, f.unit) for f in second.unsupported} | {
        (round(f.value, 6), f.unit) for f in second.unsupported
    }
    fixed = 0
    for figure in first.unsupported:
        if (figure.text, figure.unit) in still or (round(figure.value, 6), figure.unit) in still:
            continue
        fixed += 1
    return fixed


def keeps_revision(answer: str, first: Verification, revised: str, second: Verification) -> bool:
    """Whether the revised answer replaces the first: it must still be the whole answer (not
    most of it gone) and support its figures no worse than the first did. Otherwise the first
    answer stands, marked, rather than a worse one."""
    before, after = len(answer.strip()), len(revised.strip())
    if before >= REVISION_CHECKED_CHARS and after < MIN_REVISION_SHARE * before:
        return False
    return len(second.unsupported) <= len(first.unsupported)


class FigureCheck:
    """The check of one run's answer, for one mode, against one body of evidence.

    `verify` checks an answer; `wants_repair` says whether the model is asked to fix it and
    `repair_request` is what it is asked; `recheck` is the verdict on the revised answer,
    counting what the repair fixed. `verifier` is `dexter.figures.verify_answer` unless a
    caller brings its own."""

    def __init__(
        self, mode: VerifyMode, evidence: Sequence[Evidence], verifier: Verifier | None = None
    ) -> None:
        self.mode = mode
        self.evidence = list(evidence)
        self._verifier = verifier or _verify_answer

    @classmethod
    def for_run(
        cls,
        mode: VerifyMode,
        question: str,
        records: Iterable[ToolRecord],
        earlier: Sequence[Evidence] = (),
    ) -> FigureCheck | None:
        """The check of a run's answer (None when the mode is off): its evidence is every tool
        result the run saw, the question and what earlier runs of the conversation saw."""
        if mode == "off":
            return None
        return cls(mode, run_evidence(question, records, earlier))

    def verify(self, answer: str) -> Verification:
        return self._verifier(answer, self.evidence)

    def wants_repair(self, verification: Verification) -> bool:
        return self.mode == "repair" and bool(verification.unsupported)

    def repair_request(self, answer: str, verification: Verification) -> str:
        return repair_request(answer, verification)

    def recheck(self, first: Verification, revised: str) -> Verification:
        second = self.verify(revised)
        return replace(second, repaired=count_repaired(first, second))


def parse_verify_mode(raw: str, where: str) -> VerifyMode:
    """`off`, `flag` or `repair` (any case; `false`/`no` read as off), else ValueError naming
    `where`."""
    value = raw.strip().lower()
    value = {"false": "off", "no": "off", "0": "off", "none": "off"}.get(value, value)
    for mode in VERIFY_MODES:
        if value == mode:
            return mode
    raise ValueError(f"{where} must be off, flag or repair, not {raw!r}")


__all__ = [
    "DEFAULT_VERIFY_MODE",
    "QUESTION_LABEL",
    "VERIFY_MODES",
    "EarlierEvidence",
    "FigureCheck",
    "VerifyMode",
    "count_repaired",
    "evidence_from_scratchpad",
    "evidence_label",
    "keeps_revision",
    "parse_verify_mode",
    "repair_request",
    "run_evidence",
    "tool_evidence",
]
