"""Coordinates selected by an index key, and where stored tensors keep them.

``selection`` turns a normalized key into the coordinates it selects without allocating
anything the size of the indexed array: the key is rewritten over a proxy shape holding
only the coordinates each component names, and each axis's coordinates come from a
zero-stride NumPy view (``broadcast_to``) of that proxy indexed by the rewritten key, so
NumPy's own rules (advanced-index placement, 0-d boolean masks, ``None``) decide the order
and shape, and only the selection is materialized. ``locate`` finds the stored positions
of coordinates by walking a tensor's levels (binary search in compressed segments),
O(log nnz) per coordinate. Reading a selection (``x[rows]``, ``x[:, cols]``) walks the levels
in ``formats.select``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from lazysparse import formats
from lazysparse.formats.compiled.search import segment_search
from lazysparse.formats.compiled.sortkernels import find_in_segments
from lazysparse.formats.config import check_allocation
from lazysparse.formats.levels.registry import is_located
from lazysparse.formats.select import Pick, select


def selection(items: list[Any], shape: tuple[int, ...]) -> tuple[np.ndarray, tuple[int, ...]]:
    """Coordinates ``(ndim, n)`` (int64, axis order) of the elements ``items`` selects, in
    NumPy's row-major selection order, and the selection's shape (what a value broadcasts
    to). ``items`` is a normalized key (``indexing.normalize_key``). Memory: the selection
    and each component's own coordinates, never an axis's or the array's extent."""
    if len(items) == len(shape) and all(type(k) is int for k in items):
        return np.array(items, dtype=np.int64).reshape(len(shape), 1), ()
    n = _selection_size(items, shape)
    check_allocation(n * max(len(shape), 1), np.int64, "the coordinates an index selects "
                     "(an assignment writes each selected element)", shape=(len(shape), n))
    lookups, reduced, key = _reduced_key(items, shape)
    if not shape:
        picked = np.broadcast_to(np.zeros((), np.int8), ())[key]
        return np.zeros((0, picked.size), np.int64), picked.shape
    coords = np.empty((len(shape), 0), np.int64)
    sel_shape: tuple[int, ...] = ()
    for axis, table in enumerate(lookups):
        proxy, axis_key = _key_for_axis(axis, reduced, key)
        along = table.reshape([-1 if j == axis else 1 for j in range(len(shape))])
        picked = np.broadcast_to(along, proxy)[axis_key]
        if axis == 0:
            sel_shape = picked.shape
            coords = np.empty((len(shape), picked.size), np.int64)
        coords[axis] = picked.reshape(-1)
    return coords, sel_shape


def _key_for_axis(axis: int, reduced: tuple[int, ...], key: tuple[Any, ...]
                  ) -> tuple[tuple[int, ...], tuple[Any, ...]]:
    """The proxy shape and key that give ``axis``'s coordinates: every other axis indexed
    by an array is a size-1 proxy read at 0 (the array's shape kept, so NumPy places the
    result the same way), so the proxy's extent stays near the selection's size (the
    product of all index arrays' sizes overflows NumPy's iterator: a 6-d mask)."""
    proxy = list(reduced)
    out: list[Any] = []
    j = 0
    for k in key:
        if k is None or (isinstance(k, np.ndarray) and k.dtype == np.bool_):
            out.append(k)
            continue
        if j != axis and isinstance(k, np.ndarray):
            proxy[j] = 1
            k = np.broadcast_to(np.intp(0), k.shape)
        out.append(k)
        j += 1
    return tuple(proxy), tuple(out)


def _selection_size(items: list[Any], shape: tuple[int, ...]) -> int:
    """How many elements the normalized key ``items`` selects (NumPy's rule: slices keep
    their length, integer arrays and the ``nonzero()`` arrays of boolean ones broadcast
    together, a 0-d boolean selects once or never), or a slice's length when that is more
    (its coordinate table): computed before anything that large is allocated."""
    n, table = 1, 0
    arrays: list[tuple[int, ...]] = []
    axis = 0
    for k in items:
        if k is None:
            continue
        if isinstance(k, np.ndarray) and k.dtype == np.bool_:
            if k.ndim == 0:
                n *= int(bool(k))
                continue
            arrays.append((int(np.count_nonzero(k)),))
            axis += k.ndim
            continue
        if isinstance(k, slice):
            m = len(range(*k.indices(shape[axis])))
            n, table = n * m, max(table, m)
        elif isinstance(k, np.ndarray):
            arrays.append(k.shape)
        axis += 1
    if arrays:
        try:
            n *= math.prod(np.broadcast_shapes(*arrays))
        except ValueError:  # NumPy's IndexError says so when the key is applied
            pass
    return max(n, table)


