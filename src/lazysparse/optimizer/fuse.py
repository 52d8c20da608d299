"""Pass 5: fuse aggregate queries into their single consumer when that saves a kernel.

On canonical queries (see ``push_fields``). An aggregate query ``R`` read once and not
produced merges into its consumer when the consumer

- only relabels/reorders ``R`` (a transposed or reformatted result): the consumer becomes R;
- reduces ``R`` again with the same op and R's init is that op's identity
  (``sum(sum(x, 1))``): one aggregate over both field sets;
- multiplies ``R`` pointwise by operands whose fields are among R's kept fields, with an op
  that distributes over R's op and that R's init annihilates (``S * (U @ V.T)``,
  ``sum(A * (A @ A))``): the product moves under the reduction, so a sparse ``S`` masks it.

An aggregate with no reduced fields becomes ``mapjoin(op, init, arg)``.
"""

from __future__ import annotations

from lazysparse.formats.dtypes import same_value
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
)
from lazysparse.optimizer.analysis import (
    AliasInfo,
    compute_queries,
    computed_info,
    expr_dtype,
    op_of,
    query_parts,
    result_axes,
    selection_distributes,
)
from lazysparse.optimizer.push_fields import rename_fields
from lazysparse.optimizer.rewrite import Namer, accesses, alias_uses, expr_fields, produced

# (pointwise op, reduction op) pairs with f(s, x ⊕ y) == f(s, x) ⊕ f(s, y)
DISTRIBUTES = frozenset({
    ("multiply", "add"),
    ("logical_and", "logical_or"),
    ("bitwise_and", "bitwise_or"),
    ("logical_and", "logical_xor"),
    ("bitwise_and", "bitwise_xor"),
})


def _instantiate(rhs: LogicNode, idxs: tuple[Field, ...], namer: Namer
                 ) -> tuple[Aggregate, LogicNode, tuple[Field, ...]]:
    """R's aggregate, body and reduced fields with its axes renamed to ``idxs`` and every
    other field fresh (so the body can be pasted into a consumer)."""
    _, agg, loop = query_parts(rhs)
    assert agg is not None
    axes = result_axes(rhs)
    mapping = dict(zip(axes, idxs, strict=True))
    for f in expr_fields(loop):
        if f not in mapping:
            mapping[f] = namer.field()
    body = rename_fields(loop.arg, mapping)
    red = tuple(mapping[f] for f in agg.idxs)
    return agg, body, red


def _identity_of(op: Immediate, init: Immediate, dtype: object) -> bool:
    try:
        return same_value(op_of(op).identity_for(dtype), init.val)
    except (TypeError, ValueError):
        return False


def _find_site(node: LogicNode, defs: dict[Alias, LogicNode]
               ) -> tuple[tuple[int, ...], Relabel] | None:
    """The argument path from ``node`` down through mapjoins to the first access of a
    candidate aggregate (``()`` when ``node`` is that access), or None."""
    if isinstance(node, Relabel) and node.arg in defs:
        return (), node
    if isinstance(node, MapJoin):
        for t, a in enumerate(node.args):
            found = _find_site(a, defs)
            if found is not None:
                return (t, *found[0]), found[1]
    return None


def _distributes(node: MapJoin, site: int, r_agg: Aggregate, r_dtype: object,
                 kept: set[Field]) -> bool:
    """Can ``node`` move under the reduction ``r_agg`` that its argument ``site`` holds?
    Its other arguments must range over kept fields only, and it must either select
    (``where(c, ·, e)``) or distribute over the reduction with the init as annihilator."""
    if any(not set(expr_fields(o)) <= kept for t, o in enumerate(node.args) if t != site):
        return False
    if selection_distributes(node, site, r_agg, r_dtype):
        return True
    f = op_of(node.op)
    if (f.name, op_of(r_agg.op).name) not in DISTRIBUTES:
        return False
    try:
        return same_value(f.annihilator_for(r_dtype), r_agg.init.val)
    except (TypeError, ValueError):
        return False


def _replace_at(node: LogicNode, path: tuple[int, ...], new: LogicNode) -> LogicNode:
    if not path:
        return new
    assert isinstance(node, MapJoin)
    head, rest = path[0], path[1:]
    return MapJoin(node.op, tuple(_replace_at(a, rest, new) if t == head else a
                                  for t, a in enumerate(node.args)))


