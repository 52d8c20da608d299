"""Numba kernels for conversions: counting-sort scatters, compressed transposes and range
gathers, all O(n + bins).

Values move as raw words (uint8/16/32/64, complex128) of their dtype's size, so each kernel
compiles for 5 word types x 2 index dtypes, not for every dtype. Indices are cast to unsigned
inside the loops so Numba emits no negative-index wraparound code.
"""

from __future__ import annotations

import numpy as np

from lazysparse.formats.compiled import sortnumpy as N
from lazysparse.formats.compiled.jit import helper_jit
from lazysparse.formats.compiled.sortnumpy import sorts_on_numpy
from lazysparse.formats.config import check_bins

_WORDS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64, 16: np.complex128}


def as_words(values: np.ndarray) -> np.ndarray:
    """View a contiguous 1-D values array as same-size raw words."""
    values = np.ascontiguousarray(values)
    return values.view(_WORDS[values.dtype.itemsize])


@helper_jit(nogil=True)
def _counts_to_ptr(ptr):  # pragma: no cover - compiled
    # ptr[b + 1] holds bin b's count; make it the inclusive prefix sum (segment starts)
    total = ptr.dtype.type(0)
    for b in range(ptr.size):
        total += ptr[b]
        ptr[b] = total


@helper_jit(nogil=True)
def _cursor_to_ptr(ptr):  # pragma: no cover - compiled
    # ptr[b] served as bin b's write cursor and now holds its end: shift back to starts
    for b in range(ptr.size - 1, 0, -1):
        ptr[b] = ptr[b - 1]
    ptr[0] = 0


@helper_jit(nogil=True)
def _transpose(ptr, idx, major, vals, out_ptr, out_idx, out_vals):  # pragma: no cover
    nparent = ptr.size - 1
    for q in range(idx.size):
        out_ptr[np.uintp(idx[q]) + 1] += 1
    _counts_to_ptr(out_ptr)
    for p in range(nparent):  # out_ptr[c] is bin c's cursor (no second array, as scipy)
        m = major[p]
        for q in range(np.uintp(ptr[p]), np.uintp(ptr[p + 1])):
            c = np.uintp(idx[q])
            d = np.uintp(out_ptr[c])
            out_ptr[c] = d + 1
            out_idx[d] = m
            out_vals[d] = vals[q]
    _cursor_to_ptr(out_ptr)


@helper_jit(nogil=True)
def _count_ptr(key, out_ptr):  # pragma: no cover
    for q in range(key.size):
        out_ptr[np.uintp(key[q]) + 1] += 1
    _counts_to_ptr(out_ptr)


@helper_jit(nogil=True)
def _scatter(key, minor, vals, out_ptr, out_minor, out_vals):  # pragma: no cover
    _count_ptr(key, out_ptr)
    for q in range(key.size):
        k = np.uintp(key[q])
        d = np.uintp(out_ptr[k])
        out_ptr[k] = d + 1
        out_minor[d] = minor[q]
        out_vals[d] = vals[q]
    _cursor_to_ptr(out_ptr)


@helper_jit(nogil=True)
def _perm_pass(key, perm_in, out_ptr, perm_out):  # pragma: no cover
    for q in range(perm_in.size):
        out_ptr[np.uintp(key[np.uintp(perm_in[q])]) + 1] += 1
    _counts_to_ptr(out_ptr)
    for q in range(perm_in.size):
        e = perm_in[q]
        k = np.uintp(key[np.uintp(e)])
        d = np.uintp(out_ptr[k])
        out_ptr[k] = d + 1
        perm_out[d] = e


@helper_jit(nogil=True)
def _order(key, out_ptr, perm_out):  # pragma: no cover - compiled
    _count_ptr(key, out_ptr)
    for q in range(key.size):
        k = np.uintp(key[q])
        d = np.uintp(out_ptr[k])
        out_ptr[k] = d + 1
        perm_out[d] = q




