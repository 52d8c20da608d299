"""Broadcasting sparse operands is an intersection (issue 13, item 3).

A product of broadcast sparse operands stores only the positions where every operand whose
fill annihilates the op stores an entry: the product of their supports. The size-1 axes a
broadcast drops are reduced with ``overwrite`` over extent 1, which must not force the
kernel to visit every coordinate (``compile.planning.coiterate._may_skip``).
"""

from __future__ import annotations

import time

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from tests.conftest import slow_except


def _matrix(shape: tuple[int, int], seed: int, fmt: str, density: float = 0.3) -> sp.sparray:
    m = sp.random(*shape, density=density, format="csr", random_state=seed)
    return sp.csr_array(m).asformat(fmt)


def _support(a: np.ndarray | sp.sparray, shape: tuple[int, ...]) -> np.ndarray:
    """Stored positions of an operand broadcast to ``shape`` (dense: every position)."""
    if isinstance(a, np.ndarray):
        return np.ones(shape, dtype=bool)
    mask = np.zeros(a.shape, dtype=bool)
    c = sp.coo_array(a)
    mask[c.row, c.col] = True
    return np.broadcast_to(mask, shape)


def _dense(a: np.ndarray | sp.sparray) -> np.ndarray:
    return a if isinstance(a, np.ndarray) else a.toarray()


# (shape of a, shape of b) in units: scaled by 40 rows and columns, 5% dense, so every
# result is sparse (the optimizer stores a small or dense enough result densely)
SHAPES = [((6, 1), (1, 5)), ((1, 5), (6, 1)), ((6, 1), (6, 5)), ((6, 5), (1, 5)),
          ((1, 5), (6, 5)), ((6, 5), (6, 1)), ((1, 1), (6, 5))]
FORMATS = [("csr", "csr"), ("csc", "coo"), ("coo", "csr"), ("csr", "csc")]
CASES = [(*shapes, *FORMATS[k % len(FORMATS)]) for k, shapes in enumerate(SHAPES)] + [
    ((6, 1), (1, 5), "csc", "csc"), ((6, 5), (1, 5), "csr", "csc")]


def _scaled(shape: tuple[int, int]) -> tuple[int, int]:
    return (shape[0] * 40 if shape[0] > 1 else 1, shape[1] * 40 if shape[1] > 1 else 1)


@pytest.mark.parametrize("sa,sb,fa,fb", slow_except(CASES, CASES[:4]))
def test_product_stores_the_product_of_supports(fa: str, fb: str, sa: tuple[int, int],
                                                sb: tuple[int, int]) -> None:
    a, b = _matrix(_scaled(sa), 1, fa, 0.05), _matrix(_scaled(sb), 2, fb, 0.05)
    out = xp.asarray(a) * xp.asarray(b)
    want = _dense(a) * _dense(b)
    np.testing.assert_array_equal(np.asarray(out), want)
    assert out.format != "dense"
    assert out.nnz == int((_support(a, want.shape) & _support(b, want.shape)).sum())


@pytest.mark.parametrize("sa,sb", slow_except(SHAPES, SHAPES[::2]))
def test_small_products_match_numpy(sa: tuple[int, int], sb: tuple[int, int]) -> None:
    a, b = _matrix(sa, 1, "csr", 0.5), _matrix(sb, 2, "coo", 0.5)
    np.testing.assert_array_equal(np.asarray(xp.asarray(a) * xp.asarray(b)),
                                  a.toarray() * b.toarray())


@pytest.mark.parametrize("sa,sb", slow_except(SHAPES, SHAPES[1::2]))
def test_sparse_times_dense_keeps_the_sparse_support(sa: tuple[int, int],
                                                     sb: tuple[int, int]) -> None:
    a = _matrix(_scaled(sa), 3, "csr", 0.05)
    b = np.random.default_rng(4).standard_normal(_scaled(sb))
    out = xp.asarray(a) * xp.asarray(b)
    want = a.toarray() * b
    np.testing.assert_allclose(np.asarray(out), want)
    assert out.format != "dense"
    assert out.nnz == int(_support(a, want.shape).sum())


def test_vectors_broadcast_by_new_axes() -> None:
    rng = np.random.default_rng(5)
    x = sp.coo_array(np.where(rng.random(300) < 0.05, rng.standard_normal(300), 0.0))
    y = sp.coo_array(np.where(rng.random(200) < 0.05, rng.standard_normal(200), 0.0))
    out = xp.asarray(x)[:, None] * xp.asarray(y)[None, :]
    np.testing.assert_array_equal(np.asarray(out), np.outer(x.toarray(), y.toarray()))
    assert out.nnz == x.nnz * y.nnz


