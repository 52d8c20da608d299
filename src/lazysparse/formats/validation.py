"""Checks of user-given shapes, index arrays and coordinates, with errors that name the problem."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import checkkernels as K
from .dtypes import check_dtype
from .levels import Compressed, Dense, Level, Singleton


class CoordinateError(IndexError, ValueError):
    """A coordinate is outside its dimension (an IndexError and a ValueError)."""


def check_shape(shape: Any) -> tuple[int, ...]:
    """``shape`` as a tuple of non-negative ints (TypeError for non-ints, ValueError for < 0)."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        items = tuple(shape)
    except TypeError as exc:
        raise TypeError(f"shape must be a sequence of ints, got {shape!r}") from exc
    out = []
    for n in items:
        if isinstance(n, (bool, np.bool_)):
            raise TypeError(f"shape entries must be integers, got bool in {items}")
        try:
            n = operator.index(n)
        except TypeError as exc:
            raise TypeError(
                f"shape entries must be integers, got {type(n).__name__} {n!r} in {items}"
            ) from exc
        if n < 0:
            raise ValueError(f"shape entries must be >= 0, got {n} in {items}")
        out.append(int(n))
    return tuple(out)


def as_index_array(a: Any, what: str) -> np.ndarray:
    """``a`` as a 1-D integer array (TypeError for non-integer data, ValueError for other ndim)."""
    arr = np.asarray(a)
    if arr.dtype.kind not in "iu":
        if arr.size == 0 and arr.dtype.kind in "fb":
            arr = arr.astype(np.int64)
        else:
            raise TypeError(f"{what} must hold integers, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{what} must be 1-D, got shape {arr.shape}")
    return arr


def as_values_array(a: Any) -> np.ndarray:
    """``a`` as a 1-D values array of a supported dtype."""
    arr = np.asarray(a)
    dt = check_dtype(arr.dtype)
    if arr.dtype != dt:  # non-native byte order
        arr = arr.astype(dt)
    if arr.ndim != 1:
        raise ValueError(f"values must be a 1-D array (one per stored position), got {arr.shape}")
    return arr


def check_range(idx: np.ndarray, size: int, what: str) -> None:
    """Every entry of ``idx`` in ``[0, size)``, else CoordinateError naming the first bad one."""
    if idx.size == 0:
        return
    code, q = K.check_range(idx, size)
    if code:
        _raise_range(idx, q, size, what)


def _raise_range(idx: np.ndarray, q: int, size: int, what: str) -> None:
    raise CoordinateError(
        f"{what}: coordinate {int(idx[q])} at position {int(q)} is out of range "
        f"for a dimension of size {size}"
    )


def check_compressed(level: Compressed, parent_npos: int, what: str, order: int) -> None:
    """Validate a compressed level's ``ptr`` and ``idx`` against its parent's position count.

    ``order``: 0 no order check (COO's root, checked as tuples), 1 sorted, 2 strictly ascending.
    """
    ptr, idx = level.ptr, level.idx
    if ptr.size != parent_npos + 1:
        raise ValueError(
            f"{what}: ptr has length {ptr.size}, expected {parent_npos + 1} "
            f"(one more than the {parent_npos} positions of the level above)"
        )
    code, q = K.check_compressed(ptr, idx, level.size, order)
    if code == K.PTR_START:
        raise ValueError(f"{what}: ptr must start at 0, got {int(ptr[0])}")
    if code == K.PTR_DECREASES:
        raise ValueError(
            f"{what}: ptr is not monotone: ptr[{q}]={int(ptr[q])} > ptr[{q + 1}]={int(ptr[q + 1])}"
        )
    if code == K.PTR_END:
        raise ValueError(
            f"{what}: ptr[-1]={int(ptr[-1])} must equal len(idx)={idx.size} (mismatched lengths)"
        )
    if code == K.OUT_OF_RANGE:
        _raise_range(idx, q, level.size, what)
    if code in (K.UNSORTED, K.DUPLICATE):
        kind = "duplicate" if code == K.DUPLICATE else "unsorted"
        raise ValueError(
            f"{what}: {kind} coordinates {int(idx[q])}, {int(idx[q + 1])} at positions {q}, "
            f"{q + 1} under one parent; this level promises sorted, unique coordinates "
            "(build with Tensor.from_coords(..., sum_duplicates=True) to sort and sum them)"
        )


