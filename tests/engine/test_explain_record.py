"""``xp.explain`` prints each query's decisions record and decides nothing again: after a
compute of an expression, explaining it optimizes nothing, analyses, plans and lowers no
query (the compute's ``Program`` recorded them), and the optimizer's loop-order reports are
made once per plan-cache entry. Calls are counted by wrapping module functions; results are
checked against scipy/NumPy."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.engine import plan_cache
from lazysparse.kernels.backends.numba import kernel as numba_kernel
from lazysparse.kernels.compile.planning import decisions, ordering
from lazysparse.kernels.compile.planning.runners import Runner
from lazysparse.optimizer import reports


@pytest.fixture(autouse=True)
def compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAZYSPARSE_EXECUTOR", raising=False)


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts the optimizer's pass runs for reports, the query analyses, kernel plans and
    lowerings made while the test runs (the optimizations: ``plan_cache.STATS``)."""
    c: Counter[str] = Counter()

    def counting(name: str, real: Any) -> Any:
        def wrapped(*args: Any, **kw: Any) -> Any:
            c[name] += 1
            return real(*args, **kw)
        return wrapped

    monkeypatch.setattr(reports, "run_passes", counting("passes", reports.run_passes))
    monkeypatch.setattr(ordering, "analyze_query", counting("analyses",
                                                            ordering.analyze_query))
    monkeypatch.setattr(decisions, "plan_kernel", counting("plans", decisions.plan_kernel))
    monkeypatch.setattr(numba_kernel, "lower_plan", counting("lowerings",
                                                             numba_kernel.lower_plan))
    return c


def _csr(seed: int, n: int = 60) -> sp.csr_array:
    return sp.random_array((n, n), density=0.08, format="csr", random_state=seed)


def _optimized() -> int:
    return plan_cache.STATS["optimized"]


def test_explaining_a_computed_expression_decides_nothing(counts: Counter[str]) -> None:
    """The expression built again over the same arrays after a compute (a computed array
    itself explains as its stored result)."""
    a, b = _csr(21), _csr(22)
    x = np.random.default_rng(5).random(60)
    A, B, X = xp.asarray(a), xp.asarray(b), xp.asarray(x)

    def expr() -> Any:
        return (A @ B) @ X + X

    np.testing.assert_allclose(np.asarray(xp.compute(expr())), a @ (b @ x) + x)
    counts.clear()
    before = _optimized()
    e = xp.explain(expr())
    assert _optimized() == before
    assert counts["analyses"] == counts["plans"] == counts["lowerings"] == 0
    assert e.kernels and all(k.decisions is not None for k in e.kernels)
    runners = {k.decisions.runner for k in e.kernels}  # type: ignore[union-attr]
    assert runners == {Runner.COMPILED}
    assert counts["passes"] <= 2  # the loop-order reports' two runs, once for the entry
    counts.clear()
    again = xp.explain(expr())
    assert _optimized() == before and sum(counts.values()) == 0
    assert [str(k) for k in again.kernels] == [str(k) for k in e.kernels]


def test_explain_run_runs_each_query_on_its_recorded_runner(counts: Counter[str]) -> None:
    """``explain(..., run=True)`` of a new expression: each query analysed and planned once,
    run on the runner it was decided for (no second decision to run it)."""
    a = _csr(23)
    x = np.arange(60.0)
    expr = xp.asformat(xp.asarray(a).T, "csr") @ xp.asarray(x)
    e = xp.explain(expr, run=True)
    assert set(counts.values()) - {0} and counts["analyses"] == len(e.kernels)
    assert all(k.estimate is not None and k.estimate.actual_entries is not None
               for k in e.kernels)
    np.testing.assert_allclose(np.asarray(xp.compute(expr)), a.T @ x)


def test_explain_run_after_a_compute_runs_the_record_on_the_new_data(
        counts: Counter[str]) -> None:
    """The record is bound to the explained call's data: ``A * B2`` after a compute of
    ``A * B1`` (one plan-cache entry) reports B2's stored entries, deciding nothing."""
    a, b1, b2 = _csr(25), _csr(26), _csr(27)
    A = xp.asarray(a)
    np.testing.assert_allclose(np.asarray(xp.compute(A * xp.asarray(b1))),
                               a.multiply(b1).toarray())
    counts.clear()
    before = _optimized()
    e = xp.explain(A * xp.asarray(b2), run=True)
    assert _optimized() == before
    assert counts["analyses"] == counts["plans"] == counts["lowerings"] == 0
    (k,) = e.kernels
    assert k.estimate is not None
    assert k.estimate.actual_entries == np.count_nonzero(a.multiply(b2).toarray())
    assert np.count_nonzero(a.multiply(b1).toarray()) != k.estimate.actual_entries
