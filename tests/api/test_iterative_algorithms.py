"""Iterative algorithms written the way users write them (a Python loop that rebinds its
variables, ``xp.compute`` or ``float()`` once per iteration) on small graphs given as NumPy
arrays and scipy.sparse CSR/CSC/COO arrays, checked against scipy.sparse.csgraph,
scipy.sparse.linalg, NumPy and networkx; long loops (computed every iteration, or never)
finish, equal NumPy and keep their peak memory flat."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import connected_components, shortest_path
from scipy.sparse.linalg import cg as scipy_cg
from scipy.sparse.linalg import eigsh

import lazysparse as xp
from tests.conftest import examples, slow_except

FORMATS = ["dense", "csr", "csc", "coo"]
F64 = [(f, np.float64) for f in FORMATS]
F32 = [("dense", np.float32), ("csr", np.float32)]
FAST_CASES = [("csr", np.float64), ("coo", np.float64), ("dense", np.float32)]
SRC = Path(__file__).resolve().parents[2] / "src"


def graph(n: int, per_row: float, seed: int, *, symmetric: bool = False,
          unit: bool = False) -> sp.csr_array:
    """A random graph with about ``per_row`` edges per node (weights in (0.5, 1.5))."""
    rng = np.random.default_rng(seed)
    a = sp.random_array((n, n), density=per_row / n, format="csr", rng=rng,
                        data_sampler=lambda size: rng.random(size) + 0.5)
    if symmetric:
        a = (a + a.T).tocsr()
    if unit:
        a.data[:] = 1.0
    return a


def user_input(a: sp.csr_array, fmt: str, dtype: object = np.float64) -> object:
    """What a user hands to ``xp.asarray``: a NumPy array or a scipy sparse array."""
    a = a.astype(dtype)
    return a.toarray() if fmt == "dense" else a.asformat(fmt)


# ------------------------------------------------------------------------------ PageRank

@pytest.mark.parametrize("fmt,dtype", slow_except(F64 + F32, FAST_CASES))
def test_pagerank_matches_networkx(fmt, dtype):
    rtol = 1e-7 if dtype == np.float64 else 1e-4
    n, alpha, tol = 120, 0.85, 1e-10
    keep = np.ones(n)
    keep[[5, 17]] = 0  # dangling nodes: their rank spreads evenly, as networkx does
    a = sp.csr_array(sp.diags_array(keep) @ graph(n, 3, seed=1))
    a.eliminate_zeros()
    deg = np.asarray(a.sum(axis=1)).ravel()
    P = xp.asarray(user_input(sp.diags_array(np.divide(1, deg, where=deg > 0,
                                                       out=np.zeros(n))) @ a, fmt, dtype))
    dangling = xp.asarray((deg == 0).astype(dtype))
    x = xp.full(n, 1.0 / n, dtype=dtype)
    for _ in range(200):
        x_old = x
        x = alpha * (P.T @ x) + (alpha * xp.vecdot(dangling, x) + (1 - alpha)) / n
        x = xp.compute(x)
        if float(xp.sum(xp.abs(x - x_old))) < n * tol:
            break
    want = nx.pagerank(nx.from_scipy_sparse_array(a, create_using=nx.DiGraph), alpha=alpha,
                       tol=tol, max_iter=500)
    assert x.dtype == dtype
    np.testing.assert_allclose(np.asarray(x), [want[i] for i in range(n)], rtol=rtol)


# ------------------------------------------------------------------------------ CG

def laplacian_2d(side: int) -> sp.csr_array:
    t = sp.diags_array([-np.ones(side - 1), 4 * np.ones(side), -np.ones(side - 1)],
                       offsets=[-1, 0, 1])
    off = sp.diags_array([-np.ones(side - 1), -np.ones(side - 1)], offsets=[-1, 1])
    return (sp.kron(sp.eye_array(side), t) + sp.kron(off, sp.eye_array(side))).tocsr()


@pytest.mark.parametrize("fmt,dtype", slow_except(F64 + F32, FAST_CASES))
def test_conjugate_gradient_on_a_laplacian(fmt, dtype):
    side, rtol = 10, 1e-8 if dtype == np.float64 else 1e-3
    L = laplacian_2d(side)
    b_np = np.random.default_rng(2).random(side * side).astype(dtype)
    A, b = xp.asarray(user_input(L, fmt, dtype)), xp.asarray(b_np)
    x = xp.zeros(side * side, dtype=dtype)
    r = b - A @ x
    p = r
    rr = float(xp.vecdot(r, r))
    bnorm = float(xp.linalg.vector_norm(b))
    for _ in range(500):
        Ap = A @ p
        alpha = rr / float(xp.vecdot(p, Ap))
        x = x + alpha * p
        r = r - alpha * Ap
        rr_new = float(xp.vecdot(r, r))
        if math.sqrt(rr_new) < 1e-10 * bnorm or rr_new == 0:
            break
        p = r + (rr_new / rr) * p
        x, r, p = xp.compute(x, r, p)
        rr = rr_new
    want = np.linalg.solve(L.toarray(), b_np.astype(np.float64))
    ref, info = scipy_cg(L, b_np.astype(np.float64), rtol=1e-12)
    assert info == 0 and x.dtype == dtype
    np.testing.assert_allclose(np.asarray(x), want, rtol=rtol, atol=rtol * np.abs(want).max())
    np.testing.assert_allclose(ref, want, rtol=1e-8)


# ------------------------------------------------------------------------------ BFS

def bfs_levels(A: xp.LazyArray, source: int, frontier_format: str = "dense") -> np.ndarray:
    """Levels by frontier expansion: a 0/1 frontier vector and a visited mask."""
    n = A.shape[0]
    frontier = xp.asarray((np.arange(n) == source).astype(np.float64), format=frontier_format)
    visited = frontier > 0
    levels = xp.where(visited, 0, -1)
    depth = 0
    while True:
        depth += 1
        new = ((A @ frontier) > 0) & ~visited
        frontier = xp.astype(new, xp.float64)
        visited = visited | new
        levels = xp.where(new, depth, levels)
        frontier, visited, levels = xp.compute(frontier, visited, levels)
        if int(xp.sum(frontier)) == 0:
            return np.asarray(levels)


def scipy_levels(a: sp.csr_array, source: int) -> np.ndarray:
    d = shortest_path(a, unweighted=True, indices=source)
    return np.where(np.isinf(d), -1, d).astype(np.int64)


@pytest.mark.parametrize("fmt", slow_except(FORMATS, ["coo"]))
@pytest.mark.parametrize("frontier_format", slow_except(["dense", "coo"], ["dense"]))
def test_bfs_levels_match_shortest_paths(fmt, frontier_format):
    a = graph(200, 1.2, seed=3, symmetric=True, unit=True)  # several components
    got = bfs_levels(xp.asarray(user_input(a, fmt)), 7, frontier_format)
    want = scipy_levels(a, 7)
    assert (want == -1).any() and want.max() >= 3  # unreachable nodes and depth
    np.testing.assert_array_equal(got, want)
    order = sp.csgraph.breadth_first_order(a, 7, return_predecessors=False)
    np.testing.assert_array_equal(np.sort(order), np.flatnonzero(got >= 0))


@settings(max_examples=examples(10), deadline=None)
@given(st.integers(20, 120), st.floats(0.5, 3.0), st.integers(0, 10**6),
       st.sampled_from(FORMATS))
def test_bfs_random_graphs(n, per_row, seed, fmt):
    a = graph(n, per_row, seed, symmetric=True, unit=True)
    source = seed % n
    np.testing.assert_array_equal(bfs_levels(xp.asarray(user_input(a, fmt)), source),
                                  scipy_levels(a, source))


# ------------------------------------------------------------------------------ components

def components(A: xp.LazyArray) -> np.ndarray:
    """Label propagation: each node takes the smallest label among itself and neighbours."""
    n = A.shape[0]
    lab = xp.arange(n)
    while True:
        new = xp.minimum(lab, xp.min(xp.where(A != 0, lab[None, :], n), axis=1))
        new = xp.compute(new)
        if not bool(xp.any(new != lab)):
            return np.asarray(lab)
        lab = new


def smallest_member_labels(a: sp.csr_array) -> np.ndarray:
    """scipy's components, each labelled by its smallest node (what propagation finds)."""
    _, comp = connected_components(a, directed=False)
    first = np.full(comp.max() + 1, a.shape[0])
    np.minimum.at(first, comp, np.arange(a.shape[0]))
    return first[comp]


