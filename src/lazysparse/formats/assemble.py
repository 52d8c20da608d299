"""Build levels from sorted coordinates, expand levels back to coordinates, and sort coordinates.

These are the vectorized (NumPy + Numba counting sorts) building blocks of every conversion.
Coordinates here are in storage order: ``coords[k]`` holds the coordinates of level ``k``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from lazysparse.formats.compiled.sortkernels import stable_perm_pass
from lazysparse.formats.config import check_densify
from lazysparse.formats.dtypes import choose_index_dtype
from lazysparse.formats.levels import (
    STRUCTURED_LEVELS,
    Bytemap,
    Compressed,
    Dense,
    Hashed,
    Level,
    Singleton,
)
from lazysparse.formats.levels.hashed import build_table
from lazysparse.formats.levels.registry import LEVEL_PROPERTIES, level_class
from lazysparse.formats.specs import STRUCTURED_KINDS, FormatSpec
from lazysparse.formats.structured import build_structured
from lazysparse.formats.tensor import Tensor


def build_tensor(
    shape: tuple[int, ...],
    spec: FormatSpec,
    coords: Sequence[np.ndarray],
    values: np.ndarray,
    fill_value: np.generic,
    *,
    what: str = "conversion",
) -> Tensor:
    """A tensor of layout ``spec`` from unique coordinates, sorted in storage order.

    Hashed levels keep that (sorted) order, one of the orders they allow, and get a table;
    Bytemap levels place entries at ``parent * size + c`` like Dense and mark them.
    """
    dims = tuple(shape[m] for m in spec.mode_order)
    if spec.level_kinds and spec.level_kinds[-1] in STRUCTURED_KINDS:
        return _structured(shape, spec, dims, coords, values, fill_value)
    n = int(values.size)
    idt = choose_index_dtype(shape, n)
    coords = [c if c.dtype == idt else c.astype(idt) for c in coords]
    b = _Building(n, idt)
    last = len(spec.level_kinds) - 1
    for k, kind in enumerate(spec.level_kinds):
        b.add(kind, dims[k], coords[k], k == last)
    if b.identity and b.npos == n:
        out_values = values
    else:
        if spec.level_kinds and level_class(spec.level_kinds[-1]) in (Dense, Bytemap):
            check_densify(b.npos * values.dtype.itemsize, shape, values.dtype, what)
        out_values = np.full(b.npos, fill_value, dtype=values.dtype)
        if b.parent is None:  # 0-d: one position
            out_values[: values.size] = values
        else:
            out_values[b.parent] = values
    return Tensor(shape, b.levels, spec.mode_order, out_values, fill_value, format=spec,
                  check=False)


class _Building:
    """The levels built so far over ``n`` sorted entries, and where each entry stands in
    the last of them: ``parent`` (None at the root; ``identity``: ``0..n-1``) among
    ``npos`` positions."""

    __slots__ = ("n", "idt", "levels", "parent", "identity", "npos")

    def __init__(self, n: int, idt: np.dtype) -> None:
        self.n, self.idt = n, idt
        self.levels: list[Level] = []
        self.parent: np.ndarray | None = None
        self.identity = False
        self.npos = 1

    def add(self, kind: str, size: int, c: np.ndarray, last: bool) -> None:
        """Build the level of ``kind`` over coordinates ``c`` below the ones so far."""
        cls, props = level_class(kind), LEVEL_PROPERTIES[kind]
        if props.branchless:  # one child per parent (singleton): positions unchanged
            self.levels.append(Singleton(size, c))
            return
        if self.identity:
            self.parent, self.identity = np.arange(self.n, dtype=np.int64), False
        parent = self.parent
        if cls is Dense:
            self.levels.append(Dense(size))
            self.parent = c.astype(np.int64) if parent is None else parent * size + c
            self.npos *= size
        elif cls is Bytemap:
            self.levels.append(_bytemap(size, c, parent, self.npos, last, self.idt))
            self.parent = c.astype(np.int64) + (0 if parent is None else parent * size)
            self.npos *= size
        else:
            self._segmented(kind, cls, size, c, not props.unique or last)

    def _segmented(self, kind: str, cls: type[Level], size: int, c: np.ndarray,
                   every: bool) -> None:
        """A compressed or hashed level: its children are the distinct (parent, ``c``)
        pairs, or every entry when ``every`` (a non-unique or last level)."""
        parent = self.parent
        new = None if every else _first_of_runs(c, parent)
        if new is None:
            idx, owners, count = c, parent, self.n
            self.parent, self.identity = None, True
        else:
            idx = c[new]
            owners = None if parent is None else parent[new]
            self.parent = np.cumsum(new, dtype=np.int64) - 1
            count = int(idx.size)
        ptr = _ptr(owners, self.npos, count, self.idt)
        if cls is Hashed:
            self.levels.append(Hashed(size, ptr, idx, build_table(ptr, idx, size)))
        else:
            self.levels.append(Compressed.of_kind(kind, size, ptr, idx))
        self.npos = count


def _first_of_runs(c: np.ndarray, parent: np.ndarray | None) -> np.ndarray | None:
    """Which sorted entries start a new (``parent``, ``c``) pair (None when there are no
    entries: every one of none is new)."""
    n = int(c.size)
    if n == 0:
        return None
    new = np.empty(n, dtype=bool)
    new[0] = True
    np.not_equal(c[1:], c[:-1], out=new[1:])
    if parent is not None:
        new[1:] |= parent[1:] != parent[:-1]
    return new


def _structured(shape: tuple[int, ...], spec: FormatSpec, dims: tuple[int, ...],
                coords: Sequence[np.ndarray], values: np.ndarray, fill_value: np.generic
                ) -> Tensor:
    """A structured layout (dia, bsr, ell, rle) from sorted entries: the leading dense
    levels' coordinates make one parent position (``formats.structured`` lays them out)."""
    parent = np.zeros(values.size, dtype=np.int64)
    for c, d in zip(coords[:-1], dims[:-1], strict=True):
        parent *= d
        parent += c
    return build_structured(shape, spec, parent, np.asarray(coords[-1]), values, fill_value)


