"""api.utility against NumPy: all/any (lazy aggregates), diff (dense and stored-entry)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.api.chapters import utility as T
from lazysparse.formats import Tensor, set_densify_limit
from lazysparse.logic.nodes import Aggregate
from tests.api.compute_helpers import (
    ALL_DTYPES,
    ALL_NUMERIC,
    FORMATS,
    assert_same,
    fills_for,
    lazy,
    reference_executor,  # noqa: F401 - autouse fixture
    sample,
)
from tests.conftest import examples


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_all_any(fmt: str, dtype: str) -> None:
    rng = np.random.default_rng(0)
    for fill in fills_for(dtype):
        a = sample((3, 4), dtype, rng, density=0.7, fill=fill)
        x = lazy(a, fmt, fill)
        for axis in (None, 0, 1, -1, (0, 1), ()):
            assert_same(T.all(x, axis=axis), np.all(a, axis=axis))
            assert_same(T.any(x, axis=axis), np.any(a, axis=axis))
        assert_same(T.any(x, axis=1, keepdims=True), np.any(a, axis=1, keepdims=True))
    assert isinstance(T.all(lazy(np.ones(3))).expr.arg, Aggregate)


def test_all_any_empty_zero_d() -> None:
    e = lazy(np.zeros((0, 2)), "csr")
    assert_same(T.all(e), np.bool_(True))
    assert_same(T.any(e), np.bool_(False))
    assert_same(T.all(e, axis=0), np.ones(2, bool))
    assert_same(T.any(lazy(np.float64(np.nan))), np.bool_(True))
    with pytest.raises(IndexError):
        T.all(e, axis=2)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", ALL_NUMERIC)
def test_diff(fmt: str, dtype: str) -> None:
    rng = np.random.default_rng(1)
    for fill in fills_for(dtype):
        a = sample((4, 5), dtype, rng, density=0.4, fill=fill)
        x = lazy(a, fmt, fill)
        for axis in (0, 1, -1):
            for n in (0, 1, 2, 6):
                with np.errstate(all="ignore"):
                    exp = np.diff(a, n=n, axis=axis)
                assert_same(T.diff(x, axis=axis, n=n), exp)
        pre = sample((4, 1), dtype, rng)
        assert_same(T.diff(x, axis=1, prepend=lazy(pre), append=lazy(pre)),
                    np.diff(a, axis=1, prepend=pre, append=pre))
        assert_same(T.diff(x, axis=0, prepend=1), np.diff(a, axis=0, prepend=a.dtype.type(1)))


def test_diff_sparse_never_densifies() -> None:
    n = 1 << 22
    t = Tensor.from_coords((np.array([3, 4, n - 1]),), np.array([1.0, 5.0, 2.0]), (n,),
                           format="coo")
    with set_densify_limit(4096):
        d = T.diff(LazyArray.from_tensor(t))
        dt = d.tensor()
        assert dt.shape == (n - 1,) and dt.nnz <= 6
        coords, vals = np.asarray(dt.levels[0].idx), np.asarray(dt.values)
    got = dict(zip(coords.tolist(), vals.tolist(), strict=True))
    assert got[2] == 1.0 and got[3] == 4.0 and got[4] == -5.0 and got[n - 2] == 2.0


def test_diff_errors() -> None:
    with pytest.raises(ValueError, match="0-d"):
        T.diff(lazy(np.float64(1)))
    with pytest.raises(ValueError, match="non-negative"):
        T.diff(lazy(np.ones(3)), n=-1)
    with pytest.raises(TypeError, match="bool"):
        T.diff(lazy(np.ones(3, bool)))
    with pytest.raises(TypeError, match="n must be an int"):
        T.diff(lazy(np.ones(3)), n=1.5)
    with pytest.raises(ValueError, match="dimensions"):
        T.diff(lazy(np.ones((2, 2))), prepend=lazy(np.ones(2)))


@settings(max_examples=examples(30), deadline=None)
@given(shape=st.lists(st.integers(0, 5), min_size=1, max_size=3),
       fmt=st.sampled_from(FORMATS), fill=st.sampled_from((0.0, 1.0, np.nan)),
       seed=st.integers(0, 2**16), n=st.integers(0, 3), data=st.data())
def test_hypothesis_diff(shape: list[int], fmt: str, fill: float, seed: int, n: int,
                         data: st.DataObject) -> None:
    rng = np.random.default_rng(seed)
    a = sample(tuple(shape), "float64", rng, density=0.3, fill=fill)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    with np.errstate(all="ignore"):
        assert_same(T.diff(lazy(a, fmt, fill), axis=axis, n=n), np.diff(a, axis=axis, n=n))
