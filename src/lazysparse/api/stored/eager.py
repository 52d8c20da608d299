"""The materializing side of the computational functions: compute a LazyArray, read its
stored entries (never densifying a sparse tensor), densify within the limit, and wrap NumPy
or coordinate results back as LazyArray leaves.

Functions whose result depends on data (nonzero, unique, sort, searchsorted) or that are
dense by nature (factorizations, FFTs, cumulative sums) go through here, as do the eager
operations on stored data (``leaf``, ``eager_apply``: slicing with steps, reshape, concat).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from lazysparse.api.array.devices import CPU, Device
from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.api.array.materialize import compute_arrays
from lazysparse.formats.config import check_densify
from lazysparse.formats.levels.registry import is_located
from lazysparse.formats.tensor import Tensor
from lazysparse.formats.tensor_ops import apply_eager, coo_parts


def tensor_of(x: LazyArray) -> Tensor:
    """The computed tensor of ``x`` (computes it once)."""
    return x.tensor()


def is_dense(t: Tensor) -> bool:
    """Whether every level of ``t`` is dense (every entry is stored)."""
    return all(is_located(lv.kind) for lv in t.levels)


def stored_entries(t: Tensor) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    """Coordinates (one int64 array per axis, in axis order) and values of the stored
    entries, by walking the levels (``formats.tensor_ops.coo_parts``): O(stored positions)."""
    coords, values = coo_parts(t)
    return tuple(coords), values


def sorted_entries(t: Tensor) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    """``stored_entries`` in row-major (C) order of their coordinates."""
    coords, values = stored_entries(t)
    if t.ndim > 1 and values.size:
        flat = np.ravel_multi_index(coords, t.shape)
        if np.all(flat[1:] > flat[:-1]):  # already row-major (CSR, dense, sorted COO)
            return coords, values
        order = np.argsort(flat, kind="stable")
        coords = tuple(c[order] for c in coords)
        values = values[order]
    return coords, values


def check_dense_size(shape: tuple[int, ...], dtype: Any, what: str) -> None:
    """DensifyError (a ValueError) when a dense array of ``shape`` passes the densify limit."""
    n = 1
    for d in shape:
        n *= d
    check_densify(n * np.dtype(dtype).itemsize, tuple(shape), dtype, what)


def to_numpy(x: LazyArray, what: str) -> np.ndarray:
    """``x`` computed and densified (respecting the densify limit)."""
    t = tensor_of(x)
    check_dense_size(t.shape, t.dtype, what)
    return np.asarray(t.to_numpy())


def from_numpy(arr: Any, device: Device = CPU) -> LazyArray:
    """A dense NumPy result as a lazysparse leaf (fill value 0 of its dtype)."""
    a = np.asarray(arr, order="C")
    return LazyArray.from_tensor(Tensor.from_numpy(a, format="dense"), device)


def from_coords(coords: tuple[np.ndarray, ...], values: np.ndarray, shape: tuple[int, ...],
                fill_value: Any, device: Device = CPU) -> LazyArray:
    """A COO leaf of ``shape`` with entries ``values`` at ``coords`` (unique, any order) and
    ``fill_value`` elsewhere; a dense leaf for 0-d and 1-element shapes."""
    values = np.asarray(values)
    if len(shape) == 0:
        return from_numpy(values.reshape(()), device)
    return LazyArray.from_tensor(
        Tensor.from_coords(tuple(np.asarray(c, np.int64) for c in coords), values, shape,
                           fill_value=fill_value, format="coo"), device)


def leaf(t: Tensor, like: LazyArray | None = None) -> LazyArray:
    """A lazy leaf over stored ``t`` (on ``like``'s device)."""
    if like is not None:
        return LazyArray.from_tensor(t, like.device)
    return LazyArray.from_tensor(t)


def eager_apply(x: LazyArray, dense_fn: Callable[[np.ndarray], np.ndarray],
                sparse_fn: Callable[[np.ndarray, np.ndarray, tuple[int, ...]],
                                    tuple[tuple[int, ...], np.ndarray, np.ndarray]] | None = None,
                ) -> LazyArray:
    """Compute ``x`` and apply an operation to its data: ``dense_fn`` on the NumPy array of a
    dense tensor, ``sparse_fn(coords, values, shape) -> (shape, coords, values)`` on the
    stored entries of a sparse one (the fill value is kept). ``x``, computed for this
    function's own use, keeps its implicit region (``api.array.held_regions``)."""
    if x.result is None:
        compute_arrays((x,), keep_regions=True)
    return leaf(apply_eager(x.tensor(), dense_fn, sparse_fn), x)
