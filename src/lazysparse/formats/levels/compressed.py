"""Compressed level (pointer + index arrays), as in CSR's column level or CSF."""

from __future__ import annotations

import numpy as np

from lazysparse.formats.levels.base import Level, LevelCapabilities, LevelProperties

COMPRESSED_CAPABILITIES = LevelCapabilities(
    iterate="position", locate=False, append=True, insert=False
)


class Compressed(Level):
    """Children of parent ``p`` are positions ``ptr[p] .. ptr[p+1]-1``, with coordinates ``idx[q]``.

    ``unique=False`` is COO's first level: one position per stored entry, repeated coordinates
    allowed (the Singleton levels below make each full coordinate unique). ``ordered=False``
    (unique only) lets siblings come in any order: what a scattered write drains without
    sorting (a Gustavson SpGEMM row) and what scipy's CSR with unsorted indices maps to.
    """

    __slots__ = ("size", "ptr", "idx", "unique", "ordered")

    def __init__(self, size: int, ptr: np.ndarray, idx: np.ndarray, *, unique: bool = True,
                 ordered: bool = True):
        if not ordered and not unique:
            raise ValueError("an unordered compressed level must be unique (a non-unique "
                             "level relies on order to group repeated coordinates)")
        self.size = int(size)
        self.ptr = ptr
        self.idx = idx
        self.unique = bool(unique)
        self.ordered = bool(ordered)

    @classmethod
    def of_kind(cls, kind: str, size: int, ptr: np.ndarray, idx: np.ndarray) -> Compressed:
        """The compressed level of level kind ``kind`` over these arrays."""
        if kind not in ("compressed", "compressed-nonunique", "compressed-unordered"):
            raise ValueError(f"{kind!r} is not a compressed level kind")
        return cls(size, ptr, idx, unique=kind != "compressed-nonunique",
                   ordered=kind != "compressed-unordered")

    @classmethod
    def empty(cls, kind: str, size: int, nparents: int) -> Compressed:
        """No children under any of the ``nparents`` parents."""
        return cls.of_kind(kind, size, np.zeros(nparents + 1, np.int64), np.zeros(0, np.int64))

    def children(self, parents: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Positions ``ptr[p] .. ptr[p+1]-1`` of each parent, coordinates ``idx[q]``."""
        ptr = np.asarray(self.ptr, dtype=np.int64)
        starts = ptr[parents]
        counts = ptr[parents + 1] - starts
        owner = np.repeat(np.arange(parents.size, dtype=np.int64), counts)
        offsets = np.repeat(starts - np.cumsum(counts) + counts, counts)
        pos = np.arange(int(counts.sum()), dtype=np.int64) + offsets
        return owner, np.asarray(self.idx, dtype=np.int64)[pos], pos

    CAPABILITIES = COMPRESSED_CAPABILITIES

    @classmethod
    def properties_of(cls, kind: str) -> LevelProperties:
        """Compact, not full; unique unless ``compressed-nonunique``, ordered unless
        ``compressed-unordered``."""
        return LevelProperties(full=False, ordered=kind != "compressed-unordered",
                               unique=kind != "compressed-nonunique", branchless=False,
                               compact=True)

    @property
    def kind(self) -> str:  # type: ignore[override]
        """``"compressed"``, ``"compressed-nonunique"`` or ``"compressed-unordered"``."""
        if not self.ordered:
            return "compressed-unordered"
        return "compressed" if self.unique else "compressed-nonunique"

    @property
    def properties(self) -> LevelProperties:
        """Compact, not full; ordered and unique unless configured otherwise."""
        return LevelProperties(
            full=False, ordered=self.ordered, unique=self.unique, branchless=False, compact=True
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
            self.size, arrays.get("ptr", self.ptr), arrays.get("idx", self.idx),
            unique=self.unique, ordered=self.ordered,
        )

    def pos_range(self, parent_position: int) -> tuple[int, int]:
        """Positions ``[begin, end)`` of the children of ``parent_position``."""
        return int(self.ptr[parent_position]), int(self.ptr[parent_position + 1])