def test_three_dimensional_broadcast() -> None:
    rng = np.random.default_rng(6)
    a = np.where(rng.random((40, 1, 30)) < 0.1, rng.standard_normal((40, 1, 30)), 0.0)
    b = np.where(rng.random((1, 50, 30)) < 0.1, rng.standard_normal((1, 50, 30)), 0.0)
    sa = xp.asformat(xp.asarray(a), "coo")
    sb = xp.asformat(xp.asarray(b), "coo")
    out = sa * sb
    np.testing.assert_allclose(np.asarray(out), a * b)
    assert out.nnz == int(((a != 0) & (b != 0)).sum())


def test_union_broadcast_values() -> None:
    """``+`` does not annihilate: the values still match NumPy."""
    a, b = _matrix((6, 1), 6, "csr", 0.5), _matrix((1, 5), 7, "csr", 0.5)
    out = xp.asarray(a) + xp.asarray(b)
    np.testing.assert_allclose(np.asarray(out), a.toarray() + b.toarray())


def test_non_annihilating_fill_values() -> None:
    """A fill of 1 does not annihilate multiply: every position is a value."""
    a = xp.asarray(_matrix((6, 1), 8, "csr", 0.5)) + 1.0
    b = xp.asarray(_matrix((1, 5), 9, "csr", 0.5))
    out = a * b
    np.testing.assert_allclose(np.asarray(out), np.asarray(a) * np.asarray(b))


def test_logical_and_of_broadcast_masks() -> None:
    a = _matrix((6, 1), 10, "csr", 0.5).astype(bool)
    b = _matrix((1, 5), 11, "csr", 0.5).astype(bool)
    out = xp.logical_and(xp.asarray(a), xp.asarray(b))
    np.testing.assert_array_equal(np.asarray(out), a.toarray() & b.toarray())
    assert out.nnz == int((a.toarray() & b.toarray()).sum())


def test_reduction_over_a_broadcast_product() -> None:
    a, b = _matrix((6, 1), 12, "csr", 0.5), _matrix((1, 5), 13, "csr", 0.5)
    out = xp.sum(xp.asarray(a) * xp.asarray(b), axis=0)
    np.testing.assert_allclose(np.asarray(out), (a.toarray() * b.toarray()).sum(axis=0))


def _two_entry_csr(shape: tuple[int, int], where: tuple[int, int]) -> sp.csr_matrix:
    """A row or column matrix with entries 1 and 2 at ``where`` along its long axis."""
    at, zero = np.array(where), np.zeros(2, dtype=int)
    rows, cols = (at, zero) if shape[1] == 1 else (zero, at)
    return sp.csr_matrix((np.array([1.0, 2.0]), (rows, cols)), shape=shape)


def test_large_outer_product_of_csr_stores_four_entries() -> None:
    """The issue's case: 5000x1 times 1x5000 with 2 entries each stored 25,000,000."""
    a = xp.asarray(_two_entry_csr((5000, 1), (5, 70)))
    b = xp.asarray(_two_entry_csr((1, 5000), (9, 4000)))
    out = a * b
    assert out.nnz == 4
    assert out.nnz == xp.linalg.outer(a[:, 0], b[0]).nnz
    t = time.perf_counter()
    out = a * b
    assert out.nnz == 4 and time.perf_counter() - t < 1.0
    c = sp.coo_array(xp.to_scipy(out))
    assert sorted(zip(c.row.tolist(), c.col.tolist(), c.data.tolist(), strict=True)) == [
        (5, 9, 1.0), (5, 4000, 2.0), (70, 9, 2.0), (70, 4000, 4.0)]


def test_large_coo_vectors_broadcast() -> None:
    """Two 60,000-long COO vectors, ``x[:, None] * y[None, :]``, ran out of memory."""
    n = 60_000
    x = xp.asarray(sp.coo_array((np.array([1.0, 2.0]), (np.array([5, 70]),)), shape=(n,)))
    y = xp.asarray(sp.coo_array((np.array([3.0, 4.0]), (np.array([9, n - 1]),)), shape=(n,)))
    out = x[:, None] * y[None, :]
    assert out.shape == (n, n) and out.nnz == 4
