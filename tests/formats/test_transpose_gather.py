"""Materialized transposes (counting-sort relayouts) and gathers of whole rows/columns.

Values are checked against NumPy/scipy for several dtypes and fill values, with empty and
unsorted inputs; stored-entry counts are checked exactly (a relayout stores what its input
stores; a gather stores exactly the entries of the rows it selects); memory is checked to be
proportional to the result, not to the gathered-from array.
"""

from __future__ import annotations

import itertools
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse import formats
from lazysparse.api.stored.selection import take_leading
from tests.conftest import slow_except

from .helpers import assert_same

DTYPES = [np.float64, np.float32, np.int64, np.int32, np.complex128, np.bool_]


def _random_tensor(shape: tuple[int, ...], nnz: int, dtype: type, fill: object, fmt: str,
                   seed: int = 0) -> tuple[formats.Tensor, np.ndarray]:
    """A sparse tensor with ``nnz`` distinct random coordinates (given unsorted), and its
    dense NumPy equivalent."""
    rng = np.random.default_rng(seed)
    size = int(np.prod(shape))
    flat = rng.permutation(size)[:min(nnz, size)] if size else np.zeros(0, np.int64)
    coords = np.array(np.unravel_index(flat, shape)).reshape(len(shape), -1)
    vals = rng.standard_normal(flat.size) * 10
    if np.dtype(dtype).kind == "c":
        vals = vals + 1j * rng.standard_normal(flat.size)
    if np.dtype(dtype).kind == "b":
        vals = rng.random(flat.size) < 0.7
    vals = vals.astype(dtype)
    t = formats.Tensor.from_coords(list(coords), vals, shape, format=fmt, fill_value=fill)
    dense = np.full(shape, fill, dtype=dtype)
    dense[tuple(coords)] = vals
    return t, dense


def _fills(dtype: type) -> list[object]:
    return [0, np.nan] if np.dtype(dtype).kind in "fc" else [0]


def _check_canonical(t: formats.Tensor) -> None:
    """``t``'s levels pass full validation (sorted, unique, consistent pointers)."""
    formats.Tensor(t.shape, t.levels, t.mode_order, t.values, t.fill_value, format=t.spec)


# ------------------------------------------------------------------ transposes


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("src", ["csr", "csc", "coo", "dcsr"])
@pytest.mark.parametrize("dst", ["csr", "csc", "coo"])
def test_materialized_transpose_2d(dtype: type, src: str, dst: str) -> None:
    for fill in _fills(dtype):
        t, dense = _random_tensor((37, 23), 150, dtype, fill, src)
        y = xp.compute(xp.asformat(xp.asarray(t).T, dst))
        out = y.tensor()
        assert out.spec.name == dst
        assert out.values.size == t.values.size
        assert_same(out.to_numpy(), dense.T)
        _check_canonical(out)


@pytest.mark.parametrize("shape", [(0, 5), (6, 0), (4, 7)])
@pytest.mark.parametrize("dst", ["csr", "csc", "coo"])
def test_transpose_of_empty(shape: tuple[int, int], dst: str) -> None:
    t, dense = _random_tensor(shape, 0, np.float64, np.nan, "csr")
    out = xp.compute(xp.asformat(xp.asarray(t).T, dst)).tensor()
    assert out.values.size == 0 and out.shape == shape[::-1]
    assert_same(out.to_numpy(), dense.T)


def test_transpose_matches_scipy() -> None:
    a = sp.random(300, 200, density=0.05, format="csr", random_state=1, dtype=np.float32)
    for spelling in (lambda x: x.T, lambda x: x.mT, xp.matrix_transpose):
        y = xp.to_scipy(xp.compute(xp.asformat(spelling(xp.asarray(a)), "csr")))
        ref = a.T.tocsr()
        assert y.format == "csr" and y.nnz == ref.nnz
        np.testing.assert_array_equal(y.indptr, ref.indptr)
        np.testing.assert_array_equal(y.indices, ref.indices)
        np.testing.assert_array_equal(y.data, ref.data)


