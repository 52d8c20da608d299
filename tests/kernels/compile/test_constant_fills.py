"""``constant_fills.always_full``: a pointwise tree it says is full over dense operands has
``eval_fill`` 0 of its dtype for every constant value (specials included), and a recipe
that knows it skips the fill evaluation on every run (a solver step with new floats)."""

from __future__ import annotations

import types
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazysparse as xp
import lazysparse.kernels.backends.program as program
from lazysparse.formats.dtypes import same_value
from lazysparse.kernels.compile.planning.analysis import PAccess, PApply, PConst, eval_fill
from lazysparse.kernels.compile.planning.constant_fills import always_full
from lazysparse.logic.operators import get_operator
from tests.conftest import examples

F64 = np.dtype(np.float64)
BINARY = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "pow")
UNARY = ("negative", "exp", "abs", "sqrt")
SPECIALS = (0.0, -0.0, 1.0, -1.0, 2.5, np.inf, -np.inf, np.nan)


def _apply(name: str, *args: Any) -> PApply:
    return PApply(get_operator(name), tuple(args), (F64,) * len(args), F64)


@st.composite
def trees(draw: st.DrawFn, depth: int = 3) -> Any:
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        if draw(st.booleans()):
            return PAccess(draw(st.integers(0, 1)), F64)
        return PConst(draw(st.integers(0, 2)), F64)
    if draw(st.integers(0, 4)) == 0:
        return _apply(draw(st.sampled_from(UNARY)), draw(trees(depth - 1)))
    return _apply(draw(st.sampled_from(BINARY)), draw(trees(depth - 1)), draw(trees(depth - 1)))


DENSE = [types.SimpleNamespace(fill_value=np.float64(0.0), full=True)] * 2


@settings(max_examples=examples(300), deadline=None)
@given(tree=trees(), consts=st.lists(st.sampled_from(SPECIALS), min_size=3, max_size=3))
def test_a_full_tree_has_fill_zero_for_every_constant(tree: Any, consts: list[float]) -> None:
    if not always_full(tree):
        return
    with np.errstate(all="ignore"):
        got = eval_fill(tree, DENSE, [np.float64(c) for c in consts])
    assert same_value(got, np.float64(0.0)) and np.asarray(got).dtype == F64, (tree, consts)


@pytest.mark.parametrize(("tree", "full"), [
    (_apply("add", PAccess(0, F64), _apply("multiply", PConst(0, F64), PAccess(1, F64))), True),
    (_apply("multiply", PConst(0, F64), PAccess(1, F64)), False),  # 0 * p: a region of 0
    (_apply("maximum", PAccess(0, F64), PConst(0, F64)), False),  # maximum(x, inf)
    (_apply("add", PConst(0, F64), PConst(1, F64)), False),  # constants only
    (_apply("exp", _apply("multiply", PConst(0, F64), PAccess(0, F64))), False),
])
def test_known_trees(tree: Any, full: bool) -> None:
    assert always_full(tree) is full


def test_a_solver_step_reads_its_fill_without_evaluating_it(monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """``x + alpha * p`` over dense vectors, run again with a new ``alpha`` (0 included):
    the recipe's fill is known, so ``eval_fill`` never runs, and the values are NumPy's."""
    calls: list[int] = []
    real = program.eval_fill

    def counting(*a: Any, **kw: Any) -> Any:
        calls.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(program, "eval_fill", counting)
    x, p = np.arange(5.0), np.linspace(1.0, 2.0, 5)
    lx, lp = xp.asarray(x), xp.asarray(p)
    xp.compute(lx + 0.5 * lp)  # the recipe is made
    calls.clear()
    for alpha in (0.25, 0.0, -3.0, np.inf):
        got = xp.compute(lx + alpha * lp)
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(np.asarray(got), x + alpha * p)
        assert got.fill_value == 0.0
    assert calls == []
