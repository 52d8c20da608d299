"""cg, bicgstab, gmres and minres against scipy.sparse.linalg's on the same problems:
solutions, residuals, iteration counts, dtypes, starts, preconditioners and edge cases."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import lazysparse as xp
from lazysparse.api.array.lazy_array import LazyArray
from tests.conftest import slow_except
from tests.sparse_linalg.problems import convection_diffusion, indefinite, laplacian_2d, rhs

SIDE = 10
SPD = laplacian_2d(SIDE)
NONSYM = convection_diffusion(SIDE)
SYM_INDEF = indefinite(SIDE)

# solver name -> (native, scipy's, the matrix it is tested on)
SOLVERS: dict[str, tuple[Callable[..., Any], Callable[..., Any], sp.csr_array]] = {
    "cg": (xp.sparse_linalg.cg, spla.cg, SPD),
    "bicgstab": (xp.sparse_linalg.bicgstab, spla.bicgstab, NONSYM),
    "gmres": (xp.sparse_linalg.gmres, spla.gmres, NONSYM),
    "minres": (xp.sparse_linalg.minres, spla.minres, SPD),
}
TOL_FREE = ("minres",)  # minres takes no atol (scipy's signature)


def _solve(name: str, a: Any, b: Any, **kw: Any) -> tuple[np.ndarray, int]:
    native = SOLVERS[name][0]
    x, info = native(a, b, **kw)
    assert isinstance(x, LazyArray)
    return np.asarray(x), info


def _rel_residual(a: sp.csr_array, x: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a @ x.astype(np.float64) - b) / np.linalg.norm(b))


@pytest.mark.parametrize("name", list(SOLVERS))
def test_matches_scipy_float64(name: str) -> None:
    native, ref, a = SOLVERS[name]
    b = rhs(a.shape[0])
    x, info = _solve(name, xp.asarray(a), b, rtol=1e-10)
    xr, info_r = ref(a, b, rtol=1e-10)
    assert info == 0 and info_r == 0
    exact = spla.spsolve(a.tocsc(), b)
    np.testing.assert_allclose(x, exact, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(x, xr, rtol=1e-6, atol=1e-7)
    if name != "minres":  # minres stops on ||r|| / (||A|| ||x||), as scipy's
        assert _rel_residual(a, x, b) <= 1e-10 * 1.0001


@pytest.mark.parametrize("name", ["cg", "minres"])
def test_iteration_count_as_scipy(name: str) -> None:
    """The same algorithm: the same number of iterations as scipy's (callback calls)."""
    native, ref, a = SOLVERS[name]
    b = rhs(a.shape[0], seed=3)
    ours: list[Any] = []
    theirs: list[Any] = []
    native(xp.asarray(a), b, rtol=1e-8, callback=ours.append)
    ref(a, b, rtol=1e-8, callback=theirs.append)
    assert abs(len(ours) - len(theirs)) <= 1, (len(ours), len(theirs))
    assert all(isinstance(v, LazyArray) for v in ours)


@pytest.mark.parametrize("name", slow_except(list(SOLVERS), ["cg"]))  # each in float64 above
def test_float32_stays_float32(name: str) -> None:
    _, ref, a = SOLVERS[name]
    a32, b32 = a.astype(np.float32), rhs(a.shape[0]).astype(np.float32)
    x, info = SOLVERS[name][0](xp.asarray(a32), xp.asarray(b32), rtol=1e-4)
    assert info == 0 and x.dtype == xp.float32
    xr, _ = ref(a32, b32, rtol=1e-4)
    exact = spla.spsolve(a.tocsc(), b32.astype(np.float64))
    err, err_r = (np.linalg.norm(v - exact) for v in (np.asarray(x), xr))
    # as accurate as scipy's in float32 (minres stops on ||r|| / (||A|| ||x||))
    assert err <= max(1e-3 * np.linalg.norm(exact), 2 * err_r), (err, err_r)


def test_minres_symmetric_indefinite() -> None:
    b = rhs(SYM_INDEF.shape[0], seed=5)
    x, info = xp.sparse_linalg.minres(xp.asarray(SYM_INDEF), b, rtol=1e-10)
    xr, info_r = spla.minres(SYM_INDEF, b, rtol=1e-10)
    assert info == info_r == 0
    np.testing.assert_allclose(np.asarray(x), xr, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(x), spla.spsolve(SYM_INDEF.tocsc(), b), rtol=1e-5,
                               atol=1e-7)


@pytest.mark.parametrize("name", list(SOLVERS))
def test_x0_given(name: str) -> None:
    native, _, a = SOLVERS[name]
    b = rhs(a.shape[0], seed=1)
    exact = spla.spsolve(a.tocsc(), b)
    x0 = exact + 1e-3 * rhs(a.shape[0], seed=2)
    x, info = _solve(name, a, b, x0=x0, rtol=1e-10)
    assert info == 0
    np.testing.assert_allclose(x, exact, rtol=1e-6, atol=1e-8)
    x, info = _solve(name, a, b, x0=exact, rtol=1e-6, maxiter=1)  # already solved
    assert info == 0
    np.testing.assert_allclose(x, exact, rtol=1e-6, atol=1e-8)


