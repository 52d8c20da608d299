"""Pass 6: choose each query's loop order (outermost first), then concordize.

``choose_loop_orders`` prefers orders concordant with every input's storage order (each
access's storage-ordered fields form a subsequence of the loop order) and ranks them by an
nnz-based count of iteration tasks (the asymptotic cost model's sets, sized under uniform
independence). When no concordant order exists, every order is ranked with a linear
transpose cost per discordant input. A produced result keeps its axes in logical order.
A query's result axes become its loop order minus the reduced fields; later reads of it
are relabeled to that physical order.

``concordize`` then materializes, once per (alias, storage order), a copy of each input
read out of its storage order, stored in the order the consumer needs.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from lazysparse.formats.specs import FormatSpec, infer_spec
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
)
from lazysparse.logic.operators import get_operator
from lazysparse.optimizer.analysis import (
    AliasInfo,
    compute_queries,
    computed_info,
    expr_dtype,
    expr_fill,
    field_sizes,
    nonzero_probability,
    query_parts,
)
from lazysparse.optimizer.rewrite import (
    Namer,
    accesses,
    expr_fields,
    produced,
    subsequence,
    substitute_access,
)

# cost of materializing a transposed copy, per stored entry (sort + scatter)
TRANSPOSE_WEIGHT = 4.0
# cost of scattering through a workspace, per estimated output entry
WORKSPACE_WEIGHT = 1.0
# at most this many loop fields are searched exhaustively
MAX_ENUMERATE = 7


def storage_chain(acc: Relabel, info: AliasInfo) -> tuple[Field, ...]:
    """The access's fields in the alias's storage order (outermost level first)."""
    seen: dict[Field, None] = {}
    for m in info.mode_order:
        seen.setdefault(acc.idxs[m], None)
    return tuple(seen)


def _unique(seq: list[Field]) -> tuple[Field, ...]:
    return tuple(dict.fromkeys(seq))


class _Cost:
    """Iteration-task cost of loop orders for one query body (memoized per bound set)."""

    def __init__(self, body: LogicNode, sizes: dict[Field, int],
                 infos: dict[Alias, AliasInfo]) -> None:
        self.body, self.sizes, self.infos = body, sizes, infos
        self.memo: dict[frozenset[Field], float] = {}
        self.algebra: dict[int, object] = {}

    def tasks(self, bound: frozenset[Field]) -> float:
        if bound not in self.memo:
            space = math.prod(self.sizes[f] for f in bound)
            self.memo[bound] = space * nonzero_probability(self.body, set(bound), self.sizes,
                                                           self.infos, self.algebra)
        return self.memo[bound]

    def __call__(self, order: tuple[Field, ...]) -> float:
        return sum(self.tasks(frozenset(order[:d])) for d in range(1, len(order) + 1))


def _candidates(fields: tuple[Field, ...], chains: list[tuple[Field, ...]],
                natural: tuple[Field, ...]) -> list[tuple[Field, ...]]:
    """Orders of ``fields`` satisfying every chain (exhaustive when small, else greedy)."""
    if len(fields) <= MAX_ENUMERATE:
        return [p for p in itertools.permutations(fields)
                if all(subsequence(c, p) for c in chains)]
    # greedy topological order, ties broken by the natural order
    remaining = list(natural)
    order: list[Field] = []
    while remaining:
        for f in remaining:
            if all(c.index(f) == 0 or c[c.index(f) - 1] in order for c in chains if f in c):
                order.append(f)
                remaining.remove(f)
                break
        else:
            return []
    return [tuple(order)]


def _pick(body: LogicNode, fields: tuple[Field, ...], outputs: tuple[Field, ...],
          reduced: tuple[Field, ...], acc_chains: list[tuple[Relabel, tuple[Field, ...]]],
          is_produced: bool, infos: dict[Alias, AliasInfo]) -> tuple[Field, ...]:
    """The loop order: concordant if possible, cheapest by the task-count model."""
    sizes = field_sizes(body, infos)
    for f in fields:
        sizes.setdefault(f, 1)
    natural = _unique([*outputs, *reduced, *fields])
    chains = [c for _, c in acc_chains]
    out_chain = [outputs] if is_produced else []
    cands = _candidates(fields, chains + out_chain, natural)
    concordant = bool(cands)
    if not cands:
        if len(fields) > MAX_ENUMERATE - 1:
            cands = _candidates(fields, out_chain, natural) or [natural]
        else:
            cands = _candidates(fields, out_chain, natural)
    cost = _Cost(body, sizes, infos)
    red = set(reduced)

    def total(order: tuple[Field, ...]) -> float:
        c = cost(order)
        if not concordant:
            for acc, chain in acc_chains:
                if not subsequence(chain, order):
                    c += TRANSPOSE_WEIGHT * (infos[acc.arg].nnz + 1)  # type: ignore[index]
        first_red = next((k for k, f in enumerate(order) if f in red), len(order))
        if any(f not in red for f in order[first_red:]):
            c += WORKSPACE_WEIGHT * cost.tasks(frozenset(outputs))
        return c

    rank = {f: k for k, f in enumerate(natural)}
    return min(cands, key=lambda o: (total(o), tuple(rank[f] for f in o)))


def _translate_spec(spec: FormatSpec, logical: tuple[Field, ...],
                    physical: tuple[Field, ...]) -> FormatSpec:
    """A spec whose mode order is relative to ``logical`` axes, made relative to ``physical``."""
    storage = [logical[m] for m in spec.mode_order]
    mode = tuple(physical.index(f) for f in storage)
    if mode == spec.mode_order:
        return spec
    return infer_spec(spec.level_kinds, mode)


def _order_query(rhs: LogicNode, infos: dict[Alias, AliasInfo], is_produced: bool
                 ) -> tuple[LogicNode, tuple[Field, ...], tuple[Field, ...]]:
    """(new rhs with its loop order, logical axes, physical axes) of one canonical query."""
    spec, agg, loop = query_parts(rhs)
    body = loop.arg
    red = tuple(agg.idxs) if agg is not None else ()
    outputs = tuple(f for f in loop.idxs if f not in red)
    dropped = tuple(f for f in expr_fields(body) if f not in loop.idxs)
    if dropped and agg is None:
        # size-1 axes a broadcast dropped: reduce them away with overwrite (one value each)
        dtype = expr_dtype(body, infos)
        fill = expr_fill(body, infos)
        init = dtype.type(0) if fill is None else np.asarray(fill, dtype=dtype)[()]
        agg = Aggregate(Immediate(get_operator("overwrite")), Immediate(init), loop, ())
    if agg is not None:
        red = (*red, *dropped)
    fields = _unique([*loop.idxs, *dropped, *expr_fields(body)])
    acc_chains = [(acc, storage_chain(acc, infos[acc.arg]))  # type: ignore[index]
                  for acc in accesses(body)]
    order = _pick(body, fields, outputs, red, acc_chains, is_produced, infos)
    physical = tuple(f for f in order if f not in set(red))
    new: LogicNode = Reorder(body, order)
    if agg is not None:
        new = Aggregate(agg.op, agg.init, new, red)
    if spec is not None:
        new = Reformat(Immediate(_translate_spec(spec.val, outputs, physical)), new)
    return new, outputs, physical


def choose_loop_orders(plan: Plan) -> Plan:
    """Give every compute query an explicit loop order (see module doc)."""
    keep = produced(plan)
    infos: dict[Alias, AliasInfo] = {}
    perms: dict[Alias, tuple[int, ...]] = {}
    out: list[LogicNode] = []

    def relabel(acc: Relabel) -> LogicNode | None:
        perm = perms.get(acc.arg)  # type: ignore[arg-type]
        return None if perm is None else Relabel(acc.arg, tuple(acc.idxs[k] for k in perm))

    for body in compute_queries(plan, infos, out):
        rhs = substitute_access(body.rhs, relabel)
        new, logical, physical = _order_query(rhs, infos, body.lhs in keep)
        if physical != logical:
            perms[body.lhs] = tuple(logical.index(f) for f in physical)
        infos[body.lhs] = computed_info(new, infos)
        out.append(Query(body.lhs, new))
    return Plan(tuple(out))


def _copy_kinds(info: AliasInfo) -> tuple[str, ...]:
    """Level kinds of a transposed copy: the source's, with COO made compressed."""
    kinds = info.level_kinds or ("dense",) * len(info.shape)
    if any(k in ("compressed-nonunique", "singleton") for k in kinds):
        return ("compressed",) * len(kinds)
    return tuple(kinds)


