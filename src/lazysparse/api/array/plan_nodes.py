"""Plan construction helpers: fresh names, broadcasting alignment, mapjoin and aggregate builders.

Every namespace function builds its plan through these, so that broadcasting is always
relabel/reorder with new fields (the optimizer sees contractions) and every result is wrapped
in a ``Subquery`` that gives it an identity (shared subexpressions stay shared).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from lazysparse.api.array.live import shape_of
from lazysparse.formats.specs import format_spec
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
)

_counter = itertools.count()
# the counter fresh names draw from: a value it gives is larger than the serial of every
# alias made before (``held_values`` bounds what a held array can read with one, in C)
SERIALS = _counter


def fresh_field() -> Field:
    """A field name never used before in this process."""
    return Field(f"i{next(_counter)}")


def fresh_fields(n: int) -> tuple[Field, ...]:
    """``n`` fresh fields."""
    if n == 1:  # the common case, without a comprehension
        return (Field(f"i{next(_counter)}"),)
    return tuple([Field(f"i{k}") for k in itertools.islice(_counter, n)])


def fresh_alias() -> Alias:
    """An alias name never used before in this process."""
    return Alias(f"A{next(_counter)}")


def alias_serial(alias: Alias) -> int | None:
    """When a :func:`fresh_alias` was made (its counter value; None for another name). An
    uncomputed subquery is built after the subqueries it reads, so its serial is larger
    than theirs."""
    digits = alias.name[1:]
    return int(digits) if alias.name[:1] == "A" and digits.isdigit() else None


def identify(body: LogicNode) -> Subquery:
    """Wrap ``body`` in a subquery with a fresh alias, giving the result a DAG identity."""
    return Subquery(fresh_alias(), body)


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The Array API broadcast of ``shapes``; ValueError naming the shapes when they clash."""
    if len(shapes) == 2 and shapes[0] == shapes[1]:
        return tuple(shapes[0])  # the common case: one shape
    ndim = max((len(s) for s in shapes), default=0)
    out: list[int] = []
    for axis in range(ndim):
        size = 1
        for s in shapes:
            k = axis - (ndim - len(s))
            if k < 0:
                continue
            d = s[k]
            if d == 1:
                continue
            if size not in (1, d):
                raise ValueError(
                    f"operands could not be broadcast together with shapes "
                    f"{' '.join(str(tuple(x)) for x in shapes)}"
                )
            size = d
        out.append(size)
    return tuple(out)


def access(expr: LogicNode, shape: Sequence[int], out_fields: Sequence[Field],
           out_shape: Sequence[int]) -> LogicNode:
    """``expr`` (of ``shape``) viewed on ``out_fields`` of a broadcast result of ``out_shape``.

    Axes align from the right. A size-1 axis broadcast against a larger one gets a fresh field
    that a ``Reorder`` drops, so it never joins with the result's field of that axis.
    """
    offset = len(out_shape) - len(shape)
    labels: list[Field] = []
    kept: list[Field] = []
    for k, d in enumerate(shape):
        f = out_fields[offset + k]
        if d == 1 and out_shape[offset + k] != 1:
            labels.append(fresh_field())
        else:
            labels.append(f)
            kept.append(f)
    node: LogicNode = Relabel(expr, tuple(labels))
    if len(kept) != len(labels):
        node = Reorder(node, tuple(kept))
    return node


