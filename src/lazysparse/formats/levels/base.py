"""What every level declares: its properties and capabilities (Chou et al., Table 1)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from enum import Enum
from typing import ClassVar, Literal

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


class Walk(Enum):
    """How a loop walks a level's positions under a parent position (Chou et al.'s
    ``pos_iter``/``pos_access``): code generation keeps one walk per member
    (``compile.lowering.level_walks``), never one per level kind."""

    LOCATED = "located"  # coordinate iteration: addressed ``p * size + c``, never walked
    SEGMENT = "segment"  # positions ``ptr[p] .. ptr[p+1]``, coordinate ``idx[q]``
    BYTEMAP = "bytemap"  # the touched list as a segment, child at ``p * size + c``
    BAND = "band"  # the diagonals meeting row ``p``, coordinate ``p + offsets[q]``
    SLOTS = "slots"  # fixed slots ``p * width ..`` up to the first padding slot
    BLOCKS = "blocks"  # a row's blocks' columns, a dense inner loop per block
    RUNS = "runs"  # runs ``ptr[p] .. ptr[p+1]``, each covering ``idx[q] .. end[q]-1``


class LevelParam(Enum):
    """What one kernel parameter of a level holds (a level with its own parameter list,
    :attr:`Level.kernel_params`, names them; the kernels map each to an argument)."""

    PTR = "ptr"
    IDX = "idx"
    END = "end"
    OFFSETS = "offsets"
    NDIAG = "ndiag"
    LENGTH = "length"
    LIMIT = "limit"
    WIDTH = "width"
    BLOCK_ROWS = "block_rows"
    BLOCK_COLS = "block_cols"


class Level(ABC):
    """One level of a tensor's coordinate hierarchy, storing one axis.

    Besides its properties and capabilities, a level class declares what code generation
    asks of it (class attributes, so that a layout described by level kinds alone, without
    data, answers too; see ``formats.levels.registry``):

    - ``PROPERTIES`` / ``CAPABILITIES`` (or ``properties_of(kind)``, ``capabilities_of(kind)``
      for a class with several configurations): what a layout of this kind declares;
    - ``format_name``: the named format of a layout whose last level this is under dense
      levels (``"hash"``, ``"dia"``); ``attr_names``: its scalars besides ``size``;
    - ``walk``: how loops walk its positions (:class:`Walk`);
    - ``kernel_params``: its own kernel parameters (name suffix, :class:`LevelParam`), or
      ``()`` when they follow from its capabilities (size, table, mask, ptr, idx);
    - ``structured``: it stores a structure (the last level under dense levels) that code
      reading ``ptr``/``idx`` directly must first make csr-like; ``row_rooted``: its
      positions use the row number (the level below a dense root);
    - ``run_valued``: one value per position stands for several coordinates (a run);
    - ``storage_row_sums`` / ``storage_column_scatter``: a reduction over it may run in its
      storage order (row sums; ``A.T @ x`` scattered into the columns).
    """

    kind: str  # one of specs.LEVEL_KINDS
    size: int

    PROPERTIES: ClassVar[LevelProperties]  # of every level of the class (unless configured)
    CAPABILITIES: ClassVar[LevelCapabilities]
    format_name: ClassVar[str | None] = None  # the named format of this last level under dense ones
    attr_names: ClassVar[tuple[str, ...]] = ()  # its scalars besides size (``level_attrs``)
    walk: ClassVar[Walk] = Walk.SEGMENT
    kernel_params: ClassVar[tuple[tuple[str, LevelParam], ...]] = ()
    structured: ClassVar[bool] = False
    row_rooted: ClassVar[bool] = False
    run_valued: ClassVar[bool] = False
    storage_row_sums: ClassVar[bool] = False
    storage_column_scatter: ClassVar[bool] = False

    @classmethod
    def properties_of(cls, kind: str) -> LevelProperties:
        """The properties of a level of kind ``kind`` of this class, without its data."""
        return cls.PROPERTIES

    @classmethod
    def capabilities_of(cls, kind: str) -> LevelCapabilities:
        """The capabilities of a level of kind ``kind`` of this class, without its data."""
        return cls.CAPABILITIES

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

    def children(self, parents: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For parent positions ``parents`` (int64): the entry of ``parents`` each child
        belongs to, the child's coordinate and its position, in parent then storage order
        (Chou et al.'s ``pos_iter``/``pos_access``, vectorized). Levels that locate by a
        table or mask walk their canonical (compressed) form instead."""
        raise TypeError(f"{type(self).__name__} levels are walked in their canonical form "
                        f"(formats.layouts.canonical)")

    @classmethod
    def empty(cls, kind: str, size: int, nparents: int) -> Level:
        """A level of kind ``kind`` storing nothing under ``nparents`` parent positions
        (what a placeholder result holds); levels without such a form raise ValueError."""
        raise ValueError(f"{kind!r} levels have no empty placeholder form")

    def __repr__(self) -> str:
        parts = [f"size={self.size}"]
        parts += [f"{name}=<{a.dtype}[{a.size}]>" for name, a in self.arrays().items()]
        return f"{type(self).__name__}({', '.join(parts)})"