def _preconditioners(a: sp.csr_array) -> dict[str, Any]:
    inv = sp.diags_array(1.0 / a.diagonal()).tocsr()
    return {
        "jacobi": xp.sparse_linalg.jacobi(xp.asarray(a)),
        "array": xp.asarray(inv),
        "scipy": inv,
        "callable": lambda v: xp.asarray(inv) @ v,
        "linear_operator": spla.aslinearoperator(inv),
    }


@pytest.mark.parametrize("kind", ["jacobi", "array", "scipy", "callable", "linear_operator"])
@pytest.mark.parametrize("name", list(SOLVERS))
def test_preconditioned(name: str, kind: str) -> None:
    native, ref, a = SOLVERS[name]
    # a badly scaled system, where the diagonal preconditioner matters
    scale = sp.diags_array(np.linspace(1.0, 50.0, a.shape[0]))
    a = (scale @ a @ scale).tocsr() if name in ("cg", "minres") else (scale @ a).tocsr()
    b = rhs(a.shape[0], seed=4)
    m = _preconditioners(a)[kind]
    x, info = _solve(name, xp.asarray(a), b, rtol=1e-10, M=m, maxiter=2000)
    assert info == 0
    np.testing.assert_allclose(x, spla.spsolve(a.tocsc(), b), rtol=1e-5, atol=1e-9)


def test_jacobi_reduces_cg_iterations() -> None:
    scale = sp.diags_array(np.linspace(1.0, 50.0, SPD.shape[0]))
    a = (scale @ SPD @ scale).tocsr()
    b = rhs(a.shape[0])
    plain: list[Any] = []
    prec: list[Any] = []
    xp.sparse_linalg.cg(a, b, rtol=1e-8, callback=plain.append, maxiter=5000)
    xp.sparse_linalg.cg(a, b, rtol=1e-8, callback=prec.append,
                        M=xp.sparse_linalg.jacobi(a))
    theirs: list[Any] = []
    spla.cg(a, b, rtol=1e-8, callback=theirs.append, M=sp.diags_array(1.0 / a.diagonal()))
    assert len(prec) < len(plain) / 2
    assert abs(len(prec) - len(theirs)) <= 1


@pytest.mark.parametrize("name", list(SOLVERS))
def test_zero_rhs(name: str) -> None:
    native, ref, a = SOLVERS[name]
    b = np.zeros(a.shape[0])
    x, info = _solve(name, xp.asarray(a), b)
    xr, info_r = ref(a, b)
    assert info == info_r == 0
    np.testing.assert_array_equal(x, xr)
    np.testing.assert_array_equal(x, np.zeros(a.shape[0]))
    assert native(a, b)[0].format == "dense"  # a solution is stored dense


@pytest.mark.parametrize("name", list(SOLVERS))
def test_maxiter_hit(name: str) -> None:
    native, ref, a = SOLVERS[name]
    b = rhs(a.shape[0])
    x, info = _solve(name, xp.asarray(a), b, rtol=1e-12, maxiter=2)
    _, info_r = ref(a, b, rtol=1e-12, maxiter=2)
    assert info > 0 and info == info_r == 2
    assert np.all(np.isfinite(x))
    assert _rel_residual(a, x, b) < 1.0  # two steps did reduce it


@pytest.mark.parametrize("name", list(SOLVERS))
def test_one_by_one(name: str) -> None:
    native, ref, _ = SOLVERS[name]
    a = sp.csr_array(np.array([[4.0]]))
    x, info = _solve(name, xp.asarray(a), np.array([2.0]))
    xr, info_r = ref(a, np.array([2.0]))
    assert info == info_r == 0
    np.testing.assert_allclose(x, xr)
    np.testing.assert_allclose(x, [0.5])


@pytest.mark.parametrize("name", list(SOLVERS))
def test_empty_is_trivial_as_scipy(name: str) -> None:
    native, ref, _ = SOLVERS[name]
    a = sp.csr_array((0, 0))
    x, info = _solve(name, a, np.zeros(0))
    xr, info_r = ref(a, np.zeros(0))
    assert info == info_r == 0 and x.shape == xr.shape == (0,)


def _as(kind: str, a: sp.csr_array) -> Any:
    return {"lazysparse": xp.asarray(a), "scipy_csr": a, "numpy": a.toarray(),
            "lazysparse_dense": xp.asarray(a.toarray()),
            "linear_operator": spla.aslinearoperator(a),
            "callable": lambda v: xp.asarray(a) @ v}[kind]


