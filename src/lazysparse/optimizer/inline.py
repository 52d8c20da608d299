"""Pass 3: inline copy, transpose and elementwise queries into their consumers (the fusion).

Only Reformat queries (and produced results) keep a materialization break; a pointwise query
read by several consumers is recomputed in each (as in Finch.jl).
"""

from __future__ import annotations

from lazysparse.logic.nodes import (
    Alias,
    LogicNode,
    Plan,
    Produces,
    Query,
    Reformat,
    Relabel,
    Table,
)
from lazysparse.optimizer.rewrite import alias_uses, is_pointwise, produced, substitute_access


def inline_copies(plan: Plan) -> Plan:
    """Remove ``Query(a, Relabel(b, idxs))`` (a renamed copy): reads of ``a`` read ``b``.

    Also applies to produced copies, whose ``Produces`` entry then names ``b``, and to an
    ``asformat`` of an input to the format it is already stored in.
    """
    same: dict[Alias, Alias] = {}
    out: list[LogicNode] = []

    def resolve(acc: Relabel) -> LogicNode | None:
        target = same.get(acc.arg)  # type: ignore[arg-type]
        return None if target is None else Relabel(target, acc.idxs)

    stored: dict[Alias, object] = {}
    for body in plan.bodies:
        if isinstance(body, Query):
            rhs = _collapse_relabels(substitute_access(body.rhs, resolve))
            if isinstance(rhs, Table):
                stored[body.lhs] = getattr(rhs.tns.val, "spec", None)
            if (isinstance(rhs, Reformat) and isinstance(rhs.arg, Relabel)
                    and rhs.arg.arg in stored and stored[rhs.arg.arg] == rhs.tns.val):
                rhs = rhs.arg  # asformat to the format the input already has: no copy
            if (isinstance(rhs, Relabel) and isinstance(rhs.arg, Alias)
                    and len(set(rhs.idxs)) == len(rhs.idxs)):
                same[body.lhs] = rhs.arg
                continue
            out.append(Query(body.lhs, rhs))
        elif isinstance(body, Produces):
            out.append(Produces(tuple(same.get(a, a) for a in body.args)))  # type: ignore[arg-type]
        else:
            out.append(body)
    return Plan(tuple(out))


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
