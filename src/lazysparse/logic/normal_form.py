"""The normal form of docs/architecture.md (what one kernel runs), as a checker.

```
ACCESS        := Relabel(Alias, idxs)   # concordant: the alias's storage order mapped to
                                        # idxs is a subsequence of the loop order
POINTWISE     := ACCESS | MapJoin(Immediate(op), POINTWISE...) | Immediate(scalar) | Field
LOOP          := Reorder(POINTWISE, loop_order)
AGGREGATE     := Aggregate(Immediate(op), Immediate(init), LOOP, reduced_idxs)
EPILOGUE      := MapJoin(Immediate(op), EPI_ARG...)   # exactly one AGGREGATE among its args
EPI_ARG       := AGGREGATE | EPILOGUE | POINTWISE over the result axes only, whose
                 accesses read dense-stored aliases
MAPREDUCE     := LOOP | AGGREGATE | EPILOGUE
RESULT        := MAPREDUCE | Reorder(MAPREDUCE, result_axes)  # a permutation of the
                                                              # loop order minus the reduced
COMPUTE_QUERY := Query(Alias, Reformat(Immediate(FormatSpec), RESULT))
INPUT_QUERY   := Query(Alias, Table(Immediate(Tensor), idxs))
PLAN          := Plan(INPUT_QUERY... COMPUTE_QUERY... Produces(Alias...))
```

An EPILOGUE applies a map to the aggregate's value once per result entry, after its
reduction completes (``0.85 * (A.T @ x) + c``, ``sum(A, 1) / d``); its other operands are
indexed by result axes only. The result's fill and dtype are the mapjoin's, from the
registry, as for the same expression computed in two queries.

A query's result axes are its loop order minus the reduced fields, unless a RESULT reorder
lists them in another order (a map of a transposed read loops in the read's storage order
and writes the result in its own axis order: ``-A.T``). The FormatSpec's mode order is
relative to the result axes.
"""

from __future__ import annotations

from typing import Any

from lazysparse.formats.levels.registry import all_located
from lazysparse.logic.dtypes import is_python_scalar
from lazysparse.logic.fields import getfields
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
from lazysparse.logic.operators import Operator


class NormalFormError(ValueError):
    """A plan is not in normal form; the message names the rule and the offending node."""


def _is_spec(x: Any) -> bool:
    return hasattr(x, "level_kinds") and hasattr(x, "mode_order") and not hasattr(x, "levels")


def _is_tensor(x: Any) -> bool:
    return hasattr(x, "levels") and hasattr(x, "mode_order") and hasattr(x, "shape")


def _is_scalar(x: Any) -> bool:
    return is_python_scalar(x) or (hasattr(x, "dtype") and getattr(x, "ndim", None) == 0)


def _fail(rule: str, msg: str, node: LogicNode) -> None:
    raise NormalFormError(f"not in normal form ({rule}): {msg}: {node}")


def _check_fields(idxs: Any, rule: str, node: LogicNode) -> None:
    if not isinstance(idxs, tuple) or not all(isinstance(f, Field) for f in idxs):
        _fail(rule, "field lists must be tuples of Field", node)
    if len(set(idxs)) != len(idxs):
        _fail(rule, f"repeated field in {tuple(f.name for f in idxs)}", node)


def _check_pointwise(node: LogicNode, loop: tuple[Field, ...], orders: dict[Alias, tuple],
                     ) -> None:
    match node:
        case Relabel(arg=Alias() as a, idxs=idxs):
            _check_fields(idxs, "ACCESS", node)
            if a not in orders:
                _fail("ACCESS", f"alias {a.name} is not defined by an earlier query", node)
            mode_order = orders[a]
            if len(idxs) != len(mode_order):
                _fail("ACCESS", f"{a.name} has {len(mode_order)} axes but {len(idxs)} fields",
                      node)
            storage = [idxs[m] for m in mode_order]
            missing = [f.name for f in storage if f not in loop]
            if missing:
                _fail("ACCESS", f"field(s) {missing} not in the loop order", node)
            pos = [loop.index(f) for f in storage]
            if pos != sorted(pos):
                _fail("ACCESS (concordance)", f"{a.name}'s storage order "
                      f"{tuple(f.name for f in storage)} is not a subsequence of the loop order "
                      f"{tuple(f.name for f in loop)}", node)
        case Relabel():
            _fail("ACCESS", "relabel must wrap an Alias directly", node)
        case MapJoin(op=op, args=args):
            if not (isinstance(op, Immediate) and isinstance(op.val, Operator)):
                _fail("POINTWISE", "mapjoin op must be Immediate(Operator)", node)
            if len(args) != op.val.nargs:
                _fail("POINTWISE", f"{op.val.name} takes {op.val.nargs} args, got {len(args)}",
                      node)
            for a in args:
                _check_pointwise(a, loop, orders)
        case Immediate(val=val):
            if not _is_scalar(val):
                _fail("POINTWISE", "an Immediate in pointwise position must be a scalar", node)
        case Field():
            if node not in loop:
                _fail("POINTWISE", f"field {node.name} used as a value is not in the loop order",
                      node)
        case _:
            _fail("POINTWISE", f"{type(node).__name__} is not allowed inside a kernel body "
                  "(expected relabel(alias), mapjoin, scalar or field)", node)


