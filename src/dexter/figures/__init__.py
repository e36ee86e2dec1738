"""The figure verifier: every number an answer states is looked for in what the run's tools
returned, or derived from such numbers, before the answer is sent."""

from dexter.figures.types import Evidence, Figure, FigureStatus, Verification
from dexter.figures.verify import verify_answer

__all__ = ["Evidence", "Figure", "FigureStatus", "Verification", "verify_answer"]
