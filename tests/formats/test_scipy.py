"""scipy.sparse interop: every format, arrays and matrices, shared memory, dtypes."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from lazysparse.formats import Tensor, convert
from tests.conftest import examples

from .helpers import DTYPES, assert_same, random_array

SCIPY_FORMATS = ["csr", "csc", "coo", "dia", "bsr", "lil", "dok"]


def _matrix(dtype: object = np.float64, shape: tuple[int, int] = (7, 5)) -> np.ndarray:
    return random_array(shape, 0.4, np.dtype(dtype), 0, seed=3)


@pytest.mark.parametrize("fmt", SCIPY_FORMATS)
@pytest.mark.parametrize("kind", ["array", "matrix"])
def test_from_and_to_every_scipy_format(fmt: str, kind: str) -> None:
    a = _matrix()
    m = getattr(sp, f"csr_{kind}")(a).asformat(fmt)
    t = Tensor.from_scipy(m)
    assert t.format == (fmt if fmt in ("csr", "csc", "coo", "dia", "bsr") else "csr")
    assert_same(t.to_numpy(), a)
    back = t.to_scipy(fmt, matrix=kind == "matrix")
    assert back.format == fmt
    assert isinstance(back, sp.spmatrix if kind == "matrix" else sp.sparray)
    assert_same(back.toarray(), a)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_no_copy_both_ways(fmt: str) -> None:
    m = sp.csr_array(_matrix()).asformat(fmt)
    t = Tensor.from_scipy(m)
    assert np.shares_memory(t.values, m.data)
    back = t.to_scipy()
    assert np.shares_memory(back.data, m.data)
    if fmt == "coo":
        assert np.shares_memory(t.levels[0].idx, m.coords[0])
        assert np.shares_memory(t.levels[1].idx, m.coords[1])
        assert np.shares_memory(back.coords[1], m.coords[1])
    else:
        assert np.shares_memory(t.levels[1].ptr, m.indptr)
        assert np.shares_memory(t.levels[1].idx, m.indices)
        assert np.shares_memory(back.indices, m.indices)
        assert np.shares_memory(back.indptr, m.indptr)


def test_int64_indices_kept_without_copy() -> None:
    m = sp.csr_array(_matrix())
    m.indptr, m.indices = m.indptr.astype(np.int64), m.indices.astype(np.int64)
    t = Tensor.from_scipy(m)
    assert t.index_dtype == np.int64 and np.shares_memory(t.levels[1].idx, m.indices)
    back = t.to_scipy()
    assert np.shares_memory(back.indices, m.indices)


def test_converted_tensor_to_scipy_shares_its_arrays() -> None:
    t = convert(Tensor.from_numpy(_matrix(), "coo"), "csc")
    m = t.to_scipy()
    assert m.format == "csc" and np.shares_memory(m.data, t.values)
    assert np.shares_memory(m.indices, t.levels[1].idx)


def test_noncanonical_inputs_are_canonicalized() -> None:
    a = _matrix()
    m = sp.coo_array(a)
    rows = np.concatenate([m.coords[0], m.coords[0][:3]])[::-1]
    cols = np.concatenate([m.coords[1], m.coords[1][:3]])[::-1]
    data = np.concatenate([m.data, m.data[:3]])[::-1]
    dup = sp.coo_array((data, (rows, cols)), shape=a.shape)
    expected = dup.toarray()
    assert_same(Tensor.from_scipy(dup).to_numpy(), expected)
    csr = sp.csr_array(
        (data, cols, np.searchsorted(np.sort(rows), np.arange(a.shape[0] + 1))), shape=a.shape
    )
    csr = sp.csr_array((csr.data, csr.indices, csr.indptr), shape=a.shape)
    assert_same(Tensor.from_scipy(csr).to_numpy(), csr.toarray())


def test_explicit_zeros_are_kept() -> None:
    m = sp.csr_array((np.array([0.0, 2.0]), np.array([0, 1]), np.array([0, 2, 2])), shape=(2, 2))
    t = Tensor.from_scipy(m)
    assert t.nnz == 2
    assert convert(t, "csc").nnz == 2
    assert_same(t.to_numpy(), m.toarray())


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_dtypes_round_trip(dtype: np.dtype) -> None:
    a = _matrix(dtype)
    for fmt in ("csr", "csc", "coo"):
        m = sp.coo_array(a).asformat(fmt)
        t = Tensor.from_scipy(m)
        assert t.dtype == dtype
        back = t.to_scipy()
        assert back.dtype == dtype and back.shape == a.shape
        assert_same(back.toarray(), a)


def test_nd_and_1d_coo_arrays() -> None:
    a = random_array((3, 4, 5), 0.3, np.dtype(np.float64), 0, seed=1)
    m = sp.coo_array(a)
    t = Tensor.from_scipy(m)
    assert t.format == "coo" and t.ndim == 3
    assert_same(t.to_numpy(), a)
    assert_same(t.to_scipy().toarray(), a)
    v = sp.coo_array(a[0, 0])
    assert_same(Tensor.from_scipy(v).to_numpy(), a[0, 0])


def test_nonzero_fill_value_has_no_scipy_form() -> None:
    t = Tensor.from_numpy(np.ones((2, 2)), "csr", fill_value=1.0)
    with pytest.raises(ValueError, match="scipy.sparse has no fill values"):
        t.to_scipy()
    t = Tensor.from_numpy(np.ones((2, 2)), "csr", fill_value=np.nan)
    with pytest.raises(ValueError, match="scipy.sparse has no fill values"):
        t.to_scipy()


def test_to_scipy_needs_2d_except_coo() -> None:
    t = Tensor.from_numpy(np.arange(6).reshape(1, 2, 3), "coo")
    with pytest.raises(ValueError, match="2-D"):
        t.to_scipy("csr")
    with pytest.raises(ValueError, match="unknown scipy.sparse format"):
        Tensor.from_numpy(np.eye(2), "csr").to_scipy("xyz")


def test_from_scipy_rejects_non_sparse_and_bad_dtype() -> None:
    with pytest.raises(TypeError, match="scipy.sparse"):
        Tensor.from_scipy(np.eye(2))
    with pytest.raises(TypeError, match="unsupported dtype float128"):
        Tensor.from_scipy(sp.csr_array(np.eye(2, dtype=np.longdouble)))


@settings(max_examples=examples(25), deadline=None)
@given(
    rows=st.integers(0, 6),
    cols=st.integers(0, 6),
    dtype=st.sampled_from(DTYPES),
    fmt=st.sampled_from(SCIPY_FORMATS),
    target=st.sampled_from(["csr", "csc", "coo"]),
    seed=st.integers(0, 1000),
)
def test_scipy_round_trip_hypothesis(
    rows: int, cols: int, dtype: np.dtype, fmt: str, target: str, seed: int
) -> None:
    a = random_array((rows, cols), 0.3, dtype, 0, seed)
    m = sp.csr_array(a).asformat(fmt)
    t = convert(Tensor.from_scipy(m), target)
    back = t.to_scipy(fmt)
    assert back.dtype == dtype and back.shape == a.shape and back.format == fmt
    assert_same(back.toarray(), a)


@pytest.mark.parametrize("sorted_", [True, False])
def test_coo_with_strided_or_mixed_coordinates(sorted_: bool) -> None:
    # np.unravel_index rows are strided views; mixing them with a fresh int32 array used
    # to reach the compiled order check as a tuple of two array types (a Numba error)
    n = 9
    flat = np.unique(np.random.default_rng(0).integers(0, n**3, 60))
    i, j, k = np.unravel_index(flat, (n, n, n))
    cols = (j * n + k).astype(np.int32)
    if not sorted_:
        i, cols = i[::-1], cols[::-1]
    m = sp.coo_array((np.arange(flat.size, dtype=np.float64), (i, cols)), shape=(n, n * n))
    t = Tensor.from_scipy(m)
    np.testing.assert_array_equal(t.to_numpy(), m.toarray())
