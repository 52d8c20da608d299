"""api.searching against NumPy: argmax/argmin (from stored entries), where,
count_nonzero, nonzero (stored entries only), searchsorted."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import lazysparse as xp
from lazysparse.api.chapters import searching as Q
from lazysparse.formats import set_densify_limit
from tests.api.compute_helpers import (
    ALL_DTYPES,
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


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", REAL_DTYPES)
def test_argmax_argmin(fmt: str, dtype: str) -> None:
    rng = np.random.default_rng(0)
    for fill in fills_for(dtype):
        a = sample((4, 5), dtype, rng, fill=fill)
        if np.dtype(dtype).kind == "f":
            a[1, 2] = np.nan
        x = lazy(a, fmt, fill)
        for axis in (None, 0, 1, -1):
            assert_same(Q.argmax(x, axis=axis), np.argmax(a, axis=axis))
            assert_same(Q.argmin(x, axis=axis), np.argmin(a, axis=axis))
        assert_same(Q.argmin(x, axis=1, keepdims=True), np.argmin(a, axis=1, keepdims=True))
        assert_same(Q.argmax(x, keepdims=True), np.argmax(a, keepdims=True))


def test_argmin_ties_first() -> None:
    a = np.array([[3, 1, 1, 0, 0], [2, 2, 2, 2, 2]], dtype=np.int32)
    x = lazy(a, "csr")
    assert_same(Q.argmin(x, axis=1), np.array([3, 0]))
    assert_same(Q.argmax(lazy(np.array([0.0, 5.0, 5.0]), "coo")), np.int64(1))
    assert_same(Q.argmin(lazy(np.float64(2.0))), np.int64(0))


@settings(max_examples=examples(60), deadline=None)
@given(st.sampled_from(("csr", "csc", "coo", "csf", "dense")),
       st.sampled_from(("float64", "int8", "uint8", "float32", "int64")),
       st.sampled_from((0, 1, -1, "nan")), st.integers(0, 2**32 - 1),
       st.sampled_from(((3, 4), (1, 6), (5,), (2, 3, 4))))
def test_arg_extremum_stored_entries(fmt: str, dtype: str, fill: object, seed: int,
                                     shape: tuple[int, ...]) -> None:
    """First max/min over stored entries and the fill at the first unstored position,
    against NumPy (ties, NaN first, fully stored and fully empty groups)."""
    rng = np.random.default_rng(seed)
    d = np.dtype(dtype)
    if fill == "nan" and d.kind != "f":
        fill = 0
    if d.kind == "u" and fill == -1:
        fill = 1
    fv = d.type(np.nan if fill == "nan" else fill)
    a = rng.integers(-2, 3, size=shape).astype(d)
    a[rng.random(shape) < 0.4] = fv
    if d.kind == "f" and rng.random() < 0.5:
        a[rng.random(shape) < 0.2] = np.nan
    fmt = fmt if len(shape) == 2 or fmt in ("dense", "csf") else "coo"
    x = xp.asarray(a) if fmt == "dense" else xp.asarray(a, format=fmt, fill_value=fv)
    for axis in (None, *range(len(shape))):
        for keep in (False, True):
            want_max = np.argmax(a, axis=axis, keepdims=keep)
            want_min = np.argmin(a, axis=axis, keepdims=keep)
            np.testing.assert_array_equal(np.asarray(xp.argmax(x, axis=axis, keepdims=keep)),
                                          want_max)
            np.testing.assert_array_equal(np.asarray(xp.argmin(x, axis=axis, keepdims=keep)),
                                          want_min)


def test_argmax_large_sparse_matches_scipy() -> None:
    """A 200k x 200k CSR matrix: argmax along rows works on the stored entries (a dense
    pass would visit 4e10 positions); scipy gives the same first-index answer."""
    rng = np.random.default_rng(0)
    n = 200_000
    rows, cols = np.repeat(np.arange(n), 5), rng.integers(0, n, 5 * n)
    a = sp.csr_array((rng.random(5 * n) - 0.5, (rows, cols)), shape=(n, n))
    a.sum_duplicates()
    x = xp.asarray(a)
    np.testing.assert_array_equal(np.asarray(xp.argmax(x, axis=1)), a.argmax(axis=1))
    np.testing.assert_array_equal(np.asarray(xp.argmin(x, axis=0)), a.argmin(axis=0))


def test_arg_errors() -> None:
    with pytest.raises(ValueError, match="empty"):
        Q.argmax(lazy(np.zeros((0, 3))), axis=0)
    assert_same(Q.argmax(lazy(np.zeros((0, 3))), axis=1), np.zeros(0, dtype=np.int64))
    with pytest.raises(TypeError):
        Q.argmin(lazy(np.ones(3, dtype=np.complex128)))
    with pytest.raises(IndexError):
        Q.argmin(lazy(np.ones(3)), axis=1)
    with pytest.raises(TypeError, match="axis must be an int"):
        Q.argmin(lazy(np.ones((2, 2))), axis=(0, 1))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_where(fmt: str, dtype: str) -> None:
    rng = np.random.default_rng(1)
    c = rng.random((3, 4)) < 0.5
    for fill in fills_for(dtype):
        a = sample((3, 4), dtype, rng, fill=fill)
        b = sample((1, 4), dtype, rng)
        xa, xb, xc = lazy(a, fmt, fill), lazy(b), lazy(c, fmt)
        assert_same(Q.where(xc, xa, xb), np.where(c, a, b))
        one = 1 if dtype != "bool" else True
        assert_same(Q.where(xc, xa, one), np.where(c, a, a.dtype.type(1)))
    assert_same(Q.where(lazy(c), 1.5, 2), np.where(c, 1.5, 2.0))
    with pytest.raises(TypeError, match="boolean"):
        Q.where(lazy(np.ones(3)), lazy(np.ones(3)), lazy(np.ones(3)))
    with pytest.raises(ValueError, match="broadcast"):
        Q.where(lazy(c), lazy(np.ones(5)), 0.0)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_count_nonzero(fmt: str, dtype: str) -> None:
    rng = np.random.default_rng(2)
    for fill in fills_for(dtype):
        a = sample((3, 4), dtype, rng, fill=fill)
        x = lazy(a, fmt, fill)
        for axis in (None, 0, 1, (0, 1)):
            assert_same(Q.count_nonzero(x, axis=axis),
                        np.asarray(np.count_nonzero(a, axis=axis), dtype=np.int64))
        assert_same(Q.count_nonzero(x, axis=0, keepdims=True),
                    np.count_nonzero(a, axis=0, keepdims=True).astype(np.int64))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_nonzero(fmt: str, dtype: str) -> None:
    rng = np.random.default_rng(3)
    for fill in fills_for(dtype):
        for shape in ((3, 4), (5,), (2, 3, 2), (0, 3)):
            a = sample(shape, dtype, rng, fill=fill)
            got = Q.nonzero(lazy(a, fmt, fill))
            exp = np.nonzero(a)
            assert len(got) == len(exp)
            for g, e in zip(got, exp, strict=True):
                assert_same(g, e.astype(np.int64))
    with pytest.raises(ValueError, match="0-d"):
        Q.nonzero(lazy(np.float64(1.0)))


def test_nonzero_never_densifies_sparse_input() -> None:
    n = 1 << 20
    a_idx = np.array([5, 77, n * 3 + 1])
    from lazysparse.api.array.lazy_array import LazyArray
    from lazysparse.formats import Tensor

    t = Tensor.from_coords((a_idx,), np.array([1.0, 0.0, 2.0]), (n * 4,), format="coo")
    with set_densify_limit(1024):
        (idx,) = Q.nonzero(LazyArray.from_tensor(t))
        np.testing.assert_array_equal(dense(idx), [5, n * 3 + 1])


def test_searchsorted() -> None:
    rng = np.random.default_rng(4)
    for dtype in ("int16", "uint8", "float32", "float64"):
        a = np.sort(sample((10,), dtype, rng))
        v = sample((3, 4), dtype, rng)
        for side in ("left", "right"):
            for fmt in FORMATS:
                assert_same(Q.searchsorted(lazy(a, fmt), lazy(v, fmt), side=side),
                            np.searchsorted(a, v, side=side).astype(np.int64))
        perm = rng.permutation(10)
        shuffled = a[perm]
        sorter = np.argsort(shuffled, kind="stable")
        assert_same(Q.searchsorted(lazy(shuffled), lazy(v), sorter=lazy(sorter)),
                    np.searchsorted(shuffled, v, sorter=sorter).astype(np.int64))
    assert_same(Q.searchsorted(lazy(np.array([1.0, 2.0])), 1.5), np.int64(1))
    with pytest.raises(ValueError, match="1-D"):
        Q.searchsorted(lazy(np.ones((2, 2))), lazy(np.ones(2)))
    with pytest.raises(ValueError, match="side"):
        Q.searchsorted(lazy(np.ones(2)), lazy(np.ones(2)), side="middle")
    with pytest.raises(TypeError):
        Q.searchsorted(lazy(np.ones(2)), [1.0])


@settings(max_examples=examples(25), deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3),
       dtype=st.sampled_from(("int8", "float32", "float64")),
       fmt=st.sampled_from(FORMATS), seed=st.integers(0, 2**16), data=st.data())
def test_hypothesis_arg_extrema(shape: list[int], dtype: str, fmt: str, seed: int,
                                data: st.DataObject) -> None:
    rng = np.random.default_rng(seed)
    a = sample(tuple(shape), dtype, rng, density=0.3)
    x = lazy(a, fmt)
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    assert_same(Q.argmax(x, axis=axis), np.argmax(a, axis=axis))
    assert_same(Q.argmin(x, axis=axis), np.argmin(a, axis=axis))


@pytest.mark.parametrize("fmt", ["csr", "coo", "dense"])
def test_lazy_arg_extremum_form(fmt: str) -> None:
    """The lazy two-aggregate form (used off the CPU) agrees with NumPy too."""
    from lazysparse.api.chapters.searching import lazy_arg_extremum

    a = np.array([[0.0, 3.0, 3.0, 0.0], [-1.0, 0.0, np.nan, 0.0], [0.0, 0.0, 0.0, 0.0]])
    x = lazy(a, fmt, 0.0)
    for axis in (0, 1):
        for ext, fn in (("maximum", np.argmax), ("minimum", np.argmin)):
            assert_same(lazy_arg_extremum(ext, x, (axis,), False), fn(a, axis=axis))
