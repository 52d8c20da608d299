"""Ufuncs with ``out=`` (NumPy's in-place operators on an ndarray with a lazysparse operand,
``np.add(x, y, out=...)``) and ufuncs lazysparse has no registry entry for (issue 33): the
values, casting errors and result types of NumPy on the dense equivalents."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps
import scipy.special as ss

import lazysparse as xp
from lazysparse.formats import DensifyError, set_densify_limit

S = sps.random_array((5, 4), density=0.4, format="csr", rng=7)
D = S.toarray()
ROW = np.array([1.0, -2.0, 0.5, 3.0])


def test_ndarray_in_place_operators_with_a_lazysparse_operand() -> None:
    """``X -= m`` (scikit-learn's StandardScaler/MinMaxScaler path) writes into X."""
    for name in ("__isub__", "__iadd__", "__imul__", "__itruediv__"):
        got, ref = D.copy() + 1.0, D.copy() + 1.0
        before = got
        got = getattr(got, name)(xp.asarray(ROW))
        getattr(ref, name)(ROW)
        assert got is before and isinstance(got, np.ndarray)
        np.testing.assert_allclose(got, ref)
    got = D.copy()
    got -= xp.asarray(S)  # a sparse lazysparse operand
    np.testing.assert_array_equal(got, np.zeros_like(D))


def test_ndarray_in_place_casting_follows_numpy() -> None:
    ints = np.arange(8, dtype=np.int64).reshape(2, 4)
    for name in ("__itruediv__", "__iadd__"):
        with pytest.raises(TypeError) as want:
            getattr(ints.copy(), name)(ROW)  # NumPy's own error on the dense operand
        with pytest.raises(type(want.value), match="same_kind"):
            getattr(ints.copy(), name)(xp.asarray(ROW))
    got, ref = ints.copy(), ints.copy()
    got += xp.asarray(np.array([1, 2, 3, 4]))
    ref += np.array([1, 2, 3, 4])
    np.testing.assert_array_equal(got, ref)


def test_ufunc_out_a_numpy_array() -> None:
    x, y = xp.asarray(S), xp.asarray(ROW)
    target = np.empty(D.shape)
    assert np.add(x, y, out=target) is target
    np.testing.assert_allclose(target, D + ROW)
    f32 = np.empty(D.shape, np.float32)
    np.multiply(x, 2.0, out=f32)  # same_kind: float64 into float32 is allowed
    np.testing.assert_allclose(f32, (D * 2.0).astype(np.float32))
    keep = np.full(D.shape, -1.0)
    np.add(x, 1.0, out=keep, where=D > 0)
    np.testing.assert_allclose(keep, np.where(D > 0, D + 1.0, -1.0))
    with set_densify_limit(64), pytest.raises(DensifyError, match="numpy.add"):
        np.add(x, y, out=np.empty(D.shape))


def test_ufunc_out_a_lazysparse_array() -> None:
    x = xp.asarray(S)
    out = xp.asarray(np.zeros(D.shape))
    res = np.add(x, xp.asarray(ROW), out=out)
    assert res is out and isinstance(out, xp.LazyArray)
    np.testing.assert_allclose(np.asarray(out), D + ROW)
    np.multiply(x, 3.0, out=x)  # the array itself: its value replaced, as x *= 3.0 does
    np.testing.assert_allclose(np.asarray(x), D * 3.0)
    assert xp.compute(x).format == xp.compute(xp.asarray(S) * 3.0).format
    ints = xp.asarray(np.zeros(4, np.int64))
    with pytest.raises(TypeError, match="same_kind") as got:
        np.add(xp.asarray(ROW), 1.0, out=ints)
    with pytest.raises(type(got.value)):
        np.add(ROW, 1.0, out=np.zeros(4, np.int64))
    np.testing.assert_array_equal(np.asarray(ints), np.zeros(4))
    np.add(xp.asarray(np.arange(4)), 1, out=ints)
    np.testing.assert_array_equal(np.asarray(ints), np.arange(4) + 1)
    grid = xp.asarray(np.zeros((2, 4)))
    np.subtract(xp.asarray(ROW), 1.0, out=grid)  # the inputs broadcast to out's shape
    np.testing.assert_allclose(np.asarray(grid), np.broadcast_to(ROW - 1.0, (2, 4)))
    with pytest.raises(ValueError, match="non-broadcastable output"):
        np.add(xp.asarray(ROW), 1.0, out=xp.asarray(np.zeros(3)))
    total = xp.asarray(np.zeros(()))
    with pytest.raises(TypeError, match=r"numpy\.add\.reduce: out="):
        np.add.reduce(xp.asarray(ROW), out=total)
    reduced = np.zeros(())
    assert np.add.reduce(xp.asarray(ROW), out=reduced) is reduced  # a NumPy target
    np.testing.assert_allclose(reduced, ROW.sum())


def test_ufunc_out_a_view_writes_through() -> None:
    x = xp.asarray(S)
    row = x[1]
    np.negative(row, out=row)
    ref = D.copy()
    ref[1] *= -1
    np.testing.assert_allclose(np.asarray(x), ref)


def test_ufuncs_without_a_registry_entry_return_lazysparse_arrays() -> None:
    v = np.array([0.1, -0.5, 2.0, 0.0])
    x = xp.asarray(v)
    got = ss.erf(x)
    assert isinstance(got, xp.LazyArray) and got.dtype == np.float64
    np.testing.assert_allclose(np.asarray(got), ss.erf(v))
    sparse = ss.erf(xp.asarray(S))
    assert isinstance(sparse, xp.LazyArray) and sparse.shape == D.shape
    np.testing.assert_allclose(np.asarray(sparse), ss.erf(D))
    for ufunc in (np.frexp, np.modf):
        outs = ufunc(x)
        assert isinstance(outs, tuple) and len(outs) == 2
        for o, r in zip(outs, ufunc(v), strict=True):
            assert isinstance(o, xp.LazyArray) and o.dtype == r.dtype
            np.testing.assert_array_equal(np.asarray(o), r)
    mant, expo = xp.asarray(np.zeros(4)), xp.asarray(np.zeros(4, np.int32))
    assert np.frexp(x, out=(mant, expo)) == (mant, expo)
    np.testing.assert_array_equal(np.asarray(mant), np.frexp(v)[0])
    np.testing.assert_array_equal(np.asarray(expo), np.frexp(v)[1])
    big = xp.asarray(sps.random_array((100_000, 100_000), density=1e-7, format="csr", rng=0))
    with pytest.raises(DensifyError, match="numpy.spacing"):
        np.spacing(big)