def _check_loop(node: LogicNode, orders: dict[Alias, tuple]) -> tuple[Field, ...]:
    if not isinstance(node, Reorder):
        _fail("LOOP", "the kernel body must be reorder(pointwise, loop_order)", node)
    _check_fields(node.idxs, "LOOP", node)
    extra = [f.name for f in getfields(node.arg) if f not in node.idxs]
    if extra:
        _fail("LOOP", f"field(s) {extra} of the body are missing from the loop order", node)
    _check_pointwise(node.arg, node.idxs, orders)
    return node.idxs


def epilogue_aggregates(node: LogicNode) -> list[Aggregate]:
    """The aggregates among the arguments of a mapjoin tree (an EPILOGUE has exactly one)."""
    if not isinstance(node, MapJoin):
        return []
    out: list[Aggregate] = []
    for a in node.args:
        if isinstance(a, Aggregate):
            out.append(a)
        else:
            out += epilogue_aggregates(a)
    return out


def epilogue_aggregate(body: LogicNode) -> Aggregate | None:
    """The aggregate of an EPILOGUE query body, or None when ``body`` is not one."""
    found = epilogue_aggregates(body)
    return found[0] if len(found) == 1 else None


def replace_epilogue_aggregate(body: LogicNode, new: LogicNode) -> LogicNode:
    """An EPILOGUE ``body`` with its aggregate replaced by ``new`` (e.g. a flat form)."""
    if isinstance(body, Aggregate):
        return new
    if isinstance(body, MapJoin) and epilogue_aggregates(body):
        return MapJoin(body.op, tuple(replace_epilogue_aggregate(a, new) for a in body.args))
    return body


def result_reorder(body: LogicNode) -> tuple[LogicNode, tuple[Field, ...] | None]:
    """``(MAPREDUCE, result axes)`` of a RESULT reorder; ``(body, None)`` for a plain
    MAPREDUCE (its result axes are the loop order minus the reduced fields)."""
    if not isinstance(body, Reorder):
        return body, None
    agg = epilogue_aggregate(body.arg)
    if isinstance(body.arg, Reorder | Aggregate) or (agg is not None
                                                     and isinstance(agg.arg, Reorder)):
        return body.arg, body.idxs
    return body, None


def _check_aggregate(body: Aggregate, orders: dict[Alias, tuple]) -> tuple[Field, ...]:
    """Check an AGGREGATE; its result axes (the loop order minus the reduced fields)."""
    if not (isinstance(body.op, Immediate) and isinstance(body.op.val, Operator)
            and body.op.val.nargs == 2):
        _fail("MAPREDUCE", "aggregate op must be Immediate(binary Operator)", body)
    if not (isinstance(body.init, Immediate) and _is_scalar(body.init.val)):
        _fail("MAPREDUCE", "aggregate init must be Immediate(scalar)", body)
    _check_fields(body.idxs, "MAPREDUCE", body)
    loop = _check_loop(body.arg, orders)
    bad = [f.name for f in body.idxs if f not in loop]
    if bad:
        _fail("MAPREDUCE", f"reduced field(s) {bad} are not in the loop order", body)
    return tuple(f for f in loop if f not in body.idxs)


def _check_epilogue(node: MapJoin, axes: tuple[Field, ...], orders: dict[Alias, tuple],
                    dense: set[Alias]) -> None:
    """Check an EPILOGUE's maps and its pointwise operands (result axes only, dense)."""
    if not (isinstance(node.op, Immediate) and isinstance(node.op.val, Operator)):
        _fail("EPILOGUE", "mapjoin op must be Immediate(Operator)", node)
    if len(node.args) != node.op.val.nargs:
        _fail("EPILOGUE", f"{node.op.val.name} takes {node.op.val.nargs} args, got "
              f"{len(node.args)}", node)
    for a in node.args:
        if isinstance(a, Aggregate):
            continue
        if epilogue_aggregates(a):
            _check_epilogue(a, axes, orders, dense)  # type: ignore[arg-type]
            continue
        _check_pointwise(a, axes, orders)
        sparse = [r.arg.name for r in _accesses(a) if r.arg not in dense]  # type: ignore
        if sparse:
            _fail("EPILOGUE", f"operand(s) {sparse} are not stored dense", node)


