"""Random sparse tensors: uniformly placed stored entries with random values."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from lazysparse.formats.assemble import build_tensor
from lazysparse.formats.config import check_allocation
from lazysparse.formats.dtypes import check_dtype, normalize_fill
from lazysparse.formats.specs import FormatSpec, format_spec
from lazysparse.formats.tensor import Tensor
from lazysparse.formats.validation.inputs import check_shape


def random(
    shape: Sequence[int] | int,
    density: float = 0.01,
    *,
    format: str | FormatSpec = "coo",  # noqa: A002
    dtype: Any = np.float64,
    fill_value: Any = 0,
    seed: int | np.random.Generator | None = None,
    mode_order: Sequence[int] | None = None,
) -> Tensor:
    """A tensor with ``round(density * size)`` entries at distinct random coordinates.

    Values: uniform in [0, 1) for floats (plus an imaginary part for complex), integers in
    [1, 10) (or [1, 100) where they fit), True for bool; a stored value may equal the fill value.
    """
    shape = check_shape(shape)
    dt = check_dtype(dtype, "random")
    if not isinstance(density, (int, float, np.floating, np.integer)) or not 0 <= density <= 1:
        raise ValueError(f"density must be a number in [0, 1], got {density!r}")
    fill = normalize_fill(fill_value, dt)
    spec = format_spec(format, len(shape), mode_order)
    rng = np.random.default_rng(seed)
    size = int(np.prod(shape, dtype=object))
    nnz = int(round(float(density) * size))
    dims = tuple(shape[m] for m in spec.mode_order)
    linear = _sample(rng, size, nnz)  # ascending linear indices in storage order
    coords = list(np.unravel_index(linear, dims)) if dims else []
    return build_tensor(shape, spec, coords, _values(rng, nnz, dt), fill, what="random")


def _sample(rng: np.random.Generator, size: int, nnz: int) -> np.ndarray:
    """``nnz`` distinct sorted integers from ``[0, size)``."""
    if nnz == 0:
        return np.zeros(0, dtype=np.int64)
    if size >= 2**62:
        raise ValueError(f"random: {size} elements is too many to index with int64")
    if size > 10000 and nnz > size // 50:  # NumPy draws from a permutation of every element
        check_allocation(size, np.int64, "random's permutation of every element (a density "
                         "above 2%)", within=nnz)
    return np.sort(rng.choice(size, size=nnz, replace=False))


def _values(rng: np.random.Generator, n: int, dt: np.dtype) -> np.ndarray:
    """``n`` random values of dtype ``dt``."""
    if dt.kind == "b":
        return np.ones(n, dtype=dt)
    if dt.kind in "iu":
        high = 100 if np.iinfo(dt).max >= 100 else 10
        return rng.integers(1, high, size=n).astype(dt)
    if dt.kind == "c":
        return (rng.random(n) + 1j * rng.random(n)).astype(dt)
    return rng.random(n).astype(dt)
