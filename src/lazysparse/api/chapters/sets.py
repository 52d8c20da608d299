"""Array API set functions: unique_all, unique_counts, unique_inverse, unique_values, isin.

Data-dependent: the input is computed, then only its stored entries are read. The unstored
entries form one group, the fill value, counted ``size - nnz`` times, whose first index is
the first unstored row-major position. NaN values are distinct (the standard), so each NaN
is its own unique value with count 1; a NaN fill value therefore enumerates the unstored
positions (dense-sized, within the densify limit). Values come back sorted (NaN last).
``inverse_indices`` of a sparse input is sparse: stored entries map to their value's index,
unstored ones read the fill group's index as the fill value.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.api.array.operands import as_operand
from lazysparse.api.building.lazy_plans import check_array
from lazysparse.api.stored import eager
from lazysparse.logic import dtypes as _dt

UniqueAllResult = namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices",
                                                 "counts"])
UniqueCountsResult = namedtuple("UniqueCountsResult", ["values", "counts"])
UniqueInverseResult = namedtuple("UniqueInverseResult", ["values", "inverse_indices"])

_INDEX = _dt.DEFAULT_INT


def _isnan(v: np.ndarray) -> np.ndarray:
    return np.isnan(v) if v.dtype.kind in "fc" else np.zeros(v.shape, dtype=bool)


def _first_unstored(flat: np.ndarray) -> int:
    """Smallest flat index not in the (unique) stored ``flat`` indices."""
    s = np.sort(flat)
    gaps = np.nonzero(s != np.arange(s.size))[0]
    return int(gaps[0]) if gaps.size else int(s.size)


def _unique_parts(x: LazyArray) -> dict[str, Any]:
    """Everything the unique_* functions return, computed from the stored entries."""
    t = eager.tensor_of(x)
    coords, values = eager.stored_entries(t)
    size = int(np.prod(t.shape)) if t.ndim else 1
    flat = (np.ravel_multi_index(coords, t.shape).astype(np.int64) if t.ndim
            else np.zeros(values.size, dtype=np.int64))
    nfill = size - values.size
    fill = t.fill_value
    if nfill and _isnan(np.asarray(fill)).item():
        eager.check_dense_size(t.shape, _INDEX, "unique of an array with a NaN fill value")
        unstored = np.setdiff1d(np.arange(size, dtype=np.int64), flat, assume_unique=True)
        flat = np.concatenate([flat, unstored])
        values = np.concatenate([values, np.full(unstored.size, fill, dtype=values.dtype)])
        coords = tuple(np.asarray(c, np.int64) for c in np.unravel_index(flat, t.shape))
        nfill = 0
    nan = _isnan(values)
    keep = np.nonzero(~nan)[0]
    by_flat = keep[np.argsort(flat[keep], kind="stable")]
    u, first, inv, counts = np.unique(values[by_flat], return_index=True, return_inverse=True,
                                      return_counts=True)
    first_flat = flat[by_flat][first]
    inv_stored = np.empty(values.size, dtype=_INDEX)
    inv_stored[by_flat] = inv.reshape(-1)
    fill_pos = 0
    if nfill:
        gap = _first_unstored(flat)
        k = int(np.searchsorted(u, fill))
        if k < u.size and u[k] == fill:
            counts[k] += nfill
            first_flat[k] = min(int(first_flat[k]), gap)
        else:
            u = np.insert(u, k, fill)
            counts = np.insert(counts, k, nfill)
            first_flat = np.insert(first_flat, k, gap)
            inv_stored[~nan] += (inv_stored[~nan] >= k)
        fill_pos = k
    nan_idx = np.nonzero(nan)[0]
    nan_idx = nan_idx[np.argsort(flat[nan_idx], kind="stable")]
    inv_stored[nan_idx] = u.size + np.arange(nan_idx.size)
    u = np.concatenate([u, values[nan_idx]]).astype(values.dtype, copy=False)
    counts = np.concatenate([counts, np.ones(nan_idx.size, dtype=counts.dtype)])
    first_flat = np.concatenate([first_flat, flat[nan_idx]])
    return {"tensor": t, "coords": coords, "values": u, "indices": first_flat,
            "counts": counts, "inverse": inv_stored, "nfill": nfill, "fill_pos": fill_pos}


def _check(x: Any, fname: str) -> LazyArray:
    return check_array(x, fname)


def _values(p: dict[str, Any], x: LazyArray) -> LazyArray:
    return eager.from_numpy(p["values"], x.device)


def _index(a: np.ndarray, x: LazyArray) -> LazyArray:
    return eager.from_numpy(np.asarray(a, dtype=_INDEX), x.device)


def _inverse(p: dict[str, Any], x: LazyArray) -> LazyArray:
    t = p["tensor"]
    if t.ndim == 0:
        return _index(p["inverse"].reshape(()), x)
    if eager.is_dense(t) or not p["nfill"]:
        out = np.empty(t.shape, dtype=_INDEX)
        out[p["coords"]] = p["inverse"]
        return _index(out, x)
    return eager.from_coords(p["coords"], p["inverse"], t.shape, _INDEX.type(p["fill_pos"]),
                             x.device)


def unique_all(x: Any, /) -> UniqueAllResult:
    """Unique values, first indices (flat, row-major), inverse indices and counts."""
    x = _check(x, "unique_all")
    p = _unique_parts(x)
    return UniqueAllResult(_values(p, x), _index(p["indices"], x), _inverse(p, x),
                           _index(p["counts"], x))


def unique_counts(x: Any, /) -> UniqueCountsResult:
    """Unique values and how often each occurs."""
    x = _check(x, "unique_counts")
    p = _unique_parts(x)
    return UniqueCountsResult(_values(p, x), _index(p["counts"], x))


def unique_inverse(x: Any, /) -> UniqueInverseResult:
    """Unique values and, for each element of ``x``, the index of its value."""
    x = _check(x, "unique_inverse")
    p = _unique_parts(x)
    return UniqueInverseResult(_values(p, x), _inverse(p, x))


def unique_values(x: Any, /) -> LazyArray:
    """The unique values of ``x`` (sorted, NaNs distinct and last)."""
    x = _check(x, "unique_values")
    return _values(_unique_parts(x), x)


def isin(x1: Any, x2: Any, /, *, invert: bool = False) -> LazyArray:
    """Whether each element of ``x1`` is in ``x2`` (computes both).

    Works on ``x1``'s stored entries and its fill value, so a sparse ``x1`` gives a sparse
    boolean result; ``x2`` contributes only its distinct values (stored + fill).
    """
    x1 = check_array(x1, "isin", "x1")
    x2 = as_operand(x2, "isin", "x2")
    if isinstance(x2, LazyArray):
        vals = unique_values(x2).tensor().to_numpy()
    else:
        vals = np.asarray([_dt.scalar_as(x2, _dt.result_type(x1.dtype, x2))])
    t = eager.tensor_of(x1)
    coords, values = eager.stored_entries(t)
    hit = np.isin(values, vals, invert=invert)
    fill = bool(np.isin(np.asarray(t.fill_value), vals, invert=invert))
    if t.ndim == 0 or eager.is_dense(t):
        out = np.full(t.shape, fill, dtype=bool)
        out[coords] = hit
        return eager.from_numpy(out, x1.device)
    return eager.from_coords(coords, hit, t.shape, np.bool_(fill), x1.device)


__all__ = ["isin", "unique_all", "unique_counts", "unique_inverse", "unique_values"]
