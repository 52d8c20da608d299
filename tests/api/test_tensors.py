"""Eager tensor helpers: coordinates of any format, size-1 axis restoration."""

from __future__ import annotations

import numpy as np
import pytest

import lazysparse as xp
from lazysparse import formats
from lazysparse.formats import tensor_ops as T


@pytest.mark.parametrize("fmt", ["dense", "csr", "csc", "coo", "csf", "dcsr"])
def test_coo_parts_matches_dense(fmt: str) -> None:
    a = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, 3.0]])
    t = formats.Tensor.from_numpy(a, fmt, 0.0)
    coords, values = T.coo_parts(t)
    back = np.zeros_like(a)
    back[tuple(coords)] = values
    np.testing.assert_array_equal(back, a)


@pytest.mark.parametrize("fmt", ["dense", "csf", "coo"])
def test_with_shape_inserts_unit_axes(fmt: str) -> None:
    a = np.arange(6.0).reshape(2, 3) % 2
    t = formats.Tensor.from_numpy(a, fmt, 0.0)
    u = T.with_shape(t, (2, 1, 3, 1))
    assert u.shape == (2, 1, 3, 1)
    np.testing.assert_array_equal(u.to_numpy(), a.reshape(2, 1, 3, 1))
    if fmt != "dense":
        assert u.nnz == t.nnz  # stays sparse


def test_unit_axes_are_restored_after_execution() -> None:
    x = xp.expand_dims(xp.asarray(np.array([1.0, 2.0])) + 1, axis=(0, 2))
    assert x.shape == (1, 2, 1)
    np.testing.assert_array_equal(np.asarray(x), np.array([2.0, 3.0]).reshape(1, 2, 1))
    z = xp.zeros(3)
    z[1] = 4.0
    r = xp.reshape(z, (1, 3))
    np.testing.assert_array_equal(np.asarray(r), [[0.0, 4.0, 0.0]])