def build_mapjoin(op: object, operands: Sequence[tuple[LogicNode, tuple[int, ...]] | Immediate],
                  out_shape: tuple[int, ...]) -> tuple[Subquery, int]:
    """``MapJoin(op, ...)`` over broadcast operands (``(expr, shape)`` pairs or scalars).

    Returns the identified expression and how many plan nodes it adds above its operands'
    expressions (each node and field once: what ``lazy_array.history_extent`` would count,
    known here without a walk). The result is reordered to its axes' fields when the
    operands' fields (unique concatenation) are not exactly those, in axis order: a field
    no operand has (pure broadcast) or a later axis that appears first
    (``ones(3) + ones((2, 1))``).
    """
    n = len(out_shape)  # ``fresh_fields``' common case inlined (per operation built)
    out_fields = (Field(f"i{next(_counter)}"),) if n == 1 else fresh_fields(n)
    args: list[LogicNode] = []
    present: dict[Field, None] = {}
    in_order = False  # the first array operand has the result's shape: its fields lead
    added = 2  # the MapJoin and its operator
    fresh = 0  # broadcast fields no other node holds
    for operand in operands:
        if type(operand) is Immediate or isinstance(operand, Immediate):
            args.append(operand)
            added += 1
            continue
        expr, shape = operand
        if shape == out_shape:  # no broadcast (the common case): the result's fields
            args.append(Relabel(expr, out_fields))
            added += 1
            in_order = in_order or not present
            if not in_order:
                present.update(dict.fromkeys(out_fields))
            continue
        node = access(expr, shape, out_fields, out_shape)
        args.append(node)
        added += 1 if type(node) is Relabel else 2
        labels = node.arg.idxs if type(node) is Reorder else node.idxs  # type: ignore[attr-defined]
        for f in labels:
            if f not in out_fields:
                fresh += 1
        if not in_order:
            present.update(dict.fromkeys(node.idxs))  # the fields it keeps
    body: LogicNode = MapJoin(Immediate(op), tuple(args))
    if not in_order and tuple(present) != out_fields:
        # a field missing (pure broadcast) or the operands' field order (unique
        # concatenation, first appearance first) is not the axis order
        body = Reorder(body, out_fields)
        added += 1
    # every result field is held by some node (an operand's relabel or the reorder);
    # ``identify`` inlined (per operation built)
    return Subquery(Alias(f"A{next(_counter)}"), body), added + fresh + len(out_fields)


def build_aggregate(op: object, init: object, expr: LogicNode, ndim: int | Sequence[int],
                    axes: Sequence[int], keepdims: bool = False,
                    dense: bool = False) -> Subquery:
    """:func:`counted_aggregate`'s expression alone."""
    return counted_aggregate(op, init, expr, ndim, axes, keepdims, dense)[0]


def counted_aggregate(op: object, init: object, expr: LogicNode, ndim: int | Sequence[int],
                      axes: Sequence[int], keepdims: bool = False,
                      dense: bool = False) -> tuple[Subquery, int]:
    """``Aggregate(op, init, expr, reduced)`` over ``axes`` of an ``ndim``-d expression, and
    how many plan nodes it adds above ``expr`` (as ``build_mapjoin`` counts them).

    ``ndim`` may be the expression's shape (else it is looked up when ``expr`` is a live
    array's): size-1 axes are then dropped (a ``Reorder``) before the aggregate instead of
    being looped over, reduced or not (a size-1 axis may have been added by a ``Reorder``
    and have no extent in a kernel). With ``keepdims`` the
    reduced axes come back as size-1 axes through a ``Reorder`` that adds fresh fields.
    ``dense`` stores the aggregate dense (a ``Reformat``; the kept axes only).
    """
    shape = None if isinstance(ndim, int) else tuple(ndim)
    if shape is None:
        known = shape_of(expr)
        shape = known if known is not None and len(known) == ndim else None
    n = ndim if isinstance(ndim, int) else len(ndim)
    fields = fresh_fields(n)
    reduced_list: list[Field] = []
    for a in sorted(set(axes)):  # a loop, not a generator: per reduction built
        reduced_list.append(fields[a])
    reduced = tuple(reduced_list)
    arg: LogicNode = Relabel(expr, fields)
    # the relabel and its fields, the aggregate with its operator and init, a Reformat
    # with its spec
    added = 1 + n + 3 + (2 if dense else 0)
    if shape is not None and 1 in shape:
        unit = {f for f, d in zip(fields, shape, strict=True) if d == 1}
        arg = Reorder(arg, tuple(f for f in fields if f not in unit))
        out: list[Field] = []
        for f in fields:
            if f in reduced:
                if keepdims:
                    out.append(fresh_field())
            else:
                out.append(fresh_field() if f in unit else f)
        agg: LogicNode = Aggregate(Immediate(op), Immediate(init), arg,
                                   tuple(f for f in reduced if f not in unit))
        if dense:
            kept = sum(1 for f in fields if f not in unit and f not in reduced)
            agg = Reformat(Immediate(format_spec("dense", kept)), agg)
        fresh = sum(1 for f in out if f not in fields)
        return identify(Reorder(agg, tuple(out))), added + 2 + fresh  # the two reorders
    body: LogicNode = Aggregate(Immediate(op), Immediate(init), arg, reduced)
    if dense:
        body = Reformat(Immediate(format_spec("dense", n - len(reduced))), body)
    if keepdims and reduced:
        body = Reorder(body, tuple(fresh_field() if f in reduced else f for f in fields))
        added += 1 + len(reduced)
    return identify(body), added
