"""The figure verifier against the hand-labelled answer set (tests/data/figure_answers).

Every case is an answer written against real tool output, re-produced here offline from the
recorded fixtures; each figure in it is labelled by hand (right, derivable, or wrong by a digit,
scale, period, or invented). The verifier must flag at least 98% of the wrong figures, flag no
more than 2% of the right and derivable ones, and find every labelled figure.

Marked `figure_set`: `uv run pytest -n0 -m figure_set` runs this file alone while the verifier
is being built, and `uv run python bench/figure_verifier.py` prints the misses in detail.
"""

from __future__ import annotations

import importlib
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from dexter.figures.types import Evidence
from tests.support.figure_set import (
    DERIVABLE,
    LABELS,
    RIGHT,
    WRONG_LABELS,
    CaseScore,
    Scored,
    Totals,
    load_cases,
    prepare_evidence_sync,
    score_case,
    total,
)
from tests.support.fixtures import fixtures_dir

pytestmark = pytest.mark.figure_set

MIN_CASES = 170
MIN_RECALL = 0.98
MAX_FALSE_ALARMS = 0.02

CASES = load_cases()


@pytest.fixture(scope="module")
def evidence() -> dict[str, list[Evidence]]:
    return prepare_evidence_sync(CASES, fixtures_dir())


def _verifier() -> Callable[..., Any]:
    # Looked up by name: the verifier is built on the `figures` branch, against this set.
    verify_answer = getattr(importlib.import_module("dexter.figures"), "verify_answer", None)
    if verify_answer is None:
        pytest.fail("dexter.figures.verify_answer does not exist yet (branch `figures`).")
    return verify_answer  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def totals(evidence: dict[str, list[Evidence]]) -> Totals:
    verify_answer = _verifier()
    scores: list[CaseScore] = [
        score_case(case, verify_answer(case.answer, evidence[case.id])) for case in CASES
    ]
    return total(scores)


def _lines(items: list[Scored]) -> str:
    return "\n".join(
        f"  {s.case.id}: {s.figure.text!r} ({s.figure.label}) -> {s.status or 'not extracted'}"
        + (f" [{s.detail}]" if s.detail else "")
        for s in items
    )


def test_the_set_is_large_and_mixed_like_real_answers() -> None:
    count = len(CASES)
    assert count >= MIN_CASES, f"only {count} cases"
    labels = Counter(f.label for case in CASES for f in case.figures)
    assert set(labels) == set(LABELS), labels
    figures = sum(labels.values())
    wrong = sum(labels[label] for label in WRONG_LABELS)
    # Wrong figures are a minority, as in real answers, but enough to measure recall per kind.
    assert 0.2 <= wrong / figures <= 0.4, labels
    assert all(labels[label] >= 20 for label in WRONG_LABELS), labels
    assert labels[RIGHT] > labels[DERIVABLE] > 0
    companies = {c.args.get("company") for case in CASES for c in case.calls}
    assert {"AAPL", "NVDA", "SNOW", "TSLA"} <= companies


def test_every_case_is_checked_against_real_tool_output(
    evidence: dict[str, list[Evidence]],
) -> None:
    for case in CASES:
        got = evidence[case.id]
        tools = [e for e in got if e.label != "your question"]
        assert len(tools) == len(case.calls) >= 1, case.id
        for call, item in zip(case.calls, tools, strict=True):
            if call.name == "calculate":
                assert item.label == "calculate" and " = " in item.text, (case.id, item)
            else:
                # A data call's whole formatted result, headed as the meta-tool heads it.
                assert item.text.startswith(f"### {call.name}("), (case.id, item.label)
                assert len(item.text) > 200, (case.id, item)


def test_every_labelled_figure_is_extracted(totals: Totals) -> None:
    missing = totals.not_extracted
    assert not missing, f"{len(missing)} labelled figures not extracted:\n{_lines(missing)}"


def test_wrong_figures_are_flagged(totals: Totals) -> None:
    recall = totals.recall()
    by_kind = {label: round(totals.recall(label), 3) for label in WRONG_LABELS}
    assert recall >= MIN_RECALL, (
        f"recall {recall:.3f} on {len(totals.wrong)} wrong figures {by_kind}; let through:\n"
        + _lines(totals.missed)
    )


def test_right_and_derivable_figures_are_not_flagged(totals: Totals) -> None:
    rate = totals.false_alarm_rate()
    assert rate <= MAX_FALSE_ALARMS, (
        f"false alarms {rate:.3f} on {len(totals.good)} right or derivable figures:\n"
        + _lines(totals.false_alarms)
    )
