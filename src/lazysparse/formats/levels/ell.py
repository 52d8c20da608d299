"""ELL level: a fixed number of slots per parent, padded (ELLPACK).

- each parent ``p`` has ``width`` slots at positions ``p * width .. p * width + width - 1``;
- ``idx[q]`` is the coordinate in slot ``q``, ascending within a parent, ``-1`` in the
  padding, which follows a parent's stored slots (a parent's entries are a prefix);
- the values array has one entry per slot (padding holds the fill value).
"""

from __future__ import annotations

import numpy as np

from lazysparse.formats.levels.base import (
    Level,
    LevelCapabilities,
    LevelParam,
    LevelProperties,
    Walk,
)

ELL_PROPERTIES = LevelProperties(
    full=False, ordered=True, unique=True, branchless=False, compact=False
)
ELL_CAPABILITIES = LevelCapabilities(iterate="position", locate=False, append=False,
                                     insert=True)

PAD = -1  # the coordinate of a padding slot


class Ell(Level):
    """``width`` slots per parent with coordinates ``idx`` (``-1``: padding)."""

    kind = "ell"
    PROPERTIES = ELL_PROPERTIES
    CAPABILITIES = ELL_CAPABILITIES
    format_name = "ell"
    attr_names = ("width",)
    walk = Walk.SLOTS
    kernel_params = (("w", LevelParam.WIDTH), ("idx", LevelParam.IDX))
    structured = True
    __slots__ = ("size", "width", "idx")

    def __init__(self, size: int, width: int, idx: np.ndarray) -> None:
        self.size = int(size)
        self.width = int(width)
        self.idx = idx

    @property
    def properties(self) -> LevelProperties:
        """Ordered and unique within a parent; not compact (padding slots)."""
        return ELL_PROPERTIES

    @property
    def capabilities(self) -> LevelCapabilities:
        """Position iteration over a parent's slots (to the first padding slot)."""
        return ELL_CAPABILITIES

    def npositions(self, parent_npositions: int) -> int:
        """``width`` slots per parent."""
        return parent_npositions * self.width

    def arrays(self) -> dict[str, np.ndarray]:
        """``idx``."""
        return {"idx": self.idx}

    def with_arrays(self, **arrays: np.ndarray) -> Ell:
        """Same level with ``idx`` replaced."""
        return Ell(self.size, self.width, arrays.get("idx", self.idx))

    def __repr__(self) -> str:
        return f"Ell(size={self.size}, width={self.width}, idx=<{self.idx.dtype}[{self.idx.size}]>)"

    def children(self, parents: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For parent positions ``parents``: owner entry, coordinate and position of each
        stored slot, in parent then slot order."""
        w = self.width
        q = (parents.astype(np.int64)[:, None] * w + np.arange(w, dtype=np.int64)).ravel()
        owner = np.repeat(np.arange(parents.size, dtype=np.int64), w)
        c = self.idx[q] if q.size else self.idx[:0]
        keep = c >= 0
        return owner[keep], c[keep], q[keep]

    def locate_many(self, parents: np.ndarray, coords: np.ndarray) -> np.ndarray:
        """Positions of coordinates ``coords`` under parents ``parents`` (-1: not stored)."""
        w = self.width
        if w == 0 or parents.size == 0:
            return np.full(parents.shape, -1, dtype=np.int64)
        base = parents.astype(np.int64) * w
        slots = self.idx[base[:, None] + np.arange(w, dtype=np.int64)]
        match = slots == coords[:, None]
        k = match.argmax(axis=1)
        return np.where(match.any(axis=1), base + k, -1)

    @property
    def nstored(self) -> int:
        """Slots that are not padding."""
        return int(np.count_nonzero(self.idx >= 0))
