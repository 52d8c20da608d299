"""Pass 4: push Relabel/Reorder to the leaves, giving every compute query a canonical form.

Canonical compute query (the input of loop ordering)::

    Query(a, [Reformat(spec,)] [Aggregate(op, init,] Reorder(BODY, fields) [, reduced)])

``BODY`` is a tree of MapJoins over ``Relabel(Alias, idxs)`` accesses, scalars and Fields.
The Reorder lists the query's logical axes (then the reduced fields); an access field absent
from it belongs to a size-1 axis that a broadcast dropped (it gets a fresh name).
"""

from __future__ import annotations

import numpy as np

from lazysparse.logic.fields import getfields
from lazysparse.logic.nodes import (
    Aggregate,
    Alias,
    Field,
    Immediate,
    LogicNode,
    MapJoin,
    Plan,
    Query,
    Reformat,
    Relabel,
    Reorder,
    Table,
)
from lazysparse.logic.traversal import postwalk, walk
from lazysparse.optimizer.rewrite import Namer


def leafify(expr: LogicNode, env: dict[Field, Field], namer: Namer,
            dropped: set[Field]) -> LogicNode:
    """``expr`` with every Relabel/Reorder resolved into its accesses' field names.

    ``env`` renames ``expr``'s fields; fields a Reorder drops get fresh names (recorded in
    ``dropped``); a dropped Field used as a value is the constant index 0.
    """
    match expr:
        case Relabel(arg=Alias() as a, idxs=idxs):
            return Relabel(a, tuple(env.get(f, f) for f in idxs))
        case Relabel(arg=arg, idxs=idxs):
            inner = getfields(arg)
            if len(inner) != len(idxs):
                raise ValueError(f"Relabel to {len(idxs)} fields of an expression with "
                                 f"{len(inner)}: {expr!r}")
            env2 = {f: env.get(g, g) for f, g in zip(inner, idxs, strict=True)}
            return leafify(arg, env2, namer, dropped)
        case Reorder(arg=arg, idxs=idxs):
            env2: dict[Field, Field] = {}
            keep = set(idxs)
            for f in getfields(arg):
                if f in keep:
                    env2[f] = env.get(f, f)
                else:
                    z = namer.field()
                    dropped.add(z)
                    env2[f] = z
            return leafify(arg, env2, namer, dropped)
        case MapJoin(op=op, args=args):
            return MapJoin(op, tuple(leafify(a, env, namer, dropped) for a in args))
        case Aggregate(op=op, init=init, arg=arg, idxs=idxs):
            env2 = dict(env)
            for r in idxs:
                env2[r] = r
            return Aggregate(op, init, leafify(arg, env2, namer, dropped), idxs)
        case Field():
            g = env.get(expr, expr)
            return Immediate(np.int64(0)) if g in dropped else g
        case Immediate():
            return expr
    raise TypeError(f"push_fields: unexpected node in an expression: {expr!r}")


def canonical_rhs(rhs: LogicNode, namer: Namer) -> LogicNode:
    """The canonical form (see module doc) of one compute query's right-hand side."""
    spec = None
    if isinstance(rhs, Reformat):
        spec, rhs = rhs.tns, rhs.arg
    out_fields = getfields(rhs)
    node = leafify(rhs, {}, namer, set())
    if isinstance(node, Aggregate):
        if any(isinstance(n, Aggregate) for n in _pointwise_nodes(node.arg)):
            raise ValueError("push_fields: nested aggregates must be isolated first")
        red = tuple(node.idxs)
        res: LogicNode = Aggregate(node.op, node.init,
                                   Reorder(node.arg, (*out_fields, *red)), red)
    else:
        res = Reorder(node, out_fields)
    return res if spec is None else Reformat(spec, res)


def _pointwise_nodes(expr: LogicNode) -> list[LogicNode]:
    return list(walk(expr))


def push_fields(plan: Plan) -> Plan:
    """Rewrite every compute query into the canonical form (Relabel/Reorder at the leaves)."""
    namer = Namer(plan, field_prefix="d")
    out: list[LogicNode] = []
    for body in plan.bodies:
        if isinstance(body, Query) and not isinstance(body.rhs, Table):
            out.append(Query(body.lhs, canonical_rhs(body.rhs, namer)))
        else:
            out.append(body)
    return Plan(tuple(out))


def rename_fields(expr: LogicNode, mapping: dict[Field, Field]) -> LogicNode:
    """``expr`` with fields renamed by ``mapping`` everywhere (accesses, values, reorders)."""

    def rule(n: LogicNode) -> LogicNode:
        match n:
            case Field():
                return mapping.get(n, n)
            case Relabel(arg=arg, idxs=idxs):
                return Relabel(arg, tuple(mapping.get(f, f) for f in idxs))
            case Reorder(arg=arg, idxs=idxs):
                return Reorder(arg, tuple(mapping.get(f, f) for f in idxs))
            case Aggregate(op=op, init=init, arg=arg, idxs=idxs):
                return Aggregate(op, init, arg, tuple(mapping.get(f, f) for f in idxs))
        return n

    return postwalk(expr, rule)
