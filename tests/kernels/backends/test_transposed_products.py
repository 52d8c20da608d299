"""Values of transposed and sliced sparse products against scipy (issue 23 item 3):
``B.T @ B`` (Gustavson over a transposed copy), ``X[:k] @ X.T`` and ``A.T @ C``, for int64,
bool, float32, float64 and complex data, with empty rows and columns; the stored-entry
counts equal scipy's (scipy's SpGEMM skips sums that are zero, as the kernels do)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from tests.conftest import slow_except

DTYPES = [np.int64, np.bool_, np.float32, np.float64, np.complex128]


def _matrix(n: int, m: int, per_row: int, seed: int, dtype: type) -> sp.csr_array:
    """A CSR with ``per_row`` entries per row, rows 2 and n-1 and column 1 empty."""
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(n), per_row)
    cols = rng.integers(0, m, rows.size)
    keep = (rows != 2) & (rows != n - 1) & (cols != 1)
    vals = rng.integers(-3, 4, rows.size).astype(np.float64)
    if dtype is np.complex128:
        vals = vals + 1j * rng.integers(-2, 3, rows.size)
    a = sp.csr_array((vals[keep], (rows[keep], cols[keep])), shape=(n, m))
    a.sum_duplicates()
    return a.astype(dtype)


def _check(got: xp.LazyArray, want: sp.sparray) -> None:
    t = xp.compute(got)
    assert t.shape == want.shape and np.dtype(t.dtype) == want.dtype
    dense = t.tensor().to_numpy()
    np.testing.assert_allclose(dense, want.toarray(), rtol=1e-5 if want.dtype == np.float32
                               else 1e-12)
    want = sp.csr_array(want)
    want.eliminate_zeros()
    assert t.tensor().nnz == want.nnz


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_gram_matches_scipy(dtype: type) -> None:
    b = _matrix(600, 400, 3, 1, dtype)
    _check(xp.asarray(b).T @ xp.asarray(b), b.T @ b)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_transposed_times_other_matches_scipy(dtype: type) -> None:
    a, c = _matrix(700, 300, 2, 2, dtype), _matrix(700, 500, 3, 3, dtype)
    _check(xp.asarray(a).T @ xp.asarray(c), a.T @ c)


@pytest.mark.parametrize("dtype", slow_except(DTYPES, [np.float64, np.bool_]),
                         ids=lambda d: np.dtype(d).name)
def test_sliced_rows_times_transpose_matches_scipy(dtype: type) -> None:
    x = _matrix(500, 800, 4, 4, dtype)
    lx = xp.asarray(x)
    _check(lx[:40] @ lx.T, x[:40] @ x.T)
    _check(lx[2:3] @ lx.T, x[2:3] @ x.T)  # one empty row: an empty result


def test_binarized_counts_cooccurrence_matches_scipy() -> None:
    counts = _matrix(2000, 700, 5, 5, np.float64)
    ls = xp.astype(xp.asarray(counts) > 0, xp.int64)
    b = (counts > 0).astype(np.int64)
    _check(ls.T @ ls, b.T @ b)


def test_normalized_cosine_rows_match_scipy() -> None:
    x = _matrix(900, 600, 4, 6, np.float64)
    lx = xp.asarray(x)
    norms = xp.linalg.vector_norm(lx, axis=1)
    tn = lx / xp.where(norms > 0, norms, 1.0)[:, None]
    nn = np.sqrt(np.asarray(abs(x).power(2).sum(axis=1))).ravel()
    xs = sp.csr_array(x.multiply(1.0 / np.where(nn > 0, nn, 1.0)[:, None]))
    _check(tn[:50] @ tn.T, xs[:50] @ xs.T)


def test_empty_operand_gives_an_empty_product() -> None:
    e = sp.csr_array((300, 200), dtype=np.float64)
    _check(xp.asarray(e).T @ xp.asarray(e), e.T @ e)
