"""api.statistical against NumPy on the dense equivalent (formats, dtypes, fill values)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lazysparse.api.chapters import statistical as S
from lazysparse.logic.nodes import Aggregate, MapJoin, Relabel, Subquery
from tests.api.compute_helpers import (
    ALL_NUMERIC,
    FORMATS,
    REAL_DTYPES,
    assert_same,
    fills_for,
    lazy,
    reference_executor,  # noqa: F401 - autouse fixture
    sample,
)
from tests.conftest import examples

AXES = (None, 0, 1, -1, (0, 1), ())


def _acc(d: np.dtype) -> np.dtype:
    if d.kind in "bi":
        return np.dtype("int64")
    if d.kind == "u":
        return np.dtype("uint64")
    return d


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", ("bool", *ALL_NUMERIC))
def test_sum_prod_across_dtypes_formats_fills(fmt: str, dtype: str) -> None:
    rng = np.random.default_rng(0)
    d = np.dtype(dtype)
    for fill in fills_for(d):
        a = sample((3, 4), d, rng, fill=fill)
        x = lazy(a, fmt, fill)
        for axis in AXES:
            assert_same(S.sum(x, axis=axis), np.sum(a, axis=axis, dtype=_acc(d)))
            assert_same(S.prod(x, axis=axis), np.prod(a, axis=axis, dtype=_acc(d)))
        assert_same(S.sum(x, axis=1, keepdims=True),
                    np.sum(a, axis=1, keepdims=True, dtype=_acc(d)))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", REAL_DTYPES)
def test_max_min(fmt: str, dtype: str) -> None:
    rng = np.random.default_rng(1)
    for fill in fills_for(dtype):
        a = sample((4, 3), dtype, rng, fill=fill)
        x = lazy(a, fmt, fill)
        for axis in AXES:
            assert_same(S.max(x, axis=axis), np.max(a, axis=axis))
            assert_same(S.min(x, axis=axis), np.min(a, axis=axis))
        assert_same(S.max(x, axis=0, keepdims=True), np.max(a, axis=0, keepdims=True))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", ("float32", "float64", "complex64", "complex128", "int16"))
def test_mean(fmt: str, dtype: str) -> None:
    rng = np.random.default_rng(2)
    for fill in fills_for(dtype):
        a = sample((3, 5), dtype, rng, fill=fill)
        x = lazy(a, fmt, fill)
        for axis in (None, 0, 1, (0, 1)):
            exp = np.mean(a, axis=axis)
            if np.dtype(dtype).kind in "iu":
                exp = np.asarray(exp, dtype=np.float64)
            assert_same(S.mean(x, axis=axis), exp)
        assert_same(S.mean(x, axis=1, keepdims=True), np.mean(a, axis=1, keepdims=True))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", ("float32", "float64"))
def test_var_std(fmt: str, dtype: str) -> None:
    rng = np.random.default_rng(3)
    for fill in fills_for(dtype):
        a = sample((4, 5), dtype, rng, fill=fill)
        x = lazy(a, fmt, fill)
        for axis in (None, 0, 1):
            for corr in (0, 1, 0.5):
                assert_same(S.var(x, axis=axis, correction=corr),
                            np.var(a, axis=axis, ddof=corr), rtol=1e-3)
                assert_same(S.std(x, axis=axis, correction=corr),
                            np.std(a, axis=axis, ddof=corr), rtol=1e-3)
        assert_same(S.var(x, axis=0, keepdims=True), np.var(a, axis=0, keepdims=True), rtol=1e-3)


def test_empty_and_zero_d() -> None:
    e = np.zeros((0, 3), dtype=np.float64)
    x = lazy(e, "csr")
    assert_same(S.sum(x, axis=0), np.zeros(3))
    assert_same(S.sum(x), np.float64(0))
    assert_same(S.prod(x, axis=0), np.ones(3))
    with np.errstate(all="ignore"):
        assert_same(S.mean(x, axis=0), np.full(3, np.nan))
    assert_same(S.max(x, axis=1), np.zeros((0,)))
    with pytest.raises(ValueError, match="zero-size"):
        S.max(x, axis=0)
    z = lazy(np.float32(2.5))
    assert_same(S.sum(z), np.float32(2.5))
    assert_same(S.max(z), np.float32(2.5))
    assert_same(S.mean(z), np.float32(2.5))
    assert_same(S.sum(lazy(np.int8(3))), np.int64(3))


def test_dtype_argument_and_overflow_promotion() -> None:
    a = np.full((10,), 100, dtype=np.int8)
    x = lazy(a, "coo")
    assert_same(S.sum(x), np.int64(1000))
    assert_same(S.sum(x, dtype="int8"), np.sum(a, dtype=np.int8))
    assert_same(S.sum(x, dtype=np.float32), np.float32(1000))
    u = lazy(np.array([1, 2, 3], dtype=np.uint16))
    assert S.sum(u).dtype == np.uint64
    assert S.prod(lazy(np.array([True, False]))).dtype == np.int64


def test_cumulative() -> None:
    rng = np.random.default_rng(4)
    for fmt in FORMATS:
        for dtype in ("int8", "uint8", "float32", "complex128"):
            a = sample((3, 4), dtype, rng)
            x = lazy(a, fmt)
            acc = _acc(np.dtype(dtype))
            for axis in (0, 1, -1):
                for inc in (False, True):
                    assert_same(S.cumulative_sum(x, axis=axis, include_initial=inc),
                                np.cumulative_sum(a, axis=axis, dtype=acc, include_initial=inc))
                    assert_same(S.cumulative_prod(x, axis=axis, include_initial=inc),
                                np.cumulative_prod(a, axis=axis, dtype=acc,
                                                   include_initial=inc))
    v = np.array([1.0, np.nan, 2.0])
    assert_same(S.cumulative_sum(lazy(v, "coo", np.nan)), np.cumulative_sum(v))
    assert_same(S.cumulative_sum(lazy(np.zeros(0))), np.zeros(0))
    assert_same(S.cumulative_sum(lazy(np.zeros(0)), include_initial=True), np.zeros(1))
    with pytest.raises(ValueError, match="axis is required"):
        S.cumulative_sum(lazy(np.ones((2, 2))))
    with pytest.raises(ValueError, match="0-d"):
        S.cumulative_prod(lazy(np.float64(1)))


def test_bad_inputs() -> None:
    x = lazy(np.ones((2, 3)))
    with pytest.raises(TypeError, match="lazysparse array"):
        S.sum([1.0, 1.0, 1.0])
    with pytest.raises(IndexError, match="out of bounds"):
        S.sum(x, axis=2)
    with pytest.raises(ValueError, match="out of bounds"):
        S.max(x, axis=-3)
    with pytest.raises(ValueError, match="repeated axis"):
        S.sum(x, axis=(0, 0))
    with pytest.raises(TypeError, match="axis must be an int"):
        S.sum(x, axis=1.0)
    with pytest.raises(TypeError, match="complex|real numeric"):
        S.max(lazy(np.ones(3, dtype=np.complex64)))
    with pytest.raises(TypeError):
        S.var(lazy(np.ones(3, dtype=np.complex64)))
    with pytest.raises(TypeError, match="bool"):
        S.mean(lazy(np.ones(3, dtype=bool)))
    with pytest.raises(TypeError, match="data type"):
        S.sum(x, dtype="float16")


def test_golden_sum_of_product_is_one_aggregate_over_one_mapjoin() -> None:
    import lazysparse as xp

    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    A, B = lazy(a, "csr"), lazy(b)
    out = xp.sum(A[:, :, None] * B[None, :, :], axis=1)
    agg = out.expr.arg
    assert isinstance(out.expr, Subquery) and isinstance(agg, Aggregate)
    inner = agg.arg  # the product, seen through its relabel: no Query in between
    assert isinstance(inner, Relabel) and isinstance(inner.arg, Subquery)
    assert isinstance(inner.arg.arg, MapJoin)
    assert len(agg.idxs) == 1
    assert_same(out, a @ b)


@settings(max_examples=examples(25), deadline=None)
@given(shape=st.lists(st.integers(0, 4), min_size=1, max_size=3),
       dtype=st.sampled_from(("int32", "uint8", "float64")),
       fmt=st.sampled_from(FORMATS), seed=st.integers(0, 2**16),
       keepdims=st.booleans(), data=st.data())
def test_hypothesis_reductions(shape: list[int], dtype: str, fmt: str, seed: int,
                               keepdims: bool, data: st.DataObject) -> None:
    rng = np.random.default_rng(seed)
    a = sample(tuple(shape), dtype, rng, density=0.4)
    x = lazy(a, fmt)
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    d = np.dtype(dtype)
    assert_same(S.sum(x, axis=axis, keepdims=keepdims),
                np.sum(a, axis=axis, keepdims=keepdims, dtype=_acc(d)))
    axes = range(len(shape)) if axis is None else [axis]
    if all(shape[k] > 0 for k in axes):
        assert_same(S.max(x, axis=axis, keepdims=keepdims),
                    np.max(a, axis=axis, keepdims=keepdims))
