"""Banded level: the diagonals of a matrix (scipy's DIA; the unified-formats paper's
offset level under a dense row level).

Under a Dense root over rows ``i``, the stored coordinates of row ``i`` are the columns
``j = i + offsets[d]`` that fall inside ``[0, min(size, length))``, one per diagonal ``d``:

- ``offsets`` (ascending, distinct) are the stored diagonals, ``j - i``;
- a stored entry's position is ``d * length + j`` (scipy's ``data[d, j]``): the values
  array has ``len(offsets) * length`` entries, band positions outside the matrix unused;
- the diagonals meeting row ``i`` are a contiguous run ``lo..hi-1`` of ``offsets``, so
  the level iterates like a compressed one whose coordinate is computed, not stored.
"""

from __future__ import annotations

import numpy as np

from lazysparse.formats.levels.base import LevelParam, Walk
from lazysparse.formats.levels.row_rooted import RowRootedLevel


class Banded(RowRootedLevel):
    """Diagonals ``offsets`` of a matrix with ``size`` columns, ``length`` values each."""

    kind = "banded"
    format_name = "dia"
    attr_names = ("length",)
    walk = Walk.BAND
    kernel_params = (("off", LevelParam.OFFSETS), ("nd", LevelParam.NDIAG),
                     ("len", LevelParam.LENGTH), ("lim", LevelParam.LIMIT))
    storage_column_scatter = True
    __slots__ = ("size", "offsets", "length", "_counted")

    def __init__(self, size: int, offsets: np.ndarray, length: int) -> None:
        self.size = int(size)
        self.offsets = offsets
        self.length = int(length)
        self._counted: tuple[int, int] | None = None  # (nrows, stored_count), computed once

    def npositions(self, parent_npositions: int) -> int:
        """One position per diagonal and column slot, whatever the parent."""
        return int(self.offsets.size) * self.length

    def arrays(self) -> dict[str, np.ndarray]:
        """``offsets``."""
        return {"offsets": self.offsets}

    def with_arrays(self, **arrays: np.ndarray) -> Banded:
        """Same level with ``offsets`` replaced."""
        return Banded(self.size, arrays.get("offsets", self.offsets), self.length)

    def __repr__(self) -> str:
        return f"Banded(size={self.size}, offsets={self.offsets.size}, length={self.length})"

    @property
    def limit(self) -> int:
        """Columns a diagonal can hold: ``min(size, length)``."""
        return min(self.size, self.length)

    def children(self, parents: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For rows ``parents``: the entry of ``parents`` each child belongs to, the
        child's column and its position, in row then column order."""
        off = self.offsets.astype(np.int64)
        rows = parents.astype(np.int64)
        cols = rows[:, None] + off[None, :]
        keep = (cols >= 0) & (cols < self.limit)
        owner = np.nonzero(keep)[0]
        diag = np.broadcast_to(np.arange(off.size, dtype=np.int64), cols.shape)[keep]
        col = cols[keep]
        return owner, col, diag * self.length + col

    def locate_many(self, parents: np.ndarray, coords: np.ndarray) -> np.ndarray:
        """Positions of columns ``coords`` of rows ``parents`` (-1 off the band)."""
        off = self.offsets.astype(np.int64)
        want = coords.astype(np.int64) - parents.astype(np.int64)
        d = np.minimum(np.searchsorted(off, want), max(off.size - 1, 0))
        hit = (off.size > 0) & (coords >= 0) & (coords < self.limit)
        hit &= off[d] == want if off.size else hit
        return np.where(hit, d * self.length + coords, -1)

    def stored_count(self, nrows: int) -> int:
        """Band positions inside an ``nrows`` × ``size`` matrix (scipy's DIA ``nnz``;
        remembered: the plan cache asks on every call)."""
        if self._counted is None or self._counted[0] != nrows:
            off = self.offsets.astype(np.int64)
            lo = np.maximum(off, 0)
            hi = np.minimum(nrows + off, self.limit)
            self._counted = (nrows, int(np.maximum(hi - lo, 0).sum()))
        return self._counted[1]
