"""Reductions of hypersparse arrays never allocate past the densify limit (issue 13, item 4).

A reduction whose result keeps its fill stays sparse, and its scattered writes sort instead
of going through a dense row workspace the size of an axis (``KernelInfo.wide``); one whose
result or per-entry fold counts would be dense past the limit raises ``DensifyError`` naming
the size and ``set_densify_limit``, before allocating anything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.api.stored.eager import stored_entries
from lazysparse.formats import DensifyError, set_densify_limit
from tests.conftest import rotation, slow_except

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
    assert peak < 64 and seconds < BOUND_S


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


@pytest.mark.parametrize("name", slow_except(["max", "min", "prod", "all"], ["max", "all"]))
@pytest.mark.parametrize("axis", [0, 1])
def test_fill_folding_reductions_of_a_huge_coo_are_sparse(name: str, axis: int) -> None:
    """The fill is not the identity, but a region holding only the fill reduces to it:
    the result keeps it and stores what differs (``api.fill_folds``)."""
    a = _huge()
    out = _bounded(lambda: xp.compute(getattr(xp, name)(a, axis=axis)))
    assert out.format != "dense" and out.nnz <= 3
    _check(out, *_expected(name, axis, ((N, N), ROWS, COLS, VALS)))


@pytest.mark.parametrize("name", ["argmax", "argmin"])
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
    # api.building.lazy_plans.reduction_is_dense) and scatters
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


# --------------------------------------------------------------------------------------
# issue 32 item 3: csr and csc inputs too, every reduction along every axis, and reads of
# one element or a slice of a lazy reduction: a sparse result (or a small dense one) in
# time and memory of the stored entries and the input's own pointers, or DensifyError

REDUCTIONS = ["sum", "mean", "any", "all", "max", "min", "prod", "count_nonzero"]
LONG = 10**9
SQUARE = 10**8  # a CSR of this many rows holds a 400 MB pointer array
# the traced-memory bound is the precise guard (a pass over 10**9 coordinates allocates
# their pointers); the time bound is a coarse one, loose enough for a loaded 2-core machine
BOUND_S, BOUND_MIB = 5.0, 100.0
SMALL_LIMIT = 64 << 20  # a dense result past this raises in the square tests

Entries = tuple[tuple[int, int], np.ndarray, np.ndarray, np.ndarray]


def _scipy(fmt: str, entries: Entries) -> Any:
    """A scipy array holding ``entries``, its pointers built directly (no COO detour)."""
    shape, rows, cols, vals = entries
    if fmt not in ("csr", "csc"):
        return sp.coo_array((vals, (rows, cols)), shape=shape)
    major, minor, n = (rows, cols, shape[0]) if fmt == "csr" else (cols, rows, shape[1])
    order = np.lexsort((minor, major))
    ptr = np.zeros(n + 1, np.int32)
    np.add.at(ptr, major + 1, 1)
    np.cumsum(ptr, out=ptr)
    cls = sp.csr_array if fmt == "csr" else sp.csc_array
    return cls((vals[order], minor[order].astype(np.int32), ptr), shape=shape)


def _lazy(fmt: str, entries: Entries) -> Any:
    a = xp.asarray(_scipy("coo" if fmt == "dcsr" else fmt, entries))
    return xp.compute(xp.asformat(a, "dcsr")) if fmt == "dcsr" else a


def _expected(name: str, axis: int | None, entries: Entries) -> tuple[Any, float | None]:
    """NumPy's answer on the stored rows and columns plus one unstored row and column
    standing for all the others: per stored coordinate of the result (or the scalar), and
    the value at every other coordinate (None when every coordinate is stored)."""
    shape, rows, cols, vals = entries
    ur, uc = np.unique(rows), np.unique(cols)
    er, ec = int(ur.size < shape[0]), int(uc.size < shape[1])
    small = np.zeros((ur.size + er, uc.size + ec))
    small[np.searchsorted(ur, rows), np.searchsorted(uc, cols)] = vals
    if name == "mean":  # over the whole axis, not the small one
        got = small.sum(axis=axis) / (shape[0] * shape[1] if axis is None else shape[axis])
    else:
        got = getattr(np, name)(small, axis=axis)
    if axis is None:
        return float(got), None
    keys, extra = (uc, ec) if axis == 0 else (ur, er)
    got = np.asarray(got, dtype=float)
    return dict(zip(keys.tolist(), got[:keys.size].tolist(), strict=True)), \
        (float(got[-1]) if extra else None)


def _check(out: Any, want: Any, rest: float | None) -> None:
    """``out`` against ``_expected``: at the stored coordinates and everywhere else."""
    if not isinstance(want, dict):
        assert float(out) == pytest.approx(want)
        return
    if out.format == "dense":  # only where it is small: read it whole
        assert out.shape[0] <= 10**6, out.shape
        arr = np.asarray(out, dtype=float)
        assert {k: float(arr[k]) for k in want} == pytest.approx(want)
        others = np.ones(arr.shape, bool)
        others[list(want)] = False
        assert rest is None or np.all(arr[others] == rest)
        return
    got = _entries(out)
    fill = float(out.tensor().fill_value)
    assert {k: got.get(k, fill) for k in want} == pytest.approx(want)
    if rest is not None:
        assert fill == pytest.approx(rest)
        assert all(v == pytest.approx(rest) for k, v in got.items() if k not in want)


def _bounded(fn: Callable[[], Any], timed: bool = True) -> Any:
    """``fn()`` after a warm-up call, within the time and traced-memory bound."""
    fn()
    out, seconds, peak = _measured(fn)
    assert peak < BOUND_MIB, f"{peak:.1f} MiB traced"
    assert not timed or seconds < BOUND_S, f"{seconds:.2f} s"
    return out


WIDE: Entries = ((1, LONG), np.array([0, 0]), np.array([12345, LONG - 1]),
                 np.array([2.5, -4.0]))
TALL: Entries = ((LONG, 1), np.array([7, 123456]), np.array([0, 0]), np.array([-1.5, 3.0]))


# the fast tier: a fill-keeping sum and a folding all (with its casts)
# and one axis per format, both shapes' sparse results (along the short axis) among them
@pytest.mark.parametrize("name", slow_except(REDUCTIONS, ["sum", "all"]))
@pytest.mark.parametrize(("fmt", "entries", "axis"), rotation(
    [("csr", WIDE), ("csc", TALL), ("dcsr", WIDE), ("coo", TALL)], [0, 1, None],
    ["csr-1xN", "csc-Nx1", "dcsr-1xN", "coo-Nx1"]))
def test_reductions_of_a_long_vector_matrix_are_bounded(fmt: str, entries: Entries,
                                                        axis: int | None, name: str) -> None:
    a = _lazy(fmt, entries)
    long_axis = 1 if entries[0][0] == 1 else 0
    out = _bounded(lambda: xp.compute(getattr(xp, name)(a, axis=axis)))
    _check(out, *_expected(name, axis, entries))
    if axis == 1 - long_axis:  # the result is as long as the matrix: sparse
        assert out.format != "dense" and out.nnz <= 2


SQ: Entries = ((SQUARE, SQUARE), np.array([5, 70, 70, SQUARE - 1]), np.array([3, 3, 9, 12]),
               np.array([1.5, -2.0, 3.0, 4.0]))


@pytest.fixture(scope="module")
def square() -> dict[str, tuple[Any, Entries]]:
    """A 1e8 x 1e8 CSR with 4 entries and its transpose, a CSC sharing its arrays."""
    csr = _scipy("csr", SQ)
    shape, rows, cols, vals = SQ
    return {"csr": (xp.asarray(csr), SQ), "csc": (xp.asarray(csr.T), (shape, cols, rows, vals))}


# the fast tier: sum and any over both formats, one axis each in turn
@pytest.mark.parametrize("name, fmt, axis", rotation(
    [("sum", "csr"), ("sum", "csc"), ("any", "csr"), ("any", "csc")], [0, 1, None],
    slow_cases=[(n, f) for n in ("mean", "count_nonzero") for f in ("csr", "csc")]))
def test_fill_keeping_reductions_of_a_huge_csr_are_sparse_and_bounded(
        square: dict[str, tuple[Any, Entries]], fmt: str, axis: int | None, name: str) -> None:
    """Row sums of a CSR write one entry per stored row (not per row), column sums sort
    their few entries (no dense row workspace of 1e8 columns)."""
    a, entries = square[fmt]
    out = _bounded(lambda: xp.compute(getattr(xp, name)(a, axis=axis)))
    _check(out, *_expected(name, axis, entries))
    if axis is not None:
        assert out.format != "dense" and out.nnz == len(_expected(name, axis, entries)[0])


# the fast tier: max and all over both formats, one axis each in turn
@pytest.mark.parametrize("name, fmt, axis", rotation(
    [("max", "csr"), ("max", "csc"), ("all", "csr"), ("all", "csc")], [0, 1, None],
    slow_cases=[(n, f) for n in ("min", "prod") for f in ("csr", "csc")]))
def test_fill_folding_reductions_of_a_huge_csr_are_sparse_and_bounded(
        square: dict[str, tuple[Any, Entries]], fmt: str, axis: int | None, name: str) -> None:
    """``max``/``min``/``prod``/``all`` visit the stored entries and count them per result
    entry; the fill folds in where a region has unstored points (issue 32 item 3): a
    sparse result whose fill is the value of an all-fill region, even past the limit."""
    a, entries = square[fmt]
    with set_densify_limit(SMALL_LIMIT):
        out = _bounded(lambda: xp.compute(getattr(xp, name)(a, axis=axis)))
    _check(out, *_expected(name, axis, entries))
    if axis is not None:
        assert out.format != "dense" and out.nnz <= len(_expected(name, axis, entries)[0])


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_element_and_slice_reads_of_lazy_reductions_are_bounded(
        square: dict[str, tuple[Any, Entries]], fmt: str) -> None:
    a, entries = square[fmt]
    col_sums, _ = _expected("sum", 0, entries)
    row_sums, _ = _expected("sum", 1, entries)
    for k in (*col_sums, 5, 11):
        got = _bounded(lambda k=k: float(xp.sum(a, axis=0)[k]))
        assert got == pytest.approx(col_sums.get(k, 0.0))
    for k in (*row_sums, 6):
        got = _bounded(lambda k=k: float(xp.sum(a, axis=1)[k]))
        assert got == pytest.approx(row_sums.get(k, 0.0))
    part = _bounded(lambda: np.asarray(xp.compute(xp.sum(a, axis=1)[10:80])))
    want = np.zeros(70)
    for k, v in row_sums.items():
        if 10 <= k < 80:
            want[k - 10] = v
    np.testing.assert_allclose(part, want)


HUGE_CHILD = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
import numpy as np, scipy.sparse as sp
import lazysparse as xp
n = 10**9
rows, cols = np.array([5, 70, 70, n - 1]), np.array([3, 3, 9, 12])
indptr = np.zeros(n + 1, np.int32)
np.add.at(indptr, rows + 1, 1)
np.cumsum(indptr, out=indptr)
a = xp.asarray(sp.csr_array((np.array([1.5, -2.0, 3.0, 4.0]), cols.astype(np.int32), indptr),
                            shape=(n, n)))
def entries(x):
    t = xp.compute(x).tensor()
    from lazysparse.api.stored.eager import stored_entries
    c, v = stored_entries(t)
    return {int(k): float(w) for k, w in zip(c[0], v)}
print(json.dumps({
    "sum1": entries(xp.sum(a, axis=1)), "mean1": entries(xp.mean(a, axis=1)),
    "any1": entries(xp.any(a, axis=1)), "sum0": entries(xp.sum(a, axis=0)),
    "el0": float(xp.sum(a, axis=0)[3]), "el1": float(xp.sum(a, axis=1)[70])}))
"""