def _accesses(node: LogicNode) -> list[Relabel]:
    if isinstance(node, Relabel):
        return [node]
    return [r for c in node.children for r in _accesses(c)]


def _check_compute(q: Query, orders: dict[Alias, tuple], dense: set[Alias]
                   ) -> tuple[int, ...]:
    rhs = q.rhs
    if not (isinstance(rhs, Reformat) and isinstance(rhs.tns, Immediate)
            and _is_spec(rhs.tns.val)):
        _fail("COMPUTE_QUERY", "rhs must be reformat(Immediate(FormatSpec), ...)", q)
    body, axes = result_reorder(rhs.arg)
    aggs = epilogue_aggregates(body)
    if aggs:
        if len(aggs) != 1:
            _fail("EPILOGUE", f"an epilogue maps exactly one aggregate, found {len(aggs)}",
                  body)
        result_axes = _check_aggregate(aggs[0], orders)
        _check_epilogue(body, result_axes, orders, dense)  # type: ignore[arg-type]
    elif isinstance(body, Aggregate):
        result_axes = _check_aggregate(body, orders)
    else:
        result_axes = _check_loop(body, orders)
    if axes is not None:
        _check_fields(axes, "RESULT", rhs.arg)
        if set(axes) != set(result_axes):
            _fail("RESULT", f"result axes {tuple(f.name for f in axes)} are not a permutation "
                  f"of {tuple(f.name for f in result_axes)}", rhs.arg)
        result_axes = axes
    spec = rhs.tns.val
    if len(spec.mode_order) != len(result_axes):
        _fail("COMPUTE_QUERY", f"format has {len(spec.mode_order)} levels but the result has "
              f"{len(result_axes)} axes", q)
    return tuple(spec.mode_order)


def check_normal_form(plan: LogicNode) -> None:
    """Raise :class:`NormalFormError` (a ValueError) naming the violated rule, else None."""
    if not isinstance(plan, Plan):
        _fail("PLAN", "expected a Plan", plan)
    bodies = plan.bodies
    if not bodies or not isinstance(bodies[-1], Produces):
        _fail("PLAN", "the last statement must be produces(...)", plan)
    orders: dict[Alias, tuple] = {}
    dense: set[Alias] = set()  # aliases stored with dense levels only (epilogue operands)
    seen_compute = False
    for q in bodies[:-1]:
        if not isinstance(q, Query) or not isinstance(q.lhs, Alias):
            _fail("PLAN", "statements before produces must be query(Alias, ...)", q)
        if q.lhs in orders:
            _fail("PLAN", f"alias {q.lhs.name} is defined twice", q)
        if isinstance(q.rhs, Table):
            if seen_compute:
                _fail("PLAN", "input queries must come before compute queries", q)
            t = q.rhs
            if not (isinstance(t.tns, Immediate) and _is_tensor(t.tns.val)):
                _fail("INPUT_QUERY", "table must hold Immediate(Tensor)", q)
            _check_fields(t.idxs, "INPUT_QUERY", q)
            if len(t.idxs) != len(t.tns.val.shape):
                _fail("INPUT_QUERY", f"{len(t.idxs)} fields for a {len(t.tns.val.shape)}-d "
                      "tensor", q)
            orders[q.lhs] = tuple(t.tns.val.mode_order)
            spec = getattr(t.tns.val, "spec", None)
        else:
            seen_compute = True
            orders[q.lhs] = _check_compute(q, orders, dense)
            spec = q.rhs.tns.val  # type: ignore[attr-defined]
        if spec is not None and all_located(spec.level_kinds):
            dense.add(q.lhs)
    for a in bodies[-1].args:
        if not isinstance(a, Alias) or a not in orders:
            _fail("PLAN", f"produces {a!r}, which is not a defined alias", bodies[-1])


def is_normal_form(plan: LogicNode) -> bool:
    """Whether ``plan`` is in normal form."""
    try:
        check_normal_form(plan)
    except NormalFormError:
        return False
    return True
