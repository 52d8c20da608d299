"""New entries written by ``x[i, j] = v`` go into a hashed insert buffer (issue 14, item 4):
assignments and element reads never merge, a whole-array read merges once into an unordered
level without sorting; every result checked against NumPy doing the same."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import lazysparse as xp
from lazysparse.api.chapters import setitem as S


def _start(shape: tuple[int, ...], fmt: str, fill: Any, seed: int = 0) -> tuple[Any, np.ndarray]:
    rng = np.random.default_rng(seed)
    d = np.full(shape, fill, dtype=np.float64)
    keep = rng.random(shape) < 0.02
    d[keep] = rng.integers(1, 9, int(keep.sum()))
    return xp.asarray(d, format=fmt, fill_value=fill), d


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("fill", [0.0, np.nan, 1.0])
def test_read_modify_write_loop_never_merges(fmt: str, fill: float) -> None:
    x, d = _start((300, 200), fmt, fill)
    rng = np.random.default_rng(1)
    xp.compute(x)
    before = dict(S.STATS)
    for _ in range(400):  # a counting loop as users write it
        i, j = (int(v) for v in rng.integers(0, 200, 2))
        v = float(x[i, j])
        x[i, j] = 3.0 if np.isnan(v) else v + 1
        d[i, j] = 3.0 if np.isnan(d[i, j]) else d[i, j] + 1
    assert S.STATS["merges"] == before["merges"]  # element reads probe the buffer
    np.testing.assert_array_equal(np.asarray(x), d)  # one merge here
    assert S.STATS["merges"] == before["merges"] + 1
    t = x.tensor()
    assert t.format == fmt and t.spec.level_kinds[-1] == "compressed-unordered"


def test_sparse_vector_and_assignments_after_a_merge() -> None:
    x, d = _start((5000,), "coo", 0.0)
    for k in range(0, 5000, 7):
        x[k] = k
        d[k] = k
    np.testing.assert_array_equal(np.asarray(x * 2), d * 2)
    for k in range(3, 5000, 11):  # more new entries into the merged (unordered) storage
        x[k] = -1.0
        d[k] = -1.0
    assert float(xp.sum(x)) == d.sum()
    np.testing.assert_array_equal(np.asarray(x), d)


def test_entries_set_to_the_fill_and_repeated_coordinates() -> None:
    x, d = _start((50, 60), "csr", 0.0)
    for v in (5.0, 0.0, 7.0):  # the last write wins; a fill value stores nothing new
        x[3, 4] = v
        d[3, 4] = v
    x[10, 11] = 0.0
    d[10, 11] = 0.0
    np.testing.assert_array_equal(np.asarray(x), d)
    assert xp.compute(x).tensor().nnz == np.count_nonzero(d)


def test_merged_unordered_rows_feed_kernels_that_merge() -> None:
    x, d = _start((80, 80), "csr", 0.0)
    y, e = _start((80, 80), "csr", 0.0, seed=5)
    rng = np.random.default_rng(2)
    for _ in range(300):
        i, j = (int(v) for v in rng.integers(0, 80, 2))
        x[i, j] = 2.5
        d[i, j] = 2.5
    np.testing.assert_allclose(np.asarray(x + y), d + e)
    np.testing.assert_allclose(np.asarray(x @ y), d @ e)
    np.testing.assert_allclose(xp.to_scipy(x).toarray(), d)


def test_row_writes_between_computes_do_not_copy_the_array() -> None:
    """A compute that reads ``V`` keeps no reference to its storage once it returns (the
    structural-key cache reads a leaf's data from the node), so writing rows of a basis
    between products stays in place, as GMRES does (issue 24)."""

    V = xp.compute(xp.asformat(xp.zeros((5, 1000)), "dense"))
    w = xp.compute(xp.ones(1000) * 2.0)
    V[0] = w
    h = xp.compute(V @ w)  # warm-up: the first compile may leave collectable cycles
    del h
    V[1] = w
    before = S.STATS["copies"]
    for k in range(2, 5):
        h = xp.compute(V @ w)
        assert float(h[0]) == 4000.0
        del h
        V[k] = w * k
    assert S.STATS["copies"] == before
    np.testing.assert_allclose(np.asarray(V)[:, 0], [2.0, 2.0, 4.0, 6.0, 8.0])
