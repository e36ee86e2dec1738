"""The Finance Agent Benchmark questions: CSV rows with a rubric of atomic criteria.

Columns (by position): Question, Answer, Question Type, Expert time (mins), Rubric. A rubric cell
is a list of `{operator: correctness|contradiction, criteria: text}`, written either as JSON or
as a Python literal; literals are read with `ast.literal_eval`, which evaluates no code.
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


@dataclass(frozen=True, slots=True)
class Criterion:
    id: str  # c1, c2 … in rubric order
    operator: Operator
    text: str


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

    @property
    def categories(self) -> list[str]:
        return sorted({q.category for q in self.questions})


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
        if operator not in ("correctness", "contradiction"):
            raise DatasetError(
                f"Row {row}: rubric item {n} has operator {operator!r}; expected "
                "'correctness' or 'contradiction'."
            )
        if not body:
            raise DatasetError(f"Row {row}: rubric item {n} has no criteria text.")
        criteria.append(Criterion(f"c{n}", operator, body))  # type: ignore[arg-type]
    if not any(c.operator == "correctness" for c in criteria):
        raise DatasetError(f"Row {row}: the rubric has no correctness criterion.")
    return tuple(criteria)


def _minutes(cell: str, row: int) -> float:
    try:
        value = float(cell.strip())
    except ValueError:
        raise DatasetError(f"Row {row}: expert time {cell!r} is not a number.") from None
    if not value >= 0 or value == float("inf"):
        raise DatasetError(f"Row {row}: expert time must be a finite number of minutes >= 0.")
    return value


def parse_dataset(text: str, path: Path, name: str = DATASET_NAME) -> Dataset:
    rows = list(csv.reader(io.StringIO(text)))
    questions: list[Question] = []
    for number, row in enumerate(rows[1:], start=2):
        if not row or not row[0].strip():
            continue
        if len(row) < 5:
            raise DatasetError(f"Row {number}: expected 5 columns, found {len(row)}.")
        question, answer, category, minutes, rubric = (cell for cell in row[:5])
        index = len(questions)
        questions.append(
            Question(
                id=f"q{index + 1}",
                index=index,
                question=question.strip(),
                answer=answer.strip(),
                category=category.strip(),
                expert_minutes=_minutes(minutes, number),
                rubric=parse_rubric(rubric, number),
            )
        )
    if not questions:
        raise DatasetError(f"{path} has no questions.")
    return Dataset(name, path, tuple(questions), dataset_hash(questions))


def dataset_hash(questions: list[Question] | tuple[Question, ...]) -> str:
    canonical = [
        {
            "question": q.question,
            "answer": q.answer,
            "questionType": q.category,
            "expertTimeMinutes": int(q.expert_minutes)
            if q.expert_minutes == int(q.expert_minutes)
            else q.expert_minutes,
            "rubric": [{"operator": c.operator, "criteria": c.text} for c in q.rubric],
        }
        for q in questions
    ]
    payload = json.dumps(canonical, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:12]


def load_dataset(path: Path) -> Dataset:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise DatasetError(
            f"{path} does not exist. Pass --dataset CSV, or set DEXTER_FIXTURES to the folder "
            "holding evals/finance_agent.csv."
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise DatasetError(f"Cannot read {path}: {error}.") from None
    return parse_dataset(text, path)
