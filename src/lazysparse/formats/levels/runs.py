"""Run-length level: runs of one repeated value along an axis (Finch's SparseRLE).

- runs of parent ``p`` are positions ``ptr[p] .. ptr[p+1]-1``, run ``q`` covering the
  coordinates ``idx[q] .. end[q]-1`` (ascending, not overlapping; gaps read as fill);
- one value per run: kernels process a run at once (a reduction adds ``value × length``,
  an elementwise map maps the value once, two run-length operands merge run boundaries).
"""

from __future__ import annotations

import numpy as np

from lazysparse.formats.compiled.search import segment_search
from lazysparse.formats.levels.base import (
    Level,
    LevelCapabilities,
    LevelParam,
    LevelProperties,
    Walk,
)

RUNS_PROPERTIES = LevelProperties(
    full=False, ordered=True, unique=True, branchless=False, compact=True
)
RUNS_CAPABILITIES = LevelCapabilities(iterate="position", locate=False, append=True,
                                      insert=False)


class Runs(Level):
    """Runs ``[idx[q], end[q])`` of parent ``p`` at positions ``ptr[p] .. ptr[p+1]-1``."""

    kind = "runs"
    PROPERTIES = RUNS_PROPERTIES
    CAPABILITIES = RUNS_CAPABILITIES
    format_name = "rle"
    walk = Walk.RUNS
    kernel_params = (("ptr", LevelParam.PTR), ("idx", LevelParam.IDX), ("end", LevelParam.END))
    structured = True
    run_valued = True
    __slots__ = ("size", "ptr", "idx", "end")

    def __init__(self, size: int, ptr: np.ndarray, idx: np.ndarray, end: np.ndarray) -> None:
        self.size = int(size)
        self.ptr = ptr
        self.idx = idx
        self.end = end

    @property
    def properties(self) -> LevelProperties:
        """Ordered, unique, compact (one position per run)."""
        return RUNS_PROPERTIES

    @property
    def capabilities(self) -> LevelCapabilities:
        """Position iteration (a run at a time) and append."""
        return RUNS_CAPABILITIES

    def npositions(self, parent_npositions: int) -> int:
        """One position per run."""
        return int(self.ptr[-1]) if self.ptr.size else 0

    def arrays(self) -> dict[str, np.ndarray]:
        """``ptr``, ``idx`` (run starts) and ``end`` (run ends, exclusive)."""
        return {"ptr": self.ptr, "idx": self.idx, "end": self.end}

    def with_arrays(self, **arrays: np.ndarray) -> Runs:
        """Same level with arrays replaced."""
        return Runs(self.size, arrays.get("ptr", self.ptr), arrays.get("idx", self.idx),
                    arrays.get("end", self.end))

    @property
    def lengths(self) -> np.ndarray:
        """Coordinates each run covers."""
        return self.end.astype(np.int64) - self.idx.astype(np.int64)

    @property
    def nstored(self) -> int:
        """Coordinates the runs cover."""
        return int(self.lengths.sum())

    def locate_many(self, parents: np.ndarray, coords: np.ndarray) -> np.ndarray:
        """The run covering each coordinate ``coords`` under ``parents`` (-1: a gap)."""
        lo = self.ptr[parents].astype(np.int64)
        hi = self.ptr[parents + 1].astype(np.int64)
        q = segment_search(self.idx, lo, hi, coords, "right") - 1  # last start <= coord
        hit = q >= lo
        hit[hit] = coords[hit] < self.end[q[hit]]
        return np.where(hit, q, -1)

    def children(self, parents: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For parent positions ``parents``: owner entry, coordinate and run (position) of
        every covered coordinate, in parent then coordinate order."""
        lo = self.ptr[parents].astype(np.int64)
        n = self.ptr[parents + 1].astype(np.int64) - lo
        owner_r = np.repeat(np.arange(parents.size, dtype=np.int64), n)
        starts = np.cumsum(n) - n
        run = np.arange(int(n.sum()), dtype=np.int64) + np.repeat(lo - starts, n)
        length = self.end[run].astype(np.int64) - self.idx[run].astype(np.int64)
        owner = np.repeat(owner_r, length)
        pos = np.repeat(run, length)
        first = np.cumsum(length) - length
        coord = (np.arange(int(length.sum()), dtype=np.int64) - np.repeat(first, length)
                 + np.repeat(self.idx[run].astype(np.int64), length))
        return owner, coord, pos
