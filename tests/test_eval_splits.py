"""The benchmark's splits: v2's severity-weighted, must-pass scoring on hand-computed examples,
each split's date anchor, and the questions fetched from their pinned public sources (here a
local server holding the recorded copies), checked, cached and never kept when wrong."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from dexter.evals.dataset import Dataset, DatasetError, Question, load_dataset, parse_dataset
from dexter.evals.judge import Verdict, combine, judge_prompt, parse_verdicts, score_of
from dexter.evals.splits import SPLITS, cached_path, open_dataset, split_named
from tests.support.eval_sources import SplitSource, serving_splits
from tests.support.fixtures import fixtures_dir


def v2_item(text: str, severity: float, must_pass: bool = False) -> dict[str, Any]:
    modifiers: dict[str, Any] = {"severity": severity}
    if must_pass:
        modifiers["category"] = "must_pass"
    return {"operator": "finance_agent_v2_operator", "criteria": text, "modifiers": modifiers}


@pytest.fixture(scope="module")
def v2_example() -> Question:
    """A v2-shaped file: no Answer column, every item a v2 operator with modifiers."""
    rubric = [
        v2_item("Gross margin was 41.2%", 2.0, must_pass=True),
        v2_item("Freight costs fell", 1.0),
        v2_item("Mix shifted to software", 3.0),
        v2_item("The answer cites the 10-K", 1.0, must_pass=True),
    ]
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["Question", "Question Type", "Expert time (mins)", "Rubric"])
    writer.writerow(
        ["What drove Acme's 2025 margin?", "Earnings Analysis", "30", json.dumps(rubric)]
    )
    return parse_dataset(out.getvalue(), Path("example.csv")).questions[0]


def verdicts_for(question: Question, met: list[bool]) -> list[Verdict]:
    return [
        Verdict(c.id, c.operator, m, severity=c.severity, must_pass=c.must_pass)
        for c, m in zip(question.rubric, met, strict=True)
    ]


def test_v2_rubric_reads_severity_and_must_pass(v2_example: Question) -> None:
    q = v2_example
    assert q.answer == "" and q.category == "Earnings Analysis" and q.expert_minutes == 30
    assert [(c.operator, c.severity, c.must_pass) for c in q.rubric] == [
        ("correctness", 2.0, True),
        ("correctness", 1.0, False),
        ("correctness", 3.0, False),
        ("correctness", 1.0, True),
    ]
    # No reference answer is published: the judge is told so rather than shown an empty one.
    assert "(none published: grade against the criteria alone)" in judge_prompt(q, "x")


def test_v2_scores_by_severity_and_fails_on_a_must_pass_item(v2_example: Question) -> None:
    q = v2_example
    # Weights 2, 1, 3, 1 (total 7).
    assert score_of(verdicts_for(q, [True, True, True, True])) == (1.0, False, 4, 4)
    # The 1-weight item missed: 6 of 7.
    assert score_of(verdicts_for(q, [True, False, True, True]))[0] == pytest.approx(6 / 7)
    # The 3-weight item missed: 4 of 7 (an unweighted share would say 3 of 4).
    assert score_of(verdicts_for(q, [True, True, False, True]))[0] == pytest.approx(4 / 7)
    # A must-pass item missed: the question fails whatever else was met.
    assert score_of(verdicts_for(q, [True, True, True, False]))[0] == 0.0
    assert score_of(verdicts_for(q, [False, True, True, True]))[0] == 0.0


def test_jury_decides_must_pass_items_by_majority(v2_example: Question) -> None:
    q = v2_example

    def judge(met: list[bool]) -> tuple[list[Verdict], str]:
        return verdicts_for(q, met), ""

    graded = combine(
        q,
        {
            "a": judge([True, True, True, False]),
            "b": judge([True, False, True, True]),
            "c": judge([True, True, False, True]),
        },
        {},
    )
    # Majorities: c1 3/3, c2 2/3, c3 2/3, c4 2/3: all met, so the must-pass items hold.
    assert graded.score == 1.0 and not graded.must_pass_failed
    split = combine(q, {"a": judge([True, True, True, False]), "b": judge([True] * 4)}, {})
    # A tie on the must-pass c4 is "not met": the question fails.
    assert split.score == 0.0 and split.must_pass_failed
    assert [v.severity for v in split.verdicts] == [2.0, 1.0, 3.0, 1.0]


def test_judge_reply_keeps_each_criterions_raw_words(v2_example: Question) -> None:
    reply = (
        '{"correctness": [{"id": "c1", "met": true, "rationale": "states 41.2%"}, '
        '{"id": "c4", "met": false, "rationale": "no filing cited"}], "comment": "ok"}'
    )
    parsed, _ = parse_verdicts(reply, v2_example)
    assert parsed[0].raw == '{"id": "c1", "met": true, "rationale": "states 41.2%"}'
    assert parsed[3].rationale == "no filing cited" and parsed[3].must_pass
    assert parsed[1].raw == "" and not parsed[1].passed  # left out: not met
    assert score_of(parsed)[0] == 0.0


@pytest.fixture(scope="module")
def recorded() -> dict[str, Dataset]:
    root = fixtures_dir() / "evals"
    return {
        "v1": load_dataset(root / "finance_agent.csv"),
        "v1.1": load_dataset(root / "finance_agent_v1_1.csv"),
        "v2": load_dataset(root / "finance_agent_v2_public.csv"),
    }


def test_the_recorded_splits_parse(recorded: dict[str, Dataset]) -> None:
    v11, v2 = recorded["v1.1"], recorded["v2"]
    assert len(v11.questions) == 50 and not v11.weighted
    assert sum(len(q.correctness) for q in v11.questions) == 200
    assert all(len(q.contradictions) == 1 for q in v11.questions)
    assert len(v2.questions) == 27 and v2.weighted and len(v2.categories) == 9
    assert all(q.answer == "" for q in v2.questions)  # v2 publishes no reference answers
    criteria = [c for q in v2.questions for c in q.rubric]
    assert len(criteria) == 239 and all(c.operator == "correctness" for c in criteria)
    assert sum(c.must_pass for c in criteria) == 79
    assert sum(c.severity for c in criteria) == 317.0

    # The older file shares 39 of v1.1's questions, word for word.
    def texts(d: Dataset) -> set[str]:
        return {" ".join(q.question.lower().split()) for q in d.questions}

    assert len(texts(v11) & texts(recorded["v1"])) == 39
    # Files without modifiers keep the hash runs stored before v2 existed were made with.
    assert recorded["v1"].hash == "6c35d354355f"


def test_each_split_has_its_date_anchor() -> None:
    from dexter.cli.eval_run import _as_of

    assert _as_of(None, SPLITS["v1.1"]) == (date(2025, 4, 7), "the v1.1 date anchor")
    assert _as_of(None, SPLITS["v2"]) == (date(2026, 3, 1), "the v2 date anchor")
    assert _as_of(None, SPLITS["v1"]) == (None, None)
    assert _as_of(None, None) == (None, None)  # a file of one's own: no anchor
    assert _as_of("2025-12-31", SPLITS["v2"]) == (date(2025, 12, 31), "--as-of")
    assert _as_of("today", SPLITS["v2"]) == (None, None)
    assert split_named("V1.1") is SPLITS["v1.1"] and split_named("2") is SPLITS["v2"]


@pytest.fixture(scope="module")
def source() -> Iterator[SplitSource]:
    with serving_splits() as served:
        yield served


def test_a_split_is_downloaded_once_checked_and_cached(
    source: SplitSource, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEXTER_EVAL_DATA_URL", source.url)
    source.hits.clear()
    v2 = open_dataset("v2", tmp_path)
    assert source.hits == [
        "/vals-ai/finance-agent-v2/bb460b524472ae0955abdf243bbbac06958dc8c9/data/public.csv"
    ]
    assert (
        v2.split == "v2"
        and len(v2.questions) == 27
        and v2.path == cached_path(SPLITS["v2"], tmp_path)
    )
    assert open_dataset("v2", tmp_path).hash == v2.hash and len(source.hits) == 1  # cached
    default = open_dataset(None, tmp_path)
    assert default.split == "v1.1" and len(default.questions) == 50
    # A copy passed as a file is recognised by its bytes and keeps its split's semantics.
    assert open_dataset(str(v2.path), tmp_path).split == "v2"


def test_a_wrong_or_missing_download_is_refused_and_not_kept(
    source: SplitSource, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEXTER_EVAL_DATA_URL", source.url)
    key = next(k for k in source.files if "finance-agent/43e7328" in k)
    real = source.files[key]
    source.files[key] = real.replace(b"US Steel", b"US Stee1", 1)
    try:
        with pytest.raises(DatasetError, match="not the pinned file"):
            open_dataset("v1.1", tmp_path)
    finally:
        source.files[key] = real
    assert not cached_path(SPLITS["v1.1"], tmp_path).exists()
    monkeypatch.setenv("DEXTER_EVAL_DATA_URL", source.url + "/nothing-here")
    with pytest.raises(DatasetError, match=r"HTTP 404.*--dataset FILE.*DEXTER_EVAL_DATA_URL"):
        open_dataset("v1", tmp_path)
    with pytest.raises(DatasetError, match="neither a split nor a file"):
        open_dataset("v3", tmp_path)
