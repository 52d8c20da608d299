"""api.sorting against NumPy: stable sort/argsort, descending, sparse inputs stay sparse."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lazysparse.api.array.lazy_array import LazyArray
from lazysparse.api.chapters import sorting as O
from lazysparse.formats import Tensor, set_densify_limit
from tests.api.compute_helpers import (
    FORMATS,
    REAL_DTYPES,
    assert_same,
    dense,
    fills_for,
    lazy,
    reference_executor,  # noqa: F401 - autouse fixture
    sample,
)
from tests.conftest import examples


def _np_sort(a: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    if not descending:
        return np.sort(a, axis=axis, kind="stable")
    return np.flip(np.sort(np.flip(a, axis=axis), axis=axis, kind="stable"), axis=axis)


def _np_argsort(a: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    if not descending:
        return np.argsort(a, axis=axis, kind="stable")
    n = a.shape[axis]
    return n - 1 - np.flip(np.argsort(np.flip(a, axis=axis), axis=axis, kind="stable"),
                           axis=axis)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", ("bool", *REAL_DTYPES))
def test_sort_argsort(fmt: str, dtype: str) -> None:
    rng = np.random.default_rng(0)
    for fill in fills_for(dtype):
        a = sample((4, 6), dtype, rng, fill=fill)
        if np.dtype(dtype).kind == "f":
            a[0, 1] = np.nan
        x = lazy(a, fmt, fill)
        for axis in (0, 1, -1):
            for desc in (False, True):
                assert_same(O.sort(x, axis=axis, descending=desc), _np_sort(a, axis, desc))
                assert_same(O.argsort(x, axis=axis, descending=desc),
                            _np_argsort(a, axis, desc).astype(np.int64))


def test_descending_is_stable() -> None:
    a = np.array([1, 3, 1, 3, 2], dtype=np.int16)
    assert_same(O.argsort(lazy(a, "coo"), descending=True), np.array([1, 3, 4, 0, 2]))
    assert_same(O.argsort(lazy(a)), np.array([0, 2, 4, 1, 3]))


def test_sort_sparse_stays_sparse_and_never_densifies() -> None:
    n = 1 << 22
    t = Tensor.from_coords((np.array([3, 10, n - 1]),), np.array([-2.0, 5.0, 1.0]), (n,),
                           format="coo")
    with set_densify_limit(4096):
        s = O.sort(LazyArray.from_tensor(t), descending=True)
        st_ = s.tensor()
        assert st_.nnz == 3
    vals = dense(s)
    assert vals[0] == 5.0 and vals[1] == 1.0 and vals[-1] == -2.0 and vals[2:-1].sum() == 0


def test_zero_d_empty_and_errors() -> None:
    assert_same(O.sort(lazy(np.float64(3.0))), np.float64(3.0))
    assert_same(O.argsort(lazy(np.int8(3))), np.int64(0))
    assert_same(O.sort(lazy(np.zeros((0, 3)), "csr"), axis=0), np.zeros((0, 3)))
    assert_same(O.argsort(lazy(np.zeros((2, 0)))), np.zeros((2, 0), dtype=np.int64))
    with pytest.raises(TypeError):
        O.sort(lazy(np.ones(3, dtype=np.complex64)))
    with pytest.raises(IndexError):
        O.sort(lazy(np.ones(3)), axis=1)
    with pytest.raises(TypeError, match="lazysparse array"):
        O.argsort([3, 1])


@settings(max_examples=examples(30), deadline=None)
@given(shape=st.lists(st.integers(0, 5), min_size=1, max_size=3),
       dtype=st.sampled_from(("int8", "uint16", "float64")),
       fmt=st.sampled_from(FORMATS), fill=st.sampled_from((0, 1)),
       seed=st.integers(0, 2**16), desc=st.booleans(), data=st.data())
def test_hypothesis_sort(shape: list[int], dtype: str, fmt: str, fill: int, seed: int,
                         desc: bool, data: st.DataObject) -> None:
    rng = np.random.default_rng(seed)
    a = sample(tuple(shape), dtype, rng, density=0.4, fill=fill)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = lazy(a, fmt, fill)
    assert_same(O.sort(x, axis=axis, descending=desc), _np_sort(a, axis, desc))
    assert_same(O.argsort(x, axis=axis, descending=desc),
                _np_argsort(a, axis, desc).astype(np.int64))


def test_argsort_sparse_uses_stored_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    """argsort of a sparse input never densifies it: stored entries equal to the fill join
    the fill block in index order; NaN fills and descending order as NumPy."""
    a = np.array([[0.0, 2.0, 0.0, -1.0, 0.0, 2.0], [np.nan, 1.0, np.nan, np.nan, -3.0, 1.0]])
    explicit = Tensor.from_coords((np.array([0, 0, 0, 0]), np.array([1, 2, 3, 5])),
                                  np.array([2.0, 0.0, -1.0, 2.0]), (1, 6), format="coo")
    cases = [(lazy(a[:1], "coo", 0.0), a[:1]), (lazy(a[1:], "csr", np.nan), a[1:]),
             (LazyArray.from_tensor(explicit), a[:1])]
    for x, dense_a in cases:
        x.tensor()  # computed first: the check below is about argsort itself
        monkeypatch.setattr(Tensor, "to_numpy", lambda self: pytest.fail("densified"))
        for desc in (False, True):
            for axis in (0, 1):
                got = O.argsort(x, axis=axis, descending=desc)
                np.testing.assert_array_equal(got.tensor().values.reshape(dense_a.shape),
                                              _np_argsort(dense_a, axis, desc))
        monkeypatch.undo()
