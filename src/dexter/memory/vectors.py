"""The in-memory matrix of chunk vectors that vector search scans (shared by index and search)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the table exists only once numpy has been imported to build it
    import numpy as np
    import numpy.typing as npt

__all__ = ["VectorTable"]


@dataclass(frozen=True, slots=True)
class VectorTable:
    """Every embedded chunk of the current model, in memory for brute-force cosine.

    Row i of `matrix` (float32, L2-normalised) is chunk `ids[i]`; `path_codes[i]` indexes
    `path_names`; `dates[i]` is the daily-note date as a proleptic ordinal (-1 for MEMORY.md).
    """

    ids: npt.NDArray[np.int64]
    matrix: npt.NDArray[np.float32]
    path_codes: npt.NDArray[np.int32]
    path_names: tuple[str, ...]
    dates: npt.NDArray[np.int64]
    row_of: dict[int, int]

    def vector(self, chunk_id: int) -> npt.NDArray[np.float32] | None:
        row = self.row_of.get(chunk_id)
        return None if row is None else self.matrix[row]
