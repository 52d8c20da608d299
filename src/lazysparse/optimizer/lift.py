"""Passes 1-2: turn the api's DAG into SSA queries, one per aggregate, reformat and table.

``lift_subqueries`` hoists every ``Subquery`` into a top-level ``Query`` (once per alias, so
shared subexpressions stay shared) and replaces its uses by ``Relabel(alias, fields)``.
``isolate_*`` give every nested Aggregate / Reformat / Table its own query.
"""

from __future__ import annotations

from collections.abc import Callable

from lazysparse.logic.fields import getfields
from lazysparse.logic.nodes import (
    Aggregate,
    Alias,
    Field,
    LogicNode,
    Plan,
    Produces,
    Query,
    Reformat,
    Relabel,
    Subquery,
    Table,
)
from lazysparse.logic.traversal import map_children
from lazysparse.optimizer.rewrite import Namer


def lift_subqueries(plan: Plan) -> Plan:
    """Hoist each ``Subquery(lhs, arg)`` into ``Query(lhs, arg)`` before its first use.

    Uses become ``Relabel(lhs, getfields(arg))``; a bare ``Alias`` read gets the fields of its
    definition the same way. Each alias is lifted once (memo by alias, then by node id).
    """
    out: list[LogicNode] = []
    fields_of: dict[Alias, tuple[Field, ...]] = {}
    memo: dict[int, LogicNode] = {}

    def lift(node: LogicNode) -> LogicNode:
        key = id(node)
        if key in memo:
            return memo[key]
        if isinstance(node, Subquery):
            if node.lhs not in fields_of:
                arg = lift(node.arg)
                fields_of[node.lhs] = getfields(arg)
                out.append(Query(node.lhs, arg))
            res: LogicNode = Relabel(node.lhs, fields_of[node.lhs])
        elif isinstance(node, Alias):
            if node not in fields_of:
                raise ValueError(f"{node!r} is read before any query defines it")
            res = Relabel(node, fields_of[node])
        elif isinstance(node, Relabel) and isinstance(node.arg, Alias):
            if node.arg not in fields_of:
                raise ValueError(f"{node.arg!r} is read before any query defines it")
            res = node
        else:
            res = map_children(node, lift)
        memo[key] = res
        return res

    for body in plan.bodies:
        if isinstance(body, Query):
            if body.lhs in fields_of:
                raise ValueError(f"{body.lhs!r} is defined twice")
            rhs = lift(body.rhs)
            fields_of[body.lhs] = getfields(rhs)
            out.append(Query(body.lhs, rhs))
        elif isinstance(body, Produces):
            for a in body.args:
                if not isinstance(a, Alias) or a not in fields_of:
                    raise ValueError(f"Produces names {a!r}, which no query defines")
            out.append(body)
        else:
            raise TypeError(f"a plan holds Query and Produces statements, got {body!r}")
    return Plan(tuple(out))


def _isolate(plan: Plan, kind: Callable[[LogicNode], bool], dedup_tables: bool = False) -> Plan:
    """Give every node matching ``kind`` that is not a query's whole rhs its own query."""
    namer = Namer(plan, alias_prefix="Q")
    out: list[LogicNode] = []
    table_alias: dict[tuple[int, int], tuple[Alias, tuple[Field, ...]]] = {}

    def visit(node: LogicNode, root: bool) -> LogicNode:
        node = map_children(node, lambda c: visit(c, False))
        if root or not kind(node):
            return node
        fields = getfields(node)
        if dedup_tables and isinstance(node, Table):
            key = (id(node.tns.val), len(fields))
            if key in table_alias:
                alias, own = table_alias[key]
                return Relabel(alias, fields)
        alias = namer.alias()
        out.append(Query(alias, node))
        if dedup_tables and isinstance(node, Table):
            table_alias[(id(node.tns.val), len(fields))] = (alias, fields)
        return Relabel(alias, fields)

    for body in plan.bodies:
        if isinstance(body, Query):
            rhs = visit(body.rhs, True)
            if dedup_tables and isinstance(rhs, Table):
                table_alias.setdefault((id(rhs.tns.val), len(rhs.idxs)), (body.lhs, rhs.idxs))
            out.append(Query(body.lhs, rhs))
        else:
            out.append(body)
    return Plan(tuple(out))


def isolate_reformats(plan: Plan) -> Plan:
    """Every nested ``Reformat`` becomes its own query (a materialization boundary)."""
    return _isolate(plan, lambda n: isinstance(n, Reformat))


def isolate_aggregates(plan: Plan) -> Plan:
    """Every nested ``Aggregate`` becomes its own query (Finch's split of nested reductions)."""
    return _isolate(plan, lambda n: isinstance(n, Aggregate))


def isolate_tables(plan: Plan) -> Plan:
    """Every nested ``Table`` becomes an input query, one per distinct tensor."""
    return _isolate(plan, lambda n: isinstance(n, Table), dedup_tables=True)
