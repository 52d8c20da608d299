"""Vectorized NumPy twins of :mod:`.sortkernels`' compiled loops (counting-sort scatters,
compressed transposes, segment sorts and merges, range gathers): the same arrays, bit for
bit, with no Numba compile, so that a first ``xp.eye(n, format="csr")`` or ``A[:10]`` on
small data does not wait on the compiler (issue 35).

:func:`sorts_on_numpy` is the one decision: these twins up to :data:`SORT_NUMPY_MAX`
entries (coordinates plus bins), the compiled loops (O(n + bins), no temporaries) above.
Stable counting sorts are scipy.sparse's compiled ``csr → csc`` conversion (O(n + bins), as
fast as the Numba loop); sums of duplicates add in storage order (``np.add.at`` from each
run's first value), as the compiled merge does.
"""

from __future__ import annotations

from typing import Any

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


def _by_column(ptr: np.ndarray, idx: np.ndarray, ncols: int, data: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """scipy's counting sort of a CSR layout by column: the column pointers, and for each
    entry in column order its row and its position in ``idx`` (rows ascending, storage
    order among equals: stable), or its value in ``data`` when given (one per entry)."""
    import scipy.sparse as sp  # deferred: import lazysparse imports no scipy (issue 26)

    if data is None:
        data = np.arange(idx.size, dtype=np.int64)
    csr = sp.csr_array((data, idx, ptr), shape=(ptr.size - 1, ncols))
    csc = csr.tocsc()
    return csc.indptr, csc.indices, csc.data


# value dtypes scipy.sparse stores, so that its conversion moves the values itself
_SCIPY_VALUES = frozenset(np.dtype(t) for t in (
    np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
    np.uint64, np.float32, np.float64, np.longdouble, np.complex64, np.complex128,
    np.clongdouble))


def transpose(ptr: np.ndarray, idx: np.ndarray, major: np.ndarray, values: np.ndarray,
              nminor: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A two-level layout regrouped by minor coordinate, majors in parent order. Values of
    a dtype scipy stores ride along in its conversion (one pass: 1.7-2.0 ms for 252k
    entries, against 12-15 ms for sorting positions and gathering the values after, issue
    36's relayout of ``C.T``); others are gathered by the sorted positions."""
    if values.dtype in _SCIPY_VALUES:
        out_ptr, rows, out_vals = _by_column(ptr, idx, nminor, values[:idx.size])
    else:
        out_ptr, rows, order = _by_column(ptr, idx, nminor)
        out_vals = values[order]
    return (out_ptr.astype(ptr.dtype, copy=False), major[rows].astype(idx.dtype, copy=False),
            out_vals)


def stable_order(key: np.ndarray, nbins: int) -> np.ndarray:
    """The stable sorting permutation of ``key`` in ``[0, nbins)`` (int64)."""
    n = key.size
    return _by_column(np.arange(n + 1, dtype=np.int64), key, nbins)[2]


def scatter(key: np.ndarray, nbins: int, minor: np.ndarray,
            values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stable sort of ``(minor, values)`` by ``key``, with the bins' pointers."""
    n = key.size
    ptr, _, order = _by_column(np.arange(n + 1, dtype=np.int64), key, nbins)
    return ptr.astype(key.dtype), minor[order], values[order]


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
    """Sort ``idx`` (carrying ``values``) stably within each segment of ``ptr``, in place:
    two of scipy's counting sorts (by coordinate, then by segment) where the coordinates'
    range is not much over their count, else NumPy's lexsort."""
    lo, hi = int(ptr[0]), int(ptr[ptr.size - 1])
    seg_idx = idx[lo:hi]
    if seg_idx.size < 2:
        return
    ncols = int(seg_idx.max()) + 1
    if seg_idx.min() >= 0 and ncols <= 4 * seg_idx.size + 4096:
        cols_ptr, rows, pos = _by_column(ptr - lo, seg_idx, ncols)
        _, _, back = _by_column(cols_ptr, rows, ptr.size - 1)
        order = pos[back]
    else:
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


def append_rows(ptr: np.ndarray, idx: np.ndarray, vals: np.ndarray, offset: Any,
                cursor: np.ndarray, out_idx: np.ndarray, out_vals: np.ndarray) -> None:
    """Row ``r``'s entries written at ``out[cursor[r]:]``, coordinates shifted by
    ``offset`` (in ``out_idx``'s dtype, wrapping as the compiled store does); ``cursor``
    advances past them."""
    lengths = np.diff(ptr).astype(np.int64)
    lo = int(ptr[0])
    src = np.arange(lo, int(ptr[ptr.size - 1]))
    dest = np.repeat(cursor.astype(np.int64) - ptr[:-1], lengths) + src
    out_idx[dest] = (idx[src].astype(np.int64) + int(offset)).astype(out_idx.dtype)
    out_vals[dest] = vals[src]
    cursor += lengths.astype(cursor.dtype)
