"""lstsq: the direct sparse least-squares solve (cached LU of the augmented system)
against NumPy's lstsq on the dense equivalent."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.api.stored import sparse_solve
from tests.sparse_linalg.problems import laplacian_2d, rhs, tall

TALL = tall()


def _np_lstsq(a: sp.sparray, b: np.ndarray) -> np.ndarray:
    return np.linalg.lstsq(a.toarray(), b, rcond=None)[0]


@pytest.mark.parametrize("shape", ["tall", "square", "wide"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_matches_numpy(shape: str, dtype: type) -> None:
    a = {"tall": TALL, "square": laplacian_2d(6), "wide": TALL.T.tocsr()}[shape]
    a = a.astype(dtype)
    b = rhs(a.shape[0]).astype(dtype)
    if np.dtype(dtype).kind == "c":
        a = (a + 0.5j * a).tocsr()
        b = b + 1j * rhs(a.shape[0], seed=9)
    x = xp.sparse_linalg.lstsq(xp.asarray(a), b)
    assert isinstance(x, LazyArray) and x.dtype == dtype and x.shape == (a.shape[1],)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    ref = _np_lstsq(a.astype(np.result_type(dtype, np.float64)), b)
    np.testing.assert_allclose(np.asarray(x), ref, rtol=tol, atol=tol)


def test_several_right_hand_sides_and_cache() -> None:
    a = xp.asarray(TALL)
    b = np.random.default_rng(0).standard_normal((TALL.shape[0], 3))
    x = xp.sparse_linalg.lstsq(a, b)
    np.testing.assert_allclose(np.asarray(x), _np_lstsq(TALL, b), rtol=1e-10, atol=1e-12)
    factors = sparse_solve._FACTORS[id(a)][2]
    assert len(factors) == 1  # one augmented factorization, reused below
    lu = next(iter(factors.values()))
    xp.sparse_linalg.lstsq(a, b[:, 0])
    assert next(iter(sparse_solve._FACTORS[id(a)][2].values())) is lu
    a[0, 0] = 5.0  # a new value is factorized again
    x = xp.sparse_linalg.lstsq(a, b[:, 0])
    changed = TALL.tolil()
    changed[0, 0] = 5.0
    np.testing.assert_allclose(np.asarray(x), _np_lstsq(changed.tocsr(), b[:, 0]),
                               rtol=1e-10, atol=1e-12)


def test_dense_and_integer_inputs() -> None:
    dense = TALL.toarray()
    b = rhs(TALL.shape[0])
    np.testing.assert_allclose(np.asarray(xp.sparse_linalg.lstsq(xp.asarray(dense), b)),
                               _np_lstsq(TALL, b), rtol=1e-10, atol=1e-12)
    ai = sp.csr_array(np.array([[1, 0], [0, 2], [1, 1]]))
    x = xp.sparse_linalg.lstsq(ai, np.array([1, 2, 3]))
    assert x.dtype == xp.float64
    np.testing.assert_allclose(np.asarray(x), _np_lstsq(ai.astype(float), np.array([1, 2, 3])))


def test_edge_cases_and_errors() -> None:
    assert xp.sparse_linalg.lstsq(sp.csr_array((0, 3)), np.zeros(0)).shape == (3,)
    np.testing.assert_array_equal(np.asarray(xp.sparse_linalg.lstsq(
        sp.csr_array((4, 0)), np.ones(4))), np.zeros(0))
    np.testing.assert_allclose(np.asarray(xp.sparse_linalg.lstsq(
        sp.csr_array(np.array([[2.0]])), np.array([3.0]))), [1.5])
    deficient = sp.csr_array(np.array([[1.0, 1.0], [1.0, 1.0], [0.0, 0.0]]))
    with pytest.raises(np.linalg.LinAlgError, match="rank deficient"):
        xp.sparse_linalg.lstsq(deficient, np.ones(3))
    with pytest.raises(ValueError, match="b has shape"):
        xp.sparse_linalg.lstsq(TALL, np.ones(TALL.shape[1]))
    with pytest.raises(ValueError, match="2-D"):
        xp.sparse_linalg.lstsq(xp.ones(3), np.ones(3))
