"""Elementwise intersections of two sparse operands (``A * B``): the two-way merge's
branchless cursor advance, the single fill pass bounded by the shorter operand (and, for a
DCSR result, by the row extent), and its chunked variant; values against NumPy, stored
counts against scipy / the fill rule."""

from __future__ import annotations

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from helpers import F, acc, agg, compute, dense, mj, plan, tensor

import lazysparse as xp
import lazysparse.kernels.backends.execute as ex
import lazysparse.kernels.backends.numba.cpu_host as host
from lazysparse.kernels.backends import execute_plan
from lazysparse.kernels.compile.planning.kernel_plan import EntryBound
from lazysparse.logic.nodes import Alias, Reorder
from tests.conftest import rotation

RNG = np.random.default_rng(23)

DTYPES = [np.bool_, np.int32, np.int64, np.float32, np.float64, np.complex128]


def sprand(shape, density, dtype, fill=0):
    """A dense array holding ``fill`` off a random pattern; stored values never equal it."""
    vals = RNG.integers(2, 9, shape).astype(dtype) if dtype != np.bool_ else \
        np.ones(shape, bool)
    if np.issubdtype(dtype, np.complexfloating):
        vals = vals + 1j * RNG.integers(-3, 3, shape)
    if np.issubdtype(dtype, np.floating):
        vals = vals * RNG.random(shape).astype(dtype) + 1.5
    return np.where(RNG.random(shape) < density, vals, np.asarray(fill).astype(dtype))


def multiply_query(ofmt: str):
    return compute("out", ofmt, 2, Reorder(mj("multiply", acc("A", "i", "j"),
                                              acc("B", "i", "j")), F("i", "j")))


def run_mul(A, B, fa="csr", fb="csr", ofmt="csr", fill=0):
    ta, tb = tensor(A, fa, fill), tensor(B, fb, fill)
    return execute_plan(plan({"A": ta, "B": tb}, multiply_query(ofmt)))[0]


def check(out, ref, fill):
    """Values as NumPy's; stored entries exactly those unequal to the result fill."""
    got = dense(out)
    if ref.dtype == np.bool_:
        np.testing.assert_array_equal(got, ref)
    else:
        np.testing.assert_allclose(got, ref, rtol=1e-6, equal_nan=True)
    keep = ~np.isnan(ref) if np.isnan(complex(fill)) else ref != np.asarray(fill, ref.dtype)
    assert out.values.size == int(np.count_nonzero(keep))


@pytest.fixture
def one_thread():
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    yield
    numba.set_num_threads(before)


@pytest.fixture
def single_passes(monkeypatch):
    seen: list = []
    orig = host._single_pass  # noqa: SLF001
    monkeypatch.setattr(host, "_single_pass", lambda k, *a, **kw: seen.append(k) or
                        orig(k, *a, **kw))
    return seen


@pytest.mark.parametrize("dtype, ofmt", rotation(DTYPES, ["csr", "dcsr", "coo"],
                                                 [np.dtype(d).name for d in DTYPES]))
def test_intersection_values_and_stored_counts(dtype, ofmt, one_thread, single_passes):
    A, B = sprand((40, 33), 0.35, dtype), sprand((40, 33), 0.35, dtype)
    A[3], B[7] = 0, 0  # empty rows in one operand each
    A[20:25], B[20:25] = 0, 0  # rows empty in both
    out = run_mul(A, B, ofmt=ofmt)
    check(out, A * B, 0)
    assert len(single_passes) == 1  # no count pass, whatever the layout of the rows


@pytest.mark.parametrize("fill", [0.0, np.nan, 1.0])
@pytest.mark.parametrize("ofmt", ["csr", "dcsr"])
def test_intersection_fills(fill, ofmt, one_thread):
    """Fill 0 annihilates (an intersection); NaN and 1 do not (a union or a range)."""
    A, B = sprand((30, 21), 0.3, np.float64, fill), sprand((30, 21), 0.3, np.float64, fill)
    out = run_mul(A, B, ofmt=ofmt, fill=fill)
    with np.errstate(invalid="ignore"):
        check(out, A * B, fill * fill)


@pytest.mark.parametrize("fa,fb", [("csr", "csr"), ("dcsr", "dcsr"), ("coo", "csr"),
                                   ("csr", "coo")])
