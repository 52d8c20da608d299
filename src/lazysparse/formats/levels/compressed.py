"""Compressed level (pointer + index arrays), as in CSR's column level or CSF."""

from __future__ import annotations

import numpy as np

from .base import Level, LevelCapabilities, LevelProperties

COMPRESSED_CAPABILITIES = LevelCapabilities(
    iterate="position", locate=False, append=True, insert=False
)


class Compressed(Level):
    """Children of parent ``p`` are positions ``ptr[p] .. ptr[p+1]-1``, with coordinates ``idx[q]``.

    ``unique=False`` is COO's first level: one position per stored entry, repeated coordinates
    allowed (the Singleton levels below make each full coordinate unique).
    """

    __slots__ = ("size", "ptr", "idx", "unique")

    def __init__(self, size: int, ptr: np.ndarray, idx: np.ndarray, *, unique: bool = True):
        self.size = int(size)
        self.ptr = ptr
        self.idx = idx
        self.unique = bool(unique)

    @property
    def kind(self) -> str:  # type: ignore[override]
        """``"compressed"`` or ``"compressed-nonunique"``."""
        return "compressed" if self.unique else "compressed-nonunique"

    @property
    def properties(self) -> LevelProperties:
        """Ordered and compact; unique unless configured otherwise; not full."""
        return LevelProperties(
            full=False, ordered=True, unique=self.unique, branchless=False, compact=True
        )

    @property
    def capabilities(self) -> LevelCapabilities:
        """Position iteration and append."""
        return COMPRESSED_CAPABILITIES

    def npositions(self, parent_npositions: int) -> int:
        """``ptr[-1]`` positions."""
        return int(self.ptr[-1]) if self.ptr.size else 0

    def arrays(self) -> dict[str, np.ndarray]:
        """``ptr`` and ``idx``."""
        return {"ptr": self.ptr, "idx": self.idx}

    def with_arrays(self, **arrays: np.ndarray) -> Compressed:
        """Same level with ``ptr``/``idx`` replaced."""
        return Compressed(
            self.size, arrays.get("ptr", self.ptr), arrays.get("idx", self.idx), unique=self.unique
        )

    def pos_range(self, parent_position: int) -> tuple[int, int]:
        """Positions ``[begin, end)`` of the children of ``parent_position``."""
        return int(self.ptr[parent_position]), int(self.ptr[parent_position + 1])