def _try_fuse(rhs: LogicNode, defs: dict[Alias, LogicNode], infos: dict[Alias, AliasInfo],
              namer: Namer) -> tuple[LogicNode, Alias] | None:
    """One fusion of a candidate aggregate into canonical ``rhs``, or None. The aggregate's
    access may sit under several mapjoins (``where(S != 0, U @ V.T, 0) * S``): each must
    move under the reduction (:func:`_distributes`)."""
    spec, agg, loop = query_parts(rhs)
    body = loop.arg
    found = _find_site(body, defs)
    if found is None:
        return None
    path, target = found
    r_alias: Alias = target.arg  # type: ignore[assignment]
    r_agg, r_body, r_red = _instantiate(defs[r_alias], target.idxs, namer)
    r_dtype = infos[r_alias].dtype
    kept = set(target.idxs)
    node = body
    for t in path:
        assert isinstance(node, MapJoin)
        if not _distributes(node, t, r_agg, r_dtype, kept):
            return None
        node = node.args[t]
    new_body = _replace_at(body, path, r_body)
    if agg is not None:
        if op_of(agg.op) != op_of(r_agg.op) or not _identity_of(r_agg.op, r_agg.init, r_dtype):
            return None
        op, init, red = agg.op, agg.init, (*agg.idxs, *r_red)
    else:
        op, init, red = r_agg.op, r_agg.init, r_red
    new: LogicNode = Aggregate(op, init, Reorder(new_body, (*loop.idxs, *r_red)), red)
    if spec is not None:
        new = Reformat(spec, new)
    old_expr = rhs.arg if isinstance(rhs, Reformat) else rhs
    new_expr = new.arg if isinstance(new, Reformat) else new
    try:
        local = {**infos, r_alias: infos[r_alias]}
        if expr_dtype(_flat(new_expr), local) != expr_dtype(_flat(old_expr), local):
            return None
    except (TypeError, ValueError, KeyError):
        return None
    return new, r_alias


def _flat(rhs: LogicNode) -> LogicNode:
    """A canonical rhs as a plain expression (Aggregate over the Reorder's body)."""
    if isinstance(rhs, Aggregate):
        assert isinstance(rhs.arg, Reorder)
        return Aggregate(rhs.op, rhs.init, rhs.arg.arg, rhs.idxs)
    assert isinstance(rhs, Reorder)
    return rhs.arg


def _drop_empty_aggregate(rhs: LogicNode) -> LogicNode:
    spec, agg, loop = query_parts(rhs)
    if agg is None or agg.idxs:
        return rhs
    new: LogicNode = Reorder(MapJoin(agg.op, (agg.init, loop.arg)), loop.idxs)
    return new if spec is None else Reformat(spec, new)


def fuse_aggregates(plan: Plan) -> Plan:
    """Merge single-use aggregate queries into their consumers (see module doc)."""
    namer = Namer(plan, field_prefix="r")
    uses = alias_uses(plan)
    keep = produced(plan)
    infos: dict[Alias, AliasInfo] = {}
    defs: dict[Alias, LogicNode] = {}
    removed: set[Alias] = set()
    rhs_of: dict[Alias, LogicNode] = {}
    order: list[LogicNode] = []
    for body in compute_queries(plan, infos, order):
        rhs = _drop_empty_aggregate(body.rhs)
        while True:
            res = _try_fuse(rhs, defs, infos, namer)
            if res is None:
                break
            rhs, gone = res
            removed.add(gone)
            del defs[gone]
        infos[body.lhs] = computed_info(rhs, infos)
        rhs_of[body.lhs] = rhs
        _, agg, _ = query_parts(rhs)
        if (agg is not None and not isinstance(rhs, Reformat) and uses[body.lhs] == 1
                and body.lhs not in keep):
            defs[body.lhs] = rhs
        order.append(body)
    out: list[LogicNode] = []
    for body in order:
        if isinstance(body, Query) and body.lhs in rhs_of:
            if body.lhs in removed:
                continue
            out.append(Query(body.lhs, rhs_of[body.lhs]))
        else:
            out.append(body)
    assert all(a.arg not in removed for q in out if isinstance(q, Query)
               for a in accesses(q.rhs))
    return Plan(tuple(out))
