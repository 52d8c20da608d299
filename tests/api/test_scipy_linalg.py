"""scipy.sparse.linalg solvers on lazysparse matrices (the LinearOperator protocol of
``api/protocols/scipy_methods.py``), compared with the same solver on the scipy matrix."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import lazysparse as xp

N = 24


def _spd() -> sp.csr_array:
    """A small SPD tridiagonal matrix with an empty off-diagonal row band (row 5 holds only
    its diagonal)."""
    a = sp.diags_array([-1.0, 4.0, -1.0], offsets=[-1, 0, 1], shape=(N, N)).tolil()
    a[5, 4] = a[5, 6] = a[4, 5] = a[6, 5] = 0.0
    return sp.csr_array(a)


@pytest.fixture(scope="module")
def mats() -> tuple[sp.csr_array, object, np.ndarray]:
    a = _spd()
    return a, xp.asarray(a), np.linspace(1.0, 3.0, N)


@pytest.mark.parametrize("solver", [spla.cg, spla.bicgstab, spla.gmres, spla.minres,
                                    spla.bicg, spla.cgs, spla.qmr, spla.lgmres, spla.gcrotmk,
                                    spla.tfqmr])
def test_iterative_solvers(mats, solver) -> None:
    a, la, b = mats
    x, info = solver(la, b, rtol=1e-10)
    ref, ref_info = solver(a, b, rtol=1e-10)
    assert info == ref_info == 0
    np.testing.assert_allclose(x, ref, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(a @ x, b, rtol=1e-8)


@pytest.mark.parametrize("solver", [spla.lsqr, spla.lsmr])
def test_least_squares(mats, solver) -> None:
    a, la, b = mats
    np.testing.assert_allclose(solver(la, b)[0], solver(a, b)[0], rtol=1e-8)


def test_eigsh_svds(mats) -> None:
    a, la, _ = mats
    w = spla.eigsh(la, k=3, return_eigenvectors=False)
    np.testing.assert_allclose(np.sort(w), np.sort(spla.eigsh(a, k=3, return_eigenvectors=False)))
    s = spla.svds(la, k=3, return_singular_vectors=False)
    ref = spla.svds(a, k=3, return_singular_vectors=False)
    np.testing.assert_allclose(np.sort(s), np.sort(ref))
    np.testing.assert_allclose(np.sort(w), np.sort(np.linalg.eigvalsh(a.toarray()))[-3:])


def test_onenormest_and_expm_multiply(mats) -> None:
    a, la, b = mats
    assert spla.onenormest(la) == pytest.approx(np.abs(a.toarray()).sum(axis=0).max())
    op = spla.aslinearoperator(la)
    got = spla.expm_multiply(op, b, traceA=la.trace())
    np.testing.assert_allclose(got, spla.expm_multiply(a, b), rtol=1e-10)


def test_aslinearoperator_protocol(mats) -> None:
    a, la, b = mats
    op = spla.aslinearoperator(la)
    assert op.shape == (N, N) and op.dtype == np.float64
    np.testing.assert_allclose(op.matvec(b), a @ b)
    m = np.stack([b, 2 * b], axis=1)
    np.testing.assert_allclose(la.matmat(m), a @ m)
    np.testing.assert_allclose(la.rmatmat(m), a.T @ m)
    assert la.trace() == pytest.approx(a.trace())
    assert la.trace(offset=1) == pytest.approx(a.trace(offset=1))


def test_complex_adjoint_and_rectangular() -> None:
    rng = np.random.default_rng(0)
    a = sp.random_array((7, 4), density=0.4, format="csr", rng=rng, dtype=np.complex128)
    la = xp.asarray(a)
    v = rng.standard_normal(7) + 1j * rng.standard_normal(7)
    np.testing.assert_allclose(la.rmatvec(v), a.conj().T @ v)
    np.testing.assert_allclose(la.matvec(np.ones(4)), a @ np.ones(4))
    b = rng.standard_normal(7)
    np.testing.assert_allclose(spla.lsqr(la, b, atol=1e-12, btol=1e-12)[0],
                               spla.lsqr(a, b, atol=1e-12, btol=1e-12)[0], rtol=1e-7)


def test_protocol_rejects_non_matrices() -> None:
    v = xp.asarray(np.arange(3.0))
    with pytest.raises(ValueError, match="2-D"):
        v.matvec(np.ones(3))
    with pytest.raises(ValueError, match="2-D"):
        v.trace()
    m = xp.asarray(np.eye(3))
    with pytest.raises(ValueError, match="2-D operand"):
        m.matmat(np.ones(3))


def test_eigs_and_lobpcg(mats) -> None:
    a, la, _ = mats
    w = spla.eigs(la, k=3, which="LM", return_eigenvectors=False)
    ref = spla.eigs(a, k=3, which="LM", return_eigenvectors=False)
    np.testing.assert_allclose(np.sort(w.real), np.sort(ref.real), rtol=1e-10)
    x0 = np.random.default_rng(0).standard_normal((N, 2))
    # lobpcg multiplies with ``A @ X`` (a lazy array): hand it the LinearOperator
    lam, _ = spla.lobpcg(spla.aslinearoperator(la), x0, tol=1e-10, maxiter=500, largest=True)
    np.testing.assert_allclose(np.sort(lam), np.sort(np.linalg.eigvalsh(a.toarray()))[-2:],
                               rtol=1e-7)