def _bytemap(size: int, c: np.ndarray, parent: np.ndarray | None, npos: int, last: bool,
             idt: np.dtype) -> Bytemap:
    """A bytemap level over sorted entries with coordinates ``c`` under positions ``parent``
    (None at the root): the distinct (parent, c) pairs are its touched list and its mask."""
    new = None if last else _first_of_runs(c, parent)
    if new is None:
        idx, owners = c, parent
    else:
        idx, owners = c[new], None if parent is None else parent[new]
    check_densify(npos * size, (npos, size), np.dtype(np.uint8), "a bytemap's mask")
    mask = np.zeros(npos * size, dtype=np.uint8)
    mask[idx.astype(np.int64) + (0 if owners is None else owners * size)] = 1
    return Bytemap(size, mask, _ptr(owners, npos, int(idx.size), idt), idx)


def _ptr(owners: np.ndarray | None, nparent: int, count: int, idt: np.dtype) -> np.ndarray:
    """Segment pointers for ``count`` children whose (ascending) parent positions are ``owners``."""
    nbytes = (nparent + 1) * np.dtype(idt).itemsize
    check_densify(nbytes, (nparent + 1,), np.dtype(idt), "a pointer array under dense levels")
    ptr = np.zeros(nparent + 1, dtype=idt)
    if owners is None:
        ptr[1:] = count
    elif count:
        np.cumsum(np.bincount(owners, minlength=nparent), out=ptr[1:])
    return ptr


def expand(t: Tensor) -> tuple[list[np.ndarray], np.ndarray]:
    """Coordinates (storage order) and values of every position of ``t``'s last level.

    The result is lexicographically sorted in storage order when every level is ordered
    (Hashed and unordered Compressed levels yield their siblings in stored order).
    Coordinates under Dense levels are enumerated, so fill-valued entries may appear among
    them; a Bytemap level yields only its stored entries (and its positions' children).
    """
    e = _Expanding(t.index_dtype)
    for level in t.levels:
        if isinstance(level, Dense):
            e.dense(level.size)
        elif isinstance(level, STRUCTURED_LEVELS):  # the last level, under dense ones
            e.structured(level)
        elif isinstance(level, (Compressed, Hashed, Bytemap)):
            e.segmented(level)
        else:
            e.coords.append(level.idx if e.pos is None else level.idx[e.pos])
    return e.coords, (t.values if e.pos is None else t.values[e.pos])


