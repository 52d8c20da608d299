"""Blocked level: a matrix's columns in dense ``R × C`` blocks (scipy's BSR), the row and
column axes each split into a block and an offset coordinate.

Under a Dense root over rows ``i`` (block row ``I = i // R``, offset ``r = i % R``):

- blocks of block row ``I`` are ``b = ptr[I] .. ptr[I+1]-1`` with block column ``idx[b]``
  (ascending, distinct);
- block ``b`` holds columns ``j = idx[b] * C + c`` for ``c in 0..C-1``, the entry of row
  ``i`` at position ``(b * R + r) * C + c`` (scipy's ``data[b, r, c]``);
- kernels walk a row's blocks and run a dense inner loop over ``c``.
"""

from __future__ import annotations

import numpy as np

from lazysparse.formats.compiled.search import segment_search
from lazysparse.formats.levels.base import LevelParam, Walk
from lazysparse.formats.levels.row_rooted import RowRootedLevel


class Blocked(RowRootedLevel):
    """Columns stored in ``block = (R, C)`` blocks: ``ptr`` per block row, ``idx`` per block."""

    kind = "blocked"
    format_name = "bsr"
    attr_names = ("block",)
    walk = Walk.BLOCKS
    kernel_params = (("ptr", LevelParam.PTR), ("idx", LevelParam.IDX),
                     ("br", LevelParam.BLOCK_ROWS), ("bc", LevelParam.BLOCK_COLS))
    __slots__ = ("size", "ptr", "idx", "block")

    def __init__(self, size: int, ptr: np.ndarray, idx: np.ndarray,
                 block: tuple[int, int]) -> None:
        self.size = int(size)
        self.ptr = ptr
        self.idx = idx
        self.block = (int(block[0]), int(block[1]))

    def npositions(self, parent_npositions: int) -> int:
        """``R * C`` positions per block."""
        return int(self.idx.size) * self.block[0] * self.block[1]

    def arrays(self) -> dict[str, np.ndarray]:
        """``ptr`` and ``idx``."""
        return {"ptr": self.ptr, "idx": self.idx}

    def with_arrays(self, **arrays: np.ndarray) -> Blocked:
        """Same level with ``ptr``/``idx`` replaced."""
        return Blocked(self.size, arrays.get("ptr", self.ptr), arrays.get("idx", self.idx),
                       self.block)

    def __repr__(self) -> str:
        return (f"Blocked(size={self.size}, block={self.block}, "
                f"blocks=<{self.idx.dtype}[{self.idx.size}]>)")

    def locate_many(self, parents: np.ndarray, coords: np.ndarray) -> np.ndarray:
        """Positions of columns ``coords`` of rows ``parents`` (-1: no stored block)."""
        r, c = self.block
        rows, cols = parents.astype(np.int64), coords.astype(np.int64)
        brow, bcol = rows // r, cols // c
        lo = self.ptr[brow].astype(np.int64)
        hi = self.ptr[brow + 1].astype(np.int64)
        b = segment_search(self.idx, lo, hi, bcol, "left")
        hit = b < hi
        hit[hit] = self.idx[b[hit]] == bcol[hit]
        return np.where(hit, (b * r + rows % r) * c + cols % c, -1)

    def children(self, parents: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For rows ``parents``: owner entry, column and position of each stored column of
        each row's blocks, in row then column order."""
        r, c = self.block
        rows = parents.astype(np.int64)
        brow, off = rows // r, rows % r
        lo = self.ptr[brow].astype(np.int64)
        n = self.ptr[brow + 1].astype(np.int64) - lo
        owner_b = np.repeat(np.arange(rows.size, dtype=np.int64), n)
        starts = np.cumsum(n) - n
        blk = np.arange(int(n.sum()), dtype=np.int64) + np.repeat(lo - starts, n)
        owner = np.repeat(owner_b, c)
        inner = np.tile(np.arange(c, dtype=np.int64), blk.size)
        bb = np.repeat(blk, c)
        col = self.idx[bb].astype(np.int64) * c + inner
        pos = (bb * r + off[owner]) * c + inner
        return owner, col, pos
