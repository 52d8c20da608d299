"""Memoization and ``compute``: shared subexpressions run once; observed values stay."""

from __future__ import annotations

import numpy as np

import lazysparse as xp


def test_shared_subexpression_executes_once(count_executions: list) -> None:
    a = xp.asarray(np.arange(4.0))
    shared = xp.exp(a) * 2
    u = shared + 1
    v = shared - 1
    xp.compute(u, v)
    assert len(count_executions) == 1  # one plan for both outputs
    np.testing.assert_allclose(np.asarray(u), np.exp(np.arange(4.0)) * 2 + 1)
    np.testing.assert_allclose(np.asarray(v), np.exp(np.arange(4.0)) * 2 - 1)
    assert len(count_executions) == 1  # observing computed arrays runs nothing


def test_memoized_result_replaces_subplan(count_executions: list) -> None:
    a = xp.asarray(np.arange(5.0))
    s = a * 3
    np.asarray(s)
    assert len(count_executions) == 1
    t = s + 1
    np.asarray(t)
    assert len(count_executions) == 2
    # the second plan reads s's stored result: no multiply in it
    assert "multiply" not in repr(count_executions[1])
    np.testing.assert_array_equal(np.asarray(t), np.arange(5.0) * 3 + 1)


def test_observation_computes() -> None:
    x = xp.sum(xp.asarray([1.0, 2.0])) * 2  # an uncomputed operand: lazy until observed
    assert x.result is None
    assert float(x) == 6.0 and x.result is not None
    folded = xp.asarray(3.0) * 2  # computed 0-d operands only: folded at once (scalar_now)
    assert folded.result is not None and float(folded) == 6.0
    assert bool(xp.asarray(1) > 0) is True
    assert int(xp.asarray(7, dtype=xp.int8) + 1) == 8
    assert complex(xp.asarray(1 + 2j)) == 1 + 2j
    assert [5, 6, 7][xp.asarray(2)] == 7  # __index__
    assert [float(e) for e in xp.asarray([1.0, 2.0])] == [1.0, 2.0]
    assert "lazysparse.asarray" in repr(xp.asarray([1, 2]))


def test_inplace_operator_updates_the_same_object() -> None:
    x = xp.asarray(np.arange(3))
    y = x
    x += 2
    assert x is y
    np.testing.assert_array_equal(np.asarray(y), np.arange(3) + 2)
