"""The Finance Agent Benchmark questions: CSV rows with a rubric of atomic criteria.

Columns, found by their header: Question, Answer (absent from v2, which publishes no reference
answers), Question Type, Expert time (mins), Rubric; a file without those headers is read by
position in that order. A rubric cell is a list of `{operator, criteria}` (plus `modifiers` in
v2), written either as JSON or as a Python literal; literals are read with `ast.literal_eval`,
which evaluates no code.

Operators: `correctness` (the answer must state it), `contradiction` (the answer must not
contradict it), and v2's `finance_agent_v2_operator`, a fact the answer must state, read as
correctness. v2 modifiers: `severity` (the criterion's weight) and `category: "must_pass"`.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from dexter.config import ConfigError

Operator = Literal["correctness", "contradiction"]
DATASET_NAME = "finance_agent"


class DatasetError(ConfigError):
    """The questions file cannot be used; the message names the row."""


# v2 writes its criteria with this operator; each is a fact the answer must state.
V2_OPERATOR = "finance_agent_v2_operator"


@dataclass(frozen=True, slots=True)
class Criterion:
    id: str  # c1, c2 … in rubric order
    operator: Operator
    text: str
    severity: float = 1.0  # v2: the criterion's weight in the question's score
    must_pass: bool = False  # v2: the question fails when this criterion is not met


@dataclass(frozen=True, slots=True)
class Question:
    id: str  # q1 … in file order
    index: int
    question: str
    answer: str
    category: str
    expert_minutes: float
    rubric: tuple[Criterion, ...]

    @property
    def correctness(self) -> tuple[Criterion, ...]:
        return tuple(c for c in self.rubric if c.operator == "correctness")

    @property
    def contradictions(self) -> tuple[Criterion, ...]:
        return tuple(c for c in self.rubric if c.operator == "contradiction")


@dataclass(frozen=True, slots=True)
class Dataset:
    name: str
    path: Path
    questions: tuple[Question, ...]
    # First 12 hex digits of sha256 over the canonical JSON: the original's recipe, though not
    # its value (4a364dfe9833 for the public 50), since it rewrites quotes in literal rubrics
    # where we parse them exactly; it identifies the file a stored run was made from.
    hash: str
    # The benchmark split the file is (v1, v1.1, v2), None for any other file.
    split: str | None = None

    @property
    def categories(self) -> list[str]:
        return sorted({q.category for q in self.questions})

    @property
    def weighted(self) -> bool:
        """Whether any criterion carries a severity or must-pass modifier (v2)."""
        return any(c.severity != 1.0 or c.must_pass for q in self.questions for c in q.rubric)


def parse_rubric(cell: str, row: int) -> tuple[Criterion, ...]:
    text = cell.strip()
    try:
        raw: Any = json.loads(text)
    except json.JSONDecodeError:
        try:
            raw = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise DatasetError(
                f"Row {row}: the rubric is neither JSON nor a Python literal list."
            ) from None
    if not isinstance(raw, list) or not raw:
        raise DatasetError(f"Row {row}: the rubric must be a non-empty list of criteria.")
    criteria: list[Criterion] = []
    for n, item in enumerate(raw, start=1):
        if not isinstance(item, dict):
            raise DatasetError(f"Row {row}: rubric item {n} is not an object.")
        operator = str(item.get("operator", "")).strip()
        body = str(item.get("criteria", "")).strip()
        if operator == V2_OPERATOR:
            operator = "correctness"
        if operator not in ("correctness", "contradiction"):
            raise DatasetError(
                f"Row {row}: rubric item {n} has operator {operator!r}; expected "
                f"'correctness', 'contradiction' or {V2_OPERATOR!r}."
            )
        if not body:
            raise DatasetError(f"Row {row}: rubric item {n} has no criteria text.")
        severity, must_pass = _modifiers(item.get("modifiers"), row, n)
        if must_pass and operator != "correctness":
            raise DatasetError(
                f"Row {row}: rubric item {n} is must-pass but not a correctness item."
            )
        criteria.append(Criterion(f"c{n}", operator, body, severity, must_pass))  # type: ignore[arg-type]
    if not any(c.operator == "correctness" for c in criteria):
        raise DatasetError(f"Row {row}: the rubric has no correctness criterion.")
    return tuple(criteria)


def _modifiers(raw: Any, row: int, n: int) -> tuple[float, bool]:
    """(severity, must_pass) from a v2 `modifiers` object; (1.0, False) when there is none."""
    if raw is None:
        return 1.0, False
    if not isinstance(raw, dict):
        raise DatasetError(f"Row {row}: rubric item {n} has modifiers that are not an object.")
    severity = raw.get("severity", 1.0)
    if isinstance(severity, bool) or not isinstance(severity, int | float) or not severity > 0:
        raise DatasetError(
            f"Row {row}: rubric item {n} has severity {severity!r}; expected a number above 0."
        )
    if severity == float("inf"):
        raise DatasetError(f"Row {row}: rubric item {n} has an infinite severity.")
    category = raw.get("category")
    if category not in (None, "must_pass"):
        raise DatasetError(
            f"Row {row}: rubric item {n} has modifier category {category!r}; expected "
            "'must_pass' or none."
        )
    return float(severity), category == "must_pass"


_COLUMNS = ("question", "answer", "question type", "expert time (mins)", "rubric")


def _column_map(header: list[str]) -> dict[str, int]:
    """Column positions by header name; by position (the original's order) when the header
    does not name the question and rubric columns."""
    names = {cell.strip().lower(): i for i, cell in enumerate(header)}
    if "question" in names and "rubric" in names:
        return {name: names[name] for name in _COLUMNS if name in names}
    return {name: i for i, name in enumerate(_COLUMNS)}


def _minutes(cell: str, row: int) -> float:
    try:
        value = float(cell.strip())
    except ValueError:
        raise DatasetError(f"Row {row}: expert time {cell!r} is not a number.") from None
    if not value >= 0 or value == float("inf"):
        raise DatasetError(f"Row {row}: expert time must be a finite number of minutes >= 0.")
    return value


def parse_dataset(
    text: str, path: Path, name: str = DATASET_NAME, split: str | None = None
) -> Dataset:
    rows = list(csv.reader(io.StringIO(text)))
    columns = _column_map(rows[0] if rows else [])
    width = max(columns.values()) + 1
    questions: list[Question] = []
    for number, row in enumerate(rows[1:], start=2):
        if not row or not "".join(row).strip():
            continue
        if len(row) < width:
            raise DatasetError(f"Row {number}: expected {width} columns, found {len(row)}.")

        def cell(column: str, row: list[str] = row) -> str:
            return row[columns[column]].strip() if column in columns else ""

        if not cell("question"):
            continue
        index = len(questions)
        questions.append(
            Question(
                id=f"q{index + 1}",
                index=index,
                question=cell("question"),
                answer=cell("answer"),
                category=cell("question type"),
                expert_minutes=_minutes(cell("expert time (mins)") or "0", number),
                rubric=parse_rubric(cell("rubric"), number),
            )
        )
    if not questions:
        raise DatasetError(f"{path} has no questions.")
    return Dataset(name, path, tuple(questions), dataset_hash(questions), split)


def dataset_hash(questions: list[Question] | tuple[Question, ...]) -> str:
    canonical = [
        {
            "question": q.question,
            "answer": q.answer,
            "questionType": q.category,
            "expertTimeMinutes": int(q.expert_minutes)
            if q.expert_minutes == int(q.expert_minutes)
            else q.expert_minutes,
            "rubric": [_canonical(c) for c in q.rubric],
        }
        for q in questions
    ]
    payload = json.dumps(canonical, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:12]


def _canonical(criterion: Criterion) -> dict[str, Any]:
    item: dict[str, Any] = {"operator": criterion.operator, "criteria": criterion.text}
    # Only modified criteria carry modifiers, so files without them keep their old hash.
    if criterion.severity != 1.0 or criterion.must_pass:
        item["modifiers"] = {"severity": criterion.severity, "must_pass": criterion.must_pass}
    return item


def load_dataset(path: Path, split: str | None = None) -> Dataset:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise DatasetError(
            f"{path} does not exist. Pass --dataset v1.1, v2 or v1 (the benchmark's public "
            "splits, downloaded on first use) or the path of a questions CSV."
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise DatasetError(f"Cannot read {path}: {error}.") from None
    return parse_dataset(text, path, split=split)
