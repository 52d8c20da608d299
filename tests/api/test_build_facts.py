"""What building an array records without walking its history (issue 34): the recorded
extent (``lazy_array.history_extent``, with its inlined children, and the one the
elementwise builder counts as it builds: ``operands_extent``) equals a plain walk of
the new nodes, and the elementwise builder's shortcut for operands of the result's shape
builds the plan the general broadcast would. Results are checked against NumPy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import lazysparse as xp
from lazysparse.api.array import memo
from lazysparse.api.array.lazy_array import LazyArray, history_extent
from lazysparse.api.array.live import live_array
from lazysparse.api.array.plan_nodes import access, fresh_fields
from lazysparse.api.building import lazy_plans as plans
from lazysparse.logic.nodes import MapJoin, Reorder, Subquery
from lazysparse.logic.structural_key import structural_key

_RNG = np.random.default_rng(3)
_V, _M = _RNG.random(5), _RNG.random((4, 5))


def _plain_extent(expr: Subquery) -> tuple[int, int, float]:
    """The extent by a walk of every child (the definition ``history_extent`` inlines)."""
    depth, size, epoch = 0, 0, memo.EPOCH
    seen: set[int] = set()
    stack: list[Any] = [expr.arg]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if type(n) is Subquery:
            arr = live_array(n)
            if arr is not None:
                depth, size = max(depth, arr._depth), size + arr._size
                epoch = min(epoch, arr._epoch)
                continue
        size += 1
        stack.extend(n.children)
    return depth + 1, size, epoch


def _cases(v: Any, m: Any) -> dict[str, Any]:
    y = v * 2.0
    return {
        "scalar": v * 2.0,
        "two leaves": v + v,
        "broadcast": m * v,
        "column broadcast": v[None, :] + m[:, :1],
        "shared": y * y + y,
        "where": xp.where(v > 0.5, v, 0.0),
        "reduction": xp.sum(m * 2.0, axis=0) + v,
        "chain": ((v - 1.0) * 3.0 + y) / (y + 1.0),
        "0-d operand": xp.sum(v) * m,
        "size-1 axes": xp.ones((1, 5)) * xp.ones((4, 1)) + v,
        "sum": xp.sum(v * 2.0),
        "keepdims": xp.sum(m, axis=1, keepdims=True) * m,
        "size-1 sum": xp.sum(m[:1], axis=0) + xp.sum(m[:, :1], axis=1, keepdims=True),
        "column sums": xp.sum(m * m, axis=0),
        "matvec": m @ v + 1.0,
        "matmul": m.T @ (m * 2.0),
        "vecdot": xp.vecdot(v, v * 3.0),
        "tensordot": xp.tensordot(m, m, axes=([0], [0])),
        "outer": xp.linalg.outer(v, y),
        "batched": xp.matmul(xp.ones((3, 4, 5)), m.T),
        "y": y,
    }


EXPECTED = {
    "scalar": lambda: _V * 2.0,
    "two leaves": lambda: _V + _V,
    "broadcast": lambda: _M * _V,
    "column broadcast": lambda: _V[None, :] + _M[:, :1],
    "shared": lambda: (_V * 2.0) ** 2 + _V * 2.0,
    "where": lambda: np.where(_V > 0.5, _V, 0.0),
    "reduction": lambda: np.sum(_M * 2.0, axis=0) + _V,
    "chain": lambda: ((_V - 1.0) * 3.0 + _V * 2.0) / (_V * 2.0 + 1.0),
    "0-d operand": lambda: np.sum(_V) * _M,
    "size-1 axes": lambda: np.ones((1, 5)) * np.ones((4, 1)) + _V,
    "sum": lambda: np.sum(_V * 2.0),
    "keepdims": lambda: np.sum(_M, axis=1, keepdims=True) * _M,
    "size-1 sum": lambda: np.sum(_M[:1], axis=0) + np.sum(_M[:, :1], axis=1, keepdims=True),
    "column sums": lambda: np.sum(_M * _M, axis=0),
    "matvec": lambda: _M @ _V + 1.0,
    "matmul": lambda: _M.T @ (_M * 2.0),
    "vecdot": lambda: np.vecdot(_V, _V * 3.0),
    "tensordot": lambda: np.tensordot(_M, _M, axes=([0], [0])),
    "outer": lambda: np.outer(_V, _V * 2.0),
    "batched": lambda: np.matmul(np.ones((3, 4, 5)), _M.T),
}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_recorded_extent_is_the_plain_walks(name: str) -> None:
    v, m = xp.asarray(_V), xp.asarray(_M)  # alive: the extent stops at live arrays
    cases = _cases(v, m)  # holds ``y`` too: a live uncomputed operand
    x = cases[name]
    assert history_extent(x.expr) == _plain_extent(x.expr)
    np.testing.assert_allclose(np.asarray(x), EXPECTED[name](), rtol=1e-12)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_the_builders_count_is_the_walks(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The extent the elementwise builder records, counted as it builds the nodes
    (``operands_extent``: no walk), is ``history_extent``'s walk at that moment (its
    temporaries still alive)."""
    pairs: list[tuple[Any, Any]] = []

    built = LazyArray.__init__

    def checked(self: LazyArray, expr: Subquery, *args: Any, extent: Any = None,
                **kw: Any) -> None:
        if extent is not None:
            pairs.append((extent, history_extent(expr)))
        built(self, expr, *args, extent=extent, **kw)

    monkeypatch.setattr(LazyArray, "__init__", checked)
    v, m = xp.asarray(_V), xp.asarray(_M)
    x = _cases(v, m)[name]
    assert pairs and all(got == walked for got, walked in pairs), pairs
    np.testing.assert_allclose(np.asarray(x), EXPECTED[name](), rtol=1e-12)


