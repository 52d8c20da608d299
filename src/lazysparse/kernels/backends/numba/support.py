"""Numba helpers that generated kernels call as ``lsk.<name>`` (the loop IR's intrinsics).

``sort_touched(list, n, extent)`` orders a dense row workspace's touched coordinates before
they are appended: insertion sort for short rows; else, whichever is cheaper for this row,
a presence scan over ``0 .. extent-1`` (rows dense in their extent) or an LSD radix sort on
digits of at most 8 bits (as few passes as ``extent`` needs), which beats comparison sorts
on the ~100-entry rows of a Gustavson SpGEMM. The lowering gives the list room for
``2 * extent + SCRATCH_EXTRA`` entries; the tail past ``extent`` is the scratch space (no
allocation per row).
"""

from __future__ import annotations

import numpy as np

from lazysparse.formats.compiled.jit import helper_jit
from lazysparse.formats.levels.hashed import hashed_locate_shift  # noqa: F401 - kernels call it
from lazysparse.kernels.compile.lowering.workspaces import SCRATCH_EXTRA

_u = np.uint64



@helper_jit()
def sort_touched(lst: np.ndarray, n: int, extent: int) -> None:
    """Sort ``lst[:n]`` ascending; the entries are distinct and in ``0 .. extent-1``.

    One function with no calls, slices or allocations: every kernel that calls it links
    and re-optimizes its code, so its size is compile time of each new SpGEMM-like kernel.
    Scratch is ``lst[extent:]``; a list without that room is insertion-sorted."""
    if n <= 32 or lst.shape[0] < 2 * extent + SCRATCH_EXTRA:
        for i in range(1, n):
            x = lst[_u(i)]
            j = i - 1
            while j >= 0 and lst[_u(j)] > x:
                lst[_u(j + 1)] = lst[_u(j)]
                j -= 1
            lst[_u(j + 1)] = x
        return
    bits = 0
    while (extent - 1) >> bits > 0:
        bits += 1
    passes = max(1, (bits + 7) // 8)
    width = max(1, (bits + passes - 1) // passes)
    nb = 1 << width
    if 2 * extent + n < passes * (2 * nb + 2 * n):
        # presence scan: mark the entries in scratch[0:extent], read them back in order
        # (branchless: every coordinate is written, the cursor moves only on marked ones)
        for w in range(extent):
            lst[_u(extent + w)] = 0
        for u in range(n):
            lst[_u(extent + lst[_u(u)])] = 1
        k = 0
        for w in range(extent):
            lst[_u(k)] = w
            k += lst[_u(extent + w)]
        return
    # LSD radix sort, digits of ``width`` bits: tmp at scratch[0:n], counts after it
    tmp = extent
    cnt = extent + n
    mask = nb - 1
    src, dst = 0, tmp
    for p in range(passes):
        shift = p * width
        for b in range(nb + 1):
            lst[_u(cnt + b)] = 0
        for u in range(n):
            lst[_u(cnt + ((lst[_u(src + u)] >> shift) & mask) + 1)] += 1
        for b in range(nb):
            lst[_u(cnt + b + 1)] += lst[_u(cnt + b)]
        for u in range(n):
            x = lst[_u(src + u)]
            d = cnt + ((x >> shift) & mask)
            lst[_u(dst + lst[_u(d)])] = x
            lst[_u(d)] += 1
        src, dst = dst, src
    if passes % 2 == 1:
        for u in range(n):
            lst[_u(u)] = lst[_u(tmp + u)]


@helper_jit(inline="always")
def ws_probe(keys: np.ndarray, c: int) -> int:
    """The slot of key ``c`` in a hash workspace's table (``keys``: power-of-two length,
    ``-1`` free, never full), or the free slot where it goes: Fibonacci hash, linear probe."""
    mask = _u(keys.shape[0] - 1)
    s = (_u(c) * _u(0x9E3779B97F4A7C15)) >> _u(32) & mask
    while keys[s] != -1 and keys[s] != c:
        s = (s + _u(1)) & mask
    return np.int64(s)