@pytest.mark.parametrize("fmt", FORMATS)
def test_label_propagation_finds_connected_components(fmt):
    a = graph(150, 1.0, seed=4, symmetric=True)
    want = smallest_member_labels(a)
    assert len(np.unique(want)) > 3
    np.testing.assert_array_equal(components(xp.asarray(user_input(a, fmt))), want)


@settings(max_examples=examples(10), deadline=None)
@given(st.integers(10, 100), st.floats(0.3, 2.5), st.integers(0, 10**6),
       st.sampled_from(FORMATS))
def test_label_propagation_random_graphs(n, per_row, seed, fmt):
    a = graph(n, per_row, seed, symmetric=True)
    np.testing.assert_array_equal(components(xp.asarray(user_input(a, fmt))),
                                  smallest_member_labels(a))


# ------------------------------------------------------------------------------ power

@pytest.mark.parametrize("fmt,dtype", slow_except(F64 + F32, FAST_CASES))
def test_power_iteration_finds_the_largest_eigenpair(fmt, dtype):
    n, rtol = 100, 1e-8 if dtype == np.float64 else 1e-4
    a = graph(n, 4, seed=5, symmetric=True)  # nonnegative: the Perron root dominates
    A = xp.asarray(user_input(a, fmt, dtype))
    v, lam = xp.full(n, 1 / math.sqrt(n), dtype=dtype), 0.0
    for _ in range(2000):
        w = A @ v
        norm = float(xp.linalg.vector_norm(w))
        v = xp.compute(w / norm)
        if abs(norm - lam) < 1e-13 * norm:
            break
        lam = norm
    vals, vecs = eigsh(a, k=1, which="LA")
    assert np.isclose(norm, np.linalg.eigvalsh(a.toarray())[-1], rtol=rtol)
    np.testing.assert_allclose(norm, vals[0], rtol=rtol)
    want = vecs[:, 0] * np.sign(vecs[:, 0].sum())
    np.testing.assert_allclose(np.asarray(v), want, atol=50 * rtol)


