"""Singleton level: exactly one child per parent, as in COO's trailing coordinates."""

from __future__ import annotations

import numpy as np

from lazysparse.formats.levels.base import Level, LevelCapabilities, LevelProperties

SINGLETON_PROPERTIES = LevelProperties(
    full=False, ordered=True, unique=True, branchless=True, compact=True
)
SINGLETON_CAPABILITIES = LevelCapabilities(
    iterate="position", locate=False, append=True, insert=False
)


class Singleton(Level):
    """``p_child = p_parent`` and the coordinate is ``idx[p]``."""

    kind = "singleton"
    PROPERTIES = SINGLETON_PROPERTIES
    CAPABILITIES = SINGLETON_CAPABILITIES
    __slots__ = ("size", "idx")

    def __init__(self, size: int, idx: np.ndarray) -> None:
        self.size = int(size)
        self.idx = idx

    @classmethod
    def empty(cls, kind: str, size: int, nparents: int) -> Singleton:
        """No coordinates (its parent level stores none)."""
        return cls(size, np.zeros(0, np.int64))

    def children(self, parents: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One child per parent, at the parent's own position, coordinate ``idx[p]``."""
        owner = np.arange(parents.size, dtype=np.int64)
        return owner, np.asarray(self.idx, dtype=np.int64)[parents], parents

    @property
    def properties(self) -> LevelProperties:
        """Ordered, unique, branchless, compact."""
        return SINGLETON_PROPERTIES

    @property
    def capabilities(self) -> LevelCapabilities:
        """Position iteration and append."""
        return SINGLETON_CAPABILITIES

    def npositions(self, parent_npositions: int) -> int:
        """Same count as the parent."""
        return parent_npositions

    def arrays(self) -> dict[str, np.ndarray]:
        """``idx``."""
        return {"idx": self.idx}

    def with_arrays(self, **arrays: np.ndarray) -> Singleton:
        """Same level with ``idx`` replaced."""
        return Singleton(self.size, arrays.get("idx", self.idx))
