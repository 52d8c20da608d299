"""What an expression produces, without running it: fields, shape, dtype, fill value.

``env`` maps an Alias to anything with ``shape``, ``dtype`` and ``fill_value`` (a Tensor,
a LazyArray, or :class:`ExprInfo`). Same rules as the interpreter: dtypes and fills from the
operator registry; weak Python scalars stay weak until combined with an array dtype.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from lazysparse.formats.levels.registry import all_located
from lazysparse.logic.dtypes import INDEX_DTYPE, is_python_scalar, result_type
from lazysparse.logic.fields import unique_fields
from lazysparse.logic.nodes import (
    Aggregate,
    Alias,
    Field,
    Immediate,
    LogicNode,
    MapJoin,
    Reformat,
    Relabel,
    Reorder,
    Subquery,
    Table,
)
from lazysparse.logic.operators import (
    Operator,
    aggregate_dtype,
    aggregate_fill,
    mapjoin_fill,
    mapjoin_region,
)


@dataclass(frozen=True)
class ExprInfo:
    """Metadata of an expression: ``fields`` (axis order), ``shape`` (None = unknown extent),
    ``dtype`` (a NumPy dtype, or the weak Python scalar itself for scalar constants) and
    ``fill_value``."""

    fields: tuple[Field, ...]
    shape: tuple[int | None, ...]
    dtype: Any
    fill_value: Any

    @property
    def ndim(self) -> int:
        return len(self.fields)


def infer(expr: LogicNode, env: dict[Alias, Any] | None = None) -> ExprInfo:
    """Metadata of ``expr`` (see module doc)."""
    return _infer(expr, env or {}, {})


def infer_dtype(expr: LogicNode, env: dict[Alias, Any] | None = None) -> np.dtype:
    """The dtype ``expr`` evaluates to (a weak scalar gets its default dtype)."""
    return result_type(infer(expr, env).dtype)


def infer_fill(expr: LogicNode, env: dict[Alias, Any] | None = None) -> np.generic:
    """The fill value of ``expr``'s result, a NumPy scalar of its dtype."""
    info = infer(expr, env)
    return np.asarray(info.fill_value).astype(result_type(info.dtype))[()]


def infer_shape(expr: LogicNode, env: dict[Alias, Any] | None = None) -> tuple[int | None, ...]:
    """The shape of ``expr``'s result in axis order (None where the extent is unknown)."""
    return infer(expr, env).shape


def _info_of(x: Any, fields: tuple[Field, ...], what: str) -> ExprInfo:
    shape = tuple(x.shape)
    if len(shape) != len(fields):
        raise ValueError(f"{what} gives {len(fields)} field(s) for {len(shape)}-d data")
    if len(set(fields)) != len(fields):
        raise ValueError(f"{what} repeats a field: {fields}")
    fill = getattr(x, "fill_value", None)
    if fill is None:
        fill = np.dtype(x.dtype).type(0)
    return ExprInfo(fields, shape, np.dtype(x.dtype), fill)


def _infer(expr: LogicNode, env: dict[Alias, Any], sizes: dict[Field, int | None]) -> ExprInfo:
    info = _infer_node(expr, env, sizes)
    for f, n in zip(info.fields, info.shape, strict=True):
        if n is not None and (n != 1 or sizes.get(f) is None):
            sizes[f] = n
    return info


