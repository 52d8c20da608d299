"""Hashed level: a compressed layout plus an open-addressing table for random access.

Chou et al.'s hashed level format (locate + insert), laid out so that kernels can also
iterate it like an unordered compressed level:

- children of parent position ``p`` are positions ``ptr[p] .. ptr[p+1]-1`` with coordinates
  ``idx[q]``, unique within a parent but in ANY order (hash order after an insert);
- ``table`` is an int64 array of power-of-two length ``>= 2 * nnz`` (and ``>= 8``); each slot
  holds a position ``q`` or ``-1`` (``EMPTY``).

The hash (generated kernels emit the same probe, so it is part of the format)::

    key  = uint64(p) * uint64(size) + uint64(c)                  # wrapping
    slot = (key * HASH_MULTIPLIER mod 2**64) >> (64 - log2(len(table)))
    while table[slot] != EMPTY:
        q = table[slot]
        if idx[q] == c and ptr[p] <= q < ptr[p+1]: found q
        slot = (slot + 1) & (len(table) - 1)                     # linear probing

(Fibonacci hashing: the multiplier is 2**64 / golden ratio.) The table is never more than
half full, so a probe always ends at an empty slot.
"""

from __future__ import annotations

import numpy as np

from lazysparse.formats.compiled.jit import helper_jit
from lazysparse.formats.levels.base import Level, LevelCapabilities, LevelProperties

#: 2**64 / golden ratio, the multiplier of the Fibonacci hash.
HASH_MULTIPLIER = 0x9E3779B97F4A7C15
#: An empty table slot.
EMPTY = -1
#: The shortest table.
MIN_TABLE_SIZE = 8

HASHED_PROPERTIES = LevelProperties(
    full=False, ordered=False, unique=True, branchless=False, compact=True
)
HASHED_CAPABILITIES = LevelCapabilities(iterate="position", locate=True, append=False, insert=True)

_MULT = np.uint64(HASH_MULTIPLIER)
_M64 = (1 << 64) - 1

#: the most entries (inserted, rehashed, looked up or filled) a hashed helper runs in
#: Python (``formats.hash_python``, the table fill here) rather than on its compiled loop
HASH_PYTHON_MAX = 1 << 10


def hash_on_python(entries: int) -> bool:
    """Whether a hashed insert, rehash, lookup or table fill over ``entries`` entries runs
    in Python (up to :data:`HASH_PYTHON_MAX`: about a millisecond, far less than a compile
    of its loop; open addressing is sequential, so not vectorized) or compiled."""
    return entries <= HASH_PYTHON_MAX


def slot_of(p: int, c: int, size: int, shift: int) -> int:
    """:func:`hash_slot` in Python ints (the same wrapping uint64 arithmetic)."""
    key = (p * size + c) & _M64
    return ((key * HASH_MULTIPLIER) & _M64) >> shift


def table_size(nnz: int) -> int:
    """The table length for ``nnz`` entries: the smallest power of two ``>= max(8, 2*nnz)``."""
    n = MIN_TABLE_SIZE
    while n < 2 * nnz:
        n *= 2
    return n


def table_shift(length: int) -> int:
    """``64 - log2(length)`` for a power-of-two table length (the hash's right shift)."""
    return 64 - (int(length).bit_length() - 1)


@helper_jit(nogil=True, inline="always")
def hash_slot(p, c, size, shift):  # pragma: no cover - compiled
    """The first slot probed for coordinate ``c`` under parent position ``p``."""
    key = np.uint64(p) * np.uint64(size) + np.uint64(c)
    return (key * _MULT) >> np.uint64(shift)


@helper_jit(nogil=True)
def shift_of(length):  # pragma: no cover - compiled
    """``64 - log2(length)`` inside compiled code (``length`` a power of two)."""
    bits = 0
    m = np.uint64(length)
    while m > np.uint64(1):
        m >>= np.uint64(1)
        bits += 1
    return 64 - bits


@helper_jit(nogil=True)
def hashed_locate_shift(ptr, idx, table, shift, size, p, c):  # pragma: no cover - compiled
    """:func:`hashed_locate` with the table's shift precomputed (what a loop should call)."""
    mask = np.uint64(table.size - 1)
    slot = hash_slot(p, c, size, shift)
    lo, hi = ptr[p], ptr[p + 1]
    while True:
        q = table[slot]
        if q == EMPTY:
            return -1
        if idx[q] == c and lo <= q and q < hi:
            return np.int64(q)
        slot = (slot + np.uint64(1)) & mask


@helper_jit(nogil=True)
def hashed_locate(ptr, idx, table, size, p, c):  # pragma: no cover - compiled
    """Position of coordinate ``c`` under parent position ``p`` of a hashed level, or -1."""
    return hashed_locate_shift(ptr, idx, table, shift_of(table.size), size, p, c)