def check_unique_unordered(level: Compressed, what: str) -> None:
    """ValueError naming the first coordinate an unordered level stores twice under one
    parent (a mark per coordinate when that is cheap; else a sort of a copy)."""
    ptr, idx = level.ptr, level.idx
    if level.size <= 4 * idx.size + (1 << 20):
        code, q = K.check_unique_unordered(ptr, idx, np.full(level.size, -1, np.int64))
        if code == K.OK:
            return
        q = int(q)
        c = int(idx[q])
        seg = np.searchsorted(ptr, q, side="right") - 1
        raise ValueError(f"{what}: coordinate {c} is stored twice under parent {int(seg)} "
                         f"(second at position {q}); an unordered level promises unique "
                         "coordinates (build with Tensor.from_coords(..., sum_duplicates=True))")
    seg = np.repeat(np.arange(ptr.size - 1), np.diff(ptr))
    order = np.lexsort((idx, seg))
    dup = (np.diff(seg[order]) == 0) & (np.diff(idx[order]) == 0)
    if dup.any():
        q = int(order[int(np.argmax(dup)) + 1])
        raise ValueError(f"{what}: coordinate {int(idx[q])} is stored twice under parent "
                         f"{int(seg[q])} (position {q}); an unordered level promises unique "
                         "coordinates (build with Tensor.from_coords(..., sum_duplicates=True))")


def check_coo_order(chain: Sequence[np.ndarray], ptr: np.ndarray, what: str) -> None:
    """COO coordinate tuples (one array per level) strictly ascend within each parent segment."""
    dtype = np.result_type(*chain)  # the compiled check indexes a tuple of one array type
    code, q = K.check_coo_chain(ptr, tuple(np.ascontiguousarray(c, dtype=dtype) for c in chain))
    if code:
        first = tuple(int(c[q]) for c in chain)
        second = tuple(int(c[q + 1]) for c in chain)
        kind = "duplicate" if code == K.DUPLICATE else "unsorted"
        raise ValueError(
            f"{what}: {kind} coordinates {first} then {second} at entries {q}, {q + 1}; COO "
            "promises sorted, unique coordinates in storage order (use "
            "Tensor.from_coords(..., sum_duplicates=True) to sort and sum duplicates)"
        )


def check_levels(levels: Sequence[Level], dims: tuple[int, ...]) -> int:
    """Validate each level's arrays against its parent; return the last level's position count."""
    npos = 1
    k = 0
    while k < len(levels):
        level = levels[k]
        what = f"level {k} ({type(level).__name__})"
        if level.size != dims[k]:
            raise ValueError(f"{what} has size {level.size} but stores an axis of length {dims[k]}")
        if isinstance(level, Dense):
            npos *= level.size
        elif isinstance(level, Compressed) and not level.ordered:
            check_compressed(level, npos, what, order=0)
            check_unique_unordered(level, what)
            npos = level.idx.size
        elif isinstance(level, Compressed):
            check_compressed(level, npos, what, order=2 if level.unique else 0)
            if level.unique:
                npos = level.idx.size
            else:
                chain = [level.idx]
                j = k + 1
                while j < len(levels) and isinstance(levels[j], Singleton):
                    single = levels[j]
                    swhat = f"level {j} (Singleton)"
                    if single.size != dims[j]:
                        raise ValueError(
                            f"{swhat} has size {single.size} but stores an axis of length {dims[j]}"
                        )
                    if single.idx.size != level.idx.size:
                        raise ValueError(
                            f"{swhat}: idx has length {single.idx.size}, expected "
                            f"{level.idx.size} (one per entry of level {k}; mismatched lengths)"
                        )
                    check_range(single.idx, single.size, swhat)
                    chain.append(single.idx)
                    j += 1
                check_coo_order(chain, level.ptr, what)
                npos = level.idx.size
                k = j
                continue
        elif isinstance(level, Singleton):
            raise ValueError(f"{what} must follow a compressed-nonunique or singleton level")
        else:
            raise TypeError(f"{what}: unknown level type {type(level).__name__}")
        k += 1
    return npos
