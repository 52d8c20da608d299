"""Pass 9: fuse a map of an aggregate's result into the aggregating query (an EPILOGUE).

After ``choose_formats`` every compute query is ``reformat(spec, ...)``. A pointwise query

    B = reformat(specB, reorder(f(..., relabel(A, idxs), ...), idxs))

that reads an aggregate query ``A`` (used only there, not produced) with A's result axes in
B's loop order (no transpose; other loop fields of ``B`` index nothing: ``keepdims`` axes of
extent 1, which join A's loop), and whose other operands are scalars, fields and aliases
stored dense, becomes

    B = reformat(specB, f(..., aggregate(op, init, reorder(body, loop), reduced), ...))

the normal form's EPILOGUE: the kernel applies ``f`` once per result entry after the
reduction (PageRank's ``0.85 * (A.T @ x) + c``, ``mean``, ``sum(A, 1) / d``). ``B`` keeps
its format, dtype and fill (the same registry rules give them), so one kernel replaces two
and the aggregate is never stored. Chains compose: an epilogue query is again a candidate.
"""

from __future__ import annotations

from lazysparse.formats.levels.registry import all_located
from lazysparse.logic.nodes import (
    Aggregate,
    Alias,
    Field,
    Immediate,
    LogicNode,
    Plan,
    Query,
    Reformat,
    Relabel,
    Reorder,
    Table,
)
from lazysparse.logic.normal_form import epilogue_aggregate, replace_epilogue_aggregate
from lazysparse.optimizer.push_fields import rename_fields
from lazysparse.optimizer.rewrite import (
    Namer,
    accesses,
    alias_uses,
    expr_fields,
    produced,
    substitute_access,
)
from lazysparse.optimizer.unreached import map_region, region_decides


def _all_dense(spec: object) -> bool:
    kinds = getattr(spec, "level_kinds", None)
    return kinds is not None and all_located(kinds)


def _aggregate_of(body: LogicNode) -> Aggregate | None:
    """The aggregate an aggregate or epilogue query body computes, else None."""
    return body if isinstance(body, Aggregate) else epilogue_aggregate(body)


def _result_axes(agg: Aggregate) -> tuple[Field, ...]:
    assert isinstance(agg.arg, Reorder)
    return tuple(f for f in agg.arg.idxs if f not in agg.idxs)


def _with_unit_axes(source: LogicNode, agg: Aggregate, loop: tuple[Field, ...],
                    names: dict[Field, Field]) -> LogicNode:
    """``source`` whose aggregate also loops over B's extra (extent-1) fields: each right
    after the field before it in B's loop order, so the result axes follow B's order."""
    assert isinstance(agg.arg, Reorder)
    order = list(agg.arg.idxs)
    prev: Field | None = None
    for f in loop:
        g = names[f]
        if g not in order:
            order.insert(0 if prev is None else order.index(prev) + 1, g)
        prev = g
    new = Aggregate(agg.op, agg.init, Reorder(agg.arg.arg, tuple(order)), agg.idxs)
    return replace_epilogue_aggregate(source, new)


def merge_epilogue(rhs: Reformat, defs: dict[Alias, LogicNode], dense: set[Alias],
                   namer: Namer) -> tuple[Reformat, Alias] | None:
    """``rhs`` with one aggregate query of ``defs`` it maps merged in (and that alias), or
    None when no read of ``rhs`` qualifies (see the module doc)."""
    loop = rhs.arg
    if not isinstance(loop, Reorder) or isinstance(loop.arg, Reorder):
        return None  # not a map, or a map with a RESULT reorder
    reads = accesses(loop.arg)
    for k, target in enumerate(reads):
        if target.arg not in defs or \
                tuple(f for f in loop.idxs if f in target.idxs) != target.idxs:
            continue
        others = [a for j, a in enumerate(reads) if j != k]
        if any(a.arg not in dense for a in others):
            continue
        source = defs[target.arg]  # type: ignore[index]
        agg = _aggregate_of(source)
        assert agg is not None
        if not _fusable(loop.arg, target.arg, agg, dense, _all_dense(rhs.tns.val)):  # type: ignore[arg-type]
            continue
        extra = [f for f in loop.idxs if f not in target.idxs]
        if set(extra) & set(expr_fields(_replace_access(loop.arg, target))):
            continue  # an extra field of B is read: a broadcast, not a map per entry
        names = dict(zip(target.idxs, _result_axes(agg), strict=True))
        names.update({f: namer.field() for f in extra})
        if extra:
            source = _with_unit_axes(source, agg, loop.idxs, names)
        body = rename_fields(loop.arg, names)
        alias = target.arg
        epi = substitute_access(body, lambda acc, a=alias, s=source: s if acc.arg == a else None)
        return Reformat(rhs.tns, epi), alias  # type: ignore[arg-type]
    return None


