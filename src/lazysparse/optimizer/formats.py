"""Pass 7: choose each result's storage format; pass 8: normal form.

Format rules (``analysis.choose_level_kinds``): the result's fill is ``op(fills)`` for a
mapjoin and ``init`` for an aggregate. It can skip entries only where its operands do: an
operand whose fill annihilates the op masks the result (intersection), an op over sparse
operands only is sparse on their union, and an aggregate keeps a sparse level iff
``op(init, fill) == init``. A result estimated denser than ``DENSE_THRESHOLD`` is dense,
unless its dense size passes the densify limit and it is exactly sparse on its sparse
operands' union (``A + 1`` on a huge ``A``): then it stays sparse. A dense result past the
limit that no dense operand is as large as raises ``DensifyError`` before any allocation.
Results are stored in their axis order (the loop order minus the reduced fields), so writes
that arrive in that order append to compressed levels and the kernel scatters the others
through a workspace; a last level that alone receives scattered writes is left unordered
(``optimizer.scatter``). A Reformat already present (``asformat``, a concordizing copy) wins.
"""

from __future__ import annotations

from lazysparse.formats.levels.registry import all_located
from lazysparse.formats.specs import infer_spec
from lazysparse.logic.nodes import (
    Alias,
    Field,
    Immediate,
    LogicNode,
    Plan,
    Produces,
    Query,
    Reformat,
    Relabel,
    Table,
)
from lazysparse.optimizer.analysis import (
    AliasInfo,
    check_dense_result,
    choose_level_kinds,
    compute_queries,
    computed_info,
    query_parts,
)
from lazysparse.optimizer.push_fields import rename_fields
from lazysparse.optimizer.rewrite import accesses, expr_fields, substitute_access
from lazysparse.optimizer.scatter import scatter_level_kinds
from lazysparse.optimizer.structure import structured_kinds
from lazysparse.optimizer.unreached import (
    reached_keepers,
    region_readers,
    region_uses,
    sparse_kinds,
)


def choose_formats(plan: Plan) -> Plan:
    """Wrap every compute query without a Reformat in ``Reformat(Immediate(spec), ...)``;
    a last level that alone receives scattered writes is left unordered (CPU kernels)."""
    return _choose_formats(plan, unordered=True)


def choose_ordered_formats(plan: Plan) -> Plan:
    """:func:`choose_formats` with every chosen level ordered (the CUDA kernels' results,
    which their consumers merge without sorting first)."""
    return _choose_formats(plan, unordered=False)


def _choose_formats(plan: Plan, unordered: bool) -> Plan:
    infos: dict[Alias, AliasInfo] = {}
    out: list[LogicNode] = []
    uses = region_uses(plan)
    keep_region, keep_fills = region_readers(uses), reached_keepers(uses)
    for body in compute_queries(plan, infos, out):
        rhs = body.rhs
        if not isinstance(rhs, Reformat):
            kinds = choose_level_kinds(rhs, infos)
            if body.lhs in keep_region and kinds and all_located(kinds):
                kinds = sparse_kinds(len(kinds))
            check_dense_result(rhs, infos, kinds)
            kinds = structured_kinds(rhs, kinds, infos)
            if unordered:
                kinds = scatter_level_kinds(rhs, kinds, infos)
            rhs = Reformat(Immediate(infer_spec(kinds, tuple(range(len(kinds))))), rhs)
        elif all_located(getattr(rhs.tns.val, "level_kinds", ("?",))):
            # a dense result asked for (an axis reduction): the same limits as a chosen one
            check_dense_result(rhs, infos, tuple(rhs.tns.val.level_kinds))
        if body.lhs in keep_fills and not all_located(rhs.tns.val.level_kinds):
            rhs = Reformat(Immediate(rhs.tns.val.keeping_fills()), rhs.arg)
        infos[body.lhs] = computed_info(rhs, infos)
        out.append(Query(body.lhs, rhs))
    return Plan(tuple(out))


def normal_form(plan: Plan) -> Plan:
    """Drop queries nothing produced depends on and give canonical names.

    Input queries move first; aliases become ``A0, A1, …`` in query order and each query's
    fields ``i0, i1, …`` in loop order, so equal computations print (and key) the same.
    """
    needed: set[Alias] = set()
    for body in plan.bodies:
        if isinstance(body, Produces):
            needed.update(a for a in body.args if isinstance(a, Alias))
    for body in reversed(plan.bodies):
        if isinstance(body, Query) and body.lhs in needed:
            needed.update(acc.arg for acc in accesses(body.rhs))  # type: ignore[misc]
    names: dict[Alias, Alias] = {}
    out: list[LogicNode] = []
    inputs = [q for q in plan.bodies if isinstance(q, Query) and isinstance(q.rhs, Table)]
    rest = [q for q in plan.bodies if not (isinstance(q, Query) and isinstance(q.rhs, Table))]
    for body in [*inputs, *rest]:
        if isinstance(body, Query):
            if body.lhs not in needed:
                continue
            names[body.lhs] = Alias(f"A{len(names)}")
            rhs = substitute_access(body.rhs, lambda acc: _rename_alias(acc, names))
            if isinstance(rhs, Table):
                mapping = {f: Field(f"i{k}") for k, f in enumerate(rhs.idxs)}
                rhs = Table(rhs.tns, tuple(mapping[f] for f in rhs.idxs))
            else:
                _, _, loop = query_parts(rhs)
                order = [*loop.idxs, *(f for f in expr_fields(rhs) if f not in loop.idxs)]
                mapping = {f: Field(f"i{k}") for k, f in enumerate(dict.fromkeys(order))}
                rhs = rename_fields(rhs, mapping)
            out.append(Query(names[body.lhs], rhs))
        elif isinstance(body, Produces):
            out.append(Produces(tuple(names[a] for a in body.args)))  # type: ignore[index]
        else:
            out.append(body)
    return Plan(tuple(out))


def _rename_alias(acc: LogicNode, names: dict[Alias, Alias]) -> LogicNode:
    assert isinstance(acc, Relabel)
    return Relabel(names[acc.arg], acc.idxs)  # type: ignore[index]
