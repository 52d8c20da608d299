"""Vectorized NumPy twins of :mod:`.sortkernels`' compiled loops (counting-sort scatters,
compressed transposes, segment sorts and merges, range gathers): the same arrays, bit for
bit, with no Numba compile, so that a first ``xp.eye(n, format="csr")`` or ``A[:10]`` on
small data does not wait on the compiler (issue 35).

:func:`sorts_on_numpy` is the one decision: these twins up to :data:`SORT_NUMPY_MAX`
entries (coordinates plus bins), the compiled loops (O(n + bins), no temporaries) above.
Stable sorts are NumPy's stable argsort; sums of duplicates add in storage order
(``np.add.at`` from each run's first value), as the compiled merge does.
"""

from __future__ import annotations

import numpy as np

#: the most entries (coordinates plus bins) a sort, scatter or gather runs on NumPy
SORT_NUMPY_MAX = 1 << 20


def sorts_on_numpy(entries: int) -> bool:
    """Whether a sort, scatter, merge or gather over ``entries`` entries (coordinates plus
    bins) runs on NumPy (up to :data:`SORT_NUMPY_MAX`: nothing to compile, and about as fast
    at that size) rather than on its compiled loop."""
    return entries <= SORT_NUMPY_MAX


def counts_ptr(key: np.ndarray, nbins: int, dtype: np.dtype) -> np.ndarray:
    """Segment pointers (``nbins + 1``, ``dtype``) of the bins ``key`` falls in."""
    out = np.zeros(nbins + 1, dtype=dtype)
    if key.size:
        out[1:] = np.cumsum(np.bincount(key.astype(np.intp, copy=False), minlength=nbins))
    return out


def transpose(ptr: np.ndarray, idx: np.ndarray, major: np.ndarray, values: np.ndarray,
              nminor: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A two-level layout regrouped by minor coordinate, majors in parent order."""
    order = np.argsort(idx, kind="stable")
    parent_major = np.repeat(major, np.diff(ptr))
    return (counts_ptr(idx, nminor, ptr.dtype), parent_major[order].astype(idx.dtype),
            values[order])


def scatter(key: np.ndarray, nbins: int, minor: np.ndarray,
            values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stable sort of ``(minor, values)`` by ``key``, with the bins' pointers."""
    order = np.argsort(key, kind="stable")
    return counts_ptr(key, nbins, key.dtype), minor[order], values[order]


def first_flags(ptr: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, int]:
    """Flags of positions that start a new coordinate in their segment, and the repeats."""
    n = idx.size
    first = np.ones(n, np.bool_)
    if n > 1:
        start = np.zeros(n + 1, np.bool_)
        start[ptr[:-1]] = True
        first[1:] = (idx[1:] != idx[:-1]) | start[1:n]
    return first, int(n - np.count_nonzero(first))


def sort_segments(ptr: np.ndarray, idx: np.ndarray, values: np.ndarray) -> None:
    """Sort ``idx`` (carrying ``values``) stably within each segment of ``ptr``, in place."""
    lo, hi = int(ptr[0]), int(ptr[ptr.size - 1])
    seg_idx = idx[lo:hi]
    segment = np.repeat(np.arange(ptr.size - 1), np.diff(ptr))
    order = np.lexsort((seg_idx, segment))
    idx[lo:hi] = seg_idx[order]
    values[lo:hi] = values[lo:hi][order]


def merge_runs(ptr: np.ndarray, idx: np.ndarray, words: np.ndarray,
               combine: np.ufunc) -> int:
    """Equal neighbours within segments merged in place (``combine`` of their values in
    storage order); ``ptr`` rebased to start at 0. Returns the merged count."""
    lo, hi = int(ptr[0]), int(ptr[ptr.size - 1])
    seg_idx, seg_vals = idx[lo:hi], words[lo:hi]
    first, _ = first_flags(ptr - ptr[0], seg_idx)
    group = np.cumsum(first) - 1
    merged = seg_vals[first]
    rest = ~first
    combine.at(merged, group[rest], seg_vals[rest])
    starts = np.concatenate(([0], np.cumsum(first)))
    ptr[:] = starts[ptr - ptr[0]]
    count = int(merged.size)
    idx[:count] = seg_idx[first]
    words[:count] = merged
    return count


def range_positions(lo: np.ndarray, hi: np.ndarray, total: int) -> np.ndarray:
    """``concatenate([arange(lo[j], hi[j])])`` (``total`` entries; empty for hi <= lo)."""
    lengths = np.maximum(hi.astype(np.int64) - lo, 0)
    offsets = np.cumsum(lengths) - lengths
    return np.repeat(lo.astype(np.int64) - offsets, lengths) + np.arange(total)


def gather_ptr(ptr: np.ndarray, lo: np.ndarray, hi: np.ndarray, total: int) -> np.ndarray:
    """Pointers of the parents in ``[lo[j], hi[j])``, rebased to start at 0."""
    pos = range_positions(lo, hi, total)
    out = np.zeros(total + 1, dtype=ptr.dtype)
    if total:
        out[1:] = np.cumsum(ptr[pos + 1] - ptr[pos])
    return out


def find_in_segments(idx: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                     c: np.ndarray) -> np.ndarray:
    """Per query, the first position in ``[lo, hi)`` whose coordinate is ``c`` (else -1)."""
    lengths = np.maximum(hi.astype(np.int64) - lo, 0)
    pos = range_positions(lo, hi, int(lengths.sum()))
    query = np.repeat(np.arange(lo.size), lengths)
    hit = idx[pos] == c[query]
    out = np.full(lo.size, -1, np.int64)
    found, first = np.unique(query[hit], return_index=True)
    out[found] = pos[hit][first]
    return out
