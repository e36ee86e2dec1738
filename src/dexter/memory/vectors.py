"""The in-memory vectors that vector search scans (shared by index and search)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the table exists only once numpy has been imported to build it
    import numpy as np
    import numpy.typing as npt

__all__ = ["VectorTable"]


@dataclass(frozen=True, slots=True)
class VectorTable:
    """Every embedded chunk of the current model.

    Row i of `matrix` (float32, L2-normalised) is the mean of chunk `ids[i]`'s passage vectors:
    what MMR compares, and the first stage of a search on an index too big to scan by passage.
    `passages` (float32, one row per passage, a chunk's rows together and in chunk order, chunk i
    starting at row `passage_starts[i]`) is there when the index is small enough to scan whole;
    otherwise search reads the passage vectors of its first-stage candidates from the database.
    `path_codes[i]` indexes `path_names`; `dates[i]` is the daily-note date as a proleptic
    ordinal (-1 for MEMORY.md).
    """

    ids: npt.NDArray[np.int64]
    matrix: npt.NDArray[np.float32]
    path_codes: npt.NDArray[np.int32]
    path_names: tuple[str, ...]
    dates: npt.NDArray[np.int64]
    row_of: dict[int, int]
    passages: npt.NDArray[np.float32] | None = None
    passage_starts: npt.NDArray[np.int64] | None = None
    passage_count: int = 0

    def vector(self, chunk_id: int) -> npt.NDArray[np.float32] | None:
        row = self.row_of.get(chunk_id)
        return None if row is None else self.matrix[row]
