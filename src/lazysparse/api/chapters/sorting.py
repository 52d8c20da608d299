"""Array API sorting functions: sort and argsort (stable, optionally descending).

Sorting is data-dependent, so both compute their input first.

- ``sort`` of a dense tensor sorts the NumPy array. Of a sparse tensor it works on the
  stored entries only: in each line along ``axis`` the stored values are ranked, those that
  sort before the fill value go first, then the line's unstored (fill) entries, then the
  rest. The result is a COO tensor with the same stored count and fill value (never
  densified).
- ``argsort``'s result is a dense index array whatever the input (checked against the
  densify limit); of a sparse tensor it sorts only the stored entries that differ from the
  fill and places each line's fill entries as one block, in index order.

Descending order is the reverse of the stable ascending order of the reversed line, so ties
keep their original order; NaN sorts last ascending and first descending (as NumPy's flip).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.api.building.lazy_plans import check_array, check_kind, normalize_axis
from lazysparse.api.stored import eager
from lazysparse.logic import dtypes as _dt


def _args(fname: str, x: Any, axis: Any) -> tuple[LazyArray, int]:
    x = check_array(x, fname)
    if x.dtype != _dt.BOOL:
        check_kind(x, "real numeric", fname)
    if x.ndim == 0:
        if axis not in (-1, 0):
            normalize_axis(axis, 1, fname)
        return x, 0
    return x, normalize_axis(axis, x.ndim, fname)


def _argsort_dense(a: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    if not descending:
        return np.argsort(a, axis=axis, kind="stable")
    n = a.shape[axis]
    rev = np.flip(np.argsort(np.flip(a, axis=axis), axis=axis, kind="stable"), axis=axis)
    return n - 1 - rev


def argsort(x: Any, /, *, axis: int = -1, descending: bool = False,
            stable: bool = True) -> LazyArray:
    """Indices that sort ``x`` along ``axis`` (stable; dense int64 result)."""
    x, ax = _args("argsort", x, axis)
    t = eager.tensor_of(x)
    if t.ndim == 0:
        return eager.from_numpy(np.zeros((), dtype=_dt.DEFAULT_INT), x.device)
    eager.check_dense_size(t.shape, _dt.DEFAULT_INT, "argsort")
    if eager.is_dense(t):
        out = _argsort_dense(np.asarray(t.to_numpy()), ax, bool(descending))
    else:
        out = _argsort_sparse(t, ax, bool(descending))
    return eager.from_numpy(out.astype(_dt.DEFAULT_INT), x.device)


def _is_fill(values: np.ndarray, fill: np.generic) -> np.ndarray:
    if values.dtype.kind in "fc" and np.isnan(fill):
        return np.isnan(values)
    return values == fill


def _argsort_sparse(t: Any, axis: int, descending: bool) -> np.ndarray:
    """argsort from the stored entries: only the entries that differ from the fill are
    sorted (O(nnz log nnz)); each line's fill entries form one block, in index order (a
    stable sort keeps equal values in index order), placed where the fill value ranks."""
    coords, values = eager.stored_entries(t)
    keep = ~_is_fill(values, t.fill_value)
    coords, values = tuple(c[keep] for c in coords), values[keep]
    shape, n = t.shape, t.shape[axis]
    dims = [d for k, d in enumerate(shape) if k != axis]
    nlines = int(np.prod(dims))
    others = [c for k, c in enumerate(coords) if k != axis]
    line = (np.ravel_multi_index(others, dims) if others
            else np.zeros(values.size, np.int64)).astype(np.int64)
    pos = coords[axis].astype(np.int64)
    fill = np.asarray(t.fill_value, dtype=values.dtype)
    uniq = np.unique(np.concatenate([values, fill.reshape(1)]))  # NaN last, as sort
    rank, rank_fill = np.searchsorted(uniq, values), np.searchsorted(uniq, fill)
    if descending:  # reverse of the stable ascending order of the reversed line
        rank, rank_fill = uniq.size - 1 - rank, uniq.size - 1 - rank_fill
    out = np.empty((nlines, n), np.int64)
    before = rank < rank_fill
    counts = np.bincount(line, minlength=nlines)
    order = np.lexsort((pos, rank, line))
    sline = line[order]
    slot = np.arange(order.size) - np.searchsorted(sline, sline, side="left")
    slot += np.where(before[order], 0, n - counts[sline])
    out[sline, slot] = pos[order]
    implicit = np.ones((nlines, n), bool)
    implicit[line, pos] = False
    li, pi = np.nonzero(implicit)  # by line, then index: the block's stable order
    irank = np.arange(li.size) - np.searchsorted(li, li, side="left")
    out[li, np.bincount(line[before], minlength=nlines)[li] + irank] = pi
    return np.moveaxis(out.reshape(*dims, n), -1, axis)


def _before_fill(values: np.ndarray, fill: np.generic) -> np.ndarray:
    """Which values sort strictly before ``fill`` ascending (NaN sorts last)."""
    if values.dtype.kind == "f":
        if np.isnan(fill):
            return ~np.isnan(values)
        return values < fill  # NaN compares False: after the fill
    return values < fill


def _sort_sparse(coords: tuple[np.ndarray, ...], values: np.ndarray, shape: tuple[int, ...],
                 fill: np.generic, axis: int, descending: bool) -> tuple[np.ndarray, ...]:
    """New ``axis`` coordinates of the stored entries once each line is sorted."""
    others = [c for k, c in enumerate(coords) if k != axis]
    n = shape[axis]
    if values.size == 0:
        return coords
    if others:
        dims = [d for k, d in enumerate(shape) if k != axis]
        line = np.ravel_multi_index(others, dims)
    else:
        line = np.zeros(values.size, dtype=np.int64)
    order = np.lexsort((values, line))  # by line, then value (NaN last), stable
    sline = line[order]
    starts = np.searchsorted(sline, sline, side="left")
    rank = np.arange(values.size) - starts  # rank within the line among stored entries
    # stored entries in the line: a count per stored entry, never one per line (a bincount
    # by line would be the size of every other axis together: 10⁹ counts for 3 entries)
    counts = np.searchsorted(sline, sline, side="right") - starts
    before = _before_fill(values[order], fill)
    pos = np.where(before, rank, rank + (n - counts))
    if descending:
        pos = n - 1 - pos
    new_axis = np.empty_like(pos)
    new_axis[order] = pos
    return tuple(new_axis if k == axis else c for k, c in enumerate(coords))


def sort(x: Any, /, *, axis: int = -1, descending: bool = False,
         stable: bool = True) -> LazyArray:
    """``x`` sorted along ``axis`` (stable); a sparse input stays sparse (see module doc)."""
    x, ax = _args("sort", x, axis)
    t = eager.tensor_of(x)
    if x.ndim == 0:
        return eager.from_numpy(t.to_numpy(), x.device)
    if eager.is_dense(t):
        a = np.asarray(t.to_numpy())
        idx = _argsort_dense(a, ax, bool(descending))
        return eager.from_numpy(np.take_along_axis(a, idx, axis=ax), x.device)
    coords, values = eager.stored_entries(t)
    new = _sort_sparse(coords, values, t.shape, t.fill_value, ax, bool(descending))
    return eager.from_coords(new, values, t.shape, t.fill_value, x.device)


__all__ = ["argsort", "sort"]
