"""Conversions between Tensors and dense NumPy arrays."""

from __future__ import annotations

from typing import Any

import numpy as np

from lazysparse.formats.assemble import build_tensor, expand
from lazysparse.formats.config import check_densify
from lazysparse.formats.dtypes import check_dtype, equals_fill, normalize_fill
from lazysparse.formats.levels import Dense
from lazysparse.formats.levels.registry import all_located, is_located
from lazysparse.formats.specs import FormatSpec, format_spec
from lazysparse.formats.tensor import Tensor


def from_numpy(
    a: Any,
    format: str | FormatSpec = "dense",  # noqa: A002
    fill_value: Any = 0,
    *,
    mode_order: tuple[int, ...] | None = None,
) -> Tensor:
    """Store ``a`` in ``format``; sparse formats skip entries equal to ``fill_value``."""
    arr = np.asarray(a)
    dt = check_dtype(arr.dtype, "from_numpy")
    arr = arr.astype(dt, copy=False)
    fill = normalize_fill(fill_value, dt)
    spec = format_spec(format, arr.ndim, mode_order)
    stored = arr.transpose(spec.mode_order)
    if all_located(spec.level_kinds):
        values = np.ascontiguousarray(stored).reshape(-1)
        return Tensor(
            arr.shape,
            [Dense(n) for n in stored.shape],
            spec.mode_order,
            values,
            fill,
            format=spec,
            check=False,
        )
    keep = ~equals_fill(stored, fill)
    coords = list(np.nonzero(keep))  # C order of `stored`: sorted in storage order
    return build_tensor(arr.shape, spec, coords, stored[keep], fill, what="from_numpy")


def to_numpy(t: Tensor) -> np.ndarray:
    """The dense array of ``t`` (for a dense format, a view of its values)."""
    shape, dtype = t.shape, t.dtype
    size = int(np.prod(shape, dtype=object))
    check_densify(size * dtype.itemsize, shape, dtype, "to_numpy")
    inverse = tuple(int(i) for i in np.argsort(t.mode_order))
    if all(is_located(level.kind) for level in t.levels):
        stored_shape = tuple(shape[m] for m in t.mode_order)
        return t.values.reshape(stored_shape).transpose(inverse)
    coords, values = expand(t)
    out = np.full(shape, t.fill_value, dtype=dtype)
    out[tuple(coords[k] for k in inverse)] = values
    return out


def stored_mask(t: Tensor) -> np.ndarray | None:
    """A dense bool array, True where ``t`` stores an entry (explicit fill values count as
    stored); None when every entry is stored (``t.full``). The reference interpreter's
    implicit regions start here."""
    if t.full:
        return None
    shape = t.shape
    size = int(np.prod(shape, dtype=object))
    check_densify(size, shape, np.dtype(bool), "stored_mask")
    inverse = tuple(int(i) for i in np.argsort(t.mode_order))
    coords, _ = expand(t)
    out = np.zeros(shape, dtype=bool)
    out[tuple(coords[k] for k in inverse)] = True
    return out
