"""api.sets against NumPy: unique_* on stored entries plus the fill group, NaNs distinct."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.api.chapters import sets as U
from lazysparse.formats import Tensor, set_densify_limit
from tests.api.compute_helpers import (
    ALL_DTYPES,
    FORMATS,
    assert_same,
    dense,
    fills_for,
    lazy,
    reference_executor,  # noqa: F401 - autouse fixture
    sample,
)
from tests.conftest import examples


def _expected(a: np.ndarray) -> tuple[np.ndarray, ...]:
    """NumPy unique with NaNs distinct (the standard), values sorted, NaNs last."""
    flat = a.reshape(-1)
    nan = np.isnan(flat) if flat.dtype.kind in "fc" else np.zeros(flat.shape, bool)
    u, idx, inv, cnt = np.unique(flat[~nan], return_index=True, return_inverse=True,
                                 return_counts=True)
    keep = np.nonzero(~nan)[0]
    idx = keep[idx]
    full_inv = np.empty(flat.size, dtype=np.int64)
    full_inv[keep] = inv
    nan_pos = np.nonzero(nan)[0]
    full_inv[nan_pos] = u.size + np.arange(nan_pos.size)
    u = np.concatenate([u, flat[nan_pos]]).astype(a.dtype)
    idx = np.concatenate([idx, nan_pos]).astype(np.int64)
    cnt = np.concatenate([cnt, np.ones(nan_pos.size, np.int64)]).astype(np.int64)
    return u, idx, full_inv.reshape(a.shape), cnt


def _check(a: np.ndarray, x: LazyArray) -> None:
    u, idx, inv, cnt = _expected(a)
    r = U.unique_all(x)
    assert r._fields == ("values", "indices", "inverse_indices", "counts")
    assert_same(r.values, u)
    assert_same(r.indices, idx)
    assert_same(r.inverse_indices, inv)
    assert_same(r.counts, cnt)
    assert_same(U.unique_values(x), u)
    c = U.unique_counts(x)
    assert_same(c.values, u)
    assert_same(c.counts, cnt)
    i = U.unique_inverse(x)
    assert_same(i.values, u)
    assert_same(i.inverse_indices, inv)
    np.testing.assert_array_equal(dense(r.values)[dense(r.inverse_indices)], a)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_unique_across_dtypes_formats_fills(fmt: str, dtype: str) -> None:
    rng = np.random.default_rng(0)
    for fill in fills_for(dtype):
        for shape in ((3, 4), (7,), (0, 2)):
            a = sample(shape, dtype, rng, density=0.5, fill=fill)
            if np.dtype(dtype).kind == "f" and a.size:
                a.reshape(-1)[[0, -1]] = np.nan
            _check(a, lazy(a, fmt, fill))


def test_zero_d() -> None:
    _check(np.asarray(np.float32(2.0)), lazy(np.float32(2.0)))


def test_unique_sparse_fill_group_not_densified() -> None:
    n = 1 << 24
    t = Tensor.from_coords((np.array([0, 2, 9]),), np.array([4, 0, 4], dtype=np.int32), (n,),
                           format="coo", fill_value=np.int32(7))
    x = LazyArray.from_tensor(t)
    with set_densify_limit(4096):
        r = U.unique_all(x)
        assert r.inverse_indices.tensor().nnz == 3
        assert_same(r.values, np.array([0, 4, 7], dtype=np.int32))
        assert_same(r.counts, np.array([1, 2, n - 3]))
        assert_same(r.indices, np.array([2, 0, 1]))


def test_isin() -> None:
    rng = np.random.default_rng(1)
    for fmt in FORMATS:
        for fill in (0, 1):
            a = sample((3, 4), "int16", rng, fill=fill)
            b = np.array([0, 3, -2], dtype=np.int16)
            for inv in (False, True):
                assert_same(U.isin(lazy(a, fmt, fill), lazy(b, "coo"), invert=inv),
                            np.isin(a, b, invert=inv))
    f = np.array([1.0, np.nan, 2.0])
    assert_same(U.isin(lazy(f), lazy(np.array([np.nan, 2.0]))), np.array([False, False, True]))
    assert_same(U.isin(lazy(f), 2), np.array([False, False, True]))
    with pytest.raises(TypeError):
        U.isin(lazy(f), [1.0])


def test_bad_input() -> None:
    with pytest.raises(TypeError, match="lazysparse array"):
        U.unique_values([1.0, 1.0, 1.0])


@settings(max_examples=examples(30), deadline=None)
@given(shape=st.lists(st.integers(0, 5), min_size=0, max_size=3),
       dtype=st.sampled_from(("int8", "uint32", "float64", "complex64")),
       fmt=st.sampled_from(FORMATS), fill=st.sampled_from((0, 1)),
       seed=st.integers(0, 2**16))
def test_hypothesis_unique(shape: list[int], dtype: str, fmt: str, fill: int,
                           seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = sample(tuple(shape), dtype, rng, density=0.4, fill=fill)
    _check(a, lazy(a, fmt, fill))
