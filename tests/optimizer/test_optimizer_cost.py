"""The optimizer's own cost (issue 35 item 3): deterministic counts, not timings.

Fill and dtype inference is memoized per node within an expression (``analysis.INFERENCES``
counts the nodes inferred), so a longer map chain costs linearly more, not quadratically;
loop-order candidates are built by backtracking over the chains (``loop_order.SEARCH``), so
a constrained query never enumerates all n! permutations; and the chosen orders are those
the exhaustive filter gives.
"""

from __future__ import annotations

import functools
import itertools
import random
import sys

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.api.array.materialize import build_plan
from lazysparse.logic.nodes import Field, Plan
from lazysparse.logic.printer import format_plan
from lazysparse.optimizer import analysis, asymptotic, conjunctive, loop_order, pipeline
from lazysparse.optimizer.loop_order import _count_orders, _linear_extensions
from lazysparse.optimizer.pipeline import optimize
from lazysparse.optimizer.rewrite import subsequence


def _clear_memos() -> None:
    """Empty the optimizer's cross-call memos, so every count is a cold optimization's."""
    for mod in (analysis, asymptotic, conjunctive, loop_order):
        for obj in vars(mod).values():
            if isinstance(obj, functools._lru_cache_wrapper):
                obj.cache_clear()


def _chain(d: xp.ndarray, e: xp.ndarray, ops: int) -> xp.ndarray:
    """A map chain of ``ops`` binary operations alternating over two dense operands."""
    out = d
    for k in range(ops):
        out = out * e + d if k % 2 else out - e * 0.5
    return out


def _np_chain(d: np.ndarray, e: np.ndarray, ops: int) -> np.ndarray:
    out = d
    for k in range(ops):
        out = out * e + d if k % 2 else out - e * 0.5
    return out


def _inferences(plan: Plan) -> tuple[int, int]:
    """(fills, dtypes) inferred node by node while optimizing ``plan`` cold."""
    _clear_memos()
    f0, d0 = analysis.INFERENCES["fill"], analysis.INFERENCES["dtype"]
    optimize(plan)
    return analysis.INFERENCES["fill"] - f0, analysis.INFERENCES["dtype"] - d0


@pytest.fixture()
def operands() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.random((6, 5)), rng.random((6, 5))


def test_chain_inference_is_linear(operands: tuple[np.ndarray, np.ndarray]) -> None:
    dn, en = operands
    d, e = xp.asarray(dn), xp.asarray(en)
    counts = {n: _inferences(build_plan((_chain(d, e, n),))) for n in (4, 8, 16)}
    # measured: 8 ops 134 fills / 276 dtypes, 16 ops 262 / 548; before the memo (every
    # call re-walked its subtree) 8 ops took 1,464 / 6,138 evaluations, 16 ops 5,232 / 42,706
    assert counts[8][0] <= 200 and counts[8][1] <= 400, counts
    for k in (0, 1):  # doubling the chain at most doubles the work (plus the fixed part)
        assert counts[16][k] <= 2 * counts[8][k] + 8, counts
        assert counts[8][k] <= 2 * counts[4][k] + 8, counts
    np.testing.assert_allclose(np.asarray(_chain(d, e, 8)), _np_chain(dn, en, 8))


def test_axpy_inference_count() -> None:
    rng = np.random.default_rng(1)
    xs = [rng.random(7) for _ in range(3)]
    x, y, z = (xp.asarray(v) for v in xs)
    expr = 2.0 * x + 3.0 * y - 0.5 * z + x * 4.0 + y / 7.0
    fills, dtypes = _inferences(build_plan((expr,)))
    # measured 78 / 146; the unmemoized analysis evaluated 1,020 fills and 1,721 dtypes
    assert fills <= 160 and dtypes <= 300, (fills, dtypes)
    a, b, c = xs
    np.testing.assert_allclose(np.asarray(expr), 2.0 * a + 3.0 * b - 0.5 * c + a * 4.0 + b / 7.0)


def test_constrained_candidates_are_not_enumerated() -> None:
    fields = tuple(Field(f"i{k}") for k in range(7))
    before = loop_order.SEARCH["orders_extended"]
    assert _linear_extensions(fields, [fields]) == [fields]
    assert loop_order.SEARCH["orders_extended"] - before == 7  # not 7! = 5040 permutations
    # two chains over disjoint halves: C(6, 3) = 20 interleavings, each built once
    half = ([fields[0], fields[1], fields[2]], [fields[3], fields[4], fields[5]])
    before = loop_order.SEARCH["orders_extended"]
    assert len(_linear_extensions(fields[:6], [tuple(h) for h in half])) == 20
    assert loop_order.SEARCH["orders_extended"] - before <= 20 * 6


def test_linear_extensions_match_the_exhaustive_filter() -> None:
    rng = random.Random(0)
    for _ in range(400):
        n = rng.randint(0, 6)
        pool = tuple(Field(f"f{k}") for k in range(n + 1))  # one field the query lacks
        fields = pool[:n]
        chains = [tuple(rng.choice(pool) for _ in range(rng.randint(0, 4))) if n else ()
                  for _ in range(rng.randint(0, 3))]
        want = [p for p in itertools.permutations(fields)
                if all(subsequence(c, p) for c in chains)]
        assert _linear_extensions(fields, chains) == want, (fields, chains)
        assert _count_orders(fields, chains) == len(want), (fields, chains)