@pytest.mark.parametrize("shape", [(4, 5), (5,), (1, 5), (4, 1)])
def test_same_shape_operands_build_the_general_broadcast(shape: tuple[int, ...]) -> None:
    """``m + a`` for ``a`` of each shape keys as the plan ``access`` (the general path)
    builds: the shortcut for an operand of the result's shape changes nothing."""
    m = xp.asarray(_M)
    a = xp.asarray(np.ones(shape))
    got = m + a
    out = fresh_fields(2)
    args = tuple(access(x.expr, x.shape, out, (4, 5)) for x in (m, a))
    present = list(dict.fromkeys(f for n in args for f in n.idxs))
    body: Any = MapJoin(got.expr.arg.op if isinstance(got.expr.arg, MapJoin)
                        else got.expr.arg.arg.op, args)
    if tuple(present) != out:
        body = Reorder(body, out)
    assert structural_key(got.expr) == structural_key(Subquery(got.expr.lhs, body))
    np.testing.assert_allclose(np.asarray(got), _M + np.ones(shape))


REDUCTIONS: dict[str, tuple[Any, Any]] = {
    "sum": (lambda x: xp.sum(x), lambda a: np.sum(a)),
    "sum axis keepdims": (lambda x: xp.sum(x, axis=1, keepdims=True),
                          lambda a: np.sum(a, axis=1, keepdims=True)),
    "prod axis 0": (lambda x: xp.prod(x, axis=0), lambda a: np.prod(a, axis=0)),
    "max int8": (lambda x: xp.max(xp.astype(x * 10, xp.int8), axis=1),
                 lambda a: np.max((a * 10).astype(np.int8), axis=1)),
    "min": (lambda x: xp.min(x - 0.5), lambda a: np.min(a - 0.5)),
    "sum int": (lambda x: xp.sum(xp.astype(x * 10, xp.int32), axis=0),
                lambda a: np.sum((a * 10).astype(np.int32), axis=0)),
}


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_a_cached_reduction_infers_what_a_new_one_does(name: str) -> None:
    """The second build of a reduction reads ``plans._REDUCTIONS``: the same dtype, shape
    and fill as the first (inferred), and NumPy's values."""
    build, ref = REDUCTIONS[name]
    m = xp.asarray(_M)
    plans._REDUCTIONS.clear()
    first = build(m)
    second = build(m)
    assert plans._REDUCTIONS  # the second build hit the cache
    for got in (first, second):
        assert (got.dtype, got.shape) == (ref(_M).dtype, ref(_M).shape)
        assert got.fill_value == first.fill_value and type(got.fill_value) is type(
            first.fill_value)
        np.testing.assert_allclose(np.asarray(got), ref(_M), rtol=1e-12)
