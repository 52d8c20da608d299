"""api.linalg (lazy contractions) and api.dense_linalg (factorizations) against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lazysparse.api.chapters import dense_linalg as D
from lazysparse.api.chapters import linalg as L
from lazysparse.logic.nodes import Aggregate, MapJoin, Relabel, Reorder, Subquery
from tests.api.compute_helpers import (
    ALL_NUMERIC,
    FORMATS,
    assert_same,
    dense,
    fills_for,
    lazy,
    reference_executor,  # noqa: F401 - autouse fixture
    sample,
)
from tests.conftest import examples

MATMUL_SHAPES = [
    ((3, 4), (4, 5)), ((4,), (4, 2)), ((3, 4), (4,)), ((4,), (4,)),
    ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((1, 3, 0), (0, 2)),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", ALL_NUMERIC)
def test_matmul_dtypes_formats_fills(fmt: str, dtype: str) -> None:
    rng = np.random.default_rng(0)
    for fill in fills_for(dtype):
        a = sample((3, 4), dtype, rng, fill=fill)
        b = sample((4, 2), dtype, rng, fill=fill)
        assert_same(L.matmul(lazy(a, fmt, fill), lazy(b, fmt, fill)), np.matmul(a, b))


@pytest.mark.parametrize(("s1", "s2"), MATMUL_SHAPES)
def test_matmul_shapes(s1: tuple[int, ...], s2: tuple[int, ...]) -> None:
    rng = np.random.default_rng(1)
    a, b = sample(s1, "float64", rng), sample(s2, "float64", rng)
    assert_same(L.matmul(lazy(a, "coo"), lazy(b)), np.matmul(a, b))


def test_matmul_plan_is_aggregate_over_mapjoin() -> None:
    c = L.matmul(lazy(np.ones((2, 3)), "csr"), lazy(np.ones((3, 4))))
    agg = c.expr.arg
    assert isinstance(c.expr, Subquery) and isinstance(agg, Aggregate)
    assert isinstance(agg.arg, MapJoin) and len(agg.idxs) == 1


def test_matmul_mixed_dtypes_and_errors() -> None:
    a = np.arange(6, dtype=np.int8).reshape(2, 3)
    b = np.ones((3, 2), dtype=np.float32)
    assert_same(L.matmul(lazy(a), lazy(b)), np.matmul(a, b))
    with pytest.raises(ValueError, match="contracted"):
        L.matmul(lazy(np.ones((2, 3))), lazy(np.ones((2, 3))))
    with pytest.raises(ValueError, match="at least one"):
        L.matmul(lazy(np.float64(1)), lazy(np.ones(3)))
    with pytest.raises(ValueError, match="batch"):
        L.matmul(lazy(np.ones((2, 2, 3))), lazy(np.ones((3, 3, 2))))
    m = np.array([[True, False], [False, False]])
    # bool operands are numbers 0/1, as in NumPy (bool @ bool is bool, bool @ int8 int8)
    assert_same(L.matmul(lazy(m), lazy(m)), np.matmul(m, m))
    assert_same(L.matmul(lazy(m), lazy(a[:, :2])), np.matmul(m, a[:, :2]))
    with pytest.raises(TypeError, match="lazysparse array"):
        L.matmul([[1.0, 1.0], [1.0, 1.0]], lazy(np.ones((2, 2))))


def test_tensordot() -> None:
    rng = np.random.default_rng(2)
    a, b = sample((2, 3, 4), "float64", rng), sample((3, 4, 5), "float64", rng)
    for fmt in FORMATS:
        x, y = lazy(a, fmt), lazy(b, fmt)
        assert_same(L.tensordot(x, y), np.tensordot(a, b))
        assert_same(L.tensordot(x, y, axes=0), np.tensordot(a, b, axes=0))
        assert_same(L.tensordot(x, lazy(b.transpose(1, 0, 2)), axes=1),
                    np.tensordot(a, b.transpose(1, 0, 2), axes=1))
        assert_same(L.tensordot(x, y, axes=([1, -1], [0, 1])),
                    np.tensordot(a, b, axes=([1, 2], [0, 1])))
        assert_same(L.tensordot(x, y, axes=([2, 1], [1, 0])),
                    np.tensordot(a, b, axes=([2, 1], [1, 0])))
    c = sample((3, 4), "complex64", rng)
    assert_same(L.tensordot(lazy(c), lazy(c), axes=([0, 1], [0, 1])),
                np.tensordot(c, c, axes=([0, 1], [0, 1])))
    with pytest.raises(ValueError, match="does not match"):
        L.tensordot(lazy(a), lazy(b), axes=([0], [0]))
    with pytest.raises(ValueError, match="non-negative"):
        L.tensordot(lazy(a), lazy(b), axes=-1)
    with pytest.raises(ValueError, match="length"):
        L.tensordot(lazy(a), lazy(b), axes=([1, 2], [0]))
    with pytest.raises(ValueError, match="repeated"):
        L.tensordot(lazy(a), lazy(b), axes=([1, 1], [0, 0]))


def test_vecdot() -> None:
    rng = np.random.default_rng(3)
    for dtype in ("float32", "complex128", "int16"):
        a, b = sample((2, 3, 4), dtype, rng), sample((3, 4), dtype, rng)
        for fmt in FORMATS:
            exp = np.sum(np.conj(a) * b, axis=-1, dtype=a.dtype)
            assert_same(L.vecdot(lazy(a, fmt), lazy(b, fmt)), exp)
            assert_same(L.vecdot(lazy(a, fmt), lazy(b), axis=-2),
                        np.sum(np.conj(a) * b, axis=-2, dtype=a.dtype))
    with pytest.raises(ValueError, match="size"):
        L.vecdot(lazy(np.ones((2, 3))), lazy(np.ones((2, 4))))
    with pytest.raises(IndexError):
        L.vecdot(lazy(np.ones((2, 3))), lazy(np.ones(3)), axis=-2)


def test_matrix_transpose_is_a_view() -> None:
    rng = np.random.default_rng(4)
    a = sample((2, 3, 4), "int32", rng)
    for fmt in FORMATS:
        t = L.matrix_transpose(lazy(a, fmt, 0))
        assert isinstance(t.expr.arg, Reorder) and isinstance(t.expr.arg.arg, Relabel)
        assert_same(t, np.swapaxes(a, -1, -2))
    with pytest.raises(ValueError, match="2 dimensions"):
        L.matrix_transpose(lazy(np.ones(3)))


def test_outer_trace_norms_power() -> None:
    rng = np.random.default_rng(5)
    v, w = sample((3,), "float64", rng), sample((4,), "float64", rng)
    assert_same(L.outer(lazy(v, "coo"), lazy(w)), np.outer(v, w))
    m = sample((2, 4, 4), "float64", rng)
    for fmt in FORMATS:
        x = lazy(m, fmt)
        for off in (-2, 0, 1, 5):
            assert_same(L.trace(x, offset=off), np.trace(m, offset=off, axis1=-2, axis2=-1))
        assert_same(L.trace(lazy(m.astype(np.int8), fmt)),
                    np.trace(m.astype(np.int8), axis1=-2, axis2=-1, dtype=np.int64))
        for ord_ in (2, 1, np.inf, -np.inf, 0, 3):
            assert_same(L.vector_norm(x, ord=ord_), np.linalg.norm(m.reshape(-1), ord=ord_))
            assert_same(L.vector_norm(x, axis=-1, ord=ord_),
                        np.linalg.norm(m, axis=-1, ord=ord_))
        for ord_ in ("fro", 1, -1, np.inf, -np.inf, 2, -2, "nuc"):
            assert_same(L.matrix_norm(x, ord=ord_), np.linalg.norm(m, axis=(-2, -1), ord=ord_))
            assert_same(L.matrix_norm(x, ord=ord_, keepdims=True),
                        np.linalg.norm(m, axis=(-2, -1), ord=ord_, keepdims=True))
        inv_ok = m + 4 * np.eye(4)
        for n in (0, 1, 2, 3, 5, -1, -2):
            assert_same(L.matrix_power(lazy(inv_ok, fmt), n),
                        np.linalg.matrix_power(inv_ok, n), rtol=1e-6)
    with pytest.raises(ValueError, match="ord"):
        L.matrix_norm(lazy(m), ord=3)
    with pytest.raises(ValueError, match="square"):
        L.matrix_power(lazy(np.ones((2, 3))), 2)


def _spd(rng: np.random.Generator, n: int, dtype: str) -> np.ndarray:
    a = sample((n, n), dtype, rng, density=1.0)
    return (a @ np.conj(a.T) + n * np.eye(n)).astype(dtype)


@pytest.mark.parametrize("dtype", ("float32", "float64", "complex128"))
def test_factorizations(dtype: str) -> None:
    rng = np.random.default_rng(6)
    m = sample((4, 4), dtype, rng, density=0.8) + np.eye(4, dtype=dtype) * 3
    spd = _spd(rng, 4, dtype)
    tol = 1e-3 if dtype == "float32" else 1e-8
    for fmt in FORMATS:
        x, p = lazy(m, fmt), lazy(spd, fmt)
        assert_same(D.det(x), np.linalg.det(m), rtol=tol)
        assert_same(D.inv(x), np.linalg.inv(m), rtol=tol)
        s = D.slogdet(x)
        es, el = np.linalg.slogdet(m)
        assert_same(s.sign, es, rtol=tol)
        assert_same(s.logabsdet, el, rtol=tol)
        b = sample((4,), dtype, rng, density=1.0)
        assert_same(D.solve(x, lazy(b)), np.linalg.solve(m, b[:, None])[:, 0], rtol=tol)
        assert_same(D.solve(x, lazy(np.eye(4, dtype=dtype))), np.linalg.inv(m), rtol=tol)
        assert_same(D.cholesky(p), np.linalg.cholesky(spd), rtol=tol)
        assert_same(D.cholesky(p, upper=True), np.conj(np.linalg.cholesky(spd).T), rtol=tol)
        q, r = D.qr(x)
        np.testing.assert_allclose(dense(q) @ dense(r), m, rtol=tol, atol=tol)
        u, sv, vh = D.svd(x, full_matrices=False)
        np.testing.assert_allclose((dense(u) * dense(sv)) @ dense(vh), m, rtol=tol, atol=tol)
        assert_same(D.svdvals(x), np.linalg.svd(m, compute_uv=False), rtol=tol)
        w, v = D.eigh(p)
        assert_same(w, np.linalg.eigvalsh(spd), rtol=tol)
        assert_same(D.eigvalsh(p), np.linalg.eigvalsh(spd), rtol=tol)
        assert_same(D.pinv(x), np.linalg.pinv(m), rtol=1e-2 if dtype == "float32" else 1e-6)
        assert_same(D.matrix_rank(x), np.int64(np.linalg.matrix_rank(m)))
        ev = dense(D.eigvals(x))
        np.testing.assert_allclose(np.sort_complex(ev), np.sort_complex(np.linalg.eigvals(m)),
                                   rtol=1e-3, atol=1e-3)
        assert D.eig(x).eigenvalues.dtype.kind == "c"


def test_dense_linalg_misc_and_errors() -> None:
    rng = np.random.default_rng(7)
    a, b = sample((2, 3), "float64", rng), sample((2, 3), "float64", rng)
    assert_same(D.cross(lazy(a, "csr"), lazy(b)), np.cross(a, b))
    m = sample((3, 5), "int16", rng)
    for fmt in FORMATS:
        for off in (-3, -1, 0, 2, 7):
            assert_same(D.diagonal(lazy(m, fmt), offset=off), np.diagonal(m, offset=off))
    assert_same(D.det(lazy(np.eye(3, dtype=np.int32))), np.float64(1.0))
    with pytest.raises(ValueError, match="singular|Singular"):
        D.inv(lazy(np.zeros((2, 2))))
    with pytest.raises(ValueError, match="square"):
        D.det(lazy(np.ones((2, 3))))
    with pytest.raises(ValueError, match="2 dimensions"):
        D.svd(lazy(np.ones(3)))
    with pytest.raises(ValueError, match="size 3"):
        D.cross(lazy(np.ones((2, 2))), lazy(np.ones((2, 2))))
    with pytest.raises(ValueError, match="mode"):
        D.qr(lazy(np.eye(2)), mode="r")
    with pytest.raises(TypeError, match="numeric"):
        D.det(lazy(np.ones((2, 2), bool)))


def test_extension_namespace() -> None:
    names = {"matmul", "tensordot", "vecdot", "matrix_transpose", "matrix_norm", "vector_norm",
             "trace", "diagonal", "outer", "cross", "det", "inv", "solve", "cholesky", "qr",
             "svd", "svdvals", "eigh", "eigvalsh", "slogdet", "pinv", "matrix_rank",
             "matrix_power", "eig", "eigvals"}
    assert names <= set(L.EXTENSION.__all__)
    assert all(callable(getattr(L.EXTENSION, n)) for n in names)


@settings(max_examples=examples(25), deadline=None)
@given(n=st.integers(0, 4), k=st.integers(0, 4), m=st.integers(0, 4),
       batch=st.lists(st.integers(1, 3), max_size=2), fmt=st.sampled_from(FORMATS),
       seed=st.integers(0, 2**16))
def test_hypothesis_matmul(n: int, k: int, m: int, batch: list[int], fmt: str,
                           seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = sample((*batch, n, k), "float64", rng, density=0.4)
    b = sample((k, m), "float64", rng, density=0.4)
    assert_same(L.matmul(lazy(a, fmt), lazy(b, fmt)), np.matmul(a, b))
