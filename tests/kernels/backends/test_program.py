"""backends.program: a plan of a known shape re-runs through per-query recipes (no analysis
per call), and falls back to the full path whenever a fact its kernel was built for changes
(a fill value, a fold decision); every run is checked against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.engine import plan_cache
from lazysparse.kernels.backends import program


@pytest.fixture(autouse=True)
def compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAZYSPARSE_EXECUTOR", raising=False)
    plan_cache.clear_plan_cache()


@pytest.fixture
def analyses(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Counts the full-path analyses the program makes."""
    calls: list[object] = []
    real = program.decide_query

    def counting(query: object, env: object) -> object:
        calls.append(query)
        return real(query, env)  # type: ignore[arg-type]

    monkeypatch.setattr(program, "decide_query", counting)
    return calls


def _csr(seed: int, n: int = 40) -> sp.csr_array:
    return sp.random_array((n, n), density=0.1, format="csr", random_state=seed)


def test_repeated_loop_step_analyses_once(analyses: list[object]) -> None:
    """PageRank's step in a loop: after the second iteration (the first reads the lazy
    ``ones(n) / n``, later ones a computed leaf) no query is analysed again."""
    a = _csr(1)
    A = xp.asarray(a)
    n = a.shape[0]
    x, xn = xp.ones(n) / n, np.ones(n) / n
    for it in range(6):
        x = xp.compute(0.85 * (A.T @ x) + 0.15 / n)
        xn = 0.85 * (a.T @ xn) + 0.15 / n
        np.testing.assert_allclose(np.asarray(x), xn)
        if it == 1:
            first = len(analyses)
    assert first >= 1 and len(analyses) == first


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_constant_dependent_fold_is_rechecked(fmt: str) -> None:
    """``max(A + c, axis=1)`` folds the skipped entries' value ``c``: a new ``c`` of the
    same class reuses the plan and folds its own value."""
    a = _csr(2).asformat(fmt)
    A = xp.asarray(a)
    for c in (0.5, 2.0, 7.25, -1.5, -3.0):
        got = np.asarray(xp.max(A + c, axis=1))
        np.testing.assert_allclose(got, (a.toarray() + c).max(axis=1))


def test_sparse_intermediate_fill_changes_take_the_full_path(analyses: list[object]) -> None:
    """An intermediate whose fill value depends on a constant: the recipe of the query
    reading it checks the fill key and re-analyses when it differs."""
    a, b = _csr(3), _csr(4)
    A, B = xp.asarray(a), xp.asarray(b)
    for c in (1.5, 1.5, 2.5, 1.5):
        got = np.asarray(xp.sum((A + c) * B, axis=0))
        np.testing.assert_allclose(got, ((a.toarray() + c) * b.toarray()).sum(axis=0))


def test_cg_iterations_reuse_recipes(analyses: list[object]) -> None:
    """Conjugate gradient written as a user would: scalars by ``float``, vectors computed
    each iteration; agrees with NumPy's solve, and analyses stop after two iterations."""
    m = 8
    t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m))
    lap = (sp.kron(sp.eye(m), t) + sp.kron(t, sp.eye(m))).tocsr()
    A = xp.asarray(sp.csr_array(lap))
    b = xp.ones(m * m)
    x, r = xp.zeros(m * m), b
    p = r
    rr = float(xp.vecdot(r, r))
    counts = []
    for _ in range(3 * m):
        Ap = A @ p
        alpha = rr / float(xp.vecdot(p, Ap))
        x = x + alpha * p
        r = r - alpha * Ap
        rr_new = float(xp.vecdot(r, r))
        p = r + (rr_new / rr) * p
        rr = rr_new
        x, r, p = xp.compute(x, r, p)
        counts.append(len(analyses))
        if rr < 1e-20:
            break
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(lap.toarray(), np.ones(m * m)),
                               atol=1e-8)
    assert counts[-1] == counts[2]
