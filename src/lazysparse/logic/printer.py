"""Readable text of any Finch-Logic node or plan (what ``str(node)`` shows).

``A2 = reformat(<csr>, aggregate(add, 0.0, reorder(mapjoin(multiply, relabel(A0, i, j),
relabel(A1, j, k)), i, j, k), j))``; tables show their data as
``table(<csr 100x100 float64 nnz=500>, i, j)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

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
    Subquery,
    Table,
)
from lazysparse.logic.operators import Operator


def format_value(val: Any) -> str:
    """Short text of an Immediate's value: operator name, data summary, format, scalar."""
    if isinstance(val, Operator):
        return repr(val)
    if hasattr(val, "levels") and hasattr(val, "shape"):  # a formats.Tensor
        shape = "x".join(str(n) for n in val.shape) or "scalar"
        fv = val.fill_value
        fill = "" if _is_zero(fv) else f" fill={getattr(fv, 'item', lambda: fv)()!r}"
        unordered = "" if val.spec.ordered else " unordered"
        return f"<{val.format}{unordered} {shape} {val.dtype} nnz={val.nnz}{fill}>"
    if isinstance(val, np.ndarray):
        shape = "x".join(str(n) for n in val.shape) or "scalar"
        return f"<ndarray {shape} {val.dtype}>"
    if hasattr(val, "level_kinds") and hasattr(val, "mode_order"):  # a FormatSpec
        order = tuple(val.mode_order)
        natural = order == tuple(range(len(order)))
        name = val.name if val.ordered else f"{val.name} unordered"
        return f"<{name}>" if natural or val.name in ("csr", "csc") else f"<{name} {order}>"
    return _scalar_text(val)


def _is_zero(v: Any) -> bool:
    try:
        return bool(v == 0)
    except (TypeError, ValueError):
        return False


def _scalar_text(v: Any) -> str:
    if isinstance(v, np.generic):
        return f"{v.item()!r}:{v.dtype}"
    return repr(v)


def _fields(idxs: tuple[Field, ...]) -> str:
    return ", ".join(f.name for f in idxs)


def format_expr(node: LogicNode) -> str:
    """One-line text of an expression node."""
    match node:
        case Immediate(val=val):
            return format_value(val)
        case Field(name=name) | Alias(name=name):
            return name
        case Table(tns=tns, idxs=idxs):
            return f"table({format_expr(tns)}{', ' if idxs else ''}{_fields(idxs)})"
        case MapJoin(op=op, args=args):
            return f"mapjoin({', '.join(format_expr(a) for a in (op, *args))})"
        case Aggregate(op=op, init=init, arg=arg, idxs=idxs):
            tail = f", {_fields(idxs)}" if idxs else ""
            return (f"aggregate({format_expr(op)}, {format_expr(init)}, "
                    f"{format_expr(arg)}{tail})")
        case Reorder(arg=arg, idxs=idxs) | Relabel(arg=arg, idxs=idxs):
            name = type(node).__name__.lower()
            return f"{name}({format_expr(arg)}{', ' if idxs else ''}{_fields(idxs)})"
        case Reformat(tns=tns, arg=arg):
            return f"reformat({format_expr(tns)}, {format_expr(arg)})"
        case Subquery(lhs=lhs, arg=arg):
            return f"({lhs.name} = {format_expr(arg)})"
        case Query() | Produces() | Plan():
            return format_plan(node)
    raise TypeError(f"format_expr: not a Finch-Logic node: {node!r}")


def format_plan(node: LogicNode) -> str:
    """Text of any node; statements one per line (``A = expr``, ``return A, B``)."""
    match node:
        case Plan(bodies=bodies):
            return "\n".join(format_plan(b) for b in bodies)
        case Query(lhs=lhs, rhs=rhs):
            return f"{lhs.name} = {format_expr(rhs)}"
        case Produces(args=args):
            return "return " + ", ".join(format_expr(a) for a in args)
    return format_expr(node)
