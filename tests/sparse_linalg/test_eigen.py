"""lobpcg and eigsh against scipy.sparse.linalg's eigsh/lobpcg on a 2-D Laplacian."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import lazysparse as xp
from lazysparse.api.array.lazy_array import LazyArray
from tests.sparse_linalg.problems import laplacian_2d

SPD = laplacian_2d(12)


def _check_pairs(a: sp.csr_array, vals: np.ndarray, vecs: LazyArray, tol: float) -> None:
    v = np.asarray(vecs)
    assert v.shape == (a.shape[0], len(vals))
    res = a @ v - v * vals[None, :]
    assert np.linalg.norm(res, axis=0).max() <= tol
    np.testing.assert_allclose(v.T @ v, np.eye(len(vals)), atol=1e-6)


@pytest.mark.parametrize("which", ["LA", "SA"])
@pytest.mark.slow
def test_eigsh_matches_scipy(which: str) -> None:
    vals, vecs = xp.sparse_linalg.eigsh(xp.asarray(SPD), k=3, which=which, tol=1e-7,
                                        maxiter=500)
    ref = spla.eigsh(SPD, k=3, which=which)[0]
    np.testing.assert_allclose(vals, ref, rtol=1e-8)
    assert np.all(np.diff(vals) >= 0)  # ascending, as scipy's eigsh
    _check_pairs(SPD, vals, vecs, 1e-6)


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.slow
def test_lobpcg_matches_scipy(largest: bool) -> None:
    x0 = np.random.default_rng(0).standard_normal((SPD.shape[0], 2))
    vals, vecs = xp.sparse_linalg.lobpcg(SPD, x0, tol=1e-7, maxiter=400, largest=largest)
    ref = spla.lobpcg(SPD, x0, tol=1e-7, maxiter=400, largest=largest)[0]
    np.testing.assert_allclose(vals, ref, rtol=1e-7)
    assert list(vals) == sorted(vals, reverse=largest)
    _check_pairs(SPD, vals, vecs, 1e-6)


def test_lobpcg_jacobi_speeds_up_smallest() -> None:
    """On a badly scaled matrix the Jacobi preconditioner finds the smallest pairs in 60
    iterations; without it they are still far off (and the operator input works)."""
    scale = sp.diags_array(np.linspace(1.0, 20.0, SPD.shape[0]))
    a = (scale @ SPD @ scale).tocsr()
    x0 = np.random.default_rng(1).standard_normal((a.shape[0], 2))
    want = np.linalg.eigvalsh(a.toarray())[:2]
    vals, _ = xp.sparse_linalg.lobpcg(spla.aslinearoperator(a), x0, tol=1e-6, maxiter=60,
                                      M=xp.sparse_linalg.jacobi(a), largest=False)
    np.testing.assert_allclose(vals, want, rtol=1e-9)
    plain, _ = xp.sparse_linalg.lobpcg(a, x0, tol=1e-6, maxiter=60, largest=False)
    assert np.abs(plain - want).max() > 1e-3


def test_lobpcg_float32() -> None:
    x0 = np.random.default_rng(1).standard_normal((SPD.shape[0], 2))
    want = np.linalg.eigvalsh(SPD.toarray())[-2:][::-1]
    vals, vecs = xp.sparse_linalg.lobpcg(xp.asarray(SPD.astype(np.float32)),
                                         x0.astype(np.float32), maxiter=300)
    ref = spla.lobpcg(SPD.astype(np.float32), x0.astype(np.float32), maxiter=300)[0]
    assert vecs.dtype == xp.float32
    # as accurate as scipy's float32 lobpcg with the same default tolerance
    err, err_ref = np.abs(vals - want).max(), np.abs(ref - want).max()
    assert err <= max(2 * err_ref, 2e-4 * want.max()), (err, err_ref)


@pytest.mark.slow
def test_eigsh_v0_and_seed() -> None:
    """A start vector near the top eigenvector is taken as the first column; the result
    does not depend on it or on the seed beyond the tolerance."""
    top = np.linalg.eigh(SPD.toarray())[1][:, -1]
    a = xp.asarray(SPD)
    w1, _ = xp.sparse_linalg.eigsh(a, k=2, v0=top + 1e-3, tol=1e-7, maxiter=400)
    w2, _ = xp.sparse_linalg.eigsh(a, k=2, seed=5, tol=1e-7, maxiter=400)
    np.testing.assert_allclose(w1, w2, rtol=1e-8)
    np.testing.assert_allclose(w1, spla.eigsh(SPD, k=2, which="LA")[0], rtol=1e-8)


def test_bad_input() -> None:
    x0 = np.ones((SPD.shape[0], 2))
    with pytest.raises(ValueError, match="generalized"):
        xp.sparse_linalg.lobpcg(SPD, x0, B=SPD)
    with pytest.raises(ValueError, match="shape"):
        xp.sparse_linalg.lobpcg(SPD, np.ones((3, 2)))
    with pytest.raises(ValueError, match="square"):
        xp.sparse_linalg.lobpcg(sp.random_array((5, 4), density=0.5, rng=0), np.ones((5, 1)))
    with pytest.raises(ValueError, match="which"):
        xp.sparse_linalg.eigsh(SPD, k=2, which="LM")
    with pytest.raises(ValueError, match="k must"):
        xp.sparse_linalg.eigsh(SPD, k=SPD.shape[0])
    with pytest.raises(TypeError, match="complex"):
        xp.sparse_linalg.eigsh(SPD.astype(np.complex128), k=2)