@pytest.mark.parametrize("fmt", ["csf", "coo"])
@pytest.mark.parametrize("perm", list(itertools.permutations(range(3))))
@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.complex64, np.bool_])
def test_permutation_3d(fmt: str, perm: tuple[int, ...], dtype: type) -> None:
    for fill in _fills(dtype):
        t, dense = _random_tensor((9, 11, 7), 120, dtype, fill, fmt, seed=3)
        out = xp.compute(xp.asformat(xp.permute_dims(xp.asarray(t), perm), fmt)).tensor()
        assert out.values.size == t.values.size
        assert_same(out.to_numpy(), np.transpose(dense, perm))
        _check_canonical(out)


@pytest.mark.parametrize("order", list(itertools.permutations(range(4))))
def test_convert_mode_orders_4d(order: tuple[int, ...]) -> None:
    """Every storage order of a 4-d COO/CSF (one combined-key counting pass, or LSD passes
    when the combined key has too many bins)."""
    for shape in [(5, 6, 4, 3), (40, 3, 50, 60)]:
        t, dense = _random_tensor(shape, 200, np.float64, 0, "coo", seed=5)
        for fmt in ("coo", "csf"):
            out = formats.convert(t, fmt, mode_order=order)
            assert out.mode_order == order and out.values.size == t.values.size
            assert_same(out.to_numpy(), dense)
            _check_canonical(out)


def test_transpose_memory_is_the_result() -> None:
    """The relayout of a 200k x 200k CSR's transpose allocates about its result (ptr, idx,
    values) plus one pointer-sized cursor array, as scipy's ``tocsr`` does."""
    n, per_row = 200_000, 5
    rng = np.random.default_rng(0)
    cols = np.sort(rng.integers(0, n, (n, per_row)), axis=1).ravel()
    a = sp.csr_matrix((rng.random(n * per_row), cols, np.arange(0, n * per_row + 1, per_row)),
                      shape=(n, n))
    a.sum_duplicates()
    x = xp.asarray(a)
    xp.compute(xp.asformat(x.T, "csr"))  # warm: compile, plan cache
    result_bytes = (n + 1) * 4 + a.nnz * (4 + 8)
    tracemalloc.start()
    y = xp.compute(xp.asformat(x.T, "csr"))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 1.5 * result_bytes, (peak, result_bytes)
    assert y.nnz == a.nnz


# ------------------------------------------------------------------ gathers


_SELECTIONS = {
    "sorted": lambda n, rng: np.arange(0, n, 3),
    "unsorted-repeats": lambda n, rng: rng.integers(0, n, 2 * n),
    "negative": lambda n, rng: -1 - rng.permutation(n)[: n // 2],
    "empty": lambda n, rng: np.zeros(0, np.int64),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fmt", slow_except(["csr", "coo", "dcsr"], ["csr", "coo"]))
@pytest.mark.parametrize("sel", sorted(_SELECTIONS))
def test_row_selection(dtype: type, fmt: str, sel: str) -> None:
    rng = np.random.default_rng(7)
    for fill in _fills(dtype):
        t, dense = _random_tensor((40, 30), 200, dtype, fill, fmt)
        rows = _SELECTIONS[sel](40, rng)
        x = xp.asarray(t)
        expected = dense[rows]
        for got in (x[rows], xp.take(x, rows, axis=0), x[rows, :], x[list(rows)]):
            out = got.tensor()
            assert out.spec == t.spec
            assert_same(out.to_numpy(), expected)
            assert out.values.size == _stored_in(t, rows, axis=0)
            _check_canonical(out)


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.complex128])
@pytest.mark.parametrize("sel", sorted(_SELECTIONS))
def test_csc_column_selection(dtype: type, sel: str) -> None:
    rng = np.random.default_rng(8)
    for fill in _fills(dtype):
        t, dense = _random_tensor((25, 45), 200, dtype, fill, "csc")
        cols = _SELECTIONS[sel](45, rng)
        x = xp.asarray(t)
        for got in (x[:, cols], xp.take(x, cols, axis=1)):
            out = got.tensor()
            assert out.spec == t.spec
            assert_same(out.to_numpy(), dense[:, cols])
            assert out.values.size == _stored_in(t, cols, axis=1)
            _check_canonical(out)


