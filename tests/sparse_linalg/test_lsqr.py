"""lsqr against scipy.sparse.linalg.lsqr on a tall sparse least-squares problem."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import lazysparse as xp
from lazysparse.api.array.lazy_array import LazyArray
from tests.sparse_linalg.problems import rhs, tall

TALL = tall()
B = rhs(TALL.shape[0], seed=7)


def _lstsq(a: sp.csr_array, b: np.ndarray) -> np.ndarray:
    return np.linalg.lstsq(a.toarray(), b, rcond=None)[0]


@pytest.mark.parametrize("kind", ["lazysparse", "scipy_csr", "numpy", "linear_operator"])
def test_matches_scipy(kind: str) -> None:
    a = {"lazysparse": xp.asarray(TALL), "scipy_csr": TALL, "numpy": TALL.toarray(),
         "linear_operator": spla.aslinearoperator(TALL)}[kind]
    res = xp.sparse_linalg.lsqr(a, B, atol=1e-12, btol=1e-12)
    ref = spla.lsqr(TALL, B, atol=1e-12, btol=1e-12)
    assert isinstance(res.x, LazyArray) and len(tuple(res)) == 10
    x, istop, itn = res[0], res[1], res[2]
    assert istop == ref[1] and abs(itn - ref[2]) <= 1
    np.testing.assert_allclose(np.asarray(x), ref[0], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(np.asarray(x), _lstsq(TALL, B), rtol=1e-7, atol=1e-9)
    for got, want in zip(tuple(res)[3:9], ref[3:9], strict=True):  # the norm estimates
        assert got == pytest.approx(want, rel=1e-6, abs=1e-12)


@pytest.mark.slow
def test_float32() -> None:
    a32, b32 = TALL.astype(np.float32), B.astype(np.float32)
    res = xp.sparse_linalg.lsqr(xp.asarray(a32), b32)
    assert res.x.dtype == xp.float32
    exact = _lstsq(TALL, B)
    assert np.linalg.norm(np.asarray(res.x) - exact) <= 1e-4 * np.linalg.norm(exact)


def test_damped_and_x0() -> None:
    res = xp.sparse_linalg.lsqr(TALL, B, damp=0.5, atol=1e-12, btol=1e-12)
    ref = spla.lsqr(TALL, B, damp=0.5, atol=1e-12, btol=1e-12)
    np.testing.assert_allclose(np.asarray(res.x), ref[0], rtol=1e-8, atol=1e-10)
    x0 = ref[0] + 0.01
    res = xp.sparse_linalg.lsqr(TALL, B, damp=0.5, atol=1e-12, btol=1e-12, x0=x0)
    ref = spla.lsqr(TALL, B, damp=0.5, atol=1e-12, btol=1e-12, x0=x0)
    np.testing.assert_allclose(np.asarray(res.x), ref[0], rtol=1e-8, atol=1e-10)


def test_square_consistent_system() -> None:
    a = (TALL[:40] + 3 * sp.eye_array(40)).tocsr()
    b = rhs(40)
    res = xp.sparse_linalg.lsqr(a, b, atol=1e-12, btol=1e-12)
    assert res.istop == 1
    np.testing.assert_allclose(np.asarray(res.x), spla.spsolve(a.tocsc(), b), rtol=1e-8)


def test_iter_lim_hit() -> None:
    res = xp.sparse_linalg.lsqr(TALL, B, atol=1e-14, btol=1e-14, iter_lim=3)
    ref = spla.lsqr(TALL, B, atol=1e-14, btol=1e-14, iter_lim=3)
    assert res.istop == ref[1] == 7 and res.itn == ref[2] == 3
    np.testing.assert_allclose(np.asarray(res.x), ref[0], rtol=1e-10)


def test_zero_rhs_and_empty() -> None:
    res = xp.sparse_linalg.lsqr(TALL, np.zeros(TALL.shape[0]))
    ref = spla.lsqr(TALL, np.zeros(TALL.shape[0]))
    assert res.istop == ref[1] == 0 and res.itn == ref[2] == 0
    np.testing.assert_array_equal(np.asarray(res.x), np.zeros(TALL.shape[1]))
    res = xp.sparse_linalg.lsqr(sp.csr_array((0, 0)), np.zeros(0))
    assert np.asarray(res.x).shape == (0,) and res.istop == 0
    res = xp.sparse_linalg.lsqr(np.array([[2.0]]), np.array([4.0]))
    np.testing.assert_allclose(np.asarray(res.x), [2.0])


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="shape"):
        xp.sparse_linalg.lsqr(TALL, np.ones(TALL.shape[1]))
    with pytest.raises(TypeError, match="rmatvec"):
        xp.sparse_linalg.lsqr(lambda v: v, np.ones(3))
    with pytest.raises(TypeError, match="complex"):
        xp.sparse_linalg.lsqr(TALL.astype(np.complex128), B)
    with pytest.raises(ValueError, match="2-D"):
        xp.sparse_linalg.lsqr(xp.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="calc_var"):
        xp.sparse_linalg.lsqr(TALL, B, calc_var=True)
