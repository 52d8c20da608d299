"""NumPy's dispatch protocols: ufuncs and NumPy functions on lazysparse arrays stay lazy,
give NumPy's values on the dense equivalent, keep sparse results sparse, and raise a
TypeError naming what has no lazysparse meaning."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

import lazysparse as xp
from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.api.protocols.numpy_functions import FUNCTIONS
from lazysparse.logic.operators import OPERATORS
from tests.conftest import rotation, slow_except

RNG = np.random.default_rng(5)
A = sps.random_array((7, 5), density=0.4, format="csr", rng=3)
D = A.toarray()


def lazy() -> LazyArray:
    return xp.asarray(A)


def dense(x: object) -> np.ndarray:
    return xp.to_numpy(x) if isinstance(x, LazyArray) else np.asarray(x)


UNARY = [u for u in (np.exp, np.sin, np.sqrt, np.abs, np.negative, np.floor, np.isnan,
                     np.expm1, np.log1p, np.square, np.sign, np.conjugate)]


@pytest.mark.parametrize("ufunc", slow_except(UNARY, [np.exp, np.sqrt, np.isnan, np.conjugate]),
                         ids=lambda u: u.__name__)
def test_unary_ufuncs_are_lazy_and_match_numpy(ufunc: np.ufunc) -> None:
    out = ufunc(lazy())
    assert isinstance(out, LazyArray) and out._result is None  # noqa: SLF001 - lazy
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(dense(out), ufunc(D))


def test_every_registry_ufunc_maps_to_the_namespace() -> None:
    a = xp.asarray(np.linspace(0.1, 0.9, 6))
    d = np.linspace(0.1, 0.9, 6)
    checked = 0
    for name, op in OPERATORS.items():
        if not isinstance(op.numpy, np.ufunc) or not hasattr(xp, name):
            continue
        uf = op.numpy
        args = (a,) * uf.nin
        try:
            with np.errstate(all="ignore"):
                ref = uf(*((d,) * uf.nin))
        except TypeError:  # e.g. bitwise ufuncs on floats: NumPy rejects them too
            with pytest.raises(TypeError):
                uf(*args)
            continue
        with np.errstate(all="ignore"):
            got = dense(uf(*args))
        np.testing.assert_allclose(got, ref, equal_nan=True, err_msg=name)
        checked += 1
    assert checked >= 40


def test_binary_ufuncs_with_numpy_on_either_side() -> None:
    for out, ref in ((D + lazy(), 2 * D), (lazy() * D, D * D), (np.float64(2) * lazy(), 2 * D),
                     (np.maximum(D, lazy()), D), (np.arctan2(lazy(), 1.0), np.arctan2(D, 1.0)),
                     (np.matmul(lazy(), D.T), D @ D.T), (D.T @ lazy(), D.T @ D)):
        assert isinstance(out, LazyArray)
        np.testing.assert_allclose(dense(out), ref)


def test_ufunc_keeps_sparse_results_sparse() -> None:
    S = sps.random_array((300, 200), density=0.01, format="csr", rng=4)
    out = xp.compute(np.multiply(xp.asarray(S), 3.0))
    assert out.format == "csr" and out.nnz == S.nnz
    assert xp.compute(np.sin(xp.asarray(S))).nnz == S.nnz


# the fast tier: axis 1 or None in turn; ((0, 1),) is the one-argument case axis=(0, 1)
# (rotation reads a tuple as its arguments)
@pytest.mark.parametrize(("ufunc", "name", "axis"), rotation(
    [(np.add, "sum"), (np.multiply, "prod"), (np.maximum, "max"), (np.minimum, "min")],
    [1, None], ["add", "multiply", "maximum", "minimum"], slow_choices=[0, ((0, 1),)]))
@pytest.mark.parametrize("keepdims", slow_except([False, True], [False]))
def test_ufunc_reduce(ufunc: np.ufunc, name: str, axis: object, keepdims: bool) -> None:
    out = ufunc.reduce(lazy(), axis=axis, keepdims=keepdims)
    np.testing.assert_allclose(dense(out), ufunc.reduce(D, axis=axis, keepdims=keepdims))


def test_ufunc_accumulate_and_logical_reduce() -> None:
    np.testing.assert_allclose(dense(np.add.accumulate(lazy(), axis=1)),
                               np.add.accumulate(D, axis=1))
    b = lazy() > 0.5
    np.testing.assert_array_equal(dense(np.logical_or.reduce(b, axis=0)),
                                  np.logical_or.reduce(D > 0.5, axis=0))


@pytest.mark.parametrize(("fn", "kw"), [
    (np.sum, {}), (np.sum, {"axis": 0}), (np.sum, {"axis": 1, "keepdims": True}),
    (np.sum, {"axis": (0, 1), "dtype": np.float32}), (np.prod, {"axis": 1}),
    (np.mean, {"axis": 0}), (np.mean, {"axis": 1, "dtype": np.float32}),
    (np.max, {"axis": 1}), (np.amin, {"axis": 0, "keepdims": True}),
    (np.any, {"axis": 0}), (np.all, {"axis": 1}), (np.std, {"axis": 0, "ddof": 1}),
    (np.var, {}), (np.argmax, {"axis": 1}), (np.argmin, {}), (np.cumsum, {"axis": 0}),
    (np.cumsum, {}), (np.count_nonzero, {"axis": 1}),
])
def test_reductions(fn: object, kw: dict) -> None:
    out = fn(lazy(), **kw)
    ref = fn(D, **kw)
    np.testing.assert_allclose(dense(out), ref, rtol=1e-6)
    assert dense(out).shape == np.shape(ref)


def test_manipulation_functions() -> None:
    a = lazy()
    cases = [
        (np.transpose(a), D.T), (np.transpose(a, (1, 0)), D.T),
        (np.concatenate([a, D]), np.concatenate([D, D])),
        (np.concatenate([a, a], axis=1), np.concatenate([D, D], axis=1)),
        (np.stack([a, a], axis=2), np.stack([D, D], axis=2)),
        (np.vstack([a, a]), np.vstack([D, D])), (np.hstack([a, a]), np.hstack([D, D])),
        (np.where(a > 0.5, a, -1.0), np.where(D > 0.5, D, -1.0)),
        (np.reshape(a, (5, 7)), D.reshape(5, 7)), (np.ravel(a), D.ravel()),
        (np.expand_dims(a, 0), D[None]), (np.squeeze(np.expand_dims(a, 2)), D),
        (np.moveaxis(a, 0, 1), D.T), (np.flip(a, axis=0), D[::-1]),
        (np.broadcast_to(a[0], (3, 5)), np.broadcast_to(D[0], (3, 5))),
        (np.take(a, [4, 0, 2], axis=0), D[[4, 0, 2]]), (np.take(a, [3, 1]), D.ravel()[[3, 1]]),
        (np.clip(a, 0.2, 0.6), np.clip(D, 0.2, 0.6)), (np.round(a, 1), np.round(D, 1)),
        (np.tril(a), np.tril(D)), (np.triu(a, 1), np.triu(D, 1)),
        (np.zeros_like(a), np.zeros_like(D)), (np.ones_like(a, shape=(2, 3)), np.ones((2, 3))),
        (np.full_like(a, 7.0), np.full_like(D, 7.0)), (np.copy(a), D),
        (np.tensordot(a, D, axes=([0], [0])), np.tensordot(D, D, axes=([0], [0]))),
        (np.dot(a, D.T), D @ D.T), (np.dot(a, 2.0), 2 * D), (np.outer(a[0], a[1]),
                                                           np.outer(D[0], D[1])),
        (np.einsum("ij,kj->ik", a, D), D @ D.T),
    ]
    for out, ref in cases:
        assert isinstance(out, LazyArray)
        np.testing.assert_allclose(dense(out), ref)
    assert np.shape(a) == (7, 5) and np.ndim(a) == 2 and np.size(a) == 35


def test_value_functions() -> None:
    a = lazy()
    assert np.allclose(a, D) and not np.allclose(a, D + 1)
    assert np.array_equal(a, D) and not np.array_equal(a, D[:3])
    np.testing.assert_array_equal(dense(np.isclose(a, D + 1e-12)), np.ones(D.shape, bool))
    nan = xp.asarray(np.array([np.nan, 1.0]))
    assert np.allclose(nan, np.array([np.nan, 1.0]), equal_nan=True)
    assert not np.allclose(nan, np.array([np.nan, 1.0]))
    nz = np.nonzero(a)
    for got, ref in zip(nz, np.nonzero(D), strict=True):
        np.testing.assert_array_equal(dense(got), ref)


def test_unmapped_functions_run_in_numpy_and_keywords_are_refused() -> None:
    a = lazy()
    np.testing.assert_allclose(np.median(a), np.median(D))
    np.testing.assert_allclose(np.percentile(a, 50, axis=0), np.percentile(D, 50, axis=0))
    np.testing.assert_allclose(np.linalg.svd(a, compute_uv=False),
                               np.linalg.svd(D, compute_uv=False))
    target = np.empty(D.shape)
    assert np.sin(a, out=target) is target  # a NumPy target is written (test_numpy_out.py)
    np.testing.assert_allclose(target, np.sin(D))
    with pytest.raises(TypeError, match="out="):
        np.sum(a, out=np.empty(()))
    with pytest.raises(TypeError, match="where="):
        np.add(a, 1, where=D > 0)
    with pytest.raises(TypeError, match=r"numpy\.add\.at"):
        np.add.at(a, [0], 1.0)
    with pytest.raises(TypeError, match=r"numpy\.add\.reduceat"):
        np.add.reduceat(a[0], [0, 2])
    with pytest.raises(TypeError, match="order='F'"):
        np.reshape(a, (5, 7), order="F")


def test_other_array_types_are_deferred_to() -> None:
    class Other:
        def __array_function__(self, func, types, args, kwargs):  # noqa: ANN001
            return "other"

        def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):  # noqa: ANN001
            return "other"

    assert np.concatenate([lazy(), Other()]) == "other"
    assert np.add(lazy(), Other()) == "other"


def test_the_table_covers_what_dask_calls() -> None:
    for fn in (np.sum, np.max, np.min, np.mean, np.prod, np.any, np.all, np.concatenate,
               np.tensordot, np.transpose, np.where, np.empty_like, np.full_like):
        assert fn in FUNCTIONS


def test_densify_limit_applies() -> None:
    from lazysparse.formats import DensifyError, set_densify_limit

    big = xp.asarray(sps.random_array((100_000, 100_000), density=1e-7, format="csr", rng=1))
    with set_densify_limit(1 << 20), pytest.raises(DensifyError):
        np.asarray(np.exp(big))  # exp of a 0-filled array is 1-filled: dense to observe
    assert xp.compute(np.multiply(big, 2.0)).nnz == big.nnz  # stays sparse