def test_intersection_operand_layouts(fa, fb, one_thread):
    A, B = sprand((26, 30), 0.4, np.float64), sprand((26, 30), 0.4, np.float64)
    A[::4] = 0
    for ofmt in ("csr", "dcsr"):
        check(run_mul(A, B, fa, fb, ofmt), A * B, 0.0)


@pytest.mark.parametrize("ofmt", ["csr", "dcsr"])
def test_disjoint_identical_and_empty_patterns(ofmt, one_thread):
    A = sprand((18, 24), 0.5, np.float64)
    odd = A.copy()
    odd[:, ::2] = 0
    even = A.copy()
    even[:, 1::2] = 0
    out = run_mul(odd, even, ofmt=ofmt)  # disjoint: nothing stored
    check(out, odd * even, 0.0)
    assert out.values.size == 0
    check(run_mul(A, A, ofmt=ofmt), A * A, 0.0)  # identical patterns: every entry matches
    check(run_mul(A, np.zeros_like(A), ofmt=ofmt), np.zeros_like(A), 0.0)
    one_col = np.zeros_like(A)
    one_col[:, -1] = 2.0  # matches only at each row's last stored coordinate
    check(run_mul(A, one_col, ofmt=ofmt), A * one_col, 0.0)


def test_products_equal_to_fill_are_dropped(one_thread):
    """Underflow (1e-200 * 1e-200) and integer wrap-around to 0 are not stored."""
    A, B = np.zeros((4, 6)), np.zeros((4, 6))
    A[0, :3] = [1e-200, 2.0, 3.0]
    B[0, :3] = [1e-200, 4.0, 0.5]
    out = run_mul(A, B, ofmt="dcsr")
    check(out, A * B, 0.0)
    assert out.values.size == 2
    Ai, Bi = np.zeros((3, 5), np.int32), np.zeros((3, 5), np.int32)
    Ai[1, 1:3], Bi[1, 1:3] = [65536, 3], [65536, 5]  # 2**32 wraps to 0 in int32
    with np.errstate(over="ignore"):
        check(run_mul(Ai, Bi, ofmt="csr"), Ai * Bi, 0)


def test_bounds_are_extent_and_least(one_thread):
    """A DCSR result's rows are bounded by the row extent, its entries by the shorter
    operand's positions (both drive an intersection); a union keeps their sum."""
    A, B = sprand((10, 12), 0.3, np.float64), sprand((10, 12), 0.3, np.float64)
    env = {Alias("A"): tensor(A, "csr"), Alias("B"): tensor(B, "csr")}
    k = ex.compile_query(multiply_query("dcsr"), env)
    rows, cols = k.lowered.bounds
    assert rows.extent is not None and cols.least and len(cols.levels) == 2
    assert rows.count(tuple(env.values()), {rows.extent: 10}) == 10
    assert cols.count(tuple(env.values()), {}) == min(np.count_nonzero(A),
                                                      np.count_nonzero(B))
    add = compute("out", "csr", 2, Reorder(mj("add", acc("A", "i", "j"), acc("B", "i", "j")),
                                           F("i", "j")))
    (ub,) = ex.compile_query(add, env).lowered.bounds
    assert isinstance(ub, EntryBound) and not ub.least and ub.extent is None


def test_row_extent_far_past_data_counts_first(one_thread, single_passes, monkeypatch):
    monkeypatch.setattr(host, "SINGLE_PASS_SLACK", 0)
    monkeypatch.setattr(host, "SINGLE_PASS_MIN", 0)
    A, B = sprand((25, 9), 0.3, np.float64), sprand((25, 9), 0.3, np.float64)
    check(run_mul(A, B, ofmt="dcsr"), A * B, 0.0)
    assert single_passes == []


def test_merge_advances_by_comparison():
    """The intersection's cursors move by a comparison (no less-than branch); a union
    keeps its three-way branch."""
    A = sprand((6, 7), 0.5, np.float64)
    env = {Alias("A"): tensor(A, "csr"), Alias("B"): tensor(A, "csr")}
    src = ex.compile_query(multiply_query("csr"), env).source
    assert "np.int64((j0_1 <= j1_1))" in src and "(j0_1 < j1_1)" not in src
    add = compute("out", "csr", 2, Reorder(mj("add", acc("A", "i", "j"), acc("B", "i", "j")),
                                           F("i", "j")))
    assert "(j0_1 < j1_1)" in ex.compile_query(add, env).source


