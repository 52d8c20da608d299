"""Bytemap level: dense positions, a byte per position marking the stored ones, and the
touched coordinates of each parent as a sorted list (Finch's SparseBytemap; TACO's
Gustavson workspace).

- positions are ``p * size + c`` (as Dense): the values array has ``parent_npositions *
  size`` entries and the ones not stored hold the fill value;
- ``mask[p * size + c]`` (uint8, one per position) is 1 where an entry is stored;
- children of parent ``p`` are listed by ``idx[ptr[p] .. ptr[p+1]-1]``, ascending: iteration
  walks that list (ordered), locate reads the mask (O(1)).
"""

from __future__ import annotations

import numpy as np

from lazysparse.formats.compiled.jit import helper_jit
from lazysparse.formats.levels.base import Level, LevelCapabilities, LevelProperties, Walk

BYTEMAP_PROPERTIES = LevelProperties(
    full=False, ordered=True, unique=True, branchless=False, compact=False
)
BYTEMAP_CAPABILITIES = LevelCapabilities(iterate="position", locate=True, append=False, insert=True)


@helper_jit(nogil=True)
def bytemap_locate(mask, size, p, c):  # pragma: no cover - compiled
    """Position ``p * size + c`` when the bytemap stores it, else -1."""
    q = np.int64(p) * np.int64(size) + np.int64(c)
    return q if mask[q] != 0 else np.int64(-1)


def as_mask(mask: np.ndarray) -> np.ndarray:
    """``mask`` as uint8 (a bool mask is viewed, not copied; other dtypes test ``!= 0``)."""
    mask = np.asarray(mask)
    if mask.dtype == np.uint8:
        return mask
    if mask.dtype == np.bool_:
        return mask.view(np.uint8)
    return (mask != 0).astype(np.uint8)


class Bytemap(Level):
    """Positions ``p * size + c``, a ``mask`` of the stored ones, and the sorted touched
    list ``ptr``/``idx`` per parent."""

    kind = "bytemap"
    walk = Walk.BYTEMAP
    PROPERTIES = BYTEMAP_PROPERTIES
    CAPABILITIES = BYTEMAP_CAPABILITIES
    format_name = "bytemap"
    __slots__ = ("size", "mask", "ptr", "idx")

    def __init__(self, size: int, mask: np.ndarray, ptr: np.ndarray, idx: np.ndarray) -> None:
        self.size = int(size)
        self.mask = as_mask(mask)
        self.ptr = ptr
        self.idx = idx

    @property
    def properties(self) -> LevelProperties:
        """Ordered, unique, not full, not compact (unstored positions exist)."""
        return BYTEMAP_PROPERTIES

    @property
    def capabilities(self) -> LevelCapabilities:
        """Position iteration (the touched list), locate and insert."""
        return BYTEMAP_CAPABILITIES

    def npositions(self, parent_npositions: int) -> int:
        """``parent * size`` positions, as Dense."""
        return parent_npositions * self.size

    @property
    def nstored(self) -> int:
        """How many entries are stored (the touched list's length)."""
        return int(self.ptr[-1]) if self.ptr.size else 0

    def arrays(self) -> dict[str, np.ndarray]:
        """``ptr``, ``idx`` and ``mask``."""
        return {"ptr": self.ptr, "idx": self.idx, "mask": self.mask}

    def with_arrays(self, **arrays: np.ndarray) -> Bytemap:
        """Same level with arrays replaced (``mask`` kept uint8)."""
        return Bytemap(self.size, arrays.get("mask", self.mask), arrays.get("ptr", self.ptr),
                       arrays.get("idx", self.idx))

    def pos_range(self, parent_position: int) -> tuple[int, int]:
        """``[begin, end)`` into ``idx`` of the touched coordinates of ``parent_position``."""
        return int(self.ptr[parent_position]), int(self.ptr[parent_position + 1])

    def locate_many(self, parents: np.ndarray, coords: np.ndarray) -> np.ndarray:
        """Positions ``parents[j] * size + coords[j]`` where stored, else -1."""
        q = parents.astype(np.int64) * self.size + coords.astype(np.int64)
        return np.where(self.mask[q] != 0, q, -1) if q.size else q

    def locate(self, parent_position: int, coordinate: int) -> int:
        """Position of ``coordinate`` under ``parent_position``, or -1 when not stored."""
        return int(bytemap_locate(self.mask, self.size, parent_position, coordinate))