# ------------------------------------------------------------------------------ long loops

@pytest.mark.parametrize("fmt", slow_except(["dense", "coo"], ["dense"]))
def test_ten_thousand_computed_iterations(fmt):
    rng = np.random.default_rng(6)
    y_np = np.where(rng.random(40) < 0.5, rng.random(40), 0.0)
    x_np = y_np.copy()
    y = xp.asarray(y_np, format=fmt)
    x = y
    for _ in range(10_000):
        x = 0.5 * x + y
        x = xp.compute(x)
        x_np = 0.5 * x_np + y_np
    np.testing.assert_allclose(np.asarray(x), x_np)


def test_ten_thousand_never_computed_iterations():
    y_np = np.arange(30.0)
    x_np = np.ones(30)
    x, y = xp.asarray(x_np), xp.asarray(y_np)
    for _ in range(10_000):
        x = x * 0.5 + y
        x_np = x_np * 0.5 + y_np
    np.testing.assert_allclose(np.asarray(x), x_np)


PEAK_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import lazysparse as xp

    def peak():
        with open("/proc/self/status") as f:  # this process's own high-water mark
            return next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith("VmHWM:"))

    computed, n = sys.argv[1] == "computed", 20_000
    y = xp.asarray(np.linspace(0.0, 1.0, n))
    x, peaks = y, {}
    for it in range(1, 10_001):
        x = 0.5 * x + y
        if computed:
            x = xp.compute(x)
        if it in (2_000, 10_000):
            float(x[0])  # observe (computes a never-computed loop)
            peaks[it] = peak()
    want = np.linspace(0.0, 1.0, n) * 2 - np.linspace(0.0, 1.0, n) * 0.5 ** 10_000
    print(json.dumps({"peaks": peaks, "ok": bool(np.allclose(np.asarray(x), want))}))
""")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmHWM (Linux)")
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["computed", "never_computed"])
def test_peak_memory_does_not_grow_with_iterations(mode):
    """A loop keeping 8,000 more iterations of history would hold 8,000 x 160 KB = 1.3 GB
    more; its peak after 10,000 iterations stays within 64 MB of its peak after 2,000."""
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", PEAK_CHILD, mode], capture_output=True,
                          text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert res["ok"]
    peaks = {int(k): v for k, v in res["peaks"].items()}
    assert peaks[10_000] - peaks[2_000] < 64 * 2**20, peaks
