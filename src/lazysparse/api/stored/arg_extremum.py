"""``argmax``/``argmin`` of a computed tensor from its stored entries: O(nnz log nnz).

Each output entry is a group (the coordinates off the reduced axis); its candidates are the
best stored entry (NaN first, as in NumPy; ties to the smallest index) and, when the group
has unstored positions, the fill value at its first unstored position. A dense tensor goes
to NumPy directly. The lazy two-pass form (max, then the first index that hits it) cannot
skip unstored entries, whose index differs per position, so it costs the dense size.
"""

from __future__ import annotations

import numpy as np

from lazysparse.api.stored import eager
from lazysparse.formats import Tensor
from lazysparse.formats.config import check_densify
from lazysparse.formats.levels import Dense

_INDEX = np.dtype(np.int64)


def _group_and_position(t: Tensor, axis: int | None) -> tuple[np.ndarray, np.ndarray,
                                                              np.ndarray, int, int]:
    """Stored entries as (group id, position along the reduced axis, value), the number of
    groups and the reduced extent."""
    coords, values = eager.stored_entries(t)
    if axis is None:
        pos = np.ravel_multi_index(coords, t.shape) if t.ndim else np.zeros(values.size,
                                                                              np.int64)
        return np.zeros(values.size, np.int64), np.asarray(pos, np.int64), values, 1, \
            int(np.prod(t.shape))
    rest = tuple(c for i, c in enumerate(coords) if i != axis)
    rest_shape = tuple(s for i, s in enumerate(t.shape) if i != axis)
    group = np.ravel_multi_index(rest, rest_shape) if rest else np.zeros(values.size,
                                                                          np.int64)
    return (np.asarray(group, np.int64), np.asarray(coords[axis], np.int64), values,
            int(np.prod(rest_shape)), t.shape[axis])


def _beats(a: np.ndarray, b: np.ndarray, largest: bool) -> np.ndarray:
    """``a`` strictly better than ``b`` (NaN is best, as NumPy's argmax/argmin treat it)."""
    an, bn = np.isnan(a), np.isnan(b)
    with np.errstate(invalid="ignore"):
        better = (a > b) if largest else (a < b)
    return (an & ~bn) | (~an & ~bn & better)


def arg_extremum(t: Tensor, axis: int | None, largest: bool) -> np.ndarray:
    """Index of the first maximum (``largest``) or minimum of ``t`` along ``axis`` (flat
    index over all axes when None); shape: ``t.shape`` without ``axis`` (() for None)."""
    out_shape = () if axis is None else tuple(s for i, s in enumerate(t.shape) if i != axis)
    if all(isinstance(lv, Dense) for lv in t.levels):
        dense = np.asarray(t.to_numpy())
        fn = np.argmax if largest else np.argmin
        return np.asarray(fn(dense, axis=axis), _INDEX).reshape(out_shape)
    # the result (one index per group) and the per-group work arrays are dense: refuse a
    # result past the densify limit before allocating it (a 1e9 x 1e9 matrix's argmax(axis=0))
    check_densify(int(np.prod(out_shape, dtype=object)) * _INDEX.itemsize, out_shape, _INDEX,
                  f"{'argmax' if largest else 'argmin'}'s index result")
    group, pos, values, ngroups, extent = _group_and_position(t, axis)
    v = values.astype(np.float64) if values.dtype.kind in "biu" and values.dtype.itemsize < 8 \
        else values
    fill = np.asarray(t.fill_value, dtype=v.dtype)
    key = group * max(extent, 1) + pos  # one sort by (group, position); often sorted already
    if key.size > 1 and not np.all(key[1:] > key[:-1]):
        order = np.argsort(key, kind="stable")
        group, pos, v = group[order], pos[order], v[order]
    counts = np.bincount(group, minlength=ngroups)
    present = np.nonzero(counts)[0]
    starts = (np.cumsum(counts[present]) - counts[present]).astype(np.int64)
    # best stored value per group: maximum/minimum propagate NaN, NumPy's "NaN is best"
    best = (np.maximum if largest else np.minimum).reduceat(v, starts) if v.size else v
    bg = np.repeat(best, counts[present])
    hit = (v == bg) | (np.isnan(v) & np.isnan(bg)) if v.dtype.kind == "f" else v == bg
    big = np.iinfo(np.int64).max
    best_pos = np.minimum.reduceat(np.where(hit, pos, big), starts) if v.size else pos
    # first unstored position: the first entry whose position skips past its rank
    rank = np.arange(v.size) - np.repeat(starts, counts[present])
    gap_pos = np.minimum.reduceat(np.where(pos != rank, rank, big), starts) if v.size \
        else pos
    free = np.where(counts < extent, counts, -1)  # no gap: right after the last entry
    free[present] = np.where(gap_pos < big, gap_pos, free[present])
    result = np.where(free >= 0, free, 0).astype(_INDEX)
    if present.size:
        fg = free[present]
        fillv = np.broadcast_to(fill, best.shape)
        fill_wins = (fg >= 0) & (_beats(fillv, best, largest)
                                 | (~_beats(best, fillv, largest) & (fg < best_pos)))
        result[present] = np.where(fill_wins, fg, best_pos)
    return result.reshape(out_shape)
