"""Checks of user-given shapes, index arrays and coordinates, with errors that name the problem."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from lazysparse.formats.compiled import checkkernels as K
from lazysparse.formats.compiled.checknumpy import checks
from lazysparse.formats.dtypes import SUPPORTED_DTYPE_SET, check_dtype
from lazysparse.formats.levels import Bytemap, Compressed, Hashed
from lazysparse.formats.levels.hashed import table_shift, table_size


class CoordinateError(IndexError, ValueError):
    """A coordinate is outside its dimension (an IndexError and a ValueError)."""


# the largest extent an axis may have: coordinates are int64 (NumPy's own limit, npy_intp)
MAX_EXTENT = int(np.iinfo(np.int64).max)


def check_extents(shape: tuple[int, ...]) -> tuple[int, ...]:
    """``shape`` unchanged, or NumPy's ValueError when an extent passes int64 (no int64
    coordinate could index it). The size (product) may pass int64: a sparse array's
    coordinates are per axis (docs/formats.md "Shapes that can be represented")."""
    for n in shape:
        if n > MAX_EXTENT:
            raise ValueError(f"Maximum allowed dimension exceeded: extent {n} in shape "
                             f"{shape} passes int64 (at most {MAX_EXTENT})")
    return shape


def check_shape(shape: Any) -> tuple[int, ...]:
    """``shape`` as a tuple of non-negative ints (TypeError for non-ints, ValueError for < 0
    or for an extent past int64)."""
    if type(shape) is tuple and all(type(n) is int and 0 <= n <= MAX_EXTENT for n in shape):
        return shape  # already one (every result the engine builds)
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
    return check_extents(tuple(out))


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
    if type(a) is np.ndarray and a.ndim == 1 and a.dtype in SUPPORTED_DTYPE_SET:
        return a  # native byte order: a swapped dtype is not in the set
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
    code, q = checks(idx.size).check_range(idx, size)
    if code:
        _raise_range(idx, q, size, what)


def _raise_range(idx: np.ndarray, q: int, size: int, what: str) -> None:
    raise CoordinateError(
        f"{what}: coordinate {int(idx[q])} at position {int(q)} is out of range "
        f"for a dimension of size {size}"
    )


def check_compressed(level: Compressed | Hashed | Bytemap, parent_npos: int, what: str,
                     order: int) -> None:
    """Validate a compressed level's ``ptr`` and ``idx`` against its parent's position count.

    ``order``: 0 no order check (COO's root, checked as tuples), 1 sorted, 2 strictly ascending.
    """
    ptr, idx = level.ptr, level.idx
    if ptr.size != parent_npos + 1:
        raise ValueError(
            f"{what}: ptr has length {ptr.size}, expected {parent_npos + 1} "
            f"(one more than the {parent_npos} positions of the level above)"
        )
    code, q = checks(ptr.size + idx.size).check_compressed(ptr, idx, level.size, order)
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


def check_unique_unordered(level: Compressed | Hashed, what: str) -> None:
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


def check_hashed(level: Hashed, parent_npos: int, what: str) -> None:
    """Validate a hashed level: its ``ptr``/``idx`` as an unordered compressed level's, and
    its table (a power-of-two length >= max(8, 2*nnz), each position in the slot its key
    probes to)."""
    check_compressed(level, parent_npos, what, order=0)
    check_unique_unordered(level, what)
    table, nnz = level.table, int(level.idx.size)
    n = int(table.size)
    if table.ndim != 1 or n & (n - 1) or n < table_size(nnz):
        raise ValueError(
            f"{what}: table has length {n}, expected a power of two >= {table_size(nnz)} "
            f"(at least 8 and twice the {nnz} stored positions); rebuild it with "
            "lazysparse.formats.levels.build_table(ptr, idx, size)")
    code, q = K.check_table(level.ptr, level.idx, table, level.size, table_shift(n))
    q = int(q)
    if code == K.BAD_SLOT:
        raise ValueError(f"{what}: table[{q}]={int(table[q])} is neither -1 (empty) nor a "
                         f"position in [0, {nnz})")
    if code == K.TABLE_COUNT:
        raise ValueError(f"{what}: table holds {q} positions, but the level stores {nnz} "
                         "(each position must be in exactly one slot)")
    if code == K.NOT_FOUND:
        raise ValueError(f"{what}: table is inconsistent: position {q} (coordinate "
                         f"{int(level.idx[q])}) is not found by probing its key; rebuild it "
                         "with lazysparse.formats.levels.build_table(ptr, idx, size)")


def check_bytemap(level: Bytemap, parent_npos: int, what: str) -> None:
    """Validate a bytemap level: mask length, touched list (strictly ascending per parent)
    and that the mask marks exactly the listed coordinates."""
    expected = parent_npos * level.size
    if level.mask.ndim != 1 or level.mask.size != expected:
        raise ValueError(
            f"{what}: mask has length {level.mask.size}, expected {expected} (one per "
            f"position: {parent_npos} parent positions x size {level.size})")
    check_compressed(level, parent_npos, what, order=2)
    code, q = K.check_bytemap(level.ptr, level.idx, level.mask, level.size)
    q = int(q)
    if code == K.MASK_UNMARKED:
        p = int(np.searchsorted(level.ptr, q, side="right")) - 1
        raise ValueError(f"{what}: coordinate {int(level.idx[q])} of parent {p} is in the "
                         "touched list but not marked in mask")
    if code == K.MASK_COUNT:
        raise ValueError(f"{what}: mask marks {q} positions, but the touched list (ptr/idx) "
                         f"has {level.idx.size}; they must list the same entries")


def check_coo_order(chain: Sequence[np.ndarray], ptr: np.ndarray, what: str) -> None:
    """COO coordinate tuples (one array per level) strictly ascend within each parent segment."""
    dtype = np.result_type(*chain)  # the compiled check indexes a tuple of one array type
    arrays = tuple(np.ascontiguousarray(c, dtype=dtype) for c in chain)
    code, q = checks(ptr.size + sum(c.size for c in arrays)).check_coo_chain(ptr, arrays)
    if code:
        first = tuple(int(c[q]) for c in chain)
        second = tuple(int(c[q + 1]) for c in chain)
        kind = "duplicate" if code == K.DUPLICATE else "unsorted"
        raise ValueError(
            f"{what}: {kind} coordinates {first} then {second} at entries {q}, {q + 1}; COO "
            "promises sorted, unique coordinates in storage order (use "
            "Tensor.from_coords(..., sum_duplicates=True) to sort and sum duplicates)"
        )
