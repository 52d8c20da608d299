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

import numpy as np
import pytest
import scipy.sparse as sp

import lazysparse as xp
from lazysparse.api.array.materialize import build_plan
from lazysparse.logic.nodes import Field, Plan
from lazysparse.logic.printer import format_plan
from lazysparse.optimizer import analysis, asymptotic, conjunctive, loop_order
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
