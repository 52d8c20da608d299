"""Pass 3: inline copy, transpose and elementwise queries into their consumers (the fusion).

Only Reformat queries (and produced results) keep a materialization break; a pointwise query
read by several consumers is recomputed in each (as in Finch.jl).
"""

from __future__ import annotations

from collections.abc import Callable

from lazysparse.logic.nodes import (
    Alias,
    LogicNode,
    Plan,
    Produces,
    Query,
    Reformat,
    Relabel,
    Reorder,
    Table,
)
from lazysparse.optimizer.rewrite import (
    alias_uses,
    expr_fields,
    is_pointwise,
    produced,
    substitute_access,
)

# a copy rule: given a query's right-hand side (reads of removed copies already redirected),
# the alias it copies (the query is dropped) or the right-hand side to keep
CopyRule = Callable[[Alias, LogicNode], tuple[Alias | None, LogicNode]]


def _redirect_copies(plan: Plan, rule: CopyRule) -> Plan:
    """Drop every query ``rule`` calls a copy; reads of it read its source, and a produced
    copy is produced as its source."""
    same: dict[Alias, Alias] = {}
    out: list[LogicNode] = []

    def resolve(acc: Relabel) -> LogicNode | None:
        target = same.get(acc.arg)  # type: ignore[arg-type]
        return None if target is None else Relabel(target, acc.idxs)

    for body in plan.bodies:
        if isinstance(body, Query):
            source, rhs = rule(body.lhs, substitute_access(body.rhs, resolve))
            if source is not None:
                same[body.lhs] = source
                continue
            out.append(Query(body.lhs, rhs))
        elif isinstance(body, Produces):
            out.append(Produces(tuple(same.get(a, a) for a in body.args)))  # type: ignore[arg-type]
        else:
            out.append(body)
    return Plan(tuple(out))


def inline_copies(plan: Plan) -> Plan:
    """Remove ``Query(a, Relabel(b, idxs))`` (a renamed copy): reads of ``a`` read ``b``.

    Also applies to produced copies, whose ``Produces`` entry then names ``b``, and to an
    ``asformat`` of an input to the format it is already stored in.
    """
    stored: dict[Alias, object] = {}

    def rule(lhs: Alias, rhs: LogicNode) -> tuple[Alias | None, LogicNode]:
        rhs = _collapse_relabels(rhs)
        if isinstance(rhs, Table):
            stored[lhs] = getattr(rhs.tns.val, "spec", None)
        if (isinstance(rhs, Reformat) and isinstance(rhs.arg, Relabel)
                and rhs.arg.arg in stored and stored[rhs.arg.arg] == rhs.tns.val):
            rhs = rhs.arg  # asformat to the format the input already has: no copy
        if (isinstance(rhs, Relabel) and isinstance(rhs.arg, Alias)
                and len(set(rhs.idxs)) == len(rhs.idxs)):
            return rhs.arg, rhs
        return None, rhs

    return _redirect_copies(plan, rule)


def _collapse_relabels(rhs: LogicNode) -> LogicNode:
    """``Relabel(Relabel(x, f1), f2)`` is ``Relabel(x, f2)`` (renaming is positional)."""
    while (isinstance(rhs, Relabel) and isinstance(rhs.arg, Relabel)
           and len(rhs.arg.idxs) == len(rhs.idxs)):
        rhs = Relabel(rhs.arg.arg, rhs.idxs)
    return rhs


# a pointwise query read more than once is inlined (recomputed per read) only when its
# expression has at most this many nodes; larger ones are materialized once
INLINE_SHARED_MAX_NODES = 12


def tree_size(node: LogicNode, memo: dict[int, int] | None = None) -> int:
    """Node count of ``node`` unfolded as a tree (memoized, so shared DAGs stay cheap)."""
    if memo is None:
        memo = {}
    key = id(node)
    if key not in memo:
        memo[key] = 1 + sum(tree_size(c, memo) for c in node.children)
    return memo[key]


def inline_pointwise(plan: Plan) -> Plan:
    """Substitute every non-produced pointwise query (transpose, broadcast, elementwise map)
    into the expressions that read it, and drop it. A query read several times is inlined
    only when small (``INLINE_SHARED_MAX_NODES``), so repeated reuse cannot blow up."""
    keep = produced(plan)
    uses = alias_uses(plan)
    defs: dict[Alias, LogicNode] = {}
    out: list[LogicNode] = []

    def resolve(acc: Relabel) -> LogicNode | None:
        rhs = defs.get(acc.arg)  # type: ignore[arg-type]
        return None if rhs is None else Relabel(rhs, acc.idxs)

    for body in plan.bodies:
        if isinstance(body, Query):
            rhs = substitute_access(body.rhs, resolve)
            if (body.lhs not in keep and not isinstance(rhs, Table) and is_pointwise(rhs)
                    and (uses[body.lhs] <= 1 or tree_size(rhs) <= INLINE_SHARED_MAX_NODES)):
                defs[body.lhs] = rhs
                continue
            out.append(Query(body.lhs, rhs))
        else:
            out.append(body)
    return Plan(tuple(out))


def drop_format_copies(plan: Plan) -> Plan:
    """Remove ``Query(a, Reformat(f, Relabel(b, idxs)))`` (identity ``Reorder``s around the
    access allowed) when ``b`` is itself a ``Reformat`` to the same format ``f``: a second
    copy in the storage ``b`` already has. Reads of ``a`` read ``b``; a produced ``a`` is
    produced as ``b``. Such copies appear when fusion leaves a map between two reformats
    (a reduction over a size-1 axis after another reduction, as Dask's tree sum does)."""
    formats: dict[Alias, object] = {}

    def rule(lhs: Alias, rhs: LogicNode) -> tuple[Alias | None, LogicNode]:
        source = _copied_alias(rhs)
        if source is not None and formats.get(source) == rhs.tns.val:  # type: ignore[attr-defined]
            return source, rhs
        if isinstance(rhs, Reformat):
            formats[lhs] = rhs.tns.val
        return None, rhs

    return _redirect_copies(plan, rule)


def _copied_alias(rhs: LogicNode) -> Alias | None:
    """``b`` when ``rhs`` is ``Reformat(f, Relabel(b, idxs))`` up to identity reorders
    (each lists the fields of what it reorders, in order; ``idxs`` distinct)."""
    if not isinstance(rhs, Reformat):
        return None
    arg = rhs.arg
    while isinstance(arg, Reorder) and isinstance(arg.arg, Reorder | Relabel) \
            and tuple(arg.idxs) == tuple(expr_fields(arg.arg)):
        arg = arg.arg
    if (isinstance(arg, Relabel) and isinstance(arg.arg, Alias)
            and len(set(arg.idxs)) == len(arg.idxs)):
        return arg.arg
    return None
