"""What the figure verifier works on and hands back: plain data, no behaviour beyond counting.

A `Figure` is one number an answer states (an amount, a percentage, a per-share value, a
multiple), normalised to a value and a unit, with how it was checked. `Verification` is the
result for one answer. `Evidence` is one piece of text the run actually saw (a tool result, a
calculation, the user's own question) that figures may be found in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

FigureStatus = Literal["verified", "derived", "unsupported"]


@dataclass(frozen=True, slots=True)
class Evidence:
    # Where the text came from, as a person would name it: "get_financials (AAPL income annual)",
    # "calculate", "your question".
    label: str
    text: str


@dataclass(frozen=True, slots=True)
class Figure:
    # As written in the answer, e.g. "$391.0 billion", "6.4%", "$6.11", "28.5x".
    text: str
    # Normalised: amounts in whole units (391.0 billion -> 391_000_000_000), percentages in
    # percent (6.4% -> 6.4), per-share values and multiples as written.
    value: float
    # "USD" (or another ISO currency), "%", "USD/share", "x", "shares", or "" for a bare count.
    unit: str
    status: FigureStatus
    # Verified: the evidence it was found in and the value there, e.g.
    # "get_financials (AAPL income annual): revenue 2024-09-28 = 391035000000".
    source: str | None = None
    # Derived: how it follows from found figures, e.g. "(416161 - 391035) / 391035 (growth)".
    formula: str | None = None
    # Where it stands in the answer (character offsets), so it can be marked in place.
    start: int = 0
    end: int = 0

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "text": self.text,
            "value": self.value,
            "unit": self.unit,
            "status": self.status,
        }
        if self.status == "derived":
            data["formula"] = self.formula
        elif self.status == "verified" or self.source:
            # An unsupported figure's source says where it was found instead (another period,
            # another company), which is what a reader needs to fix it.
            data["source"] = self.source
        return data


@dataclass(frozen=True, slots=True)
class Verification:
    figures: tuple[Figure, ...] = ()
    # Figures the repair round changed from unsupported to verified, derived or removed.
    repaired: int = 0

    def count(self, status: FigureStatus) -> int:
        return sum(1 for figure in self.figures if figure.status == status)

    @property
    def unsupported(self) -> tuple[Figure, ...]:
        return tuple(f for f in self.figures if f.status == "unsupported")

    def summary(self) -> dict[str, int]:
        return {
            "checked": len(self.figures),
            "verified": self.count("verified"),
            "derived": self.count("derived"),
            "unsupported": self.count("unsupported"),
            "repaired": self.repaired,
        }