class _Expanding:
    """The entries expanded so far: ``coords`` (one array per level, one entry per
    entry), among ``npos`` positions; ``pos``, their positions when not ``0..npos-1``
    (bytemaps); ``top_dense``, whether ``coords == [arange(npos)]``."""

    __slots__ = ("idt", "coords", "npos", "top_dense", "pos")

    def __init__(self, idt: np.dtype) -> None:
        self.idt = idt
        self.coords: list[np.ndarray] = []
        self.npos = 1
        self.top_dense = False
        self.pos: np.ndarray | None = None

    def dense(self, size: int) -> None:
        """Every coordinate ``0..size-1`` under each entry."""
        pos, idt = self.pos, self.idt
        if pos is not None:
            m = int(pos.size)
            self.coords = [np.repeat(c, size) for c in self.coords]
            self.coords.append(np.tile(np.arange(size, dtype=idt), m))
            self.pos = (np.repeat(pos * size, size) + np.tile(np.arange(size), m)) if m else pos
        elif self.coords:
            self.coords = [np.repeat(c, size) for c in self.coords]
            self.coords.append(np.tile(np.arange(size, dtype=idt), self.npos))
        else:
            self.coords = [np.arange(size, dtype=idt)]
        self.top_dense = len(self.coords) == 1 and self.pos is None
        self.npos *= size

    def structured(self, level: Any) -> None:
        """A structured level's children of each entry (its own walk)."""
        parents = self.pos if self.pos is not None else np.arange(self.npos, dtype=np.int64)
        owner, child, self.pos = level.children(parents)
        self.coords = [c[owner] for c in self.coords]
        self.coords.append(child.astype(self.idt))
        self.top_dense = False

    def segmented(self, level: Compressed | Hashed | Bytemap) -> None:
        """The children ``ptr[p] .. ptr[p+1]-1`` of each entry's position ``p``."""
        ptr, pos = level.ptr, self.pos
        if pos is not None:
            owner, child = _children(ptr, pos)
            self.coords = [c[owner] for c in self.coords]
        elif self.coords:
            wide = self.idt if self.npos <= np.iinfo(np.int32).max else np.dtype(np.int64)
            owner = np.repeat(np.arange(self.npos, dtype=wide), np.diff(ptr))
            self.coords = [owner] if self.top_dense else [c[owner] for c in self.coords]
            child = None
        else:  # the root: one parent, position 0
            owner, child = None, None
        self.top_dense = False
        idx = level.idx if child is None else level.idx[child]
        self.coords.append(idx)
        if isinstance(level, Bytemap):
            if owner is None:
                self.pos = idx.astype(np.int64)
            else:
                parents = owner if pos is None else pos[owner]
                self.pos = parents.astype(np.int64) * level.size + idx
            self.npos *= level.size
        else:
            self.pos = child
            self.npos = int(level.idx.size)


def _children(ptr: np.ndarray, parents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For parent positions ``parents``: the entry each child belongs to and the children's
    positions ``ptr[p] .. ptr[p+1]-1`` of each parent in turn."""
    lo = ptr[parents].astype(np.int64)
    lengths = ptr[parents + 1].astype(np.int64) - lo
    owner = np.repeat(np.arange(parents.size, dtype=np.int64), lengths)
    starts = np.cumsum(lengths) - lengths
    child = np.arange(int(lengths.sum()), dtype=np.int64) + np.repeat(lo - starts, lengths)
    return owner, child


def sort_coords(
    coords: list[np.ndarray],
    dims: tuple[int, ...],
    values: np.ndarray,
    sorted_from: int,
) -> tuple[list[np.ndarray], np.ndarray]:
    """Sort entries lexicographically by ``coords`` (LSD radix, one counting pass per level).

    The entries are already sorted by levels ``sorted_from..`` (as a key), so only the passes
    for levels ``sorted_from - 1 .. 0`` run.
    """
    n = int(values.size)
    if sorted_from == 0 or n < 2:
        return coords, values
    perm = np.arange(n, dtype=np.int64)
    for k in range(sorted_from - 1, -1, -1):
        perm = stable_perm_pass(coords[k], dims[k], perm)
    return [c[perm] for c in coords], values[perm]


def duplicate_mask(coords: Sequence[np.ndarray], n: int) -> np.ndarray:
    """``dup[i]``: sorted entry ``i`` has the same coordinates as entry ``i - 1``."""
    dup = np.zeros(n, dtype=bool)
    if n < 2:
        return dup
    same = np.ones(n - 1, dtype=bool)
    for c in coords:
        same &= c[1:] == c[:-1]
    dup[1:] = same
    if not coords:  # 0-d: every entry after the first repeats the one coordinate
        dup[1:] = True
    return dup


def merge_duplicates(
    coords: list[np.ndarray], values: np.ndarray, sum_duplicates: bool, order: tuple[int, ...]
) -> tuple[list[np.ndarray], np.ndarray]:
    """Sum repeated coordinates of sorted entries, or raise ValueError naming the first repeat."""
    dup = duplicate_mask(coords, int(values.size))
    if not dup.any():
        return coords, values
    if not sum_duplicates:
        q = int(np.flatnonzero(dup)[0])
        axis_coords = [0] * len(coords)
        for k, m in enumerate(order):
            axis_coords[m] = int(coords[k][q])
        raise ValueError(
            f"duplicate coordinates {tuple(axis_coords)}; pass sum_duplicates=True to add "
            "repeated entries"
        )
    starts = np.flatnonzero(~dup)
    summed = np.add.reduceat(values, starts) if values.size else values
    return [c[starts] for c in coords], summed.astype(values.dtype, copy=False)
