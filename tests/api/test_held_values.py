"""Values computed once (issue 23, item 1): natural loops that never call ``xp.compute``
run one iteration's kernels per observation, not their whole history; what a compute
keeps is listed by ``xp.explain``; fusion stays where a value is read once."""

from __future__ import annotations

import gc

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.api.array import memo
from lazysparse.api.array.held_values import _uncomputed_history
from lazysparse.logic.nodes import Aggregate, Plan
from lazysparse.logic.traversal import walk


def _aggregates(plan: object) -> int:
    """Distinct reductions a plan runs (each SpMV/dot is one)."""
    assert isinstance(plan, Plan)
    return sum(isinstance(n, Aggregate) for n in walk(plan))


def _laplacian(n: int) -> sp.csr_array:
    return sp.diags_array([-np.ones(n - 1), 2.5 * np.ones(n), -np.ones(n - 1)],
                          offsets=[-1, 0, 1], format="csr")


def test_natural_cg_runs_one_iterations_kernels(count_executions: list[object]) -> None:
    n, iters = 300, 12
    a = _laplacian(n)
    b_np = np.random.default_rng(0).normal(size=n)
    A, b = xp.asarray(a), xp.asarray(b_np)
    x = xp.zeros(n)
    r = b - A @ x
    p = r
    rr = float(xp.vecdot(r, r))
    xn, rn = np.zeros(n), b_np.copy()
    pn, rrn = rn.copy(), float(rn @ rn)
    per_plan = []
    for _ in range(iters):
        Ap = A @ p
        alpha = rr / float(xp.vecdot(p, Ap))
        per_plan.append(_aggregates(count_executions[-1]))
        x = x + alpha * p
        r = r - alpha * Ap
        rr_new = float(xp.vecdot(r, r))
        per_plan.append(_aggregates(count_executions[-1]))
        assert r.result is not None and Ap.result is not None  # kept: read twice / reduction
        p = r + (rr_new / rr) * p
        rr = rr_new
        Apn = a @ pn
        alphan = rrn / (pn @ Apn)
        xn, rn = xn + alphan * pn, rn - alphan * Apn
        rrn_new = rn @ rn
        pn, rrn = rn + (rrn_new / rrn) * pn, rrn_new
        np.testing.assert_allclose(rr, rrn, rtol=1e-9)
    # the plans do not grow with the iteration count: an SpMV and a dot at most each
    assert max(per_plan) <= 2
    np.testing.assert_allclose(np.asarray(x), xn, rtol=1e-9)


def test_natural_gradient_descent_keeps_the_held_weights(
        count_executions: list[object]) -> None:
    rng = np.random.default_rng(1)
    xs = sp.random_array((400, 60), density=0.05, format="csr", random_state=2)
    y_np = (rng.random(400) > 0.5).astype(np.float64)
    X, y = xp.asarray(xs), xp.asarray(y_np)
    n = X.shape[0]
    w, wn = xp.zeros(60), np.zeros(60)
    for _ in range(10):
        p = 1 / (1 + xp.exp(-(X @ w)))
        w = w - 0.5 * (X.T @ (p - y)) / n
        loss = float(-xp.mean(y * xp.log(p) + (1 - y) * xp.log(1 - p)))
        assert w.result is not None  # shares p's history and runs a reduction of its own
        # X @ w, X.T @ (p - y) and the mean: the history of earlier steps is not re-run
        assert _aggregates(count_executions[-1]) <= 3
        pn = 1 / (1 + np.exp(-(xs @ wn)))
        wn = wn - 0.5 * (xs.T @ (pn - y_np)) / n
        np.testing.assert_allclose(
            loss, -np.mean(y_np * np.log(pn) + (1 - y_np) * np.log(1 - pn)), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(w), wn, rtol=1e-10)


