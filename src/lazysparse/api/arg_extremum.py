"""``argmax``/``argmin`` of a computed tensor from its stored entries: O(nnz log nnz).

Each output entry is a group (the coordinates off the reduced axis); its candidates are the
best stored entry (NaN first, as in NumPy; ties to the smallest index) and, when the group
has unstored positions, the fill value at its first unstored position. A dense tensor goes
to NumPy directly. The lazy two-pass form (max, then the first index that hits it) cannot
skip unstored entries, whose index differs per position, so it costs the dense size.
"""

from __future__ import annotations

import numpy as np

from lazysparse.api import eager
from lazysparse.formats import Tensor
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
    group, pos, values, ngroups, extent = _group_and_position(t, axis)
    v = values.astype(np.float64) if values.dtype.kind in "biu" and values.dtype.itemsize < 8 \
        else values
    fill = np.asarray(t.fill_value, dtype=v.dtype)
    # per group: best stored entry (NaN first, then largest/smallest value, then position)
    nan_last = np.where(np.isnan(v), 0, 1) if v.dtype.kind in "fc" else np.ones(v.size, np.int8)
    rank_v = np.unique(v, return_inverse=True)[1].reshape(-1)
    order = np.lexsort((pos, -rank_v if largest else rank_v, nan_last, group))
    g_sorted = group[order]
    first = np.ones(order.size, bool)
    first[1:] = g_sorted[1:] != g_sorted[:-1]
    best_idx = order[first]
    best_group = g_sorted[first]
    # per group: count of stored entries and first unstored position
    counts = np.bincount(group, minlength=ngroups)
    by_pos = np.lexsort((pos, group))
    gp, pp = group[by_pos], pos[by_pos]
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    rank = np.arange(gp.size) - starts[gp]
    gap = pp != rank  # the first entry whose position skips past its rank
    first_gap = np.full(ngroups, -1, np.int64)
    gap_at = np.nonzero(gap)[0]
    if gap_at.size:
        g_gap = gp[gap_at]
        keep = np.ones(gap_at.size, bool)
        keep[1:] = g_gap[1:] != g_gap[:-1]
        first_gap[g_gap[keep]] = rank[gap_at[keep]]
    free = np.where(first_gap >= 0, first_gap, np.where(counts < extent, counts, -1))
    # combine: the fill at its first unstored position against the best stored entry
    result = np.where(free >= 0, free, 0).astype(_INDEX)
    if best_idx.size:
        bv = v[best_idx]
        bp = pos[best_idx]
        fg = free[best_group]
        fill_wins = (fg >= 0) & (_beats(np.broadcast_to(fill, bv.shape), bv, largest)
                                 | (~_beats(bv, np.broadcast_to(fill, bv.shape), largest)
                                    & (fg < bp)))
        result[best_group] = np.where(fill_wins, fg, bp)
    return result.reshape(out_shape)
