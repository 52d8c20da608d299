"""The workspace intrinsics: sort_touched on short (insertion), long (radix) and dense
(presence scan) rows, with and without scratch room in the list."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import F, acc, agg, compute, dense, mj, plan, tensor

from lazysparse.kernels.backends import execute_plan
from lazysparse.kernels.backends.numba.support import SCRATCH_EXTRA, sort_touched
from lazysparse.logic.nodes import Reorder


@pytest.mark.parametrize("n,extent", [(0, 5), (1, 5), (10, 100), (49, 50), (100, 20000),
                                      (1000, 70000), (200, 256), (250, 257), (3000, 2**40)])
def test_sort_touched(n, extent):
    rng = np.random.default_rng(n)
    a = (rng.choice(extent, size=n, replace=False) if extent < 10**6
         else rng.integers(0, extent, n)).astype(np.int64)
    buf = np.concatenate([a, np.full(5, -7, np.int64)])
    sort_touched(buf, n, extent)
    np.testing.assert_array_equal(buf[:n], np.sort(a))
    np.testing.assert_array_equal(buf[n:], -7)


@pytest.mark.parametrize("n,extent", [(40, 50), (300, 400), (33, 20000), (150, 20000),
                                      (600, 1000), (1000, 70000)])
@pytest.mark.parametrize("scratch", [False, True])
def test_sort_touched_scan_and_scratch(n, extent, scratch):
    """Dense rows take the presence scan, sparse ones the radix sort; a list with room for
    ``2 * extent + SCRATCH_EXTRA`` entries lends its tail as scratch (head still sorted)."""
    rng = np.random.default_rng(extent + n)
    a = rng.choice(extent, size=n, replace=False).astype(np.int64)
    size = 2 * extent + SCRATCH_EXTRA if scratch else n
    buf = np.full(size, -7, np.int64)
    buf[:n] = a
    sort_touched(buf, n, extent)
    np.testing.assert_array_equal(buf[:n], np.sort(a))
    if not scratch:
        assert buf.shape[0] == n


def test_spgemm_with_long_rows_uses_radix_drain():
    rng = np.random.default_rng(5)
    A = np.where(rng.random((12, 40)) < 0.5, rng.random((12, 40)), 0.0)
    B = np.where(rng.random((40, 300)) < 0.3, rng.random((40, 300)), 0.0)
    body = agg("add", 0, Reorder(mj("multiply", acc("A", "i", "j"), acc("B", "j", "k")),
                                 F("i", "j", "k")), "j")
    (out,) = execute_plan(plan({"A": tensor(A, "csr"), "B": tensor(B, "csr")},
                               compute("out", "csr", 2, body)))
    assert np.diff(out.levels[1].ptr).max() > 48
    np.testing.assert_allclose(dense(out), A @ B)
    idx, ptr = out.levels[1].idx, out.levels[1].ptr
    for r in range(12):
        assert np.all(np.diff(idx[ptr[r]:ptr[r + 1]]) > 0)