@pytest.mark.parametrize("kind", ["lazysparse", "scipy_csr", "numpy", "lazysparse_dense",
                                  "linear_operator", "callable"])
@pytest.mark.parametrize("name", list(SOLVERS))
def test_input_kinds(name: str, kind: str) -> None:
    native, _, a = SOLVERS[name]
    b = rhs(a.shape[0], seed=6)
    x, info = _solve(name, _as(kind, a), b, rtol=1e-9)
    assert info == 0
    np.testing.assert_allclose(x, spla.spsolve(a.tocsc(), b), rtol=1e-6, atol=1e-8)


def test_rhs_as_lazy_and_column() -> None:
    b = rhs(SPD.shape[0])
    x1, _ = _solve("cg", SPD, xp.asarray(b), rtol=1e-10)
    x2, _ = _solve("cg", SPD, b[:, None], rtol=1e-10)
    np.testing.assert_allclose(x1, x2)


def test_integer_matrix_gives_float64() -> None:
    a = (SPD * 1).astype(np.int64)
    x, info = xp.sparse_linalg.cg(xp.asarray(a), np.ones(a.shape[0], dtype=np.int64))
    assert info == 0 and x.dtype == xp.float64


@pytest.mark.parametrize("name", list(SOLVERS))
def test_bad_input(name: str) -> None:
    native = SOLVERS[name][0]
    with pytest.raises(ValueError, match="square"):
        native(xp.asarray(sp.random_array((5, 4), density=0.5, rng=0)), np.ones(5))
    with pytest.raises(ValueError, match="shape"):
        native(xp.asarray(SPD), np.ones(SPD.shape[0] + 1))
    with pytest.raises(ValueError, match="2-D"):
        native(xp.ones((2, 2, 2)), np.ones(2))
    with pytest.raises(TypeError, match="complex"):
        native(xp.asarray(SPD.astype(np.complex128)), np.ones(SPD.shape[0]))
    with pytest.raises(TypeError, match="complex"):
        native(xp.asarray(SPD), np.ones(SPD.shape[0], dtype=np.complex128))
    with pytest.raises(ValueError, match="x0"):
        native(xp.asarray(SPD), np.ones(SPD.shape[0]), x0=np.ones(3))
    with pytest.raises(ValueError, match="M has shape"):
        native(xp.asarray(SPD), np.ones(SPD.shape[0]), M=xp.asarray(sp.eye_array(3)))
    with pytest.raises(TypeError, match="A must be"):
        native("not a matrix", np.ones(3))


def test_jacobi_errors() -> None:
    a = sp.csr_array(np.array([[1.0, 2.0], [3.0, 0.0]]))
    with pytest.raises(ValueError, match="zero on its diagonal"):
        xp.sparse_linalg.jacobi(a)
    with pytest.raises(ValueError, match="square"):
        xp.sparse_linalg.jacobi(np.ones((2, 3)))
    j = xp.sparse_linalg.jacobi(np.array([[2.0, 1.0], [1.0, 4.0]]))
    np.testing.assert_allclose(np.asarray(j(xp.asarray([1.0, 1.0]))), [0.5, 0.25])


def test_negative_tolerances_refused() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        xp.sparse_linalg.cg(SPD, np.ones(SPD.shape[0]), rtol=-1.0)
    with pytest.raises(ValueError, match="maxiter"):
        xp.sparse_linalg.gmres(NONSYM, np.ones(NONSYM.shape[0]), maxiter=-1)


def test_gmres_restart_and_callbacks() -> None:
    b = rhs(NONSYM.shape[0])
    norms: list[float] = []
    xs: list[Any] = []
    x, info = xp.sparse_linalg.gmres(NONSYM, b, rtol=1e-10, restart=5, callback=norms.append)
    assert info == 0 and len(norms) > 5  # more than one cycle of 5
    assert norms[-1] <= 1e-10 and all(n >= 0 for n in norms)
    x2, _ = xp.sparse_linalg.gmres(NONSYM, b, rtol=1e-10, restart=5, callback=xs.append,
                                   callback_type="x")
    assert len(xs) >= 2 and all(isinstance(v, LazyArray) for v in xs)
    np.testing.assert_allclose(np.asarray(x), np.asarray(x2))
    with pytest.raises(ValueError, match="callback_type"):
        xp.sparse_linalg.gmres(NONSYM, b, callback=print, callback_type="nope")


def test_bicgstab_breakdown_reported() -> None:
    """rhat orthogonal to A r from the start: scipy and the native solver stop with < 0."""
    a = sp.csr_array(np.array([[0.0, 1.0], [-1.0, 0.0]]))
    b = np.array([1.0, 0.0])
    _, info = xp.sparse_linalg.bicgstab(a, b)
    _, info_r = spla.bicgstab(a, b)
    assert info < 0 and info_r < 0
