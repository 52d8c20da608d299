"""Type promotion through the namespace: array/array, array/Python scalar, fills."""

from __future__ import annotations

import numpy as np
import pytest

import lazysparse as xp
from tests.conftest import slow_except

PAIRS = [
    ("int8", "int16", "int16"), ("uint8", "int8", "int16"), ("uint16", "int32", "int32"),
    ("float32", "float64", "float64"), ("float32", "complex64", "complex64"),
    ("float64", "complex64", "complex128"), ("bool", "bool", "bool"),
    ("uint32", "uint64", "uint64"), ("int64", "float32", "float64"),
]


@pytest.mark.parametrize(("d1", "d2", "want"), slow_except(PAIRS, PAIRS[::3]))
def test_array_array(d1: str, d2: str, want: str) -> None:
    a = xp.ones(3, dtype=d1)
    b = xp.ones(3, dtype=d2)
    op = xp.logical_and if want == "bool" else xp.add
    out = op(a, b)
    assert out.dtype == np.dtype(want)
    assert np.asarray(out).dtype == np.dtype(want)
    assert xp.result_type(a, b) == np.dtype(want)


@pytest.mark.parametrize(("dtype", "scalar", "want"), [
    ("int8", 3, "int8"), ("uint8", 200, "uint8"), ("float32", 1.5, "float32"),
    ("float32", 1j, "complex64"), ("int16", 7, "int16"), ("bool", True, "bool"),
    ("complex64", 2.0, "complex64"),
])
def test_python_scalars_are_weak(dtype: str, scalar: object, want: str) -> None:
    a = xp.asarray(np.arange(3).astype(dtype))
    out = (a | scalar) if dtype == "bool" else a * scalar
    assert out.dtype == np.dtype(want)
    r = (scalar | a) if dtype == "bool" else scalar * a
    assert r.dtype == np.dtype(want)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(r))


def test_comparisons_and_division() -> None:
    a = xp.asarray(np.arange(4, dtype=np.int32))
    assert (a < 2).dtype == np.bool_
    assert (a == 2.0).dtype == np.bool_
    np.testing.assert_array_equal(np.asarray(a < 2), np.arange(4) < 2)
    assert (a / 2).dtype == np.float64  # integer division computes in float64
    assert xp.astype(a, xp.float32).dtype == np.float32


def test_fill_values_follow_the_operator() -> None:
    z = xp.zeros((3, 3))
    assert (z + 1).fill_value == 1.0
    assert (z * 5).fill_value == 0.0
    n = xp.full((2, 2), np.nan)
    assert np.isnan((n * 0).fill_value)
    assert xp.isnan(n).fill_value == np.True_
    assert xp.astype(z + 1, xp.int8).fill_value == 1