def _fusable(body: LogicNode, alias: Alias, agg: Aggregate, dense: set[Alias],
             dense_out: bool) -> bool:
    """Whether the map ``body`` of ``alias`` (the aggregate ``agg``; every other operand
    stored dense) computes the same fused (``optimizer.unreached``): the fused kernel maps
    every entry of a dense result, the reduction's init where it reached nothing, and only
    the reached entries of a sparse one. So a map that reads dense values and is not
    annihilated where the aggregate is implicit (``(A @ B) + D``: dense) needs a dense
    result, and one that is (``(A @ B) / D``) a sparse result when the aggregate is
    sparse (its unreached entries are the map's fill: 0, even where ``D`` is 0); a
    dense-stored aggregate (``sum(S, axis=1)``, dense as in NumPy) has no implicit region.
    A full map with a part the region annihilates (``maximum(P, D) + P / D``) is fused
    only over a dense-stored aggregate: neither result kernel computes that part right."""
    if not isinstance(agg.init, Immediate):
        return True
    other = lambda a: (0.0, True) if a in dense else None  # noqa: E731
    r, reads_full = map_region(body, alias, agg.init.val, other)
    if r is None or not reads_full:  # constants only, or a region not known: as before
        return True
    if r[1]:
        return dense_out and (alias in dense or
                              not region_decides(body, alias, agg.init.val, other))
    return alias in dense or not dense_out


def _replace_access(expr: LogicNode, target: Relabel) -> LogicNode:
    """``expr`` without the access ``target`` (a scalar stands in), to list other fields."""
    return substitute_access(expr, lambda acc: Immediate(0) if acc is target else None)


def fuse_epilogues(plan: Plan) -> Plan:
    """Merge single-use aggregate queries into the pointwise query that maps their result
    (see the module doc). Runs on formatted plans (after ``choose_formats``)."""
    uses = alias_uses(plan)
    keep = produced(plan)
    namer = Namer(plan, field_prefix="e")
    dense: set[Alias] = set()
    defs: dict[Alias, LogicNode] = {}
    removed: set[Alias] = set()
    out: list[LogicNode] = []
    for body in plan.bodies:
        if not isinstance(body, Query):
            out.append(body)
            continue
        rhs = body.rhs
        if isinstance(rhs, Table):
            if _all_dense(getattr(rhs.tns.val, "spec", None)):
                dense.add(body.lhs)
            out.append(body)
            continue
        assert isinstance(rhs, Reformat), "fuse_epilogues runs after choose_formats"
        merged = merge_epilogue(rhs, defs, dense, namer)
        if merged is not None:
            rhs, gone = merged
            removed.add(gone)
            del defs[gone]
        if _all_dense(rhs.tns.val):
            dense.add(body.lhs)
        if (_aggregate_of(rhs.arg) is not None and uses[body.lhs] == 1
                and body.lhs not in keep):
            defs[body.lhs] = rhs.arg
        out.append(Query(body.lhs, rhs))
    kept = [q for q in out if not (isinstance(q, Query) and q.lhs in removed)]
    assert all(not isinstance(a, Relabel) or a.arg not in removed
               for q in kept if isinstance(q, Query) for a in accesses(q.rhs))
    return Plan(tuple(kept))