@pytest.mark.slow
def test_reductions_of_a_1e9_csr_in_a_capped_child() -> None:
    """The reported case: a 1e9 x 1e9 CSR (4 GB of pointers) under an 8 GB address-space
    cap, so an allocation past it is a traceback, not the machine's OOM killer."""
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = dict(os.environ, PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", HUGE_CHILD], capture_output=True, text=True,
                          env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    n = 10**9
    assert got["sum1"] == {"5": 1.5, "70": 1.0, str(n - 1): 4.0}
    assert got["mean1"] == pytest.approx({"5": 1.5 / n, "70": 1.0 / n, str(n - 1): 4.0 / n})
    assert got["any1"] == {"5": 1.0, "70": 1.0, str(n - 1): 1.0}
    assert got["sum0"] == {"3": -0.5, "9": 3.0, "12": 4.0}
    assert got["el0"] == -0.5 and got["el1"] == 1.0


@pytest.mark.parametrize("name", ["max", "min", "prod", "all"])
def test_a_fold_within_the_limit_holds_only_stored_entries(name: str) -> None:
    """``max(A, axis=1)`` of a 1e7-row CSR: within the limit, but a dense result would
    fold 1e7 entries (and a float ``prod`` visited all 1e14 points); the fill-folding
    result holds only the rows that differ from the fill."""
    n = 10**7
    entries: Entries = ((n, n), np.array([5, 70, 70, n - 1]), np.array([3, 3, 9, 12]),
                        np.array([1.5, -2.0, 3.0, 4.0]))
    a = xp.asarray(_scipy("csr", entries))
    out = _bounded(lambda: xp.compute(getattr(xp, name)(a, axis=1)))
    assert out.format != "dense"
    _check(out, *_expected(name, 1, entries))


def test_prod_of_a_1e7_square_csr_is_bounded() -> None:
    """The reported hang: ``prod(A, axis=1)`` of a 1e7 x 1e7 CSR with 5 entries looped over
    1e14 points; each row's product is 0 unless the row is full."""
    n = 10**7
    entries: Entries = ((n, n), np.array([0, 3, 3, 42, n - 1]), np.array([1, 0, n - 1, 7, 5]),
                        np.array([2.0, -1.0, 3.0, 0.5, 8.0]))
    a = xp.asarray(_scipy("csr", entries))
    for axis in (0, 1):
        out = _bounded(lambda axis=axis: xp.compute(xp.prod(a, axis=axis)))
        assert out.format != "dense" and out.nnz == 0
        assert float(out.tensor().fill_value) == 0.0


def _inf_nan_rows() -> tuple[Entries, np.ndarray]:
    """Rows with an inf, a NaN, a -inf and finite values, finite negatives, a full row:
    4 x 5e6 and its NumPy-sized equivalent (the stored columns plus one empty one)."""
    m = 5 * 10**6
    cols = np.array([3, 9, 3, 3, 9, 0, 3, 9, m - 1])
    rows = np.array([0, 0, 1, 2, 2, 3, 3, 3, 3])
    vals = np.array([np.inf, 2.0, np.nan, -1.0, 3.0, 1.0, -np.inf, -2.0, 5.0])
    entries: Entries = ((4, m), rows, cols, vals)
    uc = np.unique(cols)
    small = np.zeros((4, uc.size + 1))
    small[rows, np.searchsorted(uc, cols)] = vals
    return entries, small


@pytest.mark.parametrize("fmt", slow_except(["csr", "csc", "coo"], ["csr"]))
@pytest.mark.parametrize("name", slow_except(["prod", "max", "min", "all"], ["prod", "min"]))
def test_fill_folds_keep_numpy_values_with_inf_and_nan(fmt: str, name: str) -> None:
    """0 * inf is NaN: a float product over an unstored 0 is NaN where the region stores an
    inf or NaN, else a zero; NaN propagates through max and min, as NumPy's."""
    entries, small = _inf_nan_rows()
    a = xp.asarray(_scipy(fmt, entries))
    uc = np.unique(entries[2])
    with np.errstate(all="ignore"):
        rows = getattr(np, name)(small, axis=1)
        col_want = getattr(np, name)(small, axis=0)
    got = np.asarray(xp.compute(getattr(xp, name)(a, axis=1)))
    np.testing.assert_array_equal(got, rows)
    cols = xp.compute(getattr(xp, name)(a, axis=0))
    assert cols.format != "dense"
    got_cols = _entries(cols)
    fill = cols.tensor().fill_value
    np.testing.assert_array_equal(np.array([got_cols.get(int(k), fill) for k in uc]),
                                  col_want[:-1])
    np.testing.assert_array_equal(fill, col_want[-1])


FillVariant = tuple[Callable[[Any], Any], Callable[[np.ndarray], np.ndarray], float]


def _fill_variants() -> dict[str, FillVariant]:
    """Maps of a fill-0 array giving other fills: the lazy map, the same map of the stored
    values in NumPy, and the fill."""
    return {"fill1": (lambda a: xp.where(a != 0, a, 1.0), lambda v: v, 1.0),
            "fill-2": (lambda a: xp.where(a != 0, a, -2.0), lambda v: v, -2.0),
            "nan": (lambda a: xp.where(a != 0, a, np.nan), lambda v: v, np.nan),
            "int": (lambda a: xp.astype(a, xp.int64), lambda v: v.astype(np.int64), 0)}


@pytest.mark.parametrize("variant", slow_except(["fill1", "fill-2", "nan", "int"],
                                                ["fill1", "nan"]))
@pytest.mark.parametrize("name", slow_except(["prod", "max", "min", "all", "any"], ["prod", "any"]))
def test_fill_folds_of_other_fills_match_numpy(variant: str, name: str) -> None:
    """Fill 1, fill -2 (its product overflows along the long axis), NaN fill and integers:
    the rewritten reductions give NumPy's values on the stored columns plus an empty one
    (``fill_folds``; only values here: a fill-1 operand's sums visit every point yet)."""
    fn, values, fill = _fill_variants()[variant]
    m = 2 * 10**6
    rows, cols = np.array([0, 0, 1, 2, 2]), np.array([4, m - 1, 4, 0, 7])
    vals = np.array([3.0, -1.0, 2.0, 5.0, -4.0])
    a = xp.compute(fn(xp.asarray(_scipy("csr", ((3, m), rows, cols, vals)))))
    uc = np.unique(cols)
    stored = values(vals)
    small = np.full((3, uc.size + 1), fill, dtype=stored.dtype)
    small[rows, np.searchsorted(uc, cols)] = stored
    whole = np.concatenate([small[:, :-1], small[:, -1:].repeat(m - uc.size, axis=1)], axis=1)
    with np.errstate(all="ignore"):
        want_rows = getattr(np, name)(whole, axis=1)
        want_cols = getattr(np, name)(small, axis=0)
    np.testing.assert_array_equal(np.asarray(xp.compute(getattr(xp, name)(a, axis=1))),
                                  want_rows)
    out = xp.compute(getattr(xp, name)(a, axis=0))
    if out.format == "dense":  # the fill-keeping pieces of a fill-1 operand visit every point
        got, f = dict(enumerate(np.asarray(out).tolist())), None
    else:
        got, f = _entries(out), out.tensor().fill_value
    np.testing.assert_array_equal(np.array([got.get(int(k), f) for k in uc]), want_cols[:-1])
    np.testing.assert_array_equal(got.get(1, f), want_cols[-1])
