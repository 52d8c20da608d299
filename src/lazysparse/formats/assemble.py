"""Build levels from sorted coordinates, expand levels back to coordinates, and sort coordinates.

These are the vectorized (NumPy + Numba counting sorts) building blocks of every conversion.
Coordinates here are in storage order: ``coords[k]`` holds the coordinates of level ``k``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .config import check_densify
from .dtypes import choose_index_dtype
from .levels import STRUCTURED_LEVELS, Bytemap, Compressed, Dense, Hashed, Level, Singleton
from .levels.hashed import build_table
from .levels.registry import LEVEL_PROPERTIES, level_class
from .sortkernels import stable_perm_pass
from .specs import STRUCTURED_KINDS, FormatSpec
from .structured import build_structured
from .tensor import Tensor


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
    n = int(values.size)
    dims = tuple(shape[m] for m in spec.mode_order)
    if spec.level_kinds and spec.level_kinds[-1] in STRUCTURED_KINDS:
        return _structured(shape, spec, dims, coords, values, fill_value)
    idt = choose_index_dtype(shape, n)
    coords = [c if c.dtype == idt else c.astype(idt) for c in coords]
    levels: list[Level] = []
    # position of each entry in the level above: None at the root; `identity` means 0..n-1
    parent: np.ndarray | None = None
    identity = False
    npos = 1
    last = len(spec.level_kinds) - 1
    for k, kind in enumerate(spec.level_kinds):
        c, size = coords[k], dims[k]
        cls, props = level_class(kind), LEVEL_PROPERTIES[kind]
        if props.branchless:  # one child per parent (singleton): positions unchanged
            levels.append(Singleton(size, c))
            continue
        if identity:
            parent, identity = np.arange(n, dtype=np.int64), False
        if cls is Dense:
            levels.append(Dense(size))
            parent = c.astype(np.int64) if parent is None else parent * size + c
            npos *= size
        elif cls is Bytemap:
            levels.append(_bytemap(size, c, parent, npos, k == last, idt))
            base = 0 if parent is None else parent * size
            parent = c.astype(np.int64) + base
            npos *= size
        else:
            if not props.unique or k == last or n == 0:
                new = None  # every entry starts a new position
            else:
                new = np.empty(n, dtype=bool)
                new[0] = True
                np.not_equal(c[1:], c[:-1], out=new[1:])
                if parent is not None:
                    new[1:] |= parent[1:] != parent[:-1]
            if new is None:
                idx, owners, count = c, parent, n
                parent, identity = None, True
            else:
                idx = c[new]
                owners = None if parent is None else parent[new]
                parent = np.cumsum(new, dtype=np.int64) - 1
                count = int(idx.size)
            ptr = _ptr(owners, npos, count, idt)
            if cls is Hashed:
                levels.append(Hashed(size, ptr, idx, build_table(ptr, idx, size)))
            else:
                levels.append(Compressed.of_kind(kind, size, ptr, idx))
            npos = count
    if identity and npos == n:
        out_values = values
    else:
        itemsize = values.dtype.itemsize
        if spec.level_kinds and level_class(spec.level_kinds[-1]) in (Dense, Bytemap):
            check_densify(npos * itemsize, shape, values.dtype, what)
        out_values = np.full(npos, fill_value, dtype=values.dtype)
        if parent is None:  # 0-d: one position
            out_values[: values.size] = values
        else:
            out_values[parent] = values
    return Tensor(shape, levels, spec.mode_order, out_values, fill_value, format=spec, check=False)


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
    n = int(c.size)
    if last or n == 0:
        idx, owners = c, parent
    else:
        new = np.empty(n, dtype=bool)
        new[0] = True
        np.not_equal(c[1:], c[:-1], out=new[1:])
        if parent is not None:
            new[1:] |= parent[1:] != parent[:-1]
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
    idt = t.index_dtype
    coords: list[np.ndarray] = []  # one array per level so far, one entry per current entry
    npos = 1
    top_dense = False  # coords == [arange(npos)]: a position is its level-0 coordinate
    pos: np.ndarray | None = None  # positions of the entries when not 0..npos-1 (bytemaps)
    for level in t.levels:
        if isinstance(level, Dense):
            size = level.size
            if pos is not None:
                m = int(pos.size)
                coords = [np.repeat(c, size) for c in coords]
                coords.append(np.tile(np.arange(size, dtype=idt), m))
                pos = (np.repeat(pos * size, size) + np.tile(np.arange(size), m)) if m else pos
            elif coords:
                coords = [np.repeat(c, size) for c in coords]
                coords.append(np.tile(np.arange(size, dtype=idt), npos))
            else:
                coords = [np.arange(size, dtype=idt)]
            top_dense = len(coords) == 1 and pos is None
            npos *= size
        elif isinstance(level, STRUCTURED_LEVELS):  # the last level, under dense ones
            parents = pos if pos is not None else np.arange(npos, dtype=np.int64)
            owner, child, pos = level.children(parents)
            coords = [c[owner] for c in coords]
            coords.append(child.astype(idt))
            top_dense = False
        elif isinstance(level, (Compressed, Hashed, Bytemap)):
            ptr = level.ptr
            if pos is not None:
                owner, child = _children(ptr, pos)
                coords = [c[owner] for c in coords]
            elif coords:
                wide = idt if npos <= np.iinfo(np.int32).max else np.dtype(np.int64)
                owner = np.repeat(np.arange(npos, dtype=wide), np.diff(ptr))
                coords = [owner] if top_dense else [c[owner] for c in coords]
                child = None
            else:  # the root: one parent, position 0
                owner, child = None, None
            top_dense = False
            idx = level.idx if child is None else level.idx[child]
            coords.append(idx)
            if isinstance(level, Bytemap):
                if owner is None:
                    pos = idx.astype(np.int64)
                else:
                    parents = owner if pos is None else pos[owner]
                    pos = parents.astype(np.int64) * level.size + idx
                npos *= level.size
            else:
                pos = child
                npos = int(level.idx.size)
        else:
            coords.append(level.idx if pos is None else level.idx[pos])
    return coords, (t.values if pos is None else t.values[pos])


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
