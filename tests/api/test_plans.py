"""Golden plans: what the namespace builds (before optimization), and that it runs nothing."""

from __future__ import annotations

import numpy as np

import lazysparse as xp
from lazysparse.api.array.plan_nodes import build_aggregate
from lazysparse.api.chapters import compute as execution
from lazysparse.logic.fields import getfields
from lazysparse.logic.nodes import (
    Aggregate,
    MapJoin,
    Query,
    Reformat,
    Relabel,
    Reorder,
    Subquery,
    Table,
)
from lazysparse.logic.operators import get_operator


def _strip(node: object) -> object:
    """Skip Subquery/Relabel/Reorder wrappers down to the first computing node."""
    while isinstance(node, Subquery | Relabel | Reorder):
        node = node.arg
    return node


def _count(node: object, kind: type) -> int:
    n = int(isinstance(node, kind))
    for c in getattr(node, "children", ()):
        n += _count(c, kind)
    return n


def test_contraction_is_one_aggregate_over_one_mapjoin(count_executions: list) -> None:
    a = xp.asarray(np.arange(6.0).reshape(2, 3))
    b = xp.asarray(np.arange(12.0).reshape(3, 4))
    prod = a[:, :, None] * b[None, :, :]
    if hasattr(xp, "sum"):
        c = xp.sum(prod, axis=1)
        expr = c.expr
    else:  # pragma: no cover - before api-compute's sum exists
        expr = build_aggregate(get_operator("add"), 0.0, prod.expr, 3, (1,))
    agg = _strip(expr)
    assert isinstance(agg, Aggregate)
    assert agg.op.val == get_operator("add")
    assert isinstance(_strip(agg.arg), MapJoin)
    assert _count(expr, Aggregate) == 1
    assert _count(expr, MapJoin) == 1
    assert _count(expr, Query) == 0
    assert len(agg.idxs) == 1 and agg.idxs[0] in getfields(agg.arg)
    assert count_executions == []  # nothing ran
    if hasattr(xp, "sum"):
        np.testing.assert_allclose(np.asarray(c), np.arange(6.0).reshape(2, 3)
                                   @ np.arange(12.0).reshape(3, 4))


def test_elementwise_builds_broadcast_mapjoin() -> None:
    a = xp.asarray(np.ones((3, 1)))
    b = xp.asarray(np.ones(4))
    c = a + b
    assert c.shape == (3, 4)
    body = c.expr.arg
    mj = body.arg if isinstance(body, Reorder) else body
    assert isinstance(mj, MapJoin) and mj.op.val == get_operator("add")
    # the size-1 axis of ``a`` gets a fresh field that a Reorder drops
    first = mj.args[0]
    assert isinstance(first, Reorder) and len(first.idxs) == 1
    assert getfields(c.expr) == tuple(getfields(c.expr))
    assert len(getfields(c.expr)) == 2


def test_permute_and_expand_are_relabel_reorder() -> None:
    a = xp.asarray(np.arange(6).reshape(2, 3))
    t = xp.permute_dims(a, (1, 0))
    assert isinstance(t.expr.arg, Reorder) and isinstance(t.expr.arg.arg, Relabel)
    assert t.expr.arg.idxs == tuple(reversed(t.expr.arg.arg.idxs))
    lazy = a * 1
    e = xp.expand_dims(lazy, axis=1)
    assert e.shape == (2, 1, 3) and isinstance(e.expr.arg, Reorder)
    s = xp.squeeze(e, axis=1)
    assert s.shape == (2, 3) and isinstance(s.expr.arg, Reorder)
    assert _count(s.expr, Table) == 1  # no data was copied
    # a size-1 axis of a computed array is a lazy view too (no new table); computing it
    # gives a view of the same data, no kernel
    v = a[:, None, :]
    assert v.result is None and isinstance(v.expr.arg, Reorder) and _count(v.expr, Table) == 1
    assert np.shares_memory(v.tensor().values, a.tensor().values)
    np.testing.assert_array_equal(np.asarray(t), np.arange(6).reshape(2, 3).T)


def test_asformat_adds_reformat_to_the_plan() -> None:
    a = xp.asarray(np.eye(3)) * 2.0
    c = xp.asformat(a, "csr")
    assert c.format == "csr" and c.requested_format is not None
    plan = execution.build_plan((c,))
    q = plan.bodies[0]
    assert isinstance(q, Query) and isinstance(q.rhs, Reformat)
    assert q.rhs.tns.val == c.requested_format
    np.testing.assert_array_equal(np.asarray(c), 2 * np.eye(3))


def test_setitem_is_a_functional_update() -> None:
    base = np.arange(6.0).reshape(2, 3)
    a = xp.asarray(base)
    b = a + 0.0
    old_expr = b.expr
    b[0, 1:] = -1.0
    assert b.expr is not old_expr
    assert _strip(b.expr).op.val == get_operator("where")
    np.testing.assert_array_equal(np.asarray(a), base)  # the source is untouched
    expected = base.copy()
    expected[0, 1:] = -1.0
    np.testing.assert_array_equal(np.asarray(b), expected)


def test_zeros_and_full_store_nothing() -> None:
    z = xp.zeros((1000, 1000))
    assert z.format == "csr" and z.tensor().nnz == 0 and z.fill_value == 0
    f = xp.full((7, 5, 3), 2.5)
    assert f.tensor().nnz == 0 and f.fill_value == 2.5
    np.testing.assert_array_equal(np.asarray(f), np.full((7, 5, 3), 2.5))


def test_aggregate_with_shape_skips_unit_axes() -> None:
    from lazysparse.api.array.lazy_array import LazyArray

    z = xp.zeros(3)
    z[1] = 2.0
    a = xp.reshape(z, (1, 3, 1))
    for axes, keep in [((0,), False), ((0, 2), True), ((1,), False), ((0, 1, 2), False),
                       ((0, 1, 2), True)]:
        e = build_aggregate(get_operator("add"), 0.0, a.expr, a.shape, axes, keep)
        want = np.sum(np.asarray(a), axis=axes, keepdims=keep)
        agg = _strip(e)
        assert isinstance(agg, Aggregate) and len(agg.idxs) == sum(1 for k in axes if k == 1)
        np.testing.assert_array_equal(np.asarray(LazyArray(e, want.shape, np.float64, 0.0)),
                                      want)
