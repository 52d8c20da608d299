"""Binary search of many coordinates, each within its own segment of a sorted index array
(a compressed level's children, a run-length level's run starts, a BSR block row)."""

from __future__ import annotations

import numpy as np

# batches up to this size are searched one coordinate at a time (NumPy call overhead beats
# a vectorized binary search there)
_SCALAR_SEARCH_MAX = 16


def segment_search(idx: np.ndarray, lo: np.ndarray, hi: np.ndarray, c: np.ndarray,
                   side: str) -> np.ndarray:
    """For each query, the first position in ``[lo, hi)`` of sorted ``idx`` whose entry is
    ``>= c`` (``side="left"``) or ``> c`` (``"right"``); ``hi`` when there is none."""
    if lo.size <= _SCALAR_SEARCH_MAX:
        out = lo.copy()
        for q in range(lo.size):
            a, b = int(lo[q]), int(hi[q])
            if b > a:
                out[q] = a + int(np.searchsorted(idx[a:b], c[q], side=side))
        return out
    lo, hi = lo.copy(), np.maximum(hi, lo)
    last = max(idx.size - 1, 0)
    while True:
        active = lo < hi
        if not active.any():
            return lo
        mid = (lo + hi) // 2
        v = idx[np.minimum(mid, last)] if idx.size else np.zeros_like(mid)
        right = (v < c) if side == "left" else (v <= c)
        lo = np.where(active & right, mid + 1, lo)
        hi = np.where(active & ~right, mid, hi)


__all__ = ["segment_search"]