@helper_jit(nogil=True)
def _first_flags(ptr, idx, first):  # pragma: no cover - compiled
    repeats = 0
    for p in range(ptr.size - 1):
        lo, hi = np.uintp(ptr[p]), np.uintp(ptr[p + 1])
        for q in range(lo, hi):
            if q > lo and idx[q] == idx[q - 1]:
                first[q] = False
                repeats += 1
            else:
                first[q] = True
    return repeats


@helper_jit(nogil=True)
def _sort_short_segments(ptr, idx, vals, limit):  # pragma: no cover - compiled
    long_entries = 0
    for p in range(ptr.size - 1):
        lo, hi = np.uintp(ptr[p]), np.uintp(ptr[p + 1])
        if hi - lo > limit:
            long_entries += hi - lo
            continue
        for q in range(lo + 1, hi):  # insertion sort: stable and cache-local
            key, val = idx[q], vals[q]
            r = q
            while r > lo and idx[r - 1] > key:
                idx[r] = idx[r - 1]
                vals[r] = vals[r - 1]
                r -= 1
            idx[r] = key
            vals[r] = val
    return long_entries


# The gathers keep every index unsigned (``np.uintp``, incremented by an unsigned one): a
# signed or mixed index makes Numba emit wraparound checks and conversions that run the
# copy at half scipy's speed.


@helper_jit(nogil=True)
def _gather(src, lo, hi, out):  # pragma: no cover - compiled
    one = np.uintp(1)
    w = np.uintp(0)
    for j in range(lo.size):
        q, end = np.uintp(lo[j]), np.uintp(hi[j])
        while q < end:
            out[w] = src[q]
            w += one
            q += one


@helper_jit(nogil=True)
def _gather_pair(src1, src2, lo, hi, out1, out2):  # pragma: no cover - compiled
    one = np.uintp(1)
    w = np.uintp(0)
    for j in range(lo.size):
        q, end = np.uintp(lo[j]), np.uintp(hi[j])
        while q < end:
            out1[w] = src1[q]
            out2[w] = src2[q]
            w += one
            q += one


@helper_jit(nogil=True)
def _gather_ptr(ptr, lo, hi, out_ptr):  # pragma: no cover - compiled
    one = np.uintp(1)
    w = np.uintp(0)
    total = out_ptr.dtype.type(0)
    out_ptr[w] = total
    for j in range(lo.size):
        p, end = np.uintp(lo[j]), np.uintp(hi[j])
        while p < end:
            total += ptr[p + one] - ptr[p]
            w += one
            out_ptr[w] = total
            p += one


def _make_run_merger(combine):  # pragma: no cover - builds compiled kernels
    @helper_jit(nogil=True)
    def merge_runs(ptr, idx, vals):
        w = 0
        lo = ptr[0]
        for p in range(ptr.size - 1):
            hi = ptr[p + 1]
            start = w
            for q in range(np.uintp(lo), np.uintp(hi)):
                if w > start and idx[q] == idx[w - 1]:
                    vals[w - 1] = combine(vals[w - 1], vals[q])
                else:
                    idx[w] = idx[q]
                    vals[w] = vals[q]
                    w += 1
            ptr[p] = start
            lo = hi
        ptr[ptr.size - 1] = w
        return w

    return merge_runs


@helper_jit(nogil=True)
def _add(a, b):  # pragma: no cover - compiled
    return a + b


@helper_jit(nogil=True)
def _or(a, b):  # pragma: no cover - compiled
    return a | b


_sum_runs = _make_run_merger(_add)
_or_runs = _make_run_merger(_or)


