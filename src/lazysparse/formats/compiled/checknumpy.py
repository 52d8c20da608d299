"""Vectorized NumPy twins of :mod:`.checkkernels`' index checks: the same ``(code, where)``
for every input, with no Numba compile, so that a first call on small data (a new user's
``xp.asarray(scipy_csr)``) does not wait on the compiler (issue 35).

:func:`checks` is the one decision: these twins up to :data:`CHECK_NUMPY_MAX` entries, the
compiled checks (one pass, no temporaries) above. Each twin reports the first problem in
the compiled check's scan order, so validation.py raises the same message either way.
"""

from __future__ import annotations

import sys
from types import ModuleType

import numpy as np

from lazysparse.formats.compiled import checkkernels as K

#: the most entries (pointers plus coordinates) a check runs on NumPy; above it, on Numba
CHECK_NUMPY_MAX = 1 << 20


def checks(entries: int) -> ModuleType:
    """The module whose ``check_compressed``/``check_range``/``check_coo_chain`` to run on
    ``entries`` entries: this one (NumPy, nothing to compile) up to :data:`CHECK_NUMPY_MAX`,
    :mod:`.checkkernels` (Numba: one pass, no temporaries, worth its compile) above."""
    return sys.modules[__name__] if entries <= CHECK_NUMPY_MAX else K


def _first(mask: np.ndarray) -> int:
    """Position of the first True of a non-empty mask that holds one."""
    return int(np.argmax(mask))


def _out_of_range(idx: np.ndarray, size: int) -> np.ndarray:
    """Mask of the coordinates outside ``[0, size)``, exact for any int dtype and size."""
    info = np.iinfo(idx.dtype)
    low = idx < 0 if info.min < 0 else np.zeros(idx.shape, np.bool_)
    if size <= 0:
        return np.ones(idx.shape, np.bool_)
    if size > info.max:
        return low
    return low | (idx >= idx.dtype.type(size))


def check_range(idx: np.ndarray, size: int) -> tuple[int, int]:
    """First position whose coordinate is outside ``[0, size)``."""
    if idx.size == 0:
        return K.OK, 0
    bad = _out_of_range(idx, int(size))
    return (K.OUT_OF_RANGE, _first(bad)) if bad.any() else (K.OK, 0)


def _segment_inner(ptr: np.ndarray, n: int) -> np.ndarray:
    """Mask over positions ``1..n-1``: True where the position has a left sibling in its
    segment of ``ptr`` (ascending, within ``[0, n]``), the positions a compiled check's
    ``for q in range(lo + 1, hi)`` visits."""
    start = np.zeros(n + 1, np.bool_)
    start[ptr[:-1]] = True
    inner = ~start[1:n]
    inner[:max(int(ptr[0]), 0)] = False  # before the first segment
    inner[max(int(ptr[ptr.size - 1]) - 1, 0):] = False  # after the last
    return inner


def check_compressed(ptr: np.ndarray, idx: np.ndarray, size: int,
                     order: int) -> tuple[int, int]:
    """Pointers start at 0, never decrease, end at len(idx); idx in range; ``order`` 1:
    sorted per segment, 2: strictly ascending (the compiled check's codes and positions)."""
    if ptr[0] != 0:
        return K.PTR_START, 0
    down = ptr[1:] < ptr[:-1]
    if down.any():
        return K.PTR_DECREASES, _first(down)
    if ptr[ptr.size - 1] != idx.size:
        return K.PTR_END, 0
    code = check_range(idx, size)
    if code[0] != K.OK or order == 0 or idx.size < 2:
        return code
    prev, cur = idx[:-1], idx[1:]
    bad = cur <= prev if order == 2 else cur < prev
    bad &= _segment_inner(ptr, idx.size)
    if not bad.any():
        return K.OK, 0
    q = _first(bad)
    return (K.UNSORTED if cur[q] < prev[q] else K.DUPLICATE), q


def check_coo_chain(ptr: np.ndarray, chain: tuple[np.ndarray, ...]) -> tuple[int, int]:
    """Coordinate tuples ``chain[k][q]`` strictly ascend within each segment of ``ptr``."""
    n = chain[0].size if chain else int(ptr[ptr.size - 1])
    if n < 2:
        return K.OK, 0
    cmp = np.zeros(n - 1, np.int8)  # sign of tuple q+1 minus tuple q (0: equal so far)
    for c in chain:
        a, b = c[:-1], c[1:]
        open_ = cmp == 0
        cmp[open_ & (b > a)] = 1
        cmp[open_ & (b < a)] = -1
    bad = (cmp <= 0) & _segment_inner(ptr, n)
    if not bad.any():
        return K.OK, 0
    q = _first(bad)
    return (K.UNSORTED if cmp[q] < 0 else K.DUPLICATE), q
