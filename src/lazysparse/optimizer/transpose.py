"""Pass 8: absorb a transposed copy into the map that reads it (``-A.T`` is one kernel).

``concordize`` gives a map that reads an alias ``S`` against its storage order a copy
``T = reformat(spec, reorder(relabel(S, h), storage order of S))``. When ``T`` is read once,
by a pointwise query ``B = [reformat(specB,)] reorder(body, axes)`` whose every field ``S``
indexes, ``B`` reads ``S`` directly and loops in ``S``'s storage order instead, keeping its
result axes through the normal form's RESULT reorder:

    B = reformat(specB', reorder(reorder(body[T -> S], S's storage order), axes))

No copy is made: the kernel writes the result in the loop's order. A format the user asked
for (``asformat``: ``B`` already has a Reformat) is kept, and the kernel scatters into it;
otherwise the result is stored in the loop's order (a transposed CSR read gives a CSC
result sharing ``S``'s pattern), with the level kinds ``choose_formats`` would pick.
"""

from __future__ import annotations

from lazysparse.formats.specs import infer_spec
from lazysparse.logic.nodes import (
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
    check_dense_result,
    choose_level_kinds,
    compute_queries,
    computed_info,
)
from lazysparse.optimizer.loop_order import storage_chain
from lazysparse.optimizer.rewrite import accesses, alias_uses, produced, subsequence


def _copy_source(rhs: LogicNode) -> tuple[Relabel, tuple[Field, ...]] | None:
    """``(relabel(S, h), loop)`` of a pure reordering copy ``reformat(spec, reorder(relabel(S,
    h), loop))``, else None."""
    if not (isinstance(rhs, Reformat) and isinstance(rhs.arg, Reorder)):
        return None
    src = rhs.arg.arg
    if not (isinstance(src, Relabel) and isinstance(src.arg, Alias)):
        return None
    return src, rhs.arg.idxs


def _map_parts(rhs: LogicNode) -> tuple[Immediate | None, Reorder] | None:
    """``(spec or None, reorder(pointwise, axes))`` of a pointwise query, else None."""
    spec = None
    if isinstance(rhs, Reformat):
        spec, rhs = rhs.tns, rhs.arg
    if not isinstance(rhs, Reorder) or not isinstance(rhs.arg, MapJoin | Relabel):
        return None
    return spec, rhs


def absorb_copy(rhs: LogicNode, copies: dict[Alias, LogicNode],
                infos: dict[Alias, AliasInfo], read_later: bool = False
                ) -> tuple[LogicNode, Alias] | None:
    """``rhs`` reading one of ``copies``' sources directly, in its storage order, and that
    copy's alias; None when no read qualifies (see the module doc). A result that later
    queries read (``read_later``) keeps its axis order as storage order: ``concordize``
    already ran, so a transposed layout would make their reads discordant."""
    parts = _map_parts(rhs)
    if parts is None:
        return None
    spec, loop = parts
    for target in accesses(loop.arg):
        if target.arg not in copies:
            continue
        src, tloop = _copy_source(copies[target.arg])  # type: ignore[misc,index]
        names = dict(zip(tloop, target.idxs, strict=True))
        direct = Relabel(src.arg, tuple(names[f] for f in src.idxs))
        order = storage_chain(direct, infos[src.arg])  # type: ignore[index]
        if set(order) != set(loop.idxs) or len(order) != len(loop.idxs) or (
                read_later and tuple(order) != tuple(loop.idxs)):
            continue
        t = target
        body = _replace(loop.arg, t, direct)
        if any(not subsequence(storage_chain(a, infos[a.arg]), order)  # type: ignore[index]
               for a in accesses(body)):
            continue
        if spec is None:
            kinds = choose_level_kinds(rhs, infos)
            check_dense_result(rhs, infos, kinds)
            spec = Immediate(infer_spec(kinds, tuple(loop.idxs.index(f) for f in order)))
        new = Reformat(spec, Reorder(Reorder(body, order), loop.idxs))
        return new, target.arg  # type: ignore[return-value]
    return None


def _replace(expr: LogicNode, old: Relabel, new: Relabel) -> LogicNode:
    """``expr`` with the access ``old`` (compared by identity) replaced by ``new``."""
    if expr is old:
        return new
    if isinstance(expr, MapJoin):
        return MapJoin(expr.op, tuple(_replace(a, old, new) for a in expr.args))
    return expr


def absorb_transposes(plan: Plan) -> Plan:
    """Read transposed copies' sources directly from the single map that reads each copy
    (see the module doc). Runs after ``concordize``, before ``choose_formats``."""
    uses = alias_uses(plan)
    keep = produced(plan)
    read = {acc.arg for q in plan.bodies if isinstance(q, Query) for acc in accesses(q.rhs)}
    infos: dict[Alias, AliasInfo] = {}
    copies: dict[Alias, LogicNode] = {}
    removed: set[Alias] = set()
    out: list[LogicNode] = []
    for body in compute_queries(plan, infos, out):
        rhs = body.rhs
        merged = absorb_copy(rhs, copies, infos, body.lhs in read)
        if merged is not None:
            rhs, gone = merged
            removed.add(gone)
            del copies[gone]
        elif _copy_source(rhs) is not None and uses[body.lhs] == 1 and body.lhs not in keep:
            copies[body.lhs] = rhs
        infos[body.lhs] = computed_info(rhs, infos)
        out.append(Query(body.lhs, rhs))
    return Plan(tuple(q for q in out if not (isinstance(q, Query) and q.lhs in removed)))
