"""Normal-form check for the optimizer tests: ``logic.check_normal_form`` plus a structural
check of docs/architecture.md's grammar against the tensors' storage orders."""

from __future__ import annotations

from lazysparse.formats import FormatSpec
from lazysparse.logic.nodes import (
    Aggregate,
    Alias,
    Field,
    Immediate,
    LogicNode,
    MapJoin,
    Plan,
    Produces,
    Query,
    Reformat,
    Relabel,
    Reorder,
    Table,
)
from lazysparse.logic.normal_form import epilogue_aggregate, result_reorder
from lazysparse.logic.operators import Operator


def _pointwise(node: LogicNode, order: tuple[Field, ...], storage: dict[Alias, tuple[int, ...]],
               ndims: dict[Alias, int]) -> None:
    match node:
        case Relabel(arg=Alias() as a, idxs=idxs):
            assert a in storage, f"{a} read before defined"
            assert len(idxs) == ndims[a], f"{a} has {ndims[a]} axes, read with {idxs}"
            assert all(f in order for f in idxs), f"{idxs} not all in loop order {order}"
            pos = [order.index(idxs[m]) for m in storage[a]]
            assert pos == sorted(pos), f"access {a}{idxs} not concordant with {order}"
        case MapJoin(op=Immediate(val=Operator()), args=args):
            for x in args:
                _pointwise(x, order, storage, ndims)
        case Immediate(val=v):
            assert not isinstance(v, Operator)
        case Field():
            assert node in order
        case _:
            raise AssertionError(f"not a pointwise node: {node!r}")


def assert_normal_form(plan: Plan) -> None:
    """Raise AssertionError unless ``plan`` is in the optimizer's output normal form."""
    from lazysparse.logic import check_normal_form

    check_normal_form(plan)
    storage: dict[Alias, tuple[int, ...]] = {}
    ndims: dict[Alias, int] = {}
    *queries, last = plan.bodies
    assert isinstance(last, Produces)
    seen_compute = False
    for q in queries:
        assert isinstance(q, Query)
        if isinstance(q.rhs, Table):
            assert not seen_compute, "input queries come first"
            t = q.rhs.tns.val
            storage[q.lhs], ndims[q.lhs] = tuple(t.mode_order), t.ndim
            continue
        seen_compute = True
        assert isinstance(q.rhs, Reformat) and isinstance(q.rhs.tns.val, FormatSpec)
        spec = q.rhs.tns.val
        body, given = result_reorder(q.rhs.arg)  # RESULT: the axes in their own order
        body = epilogue_aggregate(body) or body  # EPILOGUE: check_normal_form checks the map
        red: tuple[Field, ...] = ()
        if isinstance(body, Aggregate):
            red = body.idxs
            body = body.arg
        assert isinstance(body, Reorder)
        order = body.idxs
        assert len(set(order)) == len(order)
        assert set(red) <= set(order)
        _pointwise(body.arg, order, storage, ndims)
        axes = list(given) if given is not None else [f for f in order if f not in red]
        assert spec.ndim == len(axes), f"{spec} for axes {axes}"
        storage[q.lhs], ndims[q.lhs] = spec.mode_order, len(axes)
    for a in last.args:
        assert a in storage
