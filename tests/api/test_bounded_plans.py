"""Bounded plans: loops that never compute, and loops that compute each iteration, never
grow a plan, a key or a kernel with the length of the user's history (issue #10, items 1-2)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.api.array.lazy_array import MAX_PLAN_DEPTH, MAX_PLAN_NODES, history_extent


@pytest.fixture(autouse=True)
def compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAZYSPARSE_EXECUTOR", raising=False)


def test_never_computed_loop_stays_bounded(count_executions: list[object]) -> None:
    y = xp.asarray(np.linspace(0.0, 1.0, 7))
    x = xp.zeros(7)
    xn, yn = np.zeros(7), np.linspace(0.0, 1.0, 7)
    for _ in range(2_000):
        x = x * 0.5 + y
        xn = xn * 0.5 + yn
        assert x._depth <= MAX_PLAN_DEPTH and x._size <= MAX_PLAN_NODES
    np.testing.assert_allclose(np.asarray(x), xn)
    # materialized in chunks: about one plan per MAX_PLAN_DEPTH array levels
    assert 2 * 2_000 // (MAX_PLAN_DEPTH + 1) - 2 <= len(count_executions) <= 2 * 2_000 // 8


def test_short_expressions_keep_fusion(count_executions: list[object]) -> None:
    """Normal expressions stay far below the bound: nothing runs until observed."""
    a = sp.random_array((30, 30), density=0.1, format="csr", random_state=0)
    A = xp.asarray(a)
    x = xp.ones(30)
    for _ in range(MAX_PLAN_DEPTH // 4):
        x = 0.5 * (A @ x) + 1.0
    assert count_executions == []
    assert x._depth == 3 * (MAX_PLAN_DEPTH // 4)  # matmul, multiply, add per step


def test_shared_history_does_not_unfold() -> None:
    """``x = (x + x) * 0.5`` doubles the tree but not the DAG: no RecursionError, and
    the value is right."""
    x = xp.asarray(np.arange(5.0))
    for _ in range(300):
        x = (x + x) * 0.5
    np.testing.assert_allclose(np.asarray(x), np.arange(5.0))
    assert history_extent(x.expr)[:2] == (0, 0)


@pytest.mark.slow
def test_sparse_never_computed_loop() -> None:
    a = sp.random_array((3000, 3000), density=0.001, format="csr", random_state=1)
    A = xp.asarray(a)
    S = A
    dense = a.toarray()
    ref = dense
    for _ in range(100):
        S = S * 0.9 + A * 0.1
        ref = ref * 0.9 + dense * 0.1
    assert S.nnz == a.nnz and S.format != "dense"  # stays sparse through every chunk
    np.testing.assert_allclose(np.asarray(S), ref)


def test_computed_loop_keeps_no_history() -> None:
    """A computed array is a leaf: the next expression holds its tensor only."""
    x = xp.asarray(np.ones(4))
    for _ in range(50):
        x = xp.compute(x * 2.0 - 1.0)
        assert history_extent(x.expr)[:2] == (0, 0)
    nxt = x + 1.0
    depth, size, _ = history_extent(nxt.expr)
    assert depth == 1 and size < 8  # one mapjoin over the leaf, nothing of the loop
    np.testing.assert_allclose(np.asarray(nxt), np.full(4, 2.0))


def test_expression_built_before_compute_reuses_the_result(
        count_executions: list[object]) -> None:
    x = xp.asarray(np.arange(6.0))
    y = xp.exp(x) * 3.0
    z = y + 1.0  # built before y is computed
    y = xp.compute(y)
    np.asarray(z)
    assert "exp" not in str(count_executions[-1])
    np.testing.assert_allclose(np.asarray(z), np.exp(np.arange(6.0)) * 3.0 + 1.0)


def test_compute_returns_the_array_or_a_tuple() -> None:
    x, y = xp.asarray(np.ones(3)), xp.asarray(np.zeros(3))
    assert xp.compute(x) is x
    assert xp.compute(x, y) == (x, y)
    with pytest.raises(TypeError, match="lazysparse arrays"):
        xp.compute(np.ones(3))


def test_held_reduction_is_computed_once() -> None:
    """Conjugate gradient written naturally: ``Ap = A @ p`` held and read by two computes;
    the first materializes it, the second reads it (values checked against NumPy)."""
    a = sp.random_array((60, 60), density=0.1, format="csr", random_state=2)
    A, p = xp.asarray(a), xp.asarray(np.linspace(0.0, 1.0, 60))
    Ap = A @ p
    pAp = float(xp.vecdot(p, Ap))
    assert Ap.result is not None  # held by the user: computed with the dot product
    r = xp.compute(p - (1.0 / pAp) * Ap)
    pn = np.linspace(0.0, 1.0, 60)
    np.testing.assert_allclose(np.asarray(r), pn - (a @ pn) / (pn @ (a @ pn)))


def test_temporaries_and_large_intermediates_stay_fused() -> None:
    """An expression's temporaries are not held, so they stay fused; a held intermediate
    larger than every stored input (a dense n x n product under a sparse mask) is never
    materialized."""
    n = 200
    s = sp.random_array((n, n), density=0.01, format="csr", random_state=3)
    rng = np.random.default_rng(4)
    u, v = rng.random((n, 8)), rng.random((n, 8))
    S, U, V = xp.asarray(s), xp.asarray(u), xp.asarray(v)
    UV = U @ V.T
    got = xp.compute(S * UV)
    assert UV.result is None
    np.testing.assert_allclose(np.asarray(got), s.toarray() * (u @ v.T))
    x = xp.asarray(np.ones(n))
    y = xp.compute(0.85 * (S.T @ x) + 0.15)
    np.testing.assert_allclose(np.asarray(y), 0.85 * (s.T @ np.ones(n)) + 0.15)