def test_natural_pagerank_keeps_each_iterate(count_executions: list[object]) -> None:
    g = sp.random_array((200, 200), density=0.03, format="csr", random_state=3)
    g.data[:] = 1.0
    A = xp.asarray(g)
    deg = xp.sum(A, axis=1)
    P = A / xp.where(deg > 0, deg, 1.0)[:, None]
    x = xp.full(200, 1.0 / 200)
    dn = g.sum(axis=1)
    pn = sp.diags_array(np.where(dn > 0, 1.0 / np.where(dn > 0, dn, 1.0), 0.0)) @ g
    xn = np.full(200, 1.0 / 200)
    for it in range(15):
        x_old = x
        x = 0.85 * (P.T @ x) + 0.15 / 200
        err = float(xp.sum(xp.abs(x - x_old)))
        assert x.result is not None and deg.result is not None
        # this iterate's SpMV and the sum (the first plan also runs the degrees)
        assert _aggregates(count_executions[-1]) <= (3 if it == 0 else 2)
        xn_old, xn = xn, 0.85 * (pn.T @ xn) + 0.15 / 200
        np.testing.assert_allclose(err, np.abs(xn - xn_old).sum(), rtol=1e-9)


def test_values_read_once_stay_fused() -> None:
    """A held elementwise expression of stored data read once is not materialized: the
    plan reading it fuses it (recomputing costs one pass over its inputs)."""
    xs = sp.random_array((50, 40), density=0.1, format="csr", random_state=4)
    X = xp.asarray(xs)
    Y = X * 2.0
    assert float(xp.sum(Y)) == pytest.approx(2 * xs.sum())
    assert Y.result is None
    v = xp.asarray(np.arange(10.0))
    u = v * 2.0
    assert float(xp.sum(u)) == 90.0
    assert u.result is None


def test_sparse_held_larger_than_inputs_is_not_kept() -> None:
    """A held value larger than every stored input (its dense size) is never kept."""
    xs = sp.random_array((300, 300), density=0.01, format="csr", random_state=5)
    X = xp.asarray(xs)
    Z = X + 1.0  # dense 300 x 300, larger than X's 900 entries
    s = xp.sum(Z * 2.0)
    assert float(s) == pytest.approx(2 * (xs.toarray() + 1.0).sum())
    assert Z.result is None


def test_explain_lists_kept_values() -> None:
    a = _laplacian(50)
    A, p = xp.asarray(a), xp.asarray(np.linspace(0.0, 1.0, 50))
    p2 = p * 2.0 + 1.0
    Ap = A @ p2
    text = str(xp.explain(xp.vecdot(p2, Ap)))
    assert "== values kept" in text
    assert "a reduction the user holds" in text
    assert "read more than once by the plan" in text
    assert Ap.result is None  # explain computes nothing


def test_result_outlives_its_array() -> None:
    """An expression built before a compute reads the kept result even after the computed
    array is gone (a loop rebinds its names), and the result is released with the last
    expression that can read it."""
    x = xp.asarray(np.arange(6.0))
    y = xp.exp(x) * 3.0
    z = y + 1.0
    xp.compute(y)
    del y
    gc.collect()
    plan_text = str(xp.explain(z).before)
    assert "exp" not in plan_text
    np.testing.assert_allclose(np.asarray(z), np.exp(np.arange(6.0)) * 3.0 + 1.0)
    before = len(memo._MEMO)
    for _ in range(50):
        t = xp.asarray(np.ones(4)) * 2.0 + 1.0
        u = t - 1.0
        float(xp.sum(u * t))
    del t, u, z
    gc.collect()
    assert len(memo._MEMO) <= before + 2  # flat in the iteration count


def test_write_after_compute_leaves_earlier_expressions_alone() -> None:
    x = xp.asarray(np.arange(5.0)) * 2.0
    z = x + 1.0  # built before x is computed
    xp.compute(x)
    x[0] = 100.0
    np.testing.assert_allclose(np.asarray(z), np.arange(5.0) * 2.0 + 1.0)
    np.testing.assert_allclose(np.asarray(x), [100.0, 2.0, 4.0, 6.0, 8.0])


