"""Numba helpers that generated kernels call as ``lsk.<name>`` (the loop IR's intrinsics).

``sort_touched(list, n, extent)`` orders a dense row workspace's touched coordinates before
they are appended: insertion sort for short rows, else an LSD radix sort on 8-bit digits
(as many passes as ``extent`` needs), which beats comparison sorts on the ~100-entry rows
of a Gustavson SpGEMM.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_u = np.uint64


@njit(cache=True)
def _insertion_sort(a: np.ndarray, n: int) -> None:
    for i in range(1, n):
        x = a[_u(i)]
        j = i - 1
        while j >= 0 and a[_u(j)] > x:
            a[_u(j + 1)] = a[_u(j)]
            j -= 1
        a[_u(j + 1)] = x


@njit(cache=True)
def sort_touched(lst: np.ndarray, n: int, extent: int) -> None:
    """Sort ``lst[:n]`` ascending; every entry is in ``0 .. extent-1``."""
    if n <= 48:
        _insertion_sort(lst, n)
        return
    tmp = np.empty(n, lst.dtype)
    count = np.empty(257, np.int64)
    src, dst = lst, tmp
    shift = 0
    passes = 0
    while (extent - 1) >> shift > 0 or passes == 0:
        count[:] = 0
        for u in range(n):
            count[_u(((src[_u(u)] >> shift) & 255) + 1)] += 1
        for b in range(256):
            count[_u(b + 1)] += count[_u(b)]
        for u in range(n):
            d = (src[_u(u)] >> shift) & 255
            dst[_u(count[_u(d)])] = src[_u(u)]
            count[_u(d)] += 1
        src, dst = dst, src
        shift += 8
        passes += 1
    if passes % 2 == 1:
        lst[:n] = tmp[:n]
