"""What changed in a 10-K/10-Q section against the previous filing of the same form, without a
model: the section's risk-factor headings (or paragraphs) compared as sets."""

from __future__ import annotations

import re
from dataclasses import dataclass

# A risk factor's heading: one sentence of 40-400 characters on its own line, ending in a
# period, as 10-Ks set them in bold or italics above the paragraphs that explain them.
_MIN, _MAX = 40, 400
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class SectionDiff:
    added: tuple[str, ...]
    removed: tuple[str, ...]
    unchanged: int

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed)


def _key(line: str) -> str:
    return _SPACE.sub(" ", line).strip().lower()


def risk_factor_headings(section: str) -> list[str]:
    """Each line that reads as a factor's heading: a short single sentence ending in a period."""
    headings: list[str] = []
    seen: set[str] = set()
    for raw in section.splitlines():
        line = _SPACE.sub(" ", raw).strip()
        if not (_MIN <= len(line) <= _MAX) or not line.endswith("."):
            continue
        if line.count(". ") > 0:  # several sentences: an explanatory paragraph
            continue
        key = _key(line)
        if key not in seen:
            seen.add(key)
            headings.append(line)
    return headings


def diff_sections(previous: str, current: str) -> SectionDiff:
    before = risk_factor_headings(previous)
    after = risk_factor_headings(current)
    old = {_key(h) for h in before}
    new = {_key(h) for h in after}
    return SectionDiff(
        added=tuple(h for h in after if _key(h) not in old),
        removed=tuple(h for h in before if _key(h) not in new),
        unchanged=len(old & new),
    )
