"""What every level declares: its properties and capabilities (Chou et al., Table 1)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Literal

import numpy as np


@dataclass(frozen=True)
class LevelProperties:
    """Invariants of a level's coordinates, which code generation may rely on.

    full: every parent has every coordinate ``0..size-1``; ordered: siblings ascend;
    unique: no two siblings share a coordinate; branchless: no coordinate has a sibling and
    every parent has a child; compact: positions of stored coordinates are contiguous.
    """

    full: bool
    ordered: bool
    unique: bool
    branchless: bool
    compact: bool


@dataclass(frozen=True)
class LevelCapabilities:
    """How a level is read and written.

    iterate: ``"coordinate"`` (walk coordinates ``0..size-1``, Dense) or ``"position"`` (walk
    stored positions, Compressed/Singleton); locate: random access by coordinate;
    append: coordinates can be appended in order; insert: positions can be written in any order.
    """

    iterate: Literal["coordinate", "position"]
    locate: bool
    append: bool
    insert: bool


class Level(ABC):
    """One level of a tensor's coordinate hierarchy, storing one axis."""

    kind: str  # one of specs.LEVEL_KINDS
    size: int

    @property
    @abstractmethod
    def properties(self) -> LevelProperties:
        """The level's properties."""

    @property
    @abstractmethod
    def capabilities(self) -> LevelCapabilities:
        """The level's capabilities."""

    @abstractmethod
    def npositions(self, parent_npositions: int) -> int:
        """How many positions this level has, given its parent level's count."""

    @abstractmethod
    def arrays(self) -> dict[str, np.ndarray]:
        """The level's index arrays by name (``ptr``, ``idx``); empty for Dense."""

    @abstractmethod
    def with_arrays(self, **arrays: np.ndarray) -> Level:
        """The same kind of level with other index arrays (used to change index dtype)."""

    def __repr__(self) -> str:
        parts = [f"size={self.size}"]
        parts += [f"{name}=<{a.dtype}[{a.size}]>" for name, a in self.arrays().items()]
        return f"{type(self).__name__}({', '.join(parts)})"
