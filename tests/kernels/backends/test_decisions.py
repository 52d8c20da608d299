"""compile.planning.decisions: each compute query is analysed and planned once, its runner
chosen once and recorded (``QueryDecisions``), and ``xp.explain`` prints the record instead
of deciding again. Calls are counted by wrapping the module functions; results are checked against
NumPy/scipy."""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.engine.plan_cache import clear_plan_cache
from lazysparse.formats.conversion.convert import to_structured
from lazysparse.kernels.backends import execute
from lazysparse.kernels.backends.numba import cache
from lazysparse.kernels.backends.numba import kernel as numba_kernel
from lazysparse.kernels.compile.lowering import kernel
from lazysparse.kernels.compile.planning import decisions, ordering, structured_inputs
from lazysparse.kernels.compile.planning.runners import Runner, nesting_bounds
from lazysparse.kernels.compile.planning.structured_inputs import decide_layouts
from lazysparse.logic.nodes import Query, Table


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


# ---------------------------------------------------------------- the runner before lowering

@pytest.fixture
def lowerings(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts ``lower_plan`` calls (every kernel built), by the loop order lowered; the
    in-memory kernel cache starts empty."""
    c: Counter[str] = Counter()
    monkeypatch.setattr(cache, "_MEMORY", {})
    real = numba_kernel.lower_plan

    def lower(plan: Any) -> Any:
        c[",".join(plan.info.loop_order)] += 1
        return real(plan)

    monkeypatch.setattr(numba_kernel, "lower_plan", lower)
    return c


def _decide_all(expr: Any, lowerings: Counter[str]) -> list[Any]:
    """Each compute query of ``expr``'s optimized plan with its runner chosen (no kernel
    lowered for that), then run on it, with the counts reset after ``xp.explain``
    optimized it."""
    after = xp.explain(expr).after
    cache._MEMORY.clear()  # noqa: SLF001 - the kernels explain built
    lowerings.clear()
    env: dict[Any, Any] = {}
    out = []
    for body in after.bodies:
        if isinstance(body, Query) and isinstance(body.rhs, Table):
            env[body.lhs] = body.rhs.tns.val
        elif isinstance(body, Query):
            d = execute.choose_runner(decide_layouts(body, env))
            assert not lowerings
            out.append(d)
            env[body.lhs] = execute.run_decided(d, None)
    return out


_DEEP = (2,) + (1,) * 19 + (2,)  # 21 axes: a loop each, plus the broadcast's


def _cheaper_cases() -> dict[str, tuple[Any, Any, Runner]]:
    """Queries a cheaper runner takes: (expression, its NumPy value, the runner)."""
    rng = np.random.default_rng(3)
    a, b = rng.random((4, 5)), rng.random((4, 5))
    r = np.repeat(rng.integers(0, 3, (6, 4)), 5, axis=1).astype(float)
    c = _csr(8)
    deep_a = np.arange(4.0).reshape(_DEEP)
    deep_b = np.arange(2.0**21).reshape((2,) * 21)
    return {
        "numpy": (xp.asarray(a) * xp.asarray(b) + 1.0, a * b + 1.0, Runner.NUMPY),
        "run-length": (xp.sum(xp.asformat(xp.asarray(r), "rle"), axis=1), r.sum(axis=1),
                       Runner.RUN_LENGTH),
        "relayout": (xp.asformat(xp.asarray(c).T, "csr"), c.toarray().T, Runner.RELAYOUT),
        "21 nested loops": (xp.asarray(deep_a) + xp.asarray(deep_b), deep_a + deep_b,
                            Runner.NUMPY),
    }


@pytest.mark.parametrize("case", ["numpy", "run-length", "relayout", "21 nested loops"])
def test_choosing_a_cheaper_runner_lowers_nothing(case: str, lowerings: Counter[str]) -> None:
    """NumPy, run-length and relayout queries, and an all-dense kernel deeper than Python
    compiles (NumPy at any size), are run without a kernel being lowered to choose."""
    expr, want, runner = _cheaper_cases()[case]
    (d,) = _decide_all(expr, lowerings)
    assert d.runner is runner
    assert not lowerings
    np.testing.assert_allclose(_dense(xp.compute(expr)), want)


def test_a_sparse_kernel_too_deep_is_refused_before_lowering(lowerings: Counter[str]) -> None:
    """22 nested loops over a sparse operand: the error comes from the analysis alone."""
    n = 12
    s = xp.asarray(np.ones((2,) * n), format="coo")
    d = xp.asarray(np.ones((2,) + (1,) * (n - 2) + (2,)))
    after = xp.explain(s * d).after
    cache._MEMORY.clear()  # noqa: SLF001 - the kernel explain printed
    lowerings.clear()
    with pytest.raises(NotImplementedError, match="nested loops"):
        execute.execute_plan(after)
    assert not lowerings


def test_choosing_the_compiled_runner_lowers_nothing(lowerings: Counter[str]) -> None:
    a = _csr(9)
    x = np.random.default_rng(2).random(50)
    (d,) = _decide_all(xp.asarray(a) @ xp.asarray(x), lowerings)
    assert d.runner is Runner.COMPILED
    assert list(lowerings.values()) == [1]  # running it lowered it, once
    np.testing.assert_allclose(_dense(execute.run_decided(d, None)), a @ x)
    assert list(lowerings.values()) == [1]


@pytest.mark.parametrize("path", ["execute_plan", "compute"])
def test_a_compiled_query_is_lowered_once_per_call_path(path: str,
                                                        lowerings: Counter[str]) -> None:
    """``A @ x``'s kernel is lowered once by the plan loop, and once by ``xp.compute``'s
    cached program (whose second run binds its recipe and lowers nothing)."""
    a = _csr(10)
    x = np.random.default_rng(4).random(50)
    expr = xp.asarray(a) @ xp.asarray(x)
    if path == "execute_plan":
        after = xp.explain(expr).after
        lowerings.clear()
        cache._MEMORY.clear()  # noqa: SLF001 - the kernel explain built
        (out,) = execute.execute_plan(after)
    else:
        clear_plan_cache()
        out = xp.compute(expr)
    np.testing.assert_allclose(_dense(out), a @ x)
    assert list(lowerings.values()) == [1]
    if path == "compute":
        again = xp.asarray(a) @ xp.asarray(2 * x)
        np.testing.assert_allclose(_dense(xp.compute(again)), a @ (2 * x))
        assert list(lowerings.values()) == [1]


def _block_depth(source: str) -> int:
    """The most ``for``/``while`` blocks nested in one function of a generated module."""
    def depth(node: ast.AST) -> int:
        return max((depth(c) + isinstance(c, ast.For | ast.While)
                    for c in ast.iter_child_nodes(node)), default=0)

    return max(depth(f) for f in ast.parse(source).body if isinstance(f, ast.FunctionDef))


def _kernel_cases() -> dict[str, Any]:
    """Expressions whose kernels cover each loop kind, walk and output mode."""
    a, b = _csr(11), _csr(12)
    x = np.arange(50.0)
    band = np.zeros((40, 40))
    for off in (-2, 0, 1):
        k = np.arange(max(0, -off), min(40, 40 - off))
        band[k, k + off] = k + 1.0
    coo = xp.asarray(band, format="coo")
    r = np.repeat(np.arange(12.0).reshape(6, 2), 5, axis=1)
    return {
        "spmv": xp.asarray(a) @ xp.asarray(x),
        "merge": xp.asarray(a) + xp.asarray(b),
        "intersect": xp.asarray(a) * xp.asarray(b),
        "spgemm": xp.asarray(a) @ xp.asarray(b),
        "coo 3-d": xp.sum(xp.asarray(np.ones((3, 4, 5)), format="coo") * 2.0, axis=1),
        "dia": xp.asformat(coo, "dia") @ xp.asarray(np.arange(40.0)),
        "bsr": xp.asarray(to_structured(coo.tensor(), "bsr", blocksize=(2, 2)))
        @ xp.asarray(np.arange(40.0)),
        "ell": xp.asformat(coo, "ell") @ xp.asarray(np.arange(40.0)),
        "rle times sparse": xp.asformat(xp.asarray(r), "rle") * xp.asarray(
            sp.random_array((6, 10), density=0.3, format="csr", random_state=1)),
        "dense 6-d": xp.sum(xp.asarray(np.ones((2,) * 6)) * xp.asarray(np.ones((2,) * 6)),
                            axis=(1, 3)) + 0 * xp.asarray(np.ones((2,) * 4)),
    }


@pytest.mark.parametrize("case", list(_kernel_cases()))
def test_nesting_bounds_hold_the_lowered_depth(case: str) -> None:
    """The depth ``runners.nesting`` reads from the analysis bounds what the lowering
    emits: at least one block per loop, at most the walks' extra and the innermost body's."""
    for k in xp.explain(_kernel_cases()[case]).kernels:
        assert k.decisions is not None
        least, most = nesting_bounds(k.decisions.info)
        assert least <= _block_depth(k.source) <= most, k.source