@pytest.mark.parametrize("fmt", ["csf", "coo"])
def test_leading_selection_3d(fmt: str) -> None:
    """A CSF/COO gathers whole subtrees of its first level, its other axes untouched."""
    t, dense = _random_tensor((12, 8, 9), 250, np.float64, np.nan, fmt, seed=2)
    rows = np.array([11, 0, 3, 3, 7, 5, 0])
    out = take_leading(t, rows)
    assert_same(out.to_numpy(), dense[rows])
    assert out.values.size == _stored_in(t, rows, axis=0)
    _check_canonical(out)
    other = formats.convert(t, fmt, mode_order=(2, 0, 1))
    got = xp.take(xp.asarray(other), rows[rows < 9], axis=2).tensor()
    assert got.mode_order == (2, 0, 1)
    assert_same(got.to_numpy(), dense[:, :, rows[rows < 9]])


def test_selection_of_an_empty_array() -> None:
    t, dense = _random_tensor((0, 6), 0, np.float64, 0, "csr")
    out = xp.take(xp.asarray(t), np.zeros(0, np.int64), axis=0).tensor()
    assert out.shape == (0, 6) and out.values.size == 0
    t, dense = _random_tensor((5, 6), 0, np.float32, np.nan, "csr")
    out = xp.asarray(t)[np.array([4, 4, 1])].tensor()
    assert out.values.size == 0
    assert_same(out.to_numpy(), dense[[4, 4, 1]])


def test_non_leading_axis_still_filters() -> None:
    """Columns of a CSR (not its first level) keep the coordinate-filtering path."""
    a = sp.random(30, 40, density=0.1, format="csr", random_state=4)
    cols = np.array([39, 1, 1, 20])
    got = xp.to_scipy(xp.asarray(a)[:, cols])
    np.testing.assert_array_equal(got.toarray(), a.toarray()[:, cols])


def test_row_selection_matches_scipy_and_copies_only_the_rows() -> None:
    """100 sorted rows of a 200k x 200k CSR: the same arrays as scipy, and memory about
    the result (the whole array's coordinates would be 16 MB)."""
    n, per_row = 200_000, 5
    rng = np.random.default_rng(1)
    cols = np.sort(rng.integers(0, n, (n, per_row)), axis=1).ravel()
    a = sp.csr_matrix((rng.random(n * per_row), cols, np.arange(0, n * per_row + 1, per_row)),
                      shape=(n, n))
    a.sum_duplicates()
    x = xp.asarray(a)
    rows = np.sort(rng.choice(n, 100, replace=False))
    x[rows]  # warm
    tracemalloc.start()
    y = x[rows]
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 100_000, peak
    ref = a[rows]
    got = xp.to_scipy(y)
    np.testing.assert_array_equal(got.indptr, ref.indptr)
    np.testing.assert_array_equal(got.indices, ref.indices)
    np.testing.assert_array_equal(got.data, ref.data)


def _stored_in(t: formats.Tensor, sel: np.ndarray, axis: int) -> int:
    """Stored entries of ``t`` whose ``axis`` coordinate is selected, counted with repeats."""
    coo = formats.convert(t, "coo")
    c = np.asarray(coo.levels[coo.mode_order.index(axis)].idx, np.int64)
    n = t.shape[axis]
    per_coordinate = np.bincount(c, minlength=n)
    return int(per_coordinate[np.where(sel < 0, sel + n, sel)].sum())