def concordize(plan: Plan) -> Plan:
    """Insert one stored-transposed copy per (alias, order) read discordantly."""
    namer = Namer(plan, field_prefix="t", alias_prefix="T")
    infos: dict[Alias, AliasInfo] = {}
    copies: dict[tuple[Alias, tuple[int, ...]], Alias] = {}
    out: list[LogicNode] = []
    for body in compute_queries(plan, infos, out):
        _, _, loop = query_parts(body.rhs)
        order = loop.idxs

        def fix(acc: Relabel, order: tuple[Field, ...] = order) -> LogicNode | None:
            src: Alias = acc.arg  # type: ignore[assignment]
            info = infos[src]
            if subsequence(storage_chain(acc, info), order) or len(set(acc.idxs)) < len(acc.idxs):
                return None
            want = tuple(sorted(range(len(acc.idxs)), key=lambda m: order.index(acc.idxs[m])))
            key = (src, want)
            if key not in copies:
                h = tuple(namer.field() for _ in acc.idxs)
                lc = tuple(h[m] for m in info.mode_order)
                mode = tuple(lc.index(h[m]) for m in want)
                spec = infer_spec(_copy_kinds(info), mode)
                alias = namer.alias()
                rhs = Reformat(Immediate(spec), Reorder(Relabel(src, h), lc))
                out.append(Query(alias, rhs))
                infos[alias] = computed_info(rhs, infos)
                copies[key] = alias
            return Relabel(copies[key], tuple(acc.idxs[m] for m in info.mode_order))

        rhs = substitute_access(body.rhs, fix)
        infos[body.lhs] = computed_info(rhs, infos)
        out.append(Query(body.lhs, rhs))
    return Plan(tuple(out))