def test_std_of_sparse_data_iterates_stored_entries_only() -> None:
    """``xp.std(X, axis=0)`` of a sparse matrix: every kernel visits stored entries (the
    fill is a literal in the masked sum), never the dense n x m."""
    rng = np.random.default_rng(6)
    rows, cols = rng.integers(0, 20_000, 100_000), rng.integers(0, 50_000, 100_000)
    xs = sp.coo_array((rng.normal(size=100_000), (rows, cols)), shape=(20_000, 50_000)).tocsr()
    X = xp.asarray(xs)
    text = str(xp.explain(xp.std(X, axis=0)))
    tasks = [float(t.split(")")[0]) for t in text.split("estimated tasks ")[1:]]
    assert tasks and max(tasks) < xs.shape[0] * xs.shape[1] / 100
    got = np.asarray(xp.std(X, axis=0))
    mean = np.asarray(xs.sum(axis=0)).ravel() / xs.shape[0]
    ref = np.sqrt(np.asarray(xs.multiply(xs).sum(axis=0)).ravel() / xs.shape[0] - mean**2)
    np.testing.assert_allclose(got, ref, rtol=1e-7, atol=1e-12)


def test_sparse_held_product_read_row_by_row_is_kept(count_executions: list[object]) -> None:
    """Cosine similarities of a few rows against all, read row by row: the held sparse
    ``S`` (dense size above the input's entries, within 16x) runs once."""
    xs = sp.random_array((400, 300), density=0.02, format="csr", random_state=7)
    X = xp.asarray(xs)
    S = X[:6] @ X.T
    ref = (xs[:6] @ xs.T).toarray()
    for i in range(6):
        np.testing.assert_allclose(np.asarray(S[i]), ref[i], rtol=1e-12)
        assert S.result is not None
    products = [p for p in count_executions if _aggregates(p)]
    assert len(products) == 1


def test_history_behind_a_kept_result_is_not_run() -> None:
    """A plan reads a computed value, not the history behind it: the search for held
    values stops at a kept result (its old expression's arrays are no candidates)."""
    v = xp.asarray(np.arange(6.0))
    t = v * 2.0  # held, read once: left fused when w is computed
    w = xp.exp(t) + 0.0
    s = w * 3.0  # built before w is computed: reads w's old expression
    old_w = w._expr
    xp.compute(w)
    assert t.result is None
    hist = _uncomputed_history([s._expr.arg])
    assert id(old_w) not in hist.nodes and id(t._expr) not in hist.nodes
    assert hist.largest == 6  # w's stored result, the input the plan reads
    assert float(xp.sum(s)) == pytest.approx(3 * np.exp(np.arange(6.0) * 2).sum())


def test_shared_history_search_skips_arrays_built_before_the_plan() -> None:
    """A compute looks only at the held arrays built since its plan's uncomputed history
    began (issue 34): 3,000 older held reductions cost no scan, and a held array sharing
    the plan's history, built after them, is still kept."""
    from lazysparse.api.array import held_values

    rng = np.random.default_rng(7)
    a_np, v_np = sp.random_array((50, 50), density=0.1, format="csr", rng=rng), rng.random(50)
    A, v = xp.asarray(a_np), xp.asarray(v_np)
    old = [A @ (v * float(k)) for k in range(3000)]  # held, uncomputed, older than the plan
    p = v * 3.0 + 1.0
    w = A @ (p - v)  # reads p's history and runs a reduction of its own
    before = held_values.STATS["scanned"]
    got = float(xp.sum(p * 2.0))
    scanned = held_values.STATS["scanned"] - before
    np.testing.assert_allclose(got, np.sum((v_np * 3.0 + 1.0) * 2.0), rtol=1e-12)
    assert w.result is not None  # kept: found among the arrays built since p
    assert scanned <= 3, scanned  # the sum, w and p: not 64 of the 3,000 older ones
    np.testing.assert_allclose(np.asarray(w), a_np @ (v_np * 2.0 + 1.0), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(old[5]), a_np @ (v_np * 5.0), rtol=1e-12)
    assert len(old) == 3000