@helper_jit(nogil=True)
def _locate_many(ptr, idx, table, size, parents, coords, out):  # pragma: no cover - compiled
    shift = shift_of(table.size)
    for j in range(parents.size):
        out[j] = hashed_locate_shift(ptr, idx, table, shift, size, parents[j], coords[j])


@helper_jit(nogil=True)
def _fill_table(ptr, idx, size, table, shift):  # pragma: no cover - compiled
    """Insert every position into an empty ``table`` (the positions' keys are unique)."""
    mask = np.uint64(table.size - 1)
    for p in range(ptr.size - 1):
        for q in range(ptr[p], ptr[p + 1]):
            slot = hash_slot(p, idx[q], size, shift)
            while table[slot] != EMPTY:
                slot = (slot + np.uint64(1)) & mask
            table[slot] = q


def _fill_table_python(ptr: np.ndarray, idx: np.ndarray, size: int, table: np.ndarray,
                       shift: int) -> None:
    """:func:`_fill_table` in Python, for a few positions (:func:`hash_on_python`)."""
    mask = table.size - 1
    bounds, coords = ptr.tolist(), idx.tolist()
    for p in range(len(bounds) - 1):
        for q in range(bounds[p], bounds[p + 1]):
            slot = slot_of(p, coords[q], size, shift)
            while table[slot] != EMPTY:
                slot = (slot + 1) & mask
            table[slot] = q


def build_table(ptr: np.ndarray, idx: np.ndarray, size: int, length: int | None = None
                ) -> np.ndarray:
    """The hash table of a level's ``ptr``/``idx`` (coordinates unique per parent), of
    ``length`` slots (default :func:`table_size` of the level's nnz)."""
    nnz = int(ptr[-1]) if ptr.size else 0
    n = table_size(nnz) if length is None else int(length)
    table = np.full(n, EMPTY, dtype=np.int64)
    if nnz:
        fill = _fill_table_python if hash_on_python(nnz + ptr.size) else _fill_table
        fill(ptr, idx, int(size), table, table_shift(n))
    return table


class Hashed(Level):
    """Compressed ``ptr``/``idx`` (siblings unique, any order) plus a hash ``table`` for
    locate; see the module docstring for the exact hash."""

    kind = "hashed"
    PROPERTIES = HASHED_PROPERTIES
    CAPABILITIES = HASHED_CAPABILITIES
    format_name = "hash"
    __slots__ = ("size", "ptr", "idx", "table")

    def __init__(self, size: int, ptr: np.ndarray, idx: np.ndarray,
                 table: np.ndarray | None = None) -> None:
        self.size = int(size)
        self.ptr = ptr
        self.idx = idx
        if table is None:
            table = build_table(np.asarray(ptr), np.asarray(idx), self.size)
        table = np.asarray(table)
        self.table = table if table.dtype == np.int64 else table.astype(np.int64)

    @property
    def properties(self) -> LevelProperties:
        """Unordered, unique, compact, not full."""
        return HASHED_PROPERTIES

    @property
    def capabilities(self) -> LevelCapabilities:
        """Position iteration, locate and insert."""
        return HASHED_CAPABILITIES

    def npositions(self, parent_npositions: int) -> int:
        """``ptr[-1]`` positions."""
        return int(self.ptr[-1]) if self.ptr.size else 0

    def arrays(self) -> dict[str, np.ndarray]:
        """``ptr``, ``idx`` and ``table``."""
        return {"ptr": self.ptr, "idx": self.idx, "table": self.table}

    def with_arrays(self, **arrays: np.ndarray) -> Hashed:
        """Same level with arrays replaced; ``table`` stays int64, and is rebuilt when
        ``ptr`` or ``idx`` changes without a new table."""
        ptr, idx = arrays.get("ptr", self.ptr), arrays.get("idx", self.idx)
        table = arrays.get("table")
        if table is None and ptr is self.ptr and idx is self.idx:
            table = self.table
        return Hashed(self.size, ptr, idx, table)

    def pos_range(self, parent_position: int) -> tuple[int, int]:
        """Positions ``[begin, end)`` of the children of ``parent_position``."""
        return int(self.ptr[parent_position]), int(self.ptr[parent_position + 1])

    def locate_many(self, parents: np.ndarray, coords: np.ndarray) -> np.ndarray:
        """Positions of ``coords[j]`` under ``parents[j]`` (-1 where not stored)."""
        out = np.empty(parents.size, np.int64)
        _locate_many(self.ptr, self.idx, self.table, self.size, parents.astype(np.int64),
                     coords.astype(np.int64), out)
        return out

    def locate(self, parent_position: int, coordinate: int) -> int:
        """Position of ``coordinate`` under ``parent_position``, or -1 when not stored."""
        return int(hashed_locate(self.ptr, self.idx, self.table, self.size,
                                 parent_position, coordinate))
