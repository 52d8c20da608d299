"""Generic traversal of Finch-Logic expressions: rebuild a node's children, rewrite bottom
up, visit every node. Used by every stage that walks a plan (optimizer passes, the plan
cache, the api's memo substitution); no stage logic here.

Walks memoize on node identity, so a plan DAG with shared subtrees is visited once per
distinct node object (structural hashing of a deep DAG would be exponential).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from lazysparse.logic.nodes import (
    Aggregate,
    LogicNode,
    MapJoin,
    Query,
    Reformat,
    Relabel,
    Reorder,
    Subquery,
)


def map_children(node: LogicNode, fn: Callable[[LogicNode], LogicNode]) -> LogicNode:
    """``node`` rebuilt with ``fn`` applied to its expression children (not ops/fields)."""
    match node:
        case MapJoin(op=op, args=args):
            new = tuple(fn(a) for a in args)
            return node if all(a is b for a, b in zip(new, args, strict=True)) else MapJoin(op, new)
        case Aggregate(op=op, init=init, arg=arg, idxs=idxs):
            a = fn(arg)
            return node if a is arg else Aggregate(op, init, a, idxs)
        case Reorder(arg=arg, idxs=idxs):
            a = fn(arg)
            return node if a is arg else Reorder(a, idxs)
        case Relabel(arg=arg, idxs=idxs):
            a = fn(arg)
            return node if a is arg else Relabel(a, idxs)
        case Reformat(tns=tns, arg=arg):
            a = fn(arg)
            return node if a is arg else Reformat(tns, a)
        case Subquery(lhs=lhs, arg=arg):
            a = fn(arg)
            return node if a is arg else Subquery(lhs, a)
        case Query(lhs=lhs, rhs=rhs):
            a = fn(rhs)
            return node if a is rhs else Query(lhs, a)
    return node


def postwalk(node: LogicNode, fn: Callable[[LogicNode], LogicNode],
             memo: dict[int, LogicNode] | None = None) -> LogicNode:
    """Bottom-up rewrite: children first, then ``fn`` on the rebuilt node (memo by id)."""
    if memo is None:
        memo = {}
    key = id(node)
    if key in memo:
        return memo[key]
    out = fn(map_children(node, lambda c: postwalk(c, fn, memo)))
    memo[key] = out
    return out


def walk(node: LogicNode) -> Iterator[LogicNode]:
    """Every node of an expression (pre-order, each distinct object once)."""
    seen: set[int] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        yield n
        stack.extend(reversed(n.children))


def prewalk(node: LogicNode, fn: Callable[[LogicNode], LogicNode | None],
            memo: dict[int, LogicNode] | None = None) -> LogicNode:
    """Top-down rewrite: ``fn(n)`` replaces ``n`` whole (its children are not visited), or
    None rewrites ``n``'s children instead (memo by id: a shared subtree is visited once,
    and a memo passed again spans several calls)."""
    if memo is None:
        memo = {}
    key = id(node)
    if key in memo:
        return memo[key]
    out = fn(node)
    if out is None:
        out = map_children(node, lambda c: prewalk(c, fn, memo))
    memo[key] = out
    return out
