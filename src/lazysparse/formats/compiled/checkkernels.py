"""Numba kernels that validate index arrays in one pass and report the first problem found.

Each returns ``(code, where)``; validation.py turns the code into an error message.
"""

from __future__ import annotations

import numpy as np

from lazysparse.formats.compiled.jit import helper_jit
from lazysparse.formats.levels.hashed import EMPTY, hashed_locate_shift

OK, PTR_START, PTR_DECREASES, PTR_END, OUT_OF_RANGE, UNSORTED, DUPLICATE = range(7)
BAD_SLOT, TABLE_COUNT, NOT_FOUND, MASK_UNMARKED, MASK_COUNT = range(7, 12)


@helper_jit(nogil=True)
def check_compressed(ptr, idx, size, order):  # pragma: no cover - compiled
    """Pointers start at 0, never decrease, end at len(idx); idx in range.

    ``order``: 0 skips the order check, 1 wants idx sorted per segment, 2 strictly ascending.
    """
    if ptr[0] != 0:
        return PTR_START, 0
    for p in range(ptr.size - 1):
        if ptr[p + 1] < ptr[p]:
            return PTR_DECREASES, p
    if ptr[ptr.size - 1] != idx.size:
        return PTR_END, 0
    for q in range(idx.size):
        if idx[q] < 0 or idx[q] >= size:
            return OUT_OF_RANGE, q
    if order == 0:
        return OK, 0
    for p in range(ptr.size - 1):
        lo, hi = np.uintp(ptr[p]), np.uintp(ptr[p + 1])
        for q in range(lo + 1, hi):
            if idx[q] < idx[q - 1]:
                return UNSORTED, q - 1
            if order == 2 and idx[q] == idx[q - 1]:
                return DUPLICATE, q - 1
    return OK, 0


@helper_jit(nogil=True)
def check_unique_unordered(ptr, idx, stamp):  # pragma: no cover - compiled
    """First position whose coordinate repeats an earlier sibling's (any order): ``stamp``
    (one int64 per coordinate, filled with -1) remembers the last parent that saw each."""
    for p in range(ptr.size - 1):
        for q in range(np.uintp(ptr[p]), np.uintp(ptr[p + 1])):
            c = idx[q]
            if stamp[c] == p:
                return DUPLICATE, q
            stamp[c] = p
    return OK, 0


@helper_jit(nogil=True)
def check_range(idx, size):  # pragma: no cover - compiled
    """First position whose coordinate is outside ``[0, size)``."""
    for q in range(idx.size):
        if idx[q] < 0 or idx[q] >= size:
            return OUT_OF_RANGE, q
    return OK, 0


@helper_jit(nogil=True)
def check_coo_chain(ptr, chain):  # pragma: no cover - compiled
    """Coordinate tuples ``chain[k][q]`` strictly ascend within each segment of ``ptr``."""
    depth = len(chain)
    for p in range(ptr.size - 1):
        lo, hi = np.uintp(ptr[p]), np.uintp(ptr[p + 1])
        for q in range(lo + 1, hi):
            cmp = 0
            for k in range(depth):
                a, b = chain[k][q - 1], chain[k][q]
                if a != b:
                    cmp = 1 if b > a else -1
                    break
            if cmp < 0:
                return UNSORTED, q - 1
            if cmp == 0:
                return DUPLICATE, q - 1
    return OK, 0


@helper_jit(nogil=True)
def check_table(ptr, idx, table, size, shift):  # pragma: no cover - compiled
    """A hashed level's table: every slot ``EMPTY`` or a position, one slot per position,
    and every position found by its own key (``(BAD_SLOT, slot)``, ``(TABLE_COUNT, count)``,
    ``(NOT_FOUND, position)``)."""
    nnz = idx.size
    count = 0
    for s in range(table.size):
        q = table[s]
        if q != EMPTY:
            if q < 0 or q >= nnz:
                return BAD_SLOT, s
            count += 1
    if count != nnz:
        return TABLE_COUNT, count
    for p in range(ptr.size - 1):
        for q in range(np.uintp(ptr[p]), np.uintp(ptr[p + 1])):
            if hashed_locate_shift(ptr, idx, table, shift, size, p, idx[q]) != q:
                return NOT_FOUND, q
    return OK, 0


@helper_jit(nogil=True)
def check_bytemap(ptr, idx, mask, size):  # pragma: no cover - compiled
    """A bytemap's mask marks each listed coordinate (``(MASK_UNMARKED, position in idx)``)
    and nothing else (``(MASK_COUNT, number marked)``)."""
    for p in range(ptr.size - 1):
        for q in range(np.uintp(ptr[p]), np.uintp(ptr[p + 1])):
            if mask[np.int64(p) * size + np.int64(idx[q])] == 0:
                return MASK_UNMARKED, q
    count = 0
    for j in range(mask.size):
        if mask[j] != 0:
            count += 1
    if count != idx.size:
        return MASK_COUNT, count
    return OK, 0