def _infer_node(expr: LogicNode, env: dict[Alias, Any],
                sizes: dict[Field, int | None]) -> ExprInfo:
    match expr:
        case Immediate(val=val):
            if isinstance(val, Operator) or not (is_python_scalar(val) or np.ndim(val) == 0):
                raise ValueError(f"immediate {val!r} is not a scalar value")
            return ExprInfo((), (), val if is_python_scalar(val) else np.asarray(val).dtype, val)
        case Table(tns=Immediate(val=tns), idxs=idxs):
            return _info_of(tns, idxs, "table")
        case Relabel(arg=Alias() as a, idxs=idxs):
            if a not in env:
                raise ValueError(f"{a!r} is not bound in the environment")
            return _info_of(env[a], idxs, "relabel")
        case Relabel(arg=arg, idxs=idxs):
            inner = _infer(arg, env, sizes)
            if len(idxs) != inner.ndim or len(set(idxs)) != len(idxs):
                raise ValueError(f"relabel gives fields {idxs} for {inner.ndim}-d data")
            return ExprInfo(idxs, inner.shape, inner.dtype, inner.fill_value)
        case Reorder(arg=arg, idxs=idxs):
            inner = _infer(arg, env, sizes)
            for f, n in zip(inner.fields, inner.shape, strict=True):
                if f not in idxs and n not in (1, None):
                    raise ValueError(f"reorder drops field {f.name} of size {n}")
            shape = tuple(inner.shape[inner.fields.index(f)] if f in inner.fields else 1
                          for f in idxs)
            return ExprInfo(idxs, shape, inner.dtype, inner.fill_value)
        case MapJoin(op=Immediate(val=op), args=args):
            return _mapjoin_info(op, args, env, sizes)
        case Aggregate(op=Immediate(val=op), init=Immediate(val=init), arg=arg, idxs=idxs):
            inner = _infer(arg, env, sizes)
            missing = [f.name for f in idxs if f not in inner.fields]
            if missing:
                raise ValueError(f"aggregate reduces field(s) {missing} its argument lacks")
            arg_dt = result_type(inner.dtype)
            keep = [k for k, f in enumerate(inner.fields) if f not in idxs]
            return ExprInfo(tuple(inner.fields[k] for k in keep),
                            tuple(inner.shape[k] for k in keep),
                            aggregate_dtype(op, init, arg_dt), aggregate_fill(op, init, arg_dt))
        case Reformat(arg=arg) | Subquery(arg=arg):
            return _infer(arg, env, sizes)
        case Alias():
            raise ValueError(f"bare {expr!r} in an expression: wrap it in relabel(...)")
        case Field():
            return ExprInfo((expr,), (sizes.get(expr),), INDEX_DTYPE, INDEX_DTYPE.type(0))
    raise TypeError(f"infer: not an expression node: {expr!r}")


def _mapjoin_info(op: Operator, args: tuple[LogicNode, ...], env: dict[Alias, Any],
                  sizes: dict[Field, int | None]) -> ExprInfo:
    """A pointwise ``op`` over ``args``: their fields joined, each field's size the one
    its operands agree on (size 1 broadcasts), the dtype and fill ``op`` gives."""
    infos = [None if isinstance(a, Field) else _infer(a, env, sizes) for a in args]
    fields = unique_fields([(a,) if i is None else i.fields
                            for a, i in zip(args, infos, strict=True)])
    fsize: dict[Field, int | None] = {}
    for i in infos:
        if i is not None:
            for f, n in zip(i.fields, i.shape, strict=True):
                if n is not None and fsize.get(f) not in (None, 1) and n not in (1, fsize[f]):
                    raise ValueError(f"mapjoin({op.name}): field {f.name} has sizes "
                                     f"{fsize[f]} and {n}")
                if n is not None and (fsize.get(f) in (None, 1)):
                    fsize[f] = n
    shape = tuple(fsize.get(f, sizes.get(f)) for f in fields)
    dts = [INDEX_DTYPE if i is None else i.dtype for i in infos]
    fills = [INDEX_DTYPE.type(0) if i is None else i.fill_value for i in infos]
    return ExprInfo(fields, shape, op.result_dtype(*dts), mapjoin_fill(op, fills))


Region = tuple[Any, bool]


def infer_region(expr: LogicNode, known: Callable[[LogicNode], Region | None]) -> Region:
    """``(fill, full)`` of ``expr`` by the fill rule (``operators.mapjoin_region``): ``full``
    means no implicit region (dense data, a field used as a value), where the fill is
    nominal. ``known(node)`` answers for nodes whose region is already recorded (a live
    array's subquery) or returns None to look inside; shared nodes are visited once."""
    memo: dict[int, Region] = {}

    def visit(node: LogicNode) -> Region:
        got = memo.get(id(node))
        if got is not None:
            return got
        out = known(node)
        if out is None:
            out = _region_node(node, visit)
        memo[id(node)] = out
        return out

    return visit(expr)


def _region_node(node: LogicNode, visit: Callable[[LogicNode], Region]) -> Region:
    match node:
        case Immediate(val=val):
            return val, False
        case Field():
            return INDEX_DTYPE.type(0), True
        case Table(tns=Immediate(val=tns)):
            return getattr(tns, "fill_value", np.dtype(tns.dtype).type(0)), bool(
                getattr(tns, "full", True))
        case MapJoin(op=Immediate(val=op), args=args):
            parts = [visit(a) for a in args]
            return mapjoin_region(op, [f for f, _ in parts], [d for _, d in parts])
        case Aggregate(op=Immediate(val=op), init=Immediate(val=init), arg=arg):
            fill, full = visit(arg)
            return aggregate_fill(op, init, result_type(fill)), full
        case Reformat(tns=Immediate(val=spec), arg=arg):
            fill, full = visit(arg)
            kinds = getattr(getattr(spec, "spec", spec), "level_kinds", None)
            return fill, full if kinds is None else all_located(kinds)
        case Relabel(arg=arg) | Reorder(arg=arg) | Subquery(arg=arg):
            return visit(arg)
    raise TypeError(f"infer_region: not an expression node: {node!r}")
