"""Dense level: every coordinate of every parent, ``p_child = p_parent * size + i``."""

from __future__ import annotations

import numpy as np

from .base import Level, LevelCapabilities, LevelProperties, Walk

DENSE_PROPERTIES = LevelProperties(
    full=True, ordered=True, unique=True, branchless=False, compact=True
)
DENSE_CAPABILITIES = LevelCapabilities(iterate="coordinate", locate=True, append=False, insert=True)


class Dense(Level):
    """A level that stores only its size; positions are computed, never stored."""

    kind = "dense"
    walk = Walk.LOCATED
    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        self.size = int(size)

    @property
    def properties(self) -> LevelProperties:
        """Full, ordered, unique, compact."""
        return DENSE_PROPERTIES

    @property
    def capabilities(self) -> LevelCapabilities:
        """Coordinate iteration, locate and insert."""
        return DENSE_CAPABILITIES

    def npositions(self, parent_npositions: int) -> int:
        """``parent * size`` positions."""
        return parent_npositions * self.size

    def arrays(self) -> dict[str, np.ndarray]:
        """No index arrays."""
        return {}

    def with_arrays(self, **arrays: np.ndarray) -> Dense:
        """A Dense level has no arrays to replace."""
        if arrays:
            raise TypeError(f"Dense level has no arrays, got {sorted(arrays)}")
        return Dense(self.size)

    def locate(self, parent_position: int, coordinate: int) -> int:
        """Position of ``coordinate`` under ``parent_position``."""
        return parent_position * self.size + coordinate