def transpose_compressed(
    ptr: np.ndarray, idx: np.ndarray, major: np.ndarray, values: np.ndarray, nminor: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Regroup a two-level (major, compressed minor) layout by minor coordinate.

    ``major[p]`` is the coordinate of parent ``p``. Returns ``(ptr, idx, values)`` of the
    transposed layout, with majors ascending within each minor segment. ``ptr``, ``idx`` and
    ``major`` must share one integer dtype. DensifyError when the new pointer array (one
    entry per minor coordinate) passes the densify limit and dwarfs the entries.
    """
    check_bins(nminor + 1, idx.size, ptr.dtype,
               f"a transpose's pointer array under a dense level of {nminor} parents")
    if sorts_on_numpy(idx.size + nminor):
        return N.transpose(ptr, idx, major, values, nminor)
    out_ptr = np.zeros(nminor + 1, dtype=ptr.dtype)
    out_idx = np.empty(idx.size, dtype=idx.dtype)
    out_vals = np.empty(idx.size, dtype=values.dtype)
    _transpose(ptr, idx, major, as_words(values), out_ptr, out_idx, as_words(out_vals))
    return out_ptr, out_idx, out_vals


def scatter_by_key(
    key: np.ndarray, nbins: int, minor: np.ndarray, values: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stable counting sort of ``(minor, values)`` by ``key`` in ``[0, nbins)``; returns ptr too
    (DensifyError when that pointer array passes the densify limit and dwarfs the entries)."""
    check_bins(nbins + 1, key.size, key.dtype,
               f"a pointer array under a dense level of {nbins} parents")
    if sorts_on_numpy(key.size + nbins):
        return N.scatter(key, nbins, minor, values)
    out_ptr = np.zeros(nbins + 1, dtype=key.dtype)
    out_minor = np.empty(minor.size, dtype=minor.dtype)
    out_vals = np.empty(values.size, dtype=values.dtype)
    _scatter(key, minor, as_words(values), out_ptr, out_minor, as_words(out_vals))
    return out_ptr, out_minor, out_vals


def stable_perm_pass(key: np.ndarray, nbins: int, perm: np.ndarray) -> np.ndarray:
    """``perm`` reordered stably by ``key[perm]`` (one LSD radix pass, O(n + nbins)).

    When ``nbins`` dwarfs ``n`` a stable comparison sort is cheaper than the bin array.
    """
    if nbins > 8 * perm.size + 4096:
        return perm[np.argsort(key[perm], kind="stable")]
    if sorts_on_numpy(perm.size + nbins):
        return perm[N.stable_order(key[perm], nbins)]
    out_ptr = np.zeros(nbins + 1, dtype=np.int64)
    out = np.empty_like(perm)
    _perm_pass(key, perm, out_ptr, out)
    return out


def stable_order(key: np.ndarray, nbins: int) -> np.ndarray:
    """The stable sorting permutation of ``key`` in ``[0, nbins)`` (one counting pass,
    O(n + nbins)); int32 when ``key`` is short enough, to halve its memory."""
    n = int(key.size)
    check_bins(nbins + 1, n, np.int64, f"a counting sort's {nbins} bins")
    out = np.empty(n, dtype=np.int32 if n <= np.iinfo(np.int32).max else np.int64)
    if sorts_on_numpy(n + nbins):
        out[:] = N.stable_order(key, nbins)
        return out
    _order(key, np.zeros(nbins + 1, dtype=np.int64), out)
    return out


def ptr_from_sorted(key: np.ndarray, nbins: int, dtype: np.dtype) -> np.ndarray:
    """Segment pointers of an ascending ``key`` array with ``nbins`` bins."""
    check_bins(nbins + 1, key.size, dtype,
               f"a pointer array under a dense level of {nbins} parents")
    if sorts_on_numpy(key.size + nbins):
        return N.counts_ptr(key, nbins, dtype)
    out = np.zeros(nbins + 1, dtype=dtype)
    _count_ptr(key, out)
    return out


def segment_repeats(ptr: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, int]:
    """Flags of positions that start a new coordinate within their segment, and the repeat count.

    ``idx`` must be sorted within each segment of ``ptr``.
    """
    if sorts_on_numpy(ptr.size + idx.size):
        return N.first_flags(ptr, idx)
    first = np.empty(idx.size, dtype=np.bool_)
    repeats = int(_first_flags(ptr, idx, first))
    return first, repeats


def sort_segments(ptr: np.ndarray, idx: np.ndarray, values: np.ndarray) -> None:
    """Sort ``idx`` (carrying ``values``) within each segment of ``ptr``, in place and stably.

    Short segments use an insertion sort in Numba; the entries of long ones, all together, a
    stable NumPy lexsort by (segment, coordinate).
    """
    if sorts_on_numpy(ptr.size + idx.size):
        N.sort_segments(ptr, idx, values)
        return
    limit = 32
    if not _sort_short_segments(ptr, idx, as_words(values), limit):
        return
    lengths = np.diff(ptr)
    segment = np.repeat(np.arange(lengths.size), lengths)
    where = np.flatnonzero(np.repeat(lengths > limit, lengths))
    order = where[np.lexsort((idx[where], segment[where]))]
    idx[where], values[where] = idx[order], values[order]


def sum_runs(
    ptr: np.ndarray, idx: np.ndarray, values: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Merge equal neighbours within segments in place, adding values; returns trimmed views.

    Integers add as same-width unsigned words (identical bits, fewer compilations); bools OR.
    """
    if sorts_on_numpy(ptr.size + idx.size):
        words = values.view(np.uint8) if values.dtype.kind == "b" else values
        count = N.merge_runs(ptr, idx, words, np.bitwise_or if values.dtype.kind == "b"
                             else np.add)
    elif values.dtype.kind == "b":
        count = int(_or_runs(ptr, idx, values.view(np.uint8)))
    elif values.dtype.kind in "iu":
        count = int(_sum_runs(ptr, idx, values.view(_WORDS[values.dtype.itemsize])))
    else:
        count = int(_sum_runs(ptr, idx, values))
    return ptr, idx[:count], values[:count]


def gather_ranges(src: np.ndarray, lo: np.ndarray, hi: np.ndarray, total: int) -> np.ndarray:
    """``concatenate([src[lo[j]:hi[j]] for j])`` (``total`` entries) in one compiled pass:
    no position array, so a gather of a few segments costs only its output."""
    if sorts_on_numpy(total + lo.size):
        return src[N.range_positions(lo, hi, total)]
    out = np.empty(total, dtype=src.dtype)
    if total:
        _gather(as_words(src), lo, hi, as_words(out))
    return out


def gather_pair(
    src1: np.ndarray, src2: np.ndarray, lo: np.ndarray, hi: np.ndarray, total: int
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`gather_ranges` of two arrays with the same positions (a level's ``idx`` and
    the values) in one pass: the ranges are walked once, each cache line fetched once."""
    if sorts_on_numpy(total + lo.size):
        pos = N.range_positions(lo, hi, total)
        return src1[pos], src2[pos]
    out1 = np.empty(total, dtype=src1.dtype)
    out2 = np.empty(total, dtype=src2.dtype)
    if total:
        _gather_pair(as_words(src1), as_words(src2), lo, hi, as_words(out1), as_words(out2))
    return out1, out2


def gather_ptr(ptr: np.ndarray, lo: np.ndarray, hi: np.ndarray, total: int) -> np.ndarray:
    """Segment pointers of the parent positions ``concatenate([arange(lo[j], hi[j])])``
    (``total`` of them) rebased to start at 0: the ``ptr`` of a gathered compressed level."""
    if sorts_on_numpy(total + lo.size):
        return N.gather_ptr(ptr, lo, hi, total)
    out = np.empty(total + 1, dtype=ptr.dtype)
    _gather_ptr(ptr, lo, hi, out)
    return out


@helper_jit(nogil=True)
def _find_unordered(idx, lo, hi, c, out):  # pragma: no cover - compiled
    for j in range(lo.size):
        out[j] = -1
        for q in range(lo[j], hi[j]):
            if idx[q] == c[j]:
                out[j] = q
                break


def find_in_segments(idx: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                     c: np.ndarray) -> np.ndarray:
    """For each query, the position in ``[lo, hi)`` of an unordered level whose coordinate
    is ``c`` (-1 when there is none): a scan of the segment, as an unordered level allows."""
    if sorts_on_numpy(int(np.maximum(hi - lo, 0).sum()) + lo.size):
        return N.find_in_segments(idx, lo.astype(np.int64), hi.astype(np.int64),
                                  c.astype(np.int64))
    out = np.empty(lo.size, np.int64)
    _find_unordered(idx, lo.astype(np.int64), hi.astype(np.int64), c.astype(np.int64), out)
    return out