def _reduced_key(items: list[Any], shape: tuple[int, ...]
                 ) -> tuple[list[np.ndarray], tuple[int, ...], tuple[Any, ...]]:
    """An equivalent key over a small proxy shape: each axis keeps only the coordinates its
    component names (``lookups[axis]``, in the proxy's order), so indexing zero-stride grids
    of the proxy with the new key gives NumPy's selection order and shape. Boolean arrays
    become their ``nonzero()`` arrays (NumPy's definition); 0-d ones stay as they are."""
    lookups: list[np.ndarray] = []
    reduced: list[int] = []
    key: list[Any] = []
    components: list[Any] = []
    for k in items:
        if isinstance(k, np.ndarray) and k.dtype == np.bool_ and k.ndim:
            components.extend(np.nonzero(k))
        else:
            components.append(k)
    axis = 0
    for k in components:
        if k is None or (isinstance(k, np.ndarray) and k.dtype == np.bool_):
            key.append(k)
            continue
        n = shape[axis]
        if isinstance(k, slice):
            table = np.arange(*k.indices(n), dtype=np.int64)
            key.append(slice(None))
        elif isinstance(k, np.ndarray):
            table = _in_bounds(k, n, axis).reshape(-1)
            key.append(np.arange(table.size).reshape(k.shape))
        else:
            table = np.array([k], dtype=np.int64)
            key.append(0)
        lookups.append(table)
        reduced.append(table.size)
        axis += 1
    return lookups, tuple(reduced), tuple(key)


def _in_bounds(k: np.ndarray, n: int, axis: int) -> np.ndarray:
    """Integer index array ``k`` with negative entries wrapped (IndexError past ``n``)."""
    k = k.astype(np.int64, copy=False)
    if k.size and (k.min() < -n or k.max() >= n):
        bad = int(k[(k < -n) | (k >= n)][0])
        raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}")
    return np.where(k < 0, k + n, k)


def last_wins(coords: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``coords``/``values`` with repeated coordinates removed, the last occurrence kept
    (NumPy's assignment order), sorted row-major."""
    n = coords.shape[1]
    if n <= 1:
        return coords, values
    order = np.lexsort(coords[::-1]) if coords.shape[0] else np.arange(n)
    c = coords[:, order]
    keep = np.ones(n, dtype=bool)
    keep[:-1] = np.any(c[:, 1:] != c[:, :-1], axis=0)
    return c[:, keep], values[order][keep]


def equals_fill(values: np.ndarray, fill: Any) -> np.ndarray:
    """Which ``values`` equal ``fill`` (NaN equals NaN)."""
    same = values == fill
    if values.dtype.kind in "fc" and np.isnan(fill):
        same |= np.isnan(values)
    return same


def locate(t: formats.Tensor, coords: np.ndarray) -> np.ndarray:
    """The position in ``t.values`` of each coordinate (``coords`` is ``(ndim, n)``, axis
    order), -1 where ``t`` does not store it. Levels are walked outermost first: a dense
    level computes the child position, a compressed or singleton level binary-searches the
    parent's segment (sorted, as every lazysparse level is), a level that locates or a
    structured level finds it its own way (a run-length level: the run covering it)."""
    n = coords.shape[1]
    lo = np.zeros(n, dtype=np.int64)
    hi = np.ones(n, dtype=np.int64)
    for level, axis in zip(t.levels, t.mode_order, strict=True):
        c = coords[axis]
        missed = hi <= lo
        if is_located(level.kind):
            lo = np.where(missed, 0, lo * level.size + c)
            hi = np.where(missed, lo, lo + 1)
            continue
        if level.capabilities.locate or level.structured:
            # hashed, bytemap: random access; banded, ELL, blocked, runs: their own search
            found = level.locate_many(np.where(missed, 0, lo), c)  # type: ignore[attr-defined]
            lo = np.where(missed, -1, found)
            hi = np.where(lo >= 0, lo + 1, lo)
            continue
        if level.properties.branchless:  # one child per parent: search the parents' run
            seg_lo, seg_hi = lo, hi
        else:  # compressed: the segment of parent position lo
            top = level.ptr.size - 1  # a miss may sit past the last parent position
            p = np.where(missed, 0, np.minimum(lo, top))
            seg_lo = level.ptr[p].astype(np.int64)
            seg_hi = np.where(missed, seg_lo, level.ptr[np.minimum(p + 1, top)])
            seg_hi = seg_hi.astype(np.int64)
        if not level.properties.ordered:  # unique, any order: scan the segment
            lo = find_in_segments(level.idx, seg_lo, seg_hi, c)
            hi = np.where(lo >= 0, lo + 1, lo)
            continue
        lo = segment_search(level.idx, seg_lo, seg_hi, c, "left")
        hi = segment_search(level.idx, lo, seg_hi, c, "right")
    return np.where(hi > lo, lo, -1)


def take_leading(t: formats.Tensor, rows: np.ndarray) -> formats.Tensor:
    """Sparse ``t`` at coordinates ``rows`` (in bounds, any order, repeats allowed) of the
    axis its first level stores, that axis renumbered ``0..len(rows)-1`` (``A[rows]`` of
    CSR, ``A[:, cols]`` of CSC): a gather of the selected subtrees (``formats.select``)."""
    picks: list[Pick] = [None] * t.ndim
    picks[t.mode_order[0]] = np.asarray(rows, dtype=np.int64)
    out = select(t, picks)
    if out is None:
        raise ValueError(f"take_leading: layout {t.spec} has levels a gather does not walk")
    return out
