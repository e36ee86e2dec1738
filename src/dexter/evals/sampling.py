"""Seeded, stratified question sampling, bit-for-bit the original's (so runs are comparable).

FNV-1a over the seed's UTF-16 code units seeds an LCG; each category is Fisher-Yates shuffled
with "<seed>:<category>", one question per category is taken in category order, then the
leftovers are shuffled with "<seed>:remaining" and taken until the sample is full.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from dexter.evals.dataset import Question

T = TypeVar("T")
_MASK = 0xFFFFFFFF


def seed_hash(seed: str) -> int:
    value = 2166136261
    data = seed.encode("utf-16-le")
    for i in range(0, len(data), 2):
        value ^= data[i] | (data[i + 1] << 8)
        value = (value * 16777619) & _MASK
    return value


class Lcg:
    def __init__(self, seed: str) -> None:
        self.state = seed_hash(seed)

    def random(self) -> float:
        self.state = (1664525 * self.state + 1013904223) & _MASK
        return self.state / 2**32


def shuffled(items: Sequence[T], seed: str) -> list[T]:
    out = list(items)
    rng = Lcg(seed)
    for i in range(len(out) - 1, 0, -1):
        j = int(rng.random() * (i + 1))
        out[i], out[j] = out[j], out[i]
    return out


def stratified_sample(questions: Sequence[Question], size: int, seed: str) -> list[Question]:
    """`size` questions covering as many categories as possible, in dataset order."""
    if size >= len(questions):
        return list(questions)
    groups: dict[str, list[Question]] = {}
    for question in questions:
        groups.setdefault(question.category, []).append(question)
    order = sorted(groups)
    mixed = {name: shuffled(groups[name], f"{seed}:{name}") for name in order}
    chosen: list[Question] = []
    for name in order:
        if len(chosen) >= size:
            break
        chosen.append(mixed[name][0])
    rest = [q for name in order for q in mixed[name][1:]]
    for question in shuffled(rest, f"{seed}:remaining"):
        if len(chosen) >= size:
            break
        chosen.append(question)
    return sorted(chosen, key=lambda q: q.index)


def select(
    questions: Sequence[Question],
    *,
    sample: int | None = None,
    seed: str = "dexter-eval",
    categories: Sequence[str] = (),
) -> list[Question]:
    """Filter by category (case-insensitive), then sample."""
    pool = list(questions)
    if categories:
        wanted = {c.strip().lower() for c in categories}
        pool = [q for q in pool if q.category.lower() in wanted]
    return stratified_sample(pool, sample, seed) if sample is not None else pool
