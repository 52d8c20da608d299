"""Shared test helpers for the formats tests: array generation and format lists."""

from __future__ import annotations

import numpy as np

from lazysparse.formats import SUPPORTED_DTYPES

DTYPES = [np.dtype(d) for d in SUPPORTED_DTYPES]


def formats_for(ndim: int) -> list[str]:
    """Named formats that exist for ``ndim`` axes."""
    return ["dense", "csr", "csc", "coo", "csf", "dcsr"] if ndim == 2 else ["dense", "coo", "csf"]


def fills_for(dtype: np.dtype) -> list[object]:
    """Fill values worth testing for ``dtype``: 0, 1 and NaN/inf where they exist."""
    if dtype.kind == "b":
        return [False, True]
    if dtype.kind in "iu":
        return [0, 1]
    return [0, 1, np.nan, np.inf]


def random_array(
    shape: tuple[int, ...], density: float, dtype: np.dtype, fill: object, seed: int
) -> np.ndarray:
    """An array whose entries are ``fill`` except where a random mask (``density``) puts values."""
    rng = np.random.default_rng(seed)
    if dtype.kind == "b":
        vals = rng.random(shape) < 0.5
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        vals = rng.integers(max(info.min, -50), min(info.max, 50), size=shape, endpoint=True)
    elif dtype.kind == "c":
        vals = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    else:
        vals = rng.standard_normal(shape)
    vals = np.asarray(vals).astype(dtype)
    mask = rng.random(shape) < density
    out = np.full(shape, fill, dtype=dtype)
    out[mask] = vals[mask]
    if dtype.kind in "fc" and out.size and rng.random() < 0.3:
        out.flat[rng.integers(out.size)] = np.nan  # a stored NaN among the values
    return out


def assert_same(actual: np.ndarray, expected: np.ndarray) -> None:
    """Equal dtype, shape and values (NaN equals NaN)."""
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_array_equal(actual, expected, strict=True)