def test_matmul_prices_few_orders() -> None:
    a = sp.random(30, 20, density=0.2, format="csr", random_state=3)
    b = sp.random(20, 25, density=0.2, format="csr", random_state=4)
    expr = xp.asarray(a) @ xp.asarray(b)
    _clear_memos()
    priced = loop_order.SEARCH["orders_priced"]
    optimize(build_plan((expr,)))
    # one concordant order (Gustavson i,k,j) priced for the choice and its report
    assert loop_order.SEARCH["orders_priced"] - priced <= 4
    np.testing.assert_allclose(xp.to_numpy(expr), (a @ b).toarray())


def _exhaustive(self: loop_order._Pricer, orders: list[tuple[Field, ...]],
                read: bool = False) -> tuple[Field, ...]:
    """The unpruned choice: every order priced."""
    return min(orders, key=lambda o: (self.total(o, read), tuple(self.rank[f] for f in o)))


@pytest.mark.parametrize("seed", range(4))
def test_pruned_choice_is_the_exhaustive_one(seed: int, monkeypatch: pytest.MonkeyPatch
                                             ) -> None:
    """A 6-index contraction of vectors has 720 unconstrained candidate orders: branch and
    bound prices a few of them and picks the order pricing all of them picks."""
    rng = np.random.default_rng(seed)
    vals = [rng.random(int(n)) for n in rng.integers(2, 30, size=6)]
    ops = [xp.asarray(v) for v in vals]
    expr = xp.einsum("a,b,c,d,e,f->", *ops)
    plan = build_plan((expr,))
    _clear_memos()
    priced = loop_order.SEARCH["orders_priced"]
    pruned = format_plan(optimize(plan))
    pruned_priced = loop_order.SEARCH["orders_priced"] - priced
    monkeypatch.setattr(loop_order._Pricer, "cheapest", _exhaustive)
    _clear_memos()
    priced = loop_order.SEARCH["orders_priced"]
    assert format_plan(optimize(plan)) == pruned
    assert pruned_priced * 10 < loop_order.SEARCH["orders_priced"] - priced
    np.testing.assert_allclose(float(expr), float(np.prod([v.sum() for v in vals])))


def _cold_calls(plan: Plan, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int, dict[str, int]]:
    """(Python calls, ``make_cq`` calls, runs per pass) of one cold optimization of ``plan``."""
    _clear_memos()
    cqs = [0]
    runs: dict[str, int] = {}
    make_cq = conjunctive.make_cq

    def counted_cq(*args: object) -> object:
        cqs[0] += 1
        return make_cq(*args)  # type: ignore[arg-type]

    def counted(p: object) -> object:
        def run(plan: Plan) -> Plan:
            runs[p.__name__] = runs.get(p.__name__, 0) + 1  # type: ignore[attr-defined]
            return p(plan)  # type: ignore[operator]
        return run

    monkeypatch.setattr(asymptotic, "make_cq", counted_cq)
    monkeypatch.setattr(pipeline, "PASSES", [counted(p) for p in pipeline.PASSES])
    calls = [0]

    def profile(frame: object, event: str, arg: object) -> None:
        if event == "call":
            calls[0] += 1

    sys.setprofile(profile)
    try:
        optimize(plan)
    finally:
        sys.setprofile(None)
    monkeypatch.undo()
    return calls[0], cqs[0], runs


# new small dense expressions (scipy.signal's windows, a map, a reduction, a matvec) and
# their Python-call budgets: measured 5,180 / 3,766 / 3,586 / 2,870 calls cold (about
# 1-2 ms), budgets about 1.35x that
_SMALL_DENSE = [
    ("window", lambda n, d, e, v: 0.54 - 0.46 * xp.cos(2 * np.pi * n / 50.0), 7000),
    ("d*e+1", lambda n, d, e, v: d * e + 1.0, 5100),
    ("sum0", lambda n, d, e, v: xp.sum(d * e, axis=0), 4900),
    ("matvec", lambda n, d, e, v: d @ v, 3900),
]


@pytest.mark.parametrize("name, fn, budget", _SMALL_DENSE, ids=[c[0] for c in _SMALL_DENSE])
def test_a_new_small_dense_expression_costs_few_calls(
        name: str, fn: object, budget: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new small dense expression's optimization (issue 35: <= 5 ms for an ordinary
    expression) is bounded by counts, not timings: each pass runs once, the asymptotic
    model builds no conjunctive query (no sparse operand: every loop order is undominated
    in closed form), and its Python calls stay within a budget; values as NumPy's."""
    rng = np.random.default_rng(3)
    arrays = (np.arange(51.0), rng.random((6, 5)), rng.random((6, 5)), rng.random(5))
    plan = build_plan((fn(*map(xp.asarray, arrays)),))  # type: ignore[operator]
    calls, cqs, runs = _cold_calls(plan, monkeypatch)
    assert cqs == 0, f"{name}: {cqs} conjunctive queries built"
    assert sorted(runs) == sorted(p.__name__ for p in pipeline.PASSES)
    assert set(runs.values()) == {1}, runs
    assert calls <= budget, f"{name}: {calls} Python calls (budget {budget})"
    want = {"window": 0.54 - 0.46 * np.cos(2 * np.pi * arrays[0] / 50.0),
            "d*e+1": arrays[1] * arrays[2] + 1.0, "sum0": np.sum(arrays[1] * arrays[2], axis=0),
            "matvec": arrays[1] @ arrays[3]}[name]
    got = np.asarray(fn(*map(xp.asarray, arrays)))  # type: ignore[operator]
    np.testing.assert_allclose(got, want, rtol=1e-12)
