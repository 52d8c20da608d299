"""Checks of user-given shapes, index arrays and coordinates, with errors that name the problem."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

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
    check_dtype(arr.dtype)
    if arr.ndim != 1:
        raise ValueError(f"values must be a 1-D array (one per stored position), got {arr.shape}")
    return arr


def check_range(idx: np.ndarray, size: int, what: str) -> None:
    """Every entry of ``idx`` in ``[0, size)``, else CoordinateError naming the first bad one."""
    if idx.size == 0:
        return
    lo, hi = idx.min(), idx.max()
    if lo < 0 or hi >= size:
        bad = np.flatnonzero((idx < 0) | (idx >= size))[0]
        raise CoordinateError(
            f"{what}: coordinate {int(idx[bad])} at position {int(bad)} is out of range "
            f"for a dimension of size {size}"
        )


def check_ptr(ptr: np.ndarray, parent_npos: int, nidx: int, what: str) -> None:
    """``ptr`` has ``parent_npos + 1`` entries, starts at 0, never decreases, ends at ``nidx``."""
    if ptr.size != parent_npos + 1:
        raise ValueError(
            f"{what}: ptr has length {ptr.size}, expected {parent_npos + 1} "
            f"(one more than the {parent_npos} positions of the level above)"
        )
    if ptr[0] != 0:
        raise ValueError(f"{what}: ptr must start at 0, got {int(ptr[0])}")
    steps = np.diff(ptr)
    if steps.size and (steps < 0).any():
        bad = int(np.flatnonzero(steps < 0)[0])
        raise ValueError(
            f"{what}: ptr is not monotone: ptr[{bad}]={int(ptr[bad])} > "
            f"ptr[{bad + 1}]={int(ptr[bad + 1])}"
        )
    if ptr[-1] != nidx:
        raise ValueError(
            f"{what}: ptr[-1]={int(ptr[-1])} must equal len(idx)={nidx} (mismatched lengths)"
        )


def check_sorted_segments(level: Compressed, what: str, strict: bool) -> None:
    """Coordinates ascend (strictly when ``strict``) within each parent's segment."""
    idx, ptr = level.idx, level.ptr
    if idx.size < 2:
        return
    d = np.diff(idx.astype(np.int64, copy=False))
    bad = d <= 0 if strict else d < 0
    # a step across a segment boundary is allowed to go down
    starts = ptr[1:-1]
    starts = starts[(starts > 0) & (starts < idx.size)]
    bad[starts - 1] = False
    if bad.any():
        q = int(np.flatnonzero(bad)[0])
        kind = "duplicate" if d[q] == 0 else "unsorted"
        raise ValueError(
            f"{what}: {kind} coordinates {int(idx[q])}, {int(idx[q + 1])} at positions {q}, "
            f"{q + 1} under one parent; this level promises sorted, unique coordinates "
            "(build with Tensor.from_coords(..., sum_duplicates=True) to sort and sum them)"
        )


def check_coo_order(chain: Sequence[np.ndarray], ptr: np.ndarray, what: str) -> None:
    """COO coordinate tuples (one array per level) strictly ascend within each parent segment."""
    n = chain[0].size
    if n < 2:
        return
    cmp = np.zeros(n - 1, dtype=np.int8)
    for c in reversed(chain):
        d = np.sign(np.diff(c.astype(np.int64, copy=False))).astype(np.int8)
        cmp = np.where(d != 0, d, cmp)
    starts = ptr[1:-1]
    starts = starts[(starts > 0) & (starts < n)]
    cmp[starts - 1] = 1
    if (cmp <= 0).any():
        q = int(np.flatnonzero(cmp <= 0)[0])
        first = tuple(int(c[q]) for c in chain)
        second = tuple(int(c[q + 1]) for c in chain)
        kind = "duplicate" if cmp[q] == 0 else "unsorted"
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
        elif isinstance(level, Compressed):
            check_ptr(level.ptr, npos, level.idx.size, what)
            check_range(level.idx, level.size, what)
            if level.unique:
                check_sorted_segments(level, what, strict=True)
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
                check_ptr(level.ptr, npos, level.idx.size, what)
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
