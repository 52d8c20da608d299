"""Reductions of hypersparse arrays never allocate past the densify limit (issue 13, item 4).

A reduction whose result keeps its fill stays sparse, and its scattered writes sort instead
of going through a dense row workspace the size of an axis (``KernelInfo.wide``); one whose
result or per-entry fold counts would be dense past the limit raises ``DensifyError`` naming
the size and ``set_densify_limit``, before allocating anything.
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.api.eager import stored_entries
from lazysparse.formats import DensifyError, set_densify_limit
from tests.conftest import slow_except

N = 10**9
ROWS, COLS, VALS = np.array([5, 70, N - 1]), np.array([3, 3, 12]), np.array([1.0, 2.0, 3.0])


def _huge(fmt: str = "coo") -> Any:
    a = xp.asarray(sp.coo_array((VALS, (ROWS, COLS)), shape=(N, N)))
    return a if fmt == "coo" else xp.compute(xp.asformat(a, fmt))


def _entries(x: Any) -> dict[int, float]:
    """The stored entries of a computed 1-D array, by coordinate."""
    coords, values = stored_entries(x.tensor())
    return dict(zip(coords[0].tolist(), values.tolist(), strict=True))


def _measured(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """``fn()``, its seconds and its peak traced allocation in MiB."""
    tracemalloc.start()
    t = time.perf_counter()
    try:
        out = fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    return out, time.perf_counter() - t, peak


@pytest.mark.parametrize("fmt", ["coo", "dcsr"])
@pytest.mark.parametrize("axis", [0, 1])
def test_sum_of_a_huge_hypersparse_matrix_is_sparse(fmt: str, axis: int) -> None:
    a = _huge(fmt)
    xp.compute(xp.sum(a, axis=axis))  # compile outside the measurement
    out, seconds, peak = _measured(lambda: xp.compute(xp.sum(a, axis=axis)))
    assert out.shape == (N,) and out.format != "dense"
    want: dict[int, float] = {}
    for r, c, v in zip(ROWS, COLS, VALS, strict=True):
        k = int(c if axis == 0 else r)
        want[k] = want.get(k, 0.0) + float(v)
    assert out.nnz == len(want) and _entries(out) == want
    assert peak < 64 and seconds < 2.0


@pytest.mark.parametrize("name", slow_except(["mean", "count_nonzero", "any"], ["mean"]))
def test_other_fill_keeping_reductions_are_sparse(name: str) -> None:
    out, _, peak = _measured(lambda: xp.compute(getattr(xp, name)(_huge(), axis=0)))
    assert out.format != "dense" and out.nnz == 2 and peak < 64
    small = sp.coo_array((VALS, (np.array([0, 1, 2]), COLS)), shape=(3, 13)).toarray()
    got = _entries(out)
    want = getattr(np, name)(small, axis=0) if name != "count_nonzero" else \
        np.count_nonzero(small, axis=0)
    if name == "mean":
        want = small.sum(axis=0) / N
    assert got == pytest.approx({3: float(want[3]), 12: float(want[12])})


@pytest.mark.parametrize("name", ["max", "min", "prod", "all", "argmax", "argmin"])
@pytest.mark.parametrize("axis", [0, 1])
def test_dense_results_past_the_limit_raise_densify_error(name: str, axis: int) -> None:
    a = _huge()
    with pytest.raises(DensifyError, match=r"\(1000000000,\).*set_densify_limit"):
        xp.compute(getattr(xp, name)(a, axis=axis))


def test_fold_counts_past_the_limit_raise_and_an_opt_in_computes() -> None:
    """``all`` along a sparse axis keeps an int64 count per result entry: 8 bytes each."""
    a = sp.random(40, 300, density=0.05, format="coo", random_state=0)
    x = xp.asarray(a)
    with set_densify_limit(300 * 8 - 1), pytest.raises(DensifyError, match="int64"):
        xp.compute(xp.all(x, axis=0))
    with set_densify_limit(300 * 8):
        got = xp.compute(xp.all(x, axis=0))
    np.testing.assert_array_equal(np.asarray(got), np.all(a.toarray(), axis=0))


def _modes(x: Any) -> list[str]:
    return [line.strip() for line in str(xp.explain(x)).splitlines() if "# output" in line]


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["coo", "csr"])
def test_a_row_workspace_past_the_limit_sorts_instead(fmt: str) -> None:
    # 2M columns, 100 entries: the column sum is sparse (far larger than the data,
    # api.plans.reduction_is_dense) and scatters
    m = 2_000_000
    a = sp.random(50, m, density=1e-6, format=fmt, random_state=1)
    x = xp.asarray(a)
    want = np.asarray(a.sum(axis=0)).ravel()
    got = xp.compute(xp.sum(x, axis=0))
    assert any("rowws" in m for m in _modes(xp.sum(x, axis=0)))
    np.testing.assert_allclose(np.asarray(got), want)
    with set_densify_limit(m * 17 - 1):  # mark, list entry and float64 value per column
        e = xp.sum(x, axis=0)
        assert any("ism" in m for m in _modes(e)) and not any("rowws" in m for m in _modes(e))
        got = xp.compute(e)
    assert got.format != "dense"
    np.testing.assert_allclose(np.asarray(got), want)
