"""Numba helpers that generated kernels call as ``lsk.<name>`` (the loop IR's intrinsics).

``bit_set`` / ``sort_touched`` implement the ordered drain of a dense row workspace: the
touched coordinates are kept both as a list and as a bitmap; a crowded row is read back in
order by scanning the bitmap (64 coordinates per word), a sparse row by sorting its list.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_u = np.uint64
_DEBRUIJN = np.uint64(0x03F79D71B4CB0A89)
_CTZ_TABLE = np.zeros(64, np.int64)
for _i in range(64):
    _CTZ_TABLE[((1 << _i) * 0x03F79D71B4CB0A89 & 0xFFFFFFFFFFFFFFFF) >> 58] = _i
CTZ_TABLE = tuple(int(v) for v in _CTZ_TABLE)


@njit(cache=True, inline="always")
def bit_set(bits: np.ndarray, k: int) -> None:
    """Mark coordinate ``k`` in the bitmap."""
    w = _u(k) >> _u(6)
    bits[w] = bits[w] | (_u(1) << (_u(k) & _u(63)))


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
def ctz_table() -> np.ndarray:
    """The de Bruijn lookup table ``sort_touched`` uses (allocate once per chunk)."""
    return np.array(CTZ_TABLE, dtype=np.int64)


@njit(cache=True)
def sort_touched(lst: np.ndarray, n: int, bits: np.ndarray, table: np.ndarray) -> None:
    """Sort ``lst[:n]`` (the coordinates set in ``bits``) ascending and clear ``bits``."""
    nwords = bits.shape[0]
    if n * 8 >= nwords:
        out = 0
        for w in range(nwords):
            word = bits[_u(w)]
            if word == _u(0):
                continue
            bits[_u(w)] = _u(0)
            base = w * 64
            while word != _u(0):
                low = word & (~word + _u(1))
                lst[_u(out)] = base + table[_u((low * _DEBRUIJN) >> _u(58))]
                out += 1
                word = word ^ low
        return
    for u in range(n):
        k = lst[_u(u)]
        bits[_u(k) >> _u(6)] = _u(0)
    if n <= 32:
        _insertion_sort(lst, n)
    else:
        lst[:n].sort()
