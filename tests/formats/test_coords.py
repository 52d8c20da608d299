"""Tensor.from_coords: any order, duplicates summed on request, every dtype and format."""

from __future__ import annotations

import numpy as np
import pytest

from lazysparse.formats import Tensor

from .helpers import DTYPES, assert_same, formats_for


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("ndim", [1, 2, 3])
def test_sum_duplicates_every_dtype(dtype: np.dtype, ndim: int) -> None:
    rng = np.random.default_rng(ndim)
    shape = (4, 3, 2)[:ndim]
    n = 40
    coords = np.array([rng.integers(0, s, n) for s in shape])
    values = (rng.integers(1, 3, n) if dtype.kind != "b" else rng.random(n) < 0.5).astype(dtype)
    expected = np.zeros(shape, dtype=dtype)
    np.add.at(expected, tuple(coords), values)
    for fmt in formats_for(ndim):
        t = Tensor.from_coords(coords, values, shape, format=fmt, sum_duplicates=True)
        assert_same(t.to_numpy(), expected)
        with pytest.raises(ValueError, match="duplicate coordinates"):
            Tensor.from_coords(coords, values, shape, format=fmt)


def test_duplicate_message_names_axis_coordinates() -> None:
    coords = [[0, 3, 3], [1, 2, 2]]
    for fmt in ("csr", "csc", "coo", "dcsr"):
        with pytest.raises(ValueError, match=r"duplicate coordinates \(3, 2\)"):
            Tensor.from_coords(coords, [1.0, 2.0, 3.0], (4, 4), format=fmt)


def test_long_rows_are_sorted() -> None:
    rng = np.random.default_rng(0)
    cols = rng.permutation(500)
    rows = np.zeros(500, dtype=np.int64)
    values = rng.random(500)
    t = Tensor.from_coords([rows, cols], values, (1, 500), format="csr")
    expected = np.zeros((1, 500))
    expected[0, cols] = values
    assert_same(t.to_numpy(), expected)
    assert np.all(np.diff(t.levels[1].idx) > 0)


def test_empty_and_zero_length() -> None:
    t = Tensor.from_coords([[], []], np.zeros(0), (0, 5), format="csr")
    assert t.nnz == 0 and t.to_numpy().shape == (0, 5)
    t = Tensor.from_coords(np.zeros((2, 0), dtype=np.int64), np.zeros(0, np.int8), (3, 3))
    assert_same(t.to_numpy(), np.zeros((3, 3), np.int8))
