"""The asymptotic cost of a loop order: task sets, sunk costs, the undominated frontier.

Ahrens, Kjolstad and Amarasinghe, "An Asymptotic Cost Model for Autoscheduling Sparse
Tensor Programs", §4–5. A *schedule* of one query is a loop order plus a protocol for every
mode of every access: ``"step"`` (the loop coiterates the operand's stored coordinates) or
``"locate"`` (the loop ignores it and looks entries up). Its cost is the set of tasks it
runs, a union of conjunctive queries over the sparse operands (``conjunctive.py``):

- **Figure 4** (:func:`task_set`), abstract interpretation of ``∀order: out ⊕= body``:
  at the loop over ``f`` the *steppers* are the accesses still in the body with a step
  mode indexed by ``f``; each emits its coiteration tasks ``{[bound, f] | guard ∧
  ∃rest A(idxs)}``. Every combination of steppers at their fill value is simplified with
  the registry's algebra (an argument at ``Operator.annihilator_for`` fixes a mapjoin,
  ``Operator.selections`` pick an argument: ``where``'s condition at False, all-constant
  mapjoins are evaluated) and recursed into with the guard conjoined with the nonzero
  steppers still present. The assignment emits ``{[bound] | guard}`` unless the body is a
  constant the kernel skips: a reduction's identity, a constant a commutative associative
  reduction folds in once (idempotent or with ``Operator.repeat``, as the kernels' fold
  rule does; not a float product's annihilator), or a map's result fill. Only sparse
  operands (some level not dense, known fill) are predicates; a dense operand is "true"
  and is located.
- **Sunk costs and assumptions (§5.3)**: reading every sparse operand (``{[its fields] |
  A(fields)}``) and iterating any single loop (``{[f]}``) are added to every task set,
  and every sparse operand is assumed nonempty (an all-existential clause ``∃ A(…)`` in
  every CQ); the result is minimized and simplified (§5.4) before any comparison.
- **Frontier (§5.4, Figure 3)**: a schedule whose task set strictly contains another's is
  dominated and discarded (:func:`undominated`).

Constant factors (workspaces, transposed copies, sizes) are not this model's business:
``loop_order.py`` ranks the survivors with its nnz-based estimate.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from lazysparse.formats.dtypes import same_value
from lazysparse.formats.levels.registry import DENSE_KIND, PLAIN_KIND
from lazysparse.logic.nodes import (
    Aggregate,
    Alias,
    Field,
    Immediate,
    LogicNode,
    MapJoin,
    Relabel,
)
from lazysparse.logic.operators import Operator, mapjoin_fill
from lazysparse.optimizer.analysis import AliasInfo, expr_dtype, expr_fill, op_of
from lazysparse.optimizer.conjunctive import (
    CQ,
    Clause,
    ModelBudgetExceeded,
    Var,
    make_cq,
    simplify_union,
    spend,
    step_budget,
    strictly_contained,
)
from lazysparse.optimizer.rewrite import accesses

STEP = "step"
LOCATE = "locate"

Protocols = tuple[tuple[str, ...], ...]  # per access (in ``accesses`` order), per mode
Schedule = tuple[tuple[Field, ...], Protocols]  # (loop order, protocols)

# compiled pointwise body: ("acc", k) | ("const", value) | ("other",) |
# ("map", op, args, operand dtypes or None)
Node = tuple[Any, ...]
OTHER: Node = ("other",)


@dataclass(frozen=True)
class AccessFact:
    """One access of the body: the alias's name, its fields, whether it is a predicate
    (stored sparse with a known fill) and that fill."""

    name: str
    idxs: tuple[Field, ...]
    predicate: bool
    fill: Any


class QueryModel:
    """A query body compiled for abstract interpretation: its accesses and its algebra."""

    def __init__(self, body: LogicNode, infos: dict[Alias, AliasInfo],
                 agg: Aggregate | None) -> None:
        self.accesses: list[AccessFact] = []
        self.root = self._compile(body, infos)
        self.agg_op: Operator | None = op_of(agg.op) if agg is not None else None
        if agg is not None:
            self.dtype = expr_dtype(Aggregate(agg.op, agg.init, body, agg.idxs), infos)
            self.result_fill: Any = None
        else:
            self.dtype = expr_dtype(body, infos)
            self.result_fill = expr_fill(body, infos)
        self._simplified: dict[tuple[Node, frozenset[int]], Node] = {}

    def _compile(self, node: LogicNode, infos: dict[Alias, AliasInfo]) -> Node:
        match node:
            case Relabel(arg=Alias() as a, idxs=idxs):
                info = infos[a]
                pred = _is_predicate(info)
                self.accesses.append(AccessFact(a.name, tuple(idxs), pred, info.fill))  # type: ignore[arg-type]
                return ("acc", len(self.accesses) - 1)
            case Immediate(val=v):
                return ("const", v)
            case MapJoin(op=op, args=args):
                compiled = tuple(self._compile(x, infos) for x in args)
                o = op_of(op)
                try:
                    dts: tuple[Any, ...] | None = o.operand_dtypes(
                        *[x.val if isinstance(x, Immediate) else expr_dtype(x, infos)
                          for x in args])
                except (TypeError, ValueError):
                    dts = None
                return ("map", o, compiled, dts)
        return OTHER

    # -- algebra ---------------------------------------------------------------------
    def simplify(self, node: Node, zeros: frozenset[int]) -> Node:
        """``node`` with the accesses ``zeros`` at their fill, simplified (memoized)."""
        key = (node, zeros)
        out = self._simplified.get(key)
        if out is None:
            out = self._simplified[key] = self._simplify(node, zeros)
        return out

    def _simplify(self, node: Node, zeros: frozenset[int]) -> Node:
        if node[0] == "acc":
            return ("const", self.accesses[node[1]].fill) if node[1] in zeros else node
        if node[0] != "map":
            return node
        _, op, args, dts = node
        new = tuple(self.simplify(x, zeros) for x in args)
        if all(x[0] == "const" for x in new):
            try:
                return ("const", mapjoin_fill(op, [x[1] for x in new]))
            except (TypeError, ValueError, OverflowError):
                return ("map", op, new, dts)
        if dts is not None:
            for i, x in enumerate(new):
                if x[0] != "const":
                    continue
                try:
                    z = op.annihilator_at(i, dts[i])
                    if z is not None and same_value(x[1], z):
                        return ("const", z)
                    j = op.selected_by(i, x[1])
                except (TypeError, ValueError, OverflowError):
                    continue
                if j is not None:
                    return new[j]
        return ("map", op, new, dts)

    def present(self, node: Node) -> frozenset[int]:
        """The accesses still in ``node``."""
        if node[0] == "acc":
            return frozenset((node[1],))
        if node[0] == "map":
            return frozenset().union(*(self.present(x) for x in node[2]))
        return frozenset()

    def skipped(self, node: Node) -> bool:
        """Is ``node`` a constant the kernel never visits (see module doc)?"""
        if node[0] != "const":
            return False
        c, op = node[1], self.agg_op
        if op is None:
            return same_value(c, self.result_fill)
        try:
            if same_value(c, op.identity_for(self.dtype)):
                return True
            foldable = op.commutative and op.associative and (op.idempotent
                                                              or op.repeat is not None)
            if not foldable:
                return False
            return not (self.dtype.kind in "fc" and not op.idempotent
                        and same_value(c, op.annihilator_for(self.dtype)))
        except (TypeError, ValueError):
            return False

    def fields(self) -> set[Field]:
        """Every field an access indexes."""
        return {f for a in self.accesses for f in a.idxs}

    def steps(self, k: int, f: Field, protocols: Protocols) -> bool:
        """Does access ``k`` coiterate the loop over ``f``?"""
        acc = self.accesses[k]
        return acc.predicate and any(g == f and p == STEP
                                     for g, p in zip(acc.idxs, protocols[k], strict=True))


def task_set(model: QueryModel, order: tuple[Field, ...], protocols: Protocols,
             assume: tuple[Clause, ...] = ()) -> tuple[CQ, ...]:
    """The tasks of ``∀order: out ⊕= body`` under ``protocols`` (Figure 4), unsimplified,
    each CQ with the clauses ``assume`` added.

    Fields of the accesses missing from ``order`` have extent 1: no loop and no head
    position; one variable per such field is shared by every clause of a task."""
    out: set[CQ] = set()
    fresh = itertools.count(1)
    fixed = model.fields() - set(order)

    def clause(k: int, bound: set[Field]) -> Clause:
        acc = model.accesses[k]
        rest: dict[Field, Var] = {}
        args = [Var(f) if f in bound or f in fixed else rest.setdefault(f, Var(f, next(fresh)))
                for f in acc.idxs]
        return (acc.name, tuple(args))

    def visit(node: Node, depth: int, bound: tuple[Field, ...],
              guard: tuple[Clause, ...]) -> None:
        if depth == len(order):
            if not model.skipped(node):
                out.add(make_cq(bound, (*guard, *assume)))
            return
        f = order[depth]
        inner = (*bound, f)
        steppers = sorted(k for k in model.present(node) if model.steps(k, f, protocols))
        clauses = {k: clause(k, set(inner)) for k in steppers}
        for k in steppers:
            out.add(make_cq(inner, (*guard, clauses[k], *assume)))
        seen: set[tuple[Node, tuple[Clause, ...]]] = set()
        for zeros in _subsets(steppers):
            spend()
            body = model.simplify(node, zeros)
            if model.skipped(body):
                continue
            live = model.present(body)
            g = (*guard, *(clauses[k] for k in steppers if k in live))
            if (body, g) not in seen:
                seen.add((body, g))
                visit(body, depth + 1, inner, g)

    visit(model.root, 0, (), ())
    return tuple(out)


def _subsets(items: list[int]) -> Iterator[frozenset[int]]:
    for r in range(len(items) + 1):
        for c in itertools.combinations(items, r):
            yield frozenset(c)


def sunk_costs(model: QueryModel, fields: tuple[Field, ...],
               assume: tuple[Clause, ...] = ()) -> tuple[CQ, ...]:
    """Reading every sparse operand and iterating any single loop of ``fields`` (§5.3),
    each CQ with the clauses ``assume`` added."""
    reads = [make_cq(tuple(f for f in dict.fromkeys(a.idxs) if f in fields),
                     ((a.name, tuple(Var(f) for f in a.idxs)), *assume))
             for a in model.accesses if a.predicate]
    return (*reads, *(make_cq((f,), assume) for f in fields))


def nonempty(model: QueryModel) -> tuple[Clause, ...]:
    """``∃ A(…)`` for each sparse operand ``A``: the assumption that it is nonempty (§5.3)."""
    first = {a.name: a for a in reversed(model.accesses) if a.predicate}
    return tuple((a.name, tuple(Var(f, 10**6 + k) for k, f in enumerate(a.idxs)))
                 for a in first.values())


def schedule_cost(model: QueryModel, order: tuple[Field, ...], protocols: Protocols
                  ) -> tuple[CQ, ...]:
    """The normalized task set ``P ∪ S`` under the assumptions, minimized (§5.3–5.4)."""
    assume = nonempty(model)
    return simplify_union((*task_set(model, order, protocols, assume),
                           *sunk_costs(model, order, assume)))


def frontier(costs: list[tuple[CQ, ...]]) -> list[int]:
    """Indices of the undominated task sets (Figure 3): a task set strictly containing
    another one is discarded; equivalent ones all stay."""
    front: list[int] = []
    for k, p in enumerate(costs):
        if any(strictly_contained(costs[t], p) for t in front):
            continue
        front = [t for t in front if not strictly_contained(p, costs[t])]
        front.append(k)
    return sorted(front)


def _is_predicate(info: AliasInfo) -> bool:
    """Whether an operand is a predicate of the model: stored sparse with a known fill."""
    return info.sparse and info.fill is not None


def _model_info(info: AliasInfo) -> AliasInfo:
    """The facts the model reads (dtype, fill, sparse or not), so equal-shaped problems over
    other data share the cache."""
    kinds = (PLAIN_KIND,) if info.sparse else (DENSE_KIND,)
    return replace(info, shape=(), mode_order=(), nnz=0.0, level_kinds=kinds)


def undominated(body: LogicNode, agg: Aggregate | None, infos: dict[Alias, AliasInfo],
                schedules: tuple[Schedule, ...]) -> tuple[int, ...]:
    """Indices of the ``schedules`` of one query whose task sets are undominated. With no
    sparse operand (every access dense, or of unknown fill) no loop steps over stored
    entries: every schedule's task set is the loops' product plus single loops, the same
    for all of them, so all are undominated (closed form: no CQ is built)."""
    accs = accesses(body)
    if not any(_is_predicate(infos[a.arg]) for a in accs):  # type: ignore[index]
        return tuple(range(len(schedules)))
    facts = tuple(sorted({(a.arg.name, _model_info(infos[a.arg]))  # type: ignore[index, union-attr]
                          for a in accs}, key=lambda t: t[0]))
    try:
        return _undominated_cached(body, agg, schedules, facts)
    except TypeError:  # an unhashable immediate
        return _undominated(QueryModel(body, infos, agg), schedules)


@functools.lru_cache(maxsize=256)
def _undominated_cached(body: LogicNode, agg: Aggregate | None,
                        schedules: tuple[Schedule, ...],
                        facts: tuple[tuple[str, AliasInfo], ...]) -> tuple[int, ...]:
    return _undominated(QueryModel(body, {Alias(n): i for n, i in facts}, agg), schedules)


def _undominated(model: QueryModel, schedules: tuple[Schedule, ...]) -> tuple[int, ...]:
    """The undominated schedules; all of them when the model runs over its step budget
    (``conjunctive.MODEL_STEP_BUDGET``): the loop-order estimate alone then decides, as
    for more candidates than the model takes. A planning step never searches unbounded."""
    try:
        with step_budget():
            return _frontier_of(model, schedules)
    except ModelBudgetExceeded:
        return tuple(range(len(schedules)))


def _frontier_of(model: QueryModel, schedules: tuple[Schedule, ...]) -> tuple[int, ...]:
    distinct = list(dict.fromkeys(schedules))
    costs = [frozenset(schedule_cost(model, o, p)) for o, p in distinct]
    unique = list(dict.fromkeys(costs))
    keep = {unique[k] for k in frontier([tuple(c) for c in unique])}
    good = {s for s, c in zip(distinct, costs, strict=True) if c in keep}
    return tuple(k for k, s in enumerate(schedules) if s in good)


def paper_universe(body: LogicNode, infos: dict[Alias, AliasInfo],
                   fields: tuple[Field, ...]) -> list[Schedule]:
    """Every loop order of ``fields`` times, for every mode of every sparse access, step or
    locate (dense accesses locate): the paper's min-depth universe of one kernel (§6.6–6.7,
    tensors assumed permuted to the loop order)."""
    options = []
    for a in accesses(body):
        info = infos[a.arg]  # type: ignore[index]
        if _is_predicate(info):
            options.append(list(itertools.product((STEP, LOCATE), repeat=len(a.idxs))))
        else:
            options.append([(LOCATE,) * len(a.idxs)])
    return [(order, tuple(protos)) for order in itertools.permutations(fields)
            for protos in itertools.product(*options)]
