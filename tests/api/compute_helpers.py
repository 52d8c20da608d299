"""Helpers for the api-compute tests: build lazy arrays in several formats and fill values
from NumPy data, and compare results with NumPy on the dense equivalent."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.formats import Tensor

FORMATS = ("dense", "csr", "coo")


@pytest.fixture(autouse=True)
def reference_executor(monkeypatch: pytest.MonkeyPatch) -> None:
    """The api-compute semantics tests run on the executor named by
    ``LAZYSPARSE_TEST_EXECUTOR``: ``reference`` (the oracle interpreter; the default, since
    their dtype x format x fill matrix compiles ~800 kernels, ~13 min on a cold cache) or
    ``compiled``. CI checks the compiled path with test_compute_compiled.py, the random
    expressions and the conformance suite."""
    monkeypatch.setenv("LAZYSPARSE_EXECUTOR",
                       os.environ.get("LAZYSPARSE_TEST_EXECUTOR", "reference"))
REAL_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "float32", "float64")
ALL_NUMERIC = (*REAL_DTYPES, "complex64", "complex128")
ALL_DTYPES = ("bool", *ALL_NUMERIC)


def fills_for(dtype: Any) -> tuple[Any, ...]:
    """The fill values to test a dtype with: 0, 1, and NaN for inexact dtypes."""
    d = np.dtype(dtype)
    if d.kind == "b":
        return (False, True)
    if d.kind in "fc":
        return (0, 1, np.nan)
    return (0, 1)


def lazy(a: Any, format: str = "dense", fill: Any = 0) -> LazyArray:  # noqa: A002
    """``a`` stored in ``format`` (csr only for 2-D: coo otherwise) with ``fill``."""
    a = np.asarray(a)
    fmt = format
    if fmt == "csr" and a.ndim != 2:
        fmt = "coo"
    if a.ndim == 0:
        fmt = "dense"
    fv = a.dtype.type(fill)
    return LazyArray.from_tensor(Tensor.from_numpy(a, format=fmt, fill_value=fv))


def sample(shape: tuple[int, ...], dtype: Any, rng: np.random.Generator,
           density: float = 0.5, fill: Any = 0) -> np.ndarray:
    """Random data of ``dtype`` where about ``1 - density`` of the entries equal ``fill``."""
    d = np.dtype(dtype)
    if d.kind == "b":
        vals = rng.random(shape) < 0.5
    elif d.kind in "iu":
        lo = 0 if d.kind == "u" else -5
        vals = rng.integers(lo, 6, size=shape).astype(d)
    elif d.kind == "f":
        vals = rng.standard_normal(shape).astype(d)
    else:
        vals = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(d)
    mask = rng.random(shape) >= density
    out = np.array(vals, dtype=d)
    out[mask] = d.type(fill)
    return out


def dense(x: Any) -> np.ndarray:
    """The computed NumPy value of a lazy array."""
    assert isinstance(x, LazyArray), type(x)
    return np.asarray(x.tensor().to_numpy())


def assert_same(got: Any, expected: Any, *, dtype: Any = None, rtol: float | None = None,
                check_dtype: bool = True) -> None:
    """``got`` (lazy) equals ``expected`` (NumPy) in shape, dtype and values (NaN-equal)."""
    exp = np.asarray(expected)
    g = dense(got)
    assert got.shape == exp.shape, (got.shape, exp.shape)
    assert g.shape == exp.shape, (g.shape, exp.shape)
    if check_dtype:
        want = np.dtype(dtype) if dtype is not None else exp.dtype
        assert got.dtype == want, (got.dtype, want)
        assert g.dtype == want, (g.dtype, want)
    if exp.dtype.kind in "fc" or g.dtype.kind in "fc":
        tol = rtol if rtol is not None else (1e-4 if g.dtype in (np.float32, np.complex64)
                                             else 1e-10)
        np.testing.assert_allclose(g, exp, rtol=tol, atol=tol, equal_nan=True)
    else:
        np.testing.assert_array_equal(g, exp)
