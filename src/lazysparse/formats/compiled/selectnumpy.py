"""Vectorized NumPy twins of :mod:`.select`'s compiled selection passes (a window of
coordinates, an index array through a table or a search, each index searched per segment,
the rows holding one coordinate): the same children in the same order, with no Numba
compile, so that a first ``A[:, 2:9]`` or ``A[:, 3]`` on small data does not wait on the
compiler (issue 35). The decision is the gather family's, :func:`.sortnumpy.sorts_on_numpy`.

Each pass twin takes the compiled pass's ``(lo, hi, idx, *args)`` and returns the source
position ``q``, new coordinate and per-segment count of every child, in the compiled
pass's output order.
"""

from __future__ import annotations

import numpy as np

from lazysparse.formats.compiled.sortnumpy import range_positions

Children = tuple[np.ndarray, np.ndarray, np.ndarray]


def _expand(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every position of the segments ``[lo[j], hi[j])`` in order, and its segment ``j``."""
    lengths = np.maximum(hi.astype(np.int64) - lo, 0)
    pos = range_positions(lo, hi, int(lengths.sum()))
    return pos, np.repeat(np.arange(lo.size), lengths)


def _children(q: np.ndarray, crd: np.ndarray, seg: np.ndarray, nseg: int) -> Children:
    return q.astype(np.int64), crd.astype(np.int64), np.bincount(seg, minlength=nseg)


def window(lo: np.ndarray, hi: np.ndarray, idx: np.ndarray, start: int, stop: int, step: int,
           ordered: bool) -> Children:
    """Children with coordinate in ``range(start, stop, step)``, new coordinate
    ``(c - start) // step``; a sorted segment's in descending order for a negative step."""
    pos, seg = _expand(lo, hi)
    c = idx[pos].astype(np.int64)
    if step > 0:
        inside, d, s = (c >= start) & (c < stop), c - start, step
    else:
        inside, d, s = (c >= stop + 1) & (c < start + 1), start - c, -step
    keep = inside & (d % s == 0)
    q, crd, sk = pos[keep], d[keep] // s, seg[keep]
    if ordered and step < 0:
        back = np.lexsort((-q, sk))
        q, crd, sk = q[back], crd[back], sk[back]
    return _children(q, crd, sk, lo.size)


def mapped_once(lo: np.ndarray, hi: np.ndarray, idx: np.ndarray,
                target: np.ndarray) -> Children:
    """Children whose coordinate ``c`` has ``target[c] >= 0`` (its new coordinate)."""
    pos, seg = _expand(lo, hi)
    t = target[idx[pos]]
    keep = t >= 0
    return _children(pos[keep], t[keep], seg[keep], lo.size)


def _fanned(pos: np.ndarray, seg: np.ndarray, first: np.ndarray, last: np.ndarray,
            targets: np.ndarray, nseg: int) -> Children:
    """Each position repeated once per ``targets[first:last]`` (its new coordinates)."""
    k = np.maximum(last.astype(np.int64) - first, 0)
    crd = targets[range_positions(first, last, int(k.sum()))]
    return _children(np.repeat(pos, k), crd, np.repeat(seg, k), nseg)


def mapped(lo: np.ndarray, hi: np.ndarray, idx: np.ndarray, tab_ptr: np.ndarray,
           targets: np.ndarray) -> Children:
    """Children of coordinate ``c`` once per ``targets[tab_ptr[c]:tab_ptr[c + 1]]``."""
    pos, seg = _expand(lo, hi)
    c = idx[pos]
    return _fanned(pos, seg, tab_ptr[c], tab_ptr[c + 1], targets, lo.size)


def searched(lo: np.ndarray, hi: np.ndarray, idx: np.ndarray, keys: np.ndarray,
             targets: np.ndarray) -> Children:
    """:func:`mapped` with the table a search of the sorted ``keys``."""
    pos, seg = _expand(lo, hi)
    c = idx[pos]
    first = np.searchsorted(keys, c, side="left")
    last = np.searchsorted(keys, c, side="right")
    return _fanned(pos, seg, first, last, targets, lo.size)


def _bounds(idx: np.ndarray, a: np.ndarray, b: np.ndarray, key: np.ndarray,
            upper: bool) -> np.ndarray:
    """Per query, the first ``q`` in ``[a, b)`` with ``idx[q] >= key`` (``> key`` when
    ``upper``): the compiled ``_lower_bound``, all queries at once."""
    a, b = a.astype(np.int64), b.astype(np.int64)
    while True:
        active = a < b
        if not active.any():
            return a
        m = (a + b) >> 1
        v = idx[np.where(active, m, 0)]  # some query is active: idx is not empty
        go = active & ((v <= key) if upper else (v < key))
        a = np.where(go, m + 1, a)
        b = np.where(active & ~go, m, b)


def by_index(lo: np.ndarray, hi: np.ndarray, idx: np.ndarray, keys: np.ndarray) -> Children:
    """Per segment, in index order, the run of children equal to each ``keys[t]`` (new
    coordinate ``t``), found by binary search of the sorted segment."""
    seg = np.repeat(np.arange(lo.size), keys.size)
    t = np.tile(np.arange(keys.size), lo.size)
    k = keys[t]
    qa = _bounds(idx, lo[seg], hi[seg], k, upper=False)
    qb = _bounds(idx, qa, hi[seg], k, upper=True)
    n = qb - qa
    q = range_positions(qa, qb, int(n.sum()))
    return _children(q, np.repeat(t, n), np.repeat(seg, n), lo.size)


def rows_holding(ptr: np.ndarray, idx: np.ndarray, key: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows whose segment holds coordinate ``key`` and its (first) position there."""
    base = int(ptr[0])
    hits = np.flatnonzero(idx[base:int(ptr[ptr.size - 1])] == key) + base
    rows = np.searchsorted(ptr, hits, side="right") - 1
    rows, first = np.unique(rows, return_index=True)
    return rows, hits[first].astype(np.int64)
