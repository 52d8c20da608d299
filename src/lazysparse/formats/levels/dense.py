"""Dense level: every coordinate of every parent, ``p_child = p_parent * size + i``."""

from __future__ import annotations

import numpy as np

from lazysparse.formats.levels.base import Level, LevelCapabilities, LevelProperties, Walk

DENSE_PROPERTIES = LevelProperties(
    full=True, ordered=True, unique=True, branchless=False, compact=True
)
DENSE_CAPABILITIES = LevelCapabilities(iterate="coordinate", locate=True, append=False, insert=True)


class Dense(Level):
    """A level that stores only its size; positions are computed, never stored."""

    kind = "dense"
    walk = Walk.LOCATED
    PROPERTIES = DENSE_PROPERTIES
    CAPABILITIES = DENSE_CAPABILITIES
    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        self.size = int(size)

    @classmethod
    def empty(cls, kind: str, size: int, nparents: int) -> Dense:
        """A dense level: every coordinate of every parent (its values hold the fill)."""
        return cls(size)

    def children(self, parents: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every coordinate ``0..size-1`` of each parent, at ``p * size + c``."""
        n = self.size
        owner = np.repeat(np.arange(parents.size, dtype=np.int64), n)
        coord = np.tile(np.arange(n, dtype=np.int64), parents.size)
        return owner, coord, (parents[:, None] * n + np.arange(n, dtype=np.int64)).ravel()

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