@pytest.mark.parametrize("dtype", [np.int64, np.float64, np.complex128])
def test_intersection_reductions(dtype, one_thread):
    """Row sums and the total of an intersection (the merge feeding an accumulator)."""
    A, B = sprand((35, 28), 0.4, dtype), sprand((35, 28), 0.4, dtype)
    A[5] = 0
    prod = Reorder(mj("multiply", acc("A", "i", "j"), acc("B", "i", "j")), F("i", "j"))
    ta, tb = tensor(A, "csr"), tensor(B, "csr")
    rows = execute_plan(plan({"A": ta, "B": tb},
                             compute("out", "dense", 1, agg("add", 0, prod, "j"))))[0]
    np.testing.assert_allclose(dense(rows), (A * B).sum(axis=1), rtol=1e-9)
    tot = execute_plan(plan({"A": ta, "B": tb},
                            compute("out", "dense", 0, agg("add", 0, prod, "i", "j"))))[0]
    np.testing.assert_allclose(dense(tot), (A * B).sum(), rtol=1e-9)


def test_chunked_intersection_regions(monkeypatch):
    """Two threads: each chunk fills a region bounded by the shorter of its rows'
    operands (and, for DCSR, by its rows), then the regions are moved together; no
    count pass for either layout."""
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs two Numba threads")
    monkeypatch.setattr(host, "PARALLEL_MIN_ITERATIONS", 1)
    before = numba.get_num_threads()
    numba.set_num_threads(2)
    seen, bounded = [], []
    orig, orig_b = host.chunked_single_pass, host.chunk_group_bounds
    monkeypatch.setattr(host, "chunked_single_pass",
                        lambda *a, **kw: seen.append(1) or orig(*a, **kw))
    monkeypatch.setattr(host, "chunk_group_bounds",
                        lambda *a: bounded.append(orig_b(*a)) or bounded[-1])
    try:
        for op, ref in (("multiply", np.multiply), ("add", np.add)):
            A, B = sprand((57, 31), 0.4, np.float64), sprand((57, 31), 0.15, np.float64)
            A[:12] = 0  # the first chunk's rows match nothing
            B[40:] = 0
            A[30, :5], B[30, :5] = 2.0, -2.0  # sums equal to the fill: dropped
            seen.clear()
            bounded.clear()
            for ofmt in ("csr", "dcsr"):
                body = Reorder(mj(op, acc("A", "i", "j"), acc("B", "i", "j")), F("i", "j"))
                out = execute_plan(plan({"A": tensor(A, "csr"), "B": tensor(B, "csr")},
                                        compute("out", ofmt, 2, body)))[0]
                check(out, ref(A, B), 0.0)
            assert seen == [1]  # the CSR result
            assert len(bounded) == 1 and bounded[0] is not None  # the DCSR one
            ptr = np.asarray(out.levels[1].ptr)
            assert ptr[0] == 0 and ptr[-1] == out.values.size and np.all(np.diff(ptr) > 0)
    finally:
        numba.set_num_threads(before)


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64, np.complex128])
def test_user_api_multiply_matches_scipy(dtype):
    """``A * B`` of two CSR arrays (different patterns) as scipy's ``multiply``: values,
    and as many stored entries (neither stores a zero product)."""
    n = 300
    a = sp.random_array((n, n), density=0.03, format="csr", rng=RNG, dtype=np.float64)
    b = sp.random_array((n, n), density=0.03, format="csr", rng=RNG, dtype=np.float64)
    b = (b + a.multiply(0.5)).tocsr()  # half of b's entries on a's pattern
    a.data[:] = RNG.integers(1, 50, a.nnz)
    b.data[:] = RNG.integers(1, 50, b.nnz)
    keep = np.ones(n)
    keep[::7] = 0  # empty rows
    a = (sp.diags_array(keep) @ a).tocsr()
    a.eliminate_zeros()
    a, b = a.astype(dtype), b.astype(dtype)
    ref = a.multiply(b).tocsr()
    ref.eliminate_zeros()
    out = xp.compute(xp.asarray(a) * xp.asarray(b))
    np.testing.assert_allclose(xp.to_numpy(out), ref.toarray(), rtol=1e-6)
    assert out.tensor().values.size == ref.nnz
