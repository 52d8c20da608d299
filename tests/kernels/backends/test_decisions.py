"""compile.planning.decisions: each compute query is analysed and planned once, its runner
chosen once and recorded (``QueryDecisions``), and ``xp.explain`` prints the record instead
of deciding again. Calls are counted by wrapping the module functions; results are checked against
NumPy/scipy."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.formats.conversion.convert import to_structured
from lazysparse.kernels.backends import execute
from lazysparse.kernels.backends.numba import cache
from lazysparse.kernels.compile.lowering import kernel
from lazysparse.kernels.compile.planning import decisions, ordering, structured_inputs
from lazysparse.kernels.compile.planning.runners import Runner


@pytest.fixture(autouse=True)
def compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAZYSPARSE_EXECUTOR", raising=False)


@dataclass
class Counts:
    """Per query (its alias), the analyses and plans made and the runner chosen."""

    analyses: Counter[str] = field(default_factory=Counter)
    plans: Counter[str] = field(default_factory=Counter)
    runners: dict[str, Runner | None] = field(default_factory=dict)
    current: list[str] = field(default_factory=lambda: [""])


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Counts:
    """Counts ``analyze_query`` and ``plan_kernel`` calls by the query being decided; the
    in-memory kernel cache starts empty, so every kernel is built (and planned) here."""
    c = Counts()
    monkeypatch.setattr(cache, "_MEMORY", {})
    real_analyze = ordering.analyze_query

    def analyze(query: Any, env: Any) -> Any:
        c.current[0] = query.lhs.name
        c.analyses[query.lhs.name] += 1
        return real_analyze(query, env)

    monkeypatch.setattr(ordering, "analyze_query", analyze)
    real_plan = decisions.plan_kernel

    def plan(*args: Any, **kw: Any) -> Any:
        c.plans[c.current[0]] += 1
        return real_plan(*args, **kw)

    for mod in (decisions, structured_inputs, kernel):
        monkeypatch.setattr(mod, "plan_kernel", plan)
    real_decide = execute.decide_query

    def decide(query: Any, env: Any, **kw: Any) -> Any:
        d, k = real_decide(query, env, **kw)
        c.runners[query.lhs.name] = d.runner
        return d, k

    monkeypatch.setattr(execute, "decide_query", decide)
    return c


def _run(expr: Any, counts: Counts) -> Any:
    """Run ``expr``'s optimized plan query by query (no plan cache, no recipes), with the
    counters reset after ``xp.explain`` optimized it."""
    after = xp.explain(expr).after
    counts.analyses.clear()
    counts.plans.clear()
    cache._MEMORY.clear()  # noqa: SLF001 - the kernels explain built
    (out,) = execute.execute_plan(after)
    return out


def _csr(seed: int, n: int = 50, density: float = 0.1) -> sp.csr_array:
    return sp.random_array((n, n), density=density, format="csr", random_state=seed)


def _unsorted(a: sp.csr_array, seed: int) -> sp.csr_array:
    """``a`` with each row's entries shuffled (scipy's unsorted CSR)."""
    rng = np.random.default_rng(seed)
    idx, val = a.indices.copy(), a.data.copy()
    for r in range(a.shape[0]):
        s, e = a.indptr[r], a.indptr[r + 1]
        p = rng.permutation(e - s)
        idx[s:e], val[s:e] = idx[s:e][p], val[s:e][p]
    u = sp.csr_array((val, idx, a.indptr.copy()), shape=a.shape)
    u.has_sorted_indices = False
    return u


def _dense(t: Any) -> np.ndarray:
    return np.asarray(xp.asarray(t)) if not isinstance(t, np.ndarray) else t


def test_compiled_query_is_analysed_and_planned_once(counts: Counts) -> None:
    a = _csr(1)
    x = np.random.default_rng(0).random(50)
    out = _run(xp.asarray(a) @ xp.asarray(x), counts)
    np.testing.assert_allclose(_dense(out), a @ x)
    assert set(counts.analyses.values()) == {1}
    assert set(counts.plans.values()) == {1}
    assert set(counts.runners.values()) == {Runner.COMPILED}


@pytest.mark.parametrize("fmt", ["dia", "bsr", "ell"])
def test_structured_operand_query_is_analysed_and_planned_once(fmt: str,
                                                                counts: Counts) -> None:
    """A banded/blocked/ELL matrix-vector product reads its operand natively: the plan
    that decided so is the one lowered."""
    d = np.zeros((40, 40))
    for off in (-2, 0, 1):
        k = np.arange(max(0, -off), min(40, 40 - off))
        d[k, k + off] = k + 1.0
    d[::7] = 0
    base = xp.asarray(d, format="coo")
    a = (xp.asarray(to_structured(base.tensor(), "bsr", blocksize=(2, 2))) if fmt == "bsr"
         else xp.asformat(base, fmt))
    x = np.arange(40.0)
    out = _run(a @ xp.asarray(x), counts)
    np.testing.assert_allclose(_dense(out), d @ x)
    (alias,) = counts.analyses
    assert counts.analyses[alias] == 1 and counts.plans[alias] == 1
    assert counts.runners[alias] is Runner.COMPILED


def test_relayout_is_analysed_once_and_never_planned(counts: Counts) -> None:
    a = _csr(2)
    out = _run(xp.asformat(xp.asarray(a).T, "csr"), counts)
    np.testing.assert_array_equal(_dense(out), a.toarray().T)
    (alias,) = counts.analyses
    assert counts.analyses[alias] == 1 and counts.plans[alias] == 0
    assert counts.runners[alias] is Runner.RELAYOUT


def test_unordered_driver_reuses_the_plan_that_kept_it_unsorted(counts: Counts) -> None:
    """``U @ x`` with unsorted rows: the plan that found no sort needed is lowered; ``U + B``
    merges, so U is sorted and analysed again (once per layout), and the record says so."""
    a, b = _csr(3), _csr(4)
    u = _unsorted(a, 5)
    x = np.random.default_rng(1).random(50)
    out = _run(xp.asarray(u) @ xp.asarray(x), counts)
    np.testing.assert_allclose(_dense(out), a @ x)
    (alias,) = counts.analyses
    assert counts.analyses[alias] == 1 and counts.plans[alias] == 1
    out = _run(xp.asarray(u) + xp.asarray(b), counts)
    np.testing.assert_allclose(_dense(out), (a + b).toarray())
    (alias,) = counts.analyses
    assert counts.analyses[alias] == 2 and counts.plans[alias] == 2
    (k,) = xp.explain(xp.asarray(u) + xp.asarray(b)).kernels
    assert k.decisions is not None and len(k.decisions.sorted) == 1
    assert "sorts " in (k.schedule or "")


def test_explain_analyses_each_query_once(counts: Counts) -> None:
    """``xp.explain`` reads each query's record: one analysis per query (it used to analyse
    a query up to four times), and the runner it prints is the recorded one."""
    a, b = _csr(6), _csr(7)
    e = xp.explain(xp.asformat(xp.asarray(a).T, "csr") @ xp.asarray(b))
    assert counts.analyses and set(counts.analyses.values()) == {1}
    runners = {k.alias: k.decisions.runner for k in e.kernels}  # type: ignore[union-attr]
    assert Runner.RELAYOUT in runners.values() or all(
        "relayout" not in (k.schedule or "") for k in e.kernels)
    for k in e.kernels:
        assert k.decisions is not None and k.decisions.info.loop_order == k.loop_order
        assert ("runs as a relayout" in (k.schedule or "")) == (
            k.decisions.runner is Runner.RELAYOUT)
