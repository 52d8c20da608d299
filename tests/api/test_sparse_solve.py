"""``xp.linalg.solve`` on a sparse matrix: SuperLU (``api/stored/sparse_solve.py``), cached per
computed matrix, with the dense path's dtypes, shapes and errors."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import lazysparse as xp
from lazysparse.api.stored import sparse_solve


def _matrix(n: int = 9, dtype: object = np.float64) -> sp.csr_array:
    a = sp.diags_array([-1.0, 3.0, -1.0], offsets=[-1, 0, 1], shape=(n, n)).astype(dtype)
    a = a.tolil()
    a[0, n - 1] = 0.5  # unsymmetric entry
    return sp.csr_array(a)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128,
                                   np.int64])
@pytest.mark.parametrize("bshape", [(9,), (9, 3), (9, 0)])
def test_matches_numpy(dtype, bshape) -> None:
    a = _matrix(dtype=dtype)
    b = np.arange(1, 1 + int(np.prod(bshape))).reshape(bshape).astype(np.float64)
    la = xp.asarray(a)
    assert sparse_solve.applies(la, xp.asarray(b))
    got = xp.linalg.solve(la, xp.asarray(b))
    ref = np.linalg.solve(a.toarray(), b if b.ndim == 2 else b[:, None])
    ref = ref if b.ndim == 2 else ref[:, 0]
    assert got.shape == ref.shape and got.dtype == ref.dtype
    tol = 1e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10
    np.testing.assert_allclose(np.asarray(got), ref, rtol=tol, atol=tol)


def test_int_rhs_and_float32_result() -> None:
    a = _matrix(dtype=np.float32)
    b = np.arange(9)
    got = xp.linalg.solve(xp.asarray(a), xp.asarray(b))
    assert got.dtype == np.linalg.solve(a.toarray(), b.astype(np.float32)).dtype
    np.testing.assert_allclose(np.asarray(got), spla.spsolve(a.tocsc(), b), rtol=1e-4)


def test_factorization_cached_and_refreshed() -> None:
    a = _matrix()
    la = xp.asarray(a)
    b = np.ones(9)
    first = sparse_solve.factorization(la, np.dtype(np.float64))
    xp.linalg.solve(la, xp.asarray(b))
    assert sparse_solve.factorization(la, np.dtype(np.float64)) is first
    la[0, 0] = 10.0  # a new value: factorized again
    a2 = a.tolil()
    a2[0, 0] = 10.0
    np.testing.assert_allclose(np.asarray(xp.linalg.solve(la, xp.asarray(b))),
                               np.linalg.solve(a2.toarray(), b))
    assert sparse_solve.factorization(la, np.dtype(np.float64)) is not first
    key = id(la)
    del la
    assert key not in sparse_solve._FACTORS


def test_singular_raises_linalgerror() -> None:
    a = _matrix().tolil()
    a[4, :] = 0.0
    la = xp.asarray(sp.csr_array(a))
    with pytest.raises(np.linalg.LinAlgError, match="Singular"):
        xp.linalg.solve(la, xp.asarray(np.ones(9)))


def test_dense_and_batched_keep_dense_path() -> None:
    a = _matrix().toarray()
    dense = xp.asarray(a)
    assert not sparse_solve.applies(dense, xp.asarray(np.ones(9)))
    np.testing.assert_allclose(np.asarray(xp.linalg.solve(dense, xp.asarray(np.ones(9)))),
                               np.linalg.solve(a, np.ones(9)))
    sparse = xp.asarray(_matrix())
    b3 = np.ones((2, 9, 1))
    assert not sparse_solve.applies(sparse, xp.asarray(b3))
    np.testing.assert_allclose(np.asarray(xp.linalg.solve(sparse, xp.asarray(b3))),
                               np.linalg.solve(a, b3))


def test_nonzero_fill_uses_dense_path() -> None:
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    x = xp.asarray(sp.csr_array(np.array([[1.0, 0.0], [0.0, 2.0]])))
    x = x + 1.0  # fill value 1 after adding 1 to every entry
    assert not sparse_solve.applies(x, xp.asarray(np.ones(2)))
    np.testing.assert_allclose(np.asarray(xp.linalg.solve(x, xp.asarray(np.ones(2)))),
                               np.linalg.solve(a, np.ones(2)))


def test_shape_errors() -> None:
    la = xp.asarray(_matrix())
    with pytest.raises(ValueError):
        xp.linalg.solve(la, xp.asarray(np.ones(8)))
    with pytest.raises(ValueError):
        xp.linalg.solve(xp.asarray(sp.csr_array(np.ones((2, 3)))), xp.asarray(np.ones(2)))
    with pytest.raises(TypeError):
        xp.linalg.solve(xp.asarray(sp.csr_array(np.eye(2, dtype=bool))), xp.asarray(np.ones(2)))
