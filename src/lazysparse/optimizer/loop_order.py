"""Pass 6: choose each query's loop order (outermost first), then concordize.

``choose_loop_orders`` prefers orders concordant with every input's storage order (each
access's storage-ordered fields form a subsequence of the loop order); when none exists,
every order keeping a produced result's axes is a candidate and each discordant input costs
a linear transposed copy. Among the candidates:

1. **Asymptotic pruning** (``asymptotic.py``, Ahrens–Kjolstad–Amarasinghe §5): each
   candidate becomes a schedule whose protocols come from the operands' levels (compressed
   and singleton levels step, dense levels locate; a discordant input's copy keeps the
   source's level kinds in the loop's order); candidates whose task sets strictly contain
   another's are dropped. Bounded: the model runs when there are 2 to
   ``MAX_MODEL_CANDIDATES`` (24) candidates; with more (at most 7! orders, built by
   backtracking over the chains, ``MAX_ENUMERATE`` fields; greedy beyond) the estimate
   alone decides.
2. **Estimate** among the survivors: an nnz-based count of iteration tasks (the model's
   sets sized under uniform independence) plus transpose and workspace penalties; ties go
   to the logical order.

A produced result keeps its axes in logical order. A query's result axes become its loop
order minus the reduced fields; later reads of it are relabeled to that physical order.
``loop_order_reports`` recomputes the choice (candidates, survivors, winner) for
``xp.explain``.

``concordize`` then materializes, once per (alias, storage order), a copy of each input
read out of its storage order, stored in the order the consumer needs.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass

import numpy as np

from lazysparse.formats.compiled.sync import Counters
from lazysparse.formats.levels.registry import (
    DENSE_KIND,
    PLAIN_KIND,
    copy_kind,
    is_coo_kind,
    is_located,
)
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
    check_dense_result,
    choose_level_kinds,
    compute_queries,
    computed_info,
    dense_threshold,
    exact_count,
    expr_dtype,
    expr_fill,
    field_sizes,
    nonzero_probability,
    query_parts,
)
from lazysparse.optimizer.asymptotic import LOCATE, STEP, undominated
from lazysparse.optimizer.exact_counts import unsure
from lazysparse.optimizer.rewrite import (
    Namer,
    accesses,
    expr_fields,
    produced,
    subsequence,
    substitute_access,
)
from lazysparse.optimizer.unreached import region_readers, region_uses, sparse_kinds

# cost of materializing a transposed copy, per stored entry (sort + scatter)
TRANSPOSE_WEIGHT = 4.0
# cost of scattering through a workspace, per estimated output entry
WORKSPACE_WEIGHT = 1.0
# cost of a sort-buffer workspace, per appended task and per comparison level (T log2 T)
SORT_WEIGHT = 1.0
# at most this many loop fields are searched exhaustively
MAX_ENUMERATE = 7
# the asymptotic model prunes at most this many candidate orders (beyond: the estimate alone)
MAX_MODEL_CANDIDATES = 24
# survivors listed by ScheduleReport.describe
MAX_SHOWN = 6

#: the loop-order search's work: partial orders extended while enumerating candidates and
#: orders priced by the estimate (tests/optimizer/test_optimizer_cost.py)
SEARCH = Counters("orders_extended", "orders_priced")


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
        return _linear_extensions(fields, chains)
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


def _precedence(fields: tuple[Field, ...], chains: list[tuple[Field, ...]]
                ) -> list[int] | None:
    """Per field (by position), the bit mask of the fields every chain puts before it; None
    when no order satisfies the chains (a field the query lacks, or one needed twice)."""
    pos = {f: k for k, f in enumerate(fields)}
    before = [0] * len(fields)
    for c in chains:
        c = tuple(f for k, f in enumerate(c) if k == 0 or f != c[k - 1])  # repeats collapse
        if not set(c) <= pos.keys() or len(set(c)) < len(c):
            return None
        for prev, f in itertools.pairwise(c):
            before[pos[f]] |= 1 << pos[prev]
    return before


def _count_orders(fields: tuple[Field, ...], chains: list[tuple[Field, ...]]) -> int:
    """``len(_linear_extensions(fields, chains))`` without building them: a count per set
    of placed fields (2^n sets, not n! orders)."""
    before = _precedence(fields, chains)
    if before is None:
        return 0
    ways = [0] * (1 << len(fields))
    ways[0] = 1
    for placed, w in enumerate(ways):
        if w:
            for k, need in enumerate(before):
                if not placed >> k & 1 and need & ~placed == 0:
                    ways[placed | 1 << k] += w
    return ways[-1]


def _linear_extensions(fields: tuple[Field, ...], chains: list[tuple[Field, ...]]
                       ) -> list[tuple[Field, ...]]:
    """The permutations of ``fields`` in which every chain is a subsequence, in
    ``itertools.permutations`` order, built by backtracking: a field is placed once its
    predecessor in every chain is, so only the valid orders are ever built (not all n!).
    Fields are bit positions (:func:`_precedence`)."""
    before = _precedence(fields, chains)
    if before is None:
        return []
    n, full = len(fields), (1 << len(fields)) - 1
    out: list[tuple[Field, ...]] = []
    order: list[Field] = []
    steps = 0

    def extend(placed: int) -> None:
        nonlocal steps
        if placed == full:
            out.append(tuple(order))
            return
        for k in range(n):
            if not placed >> k & 1 and before[k] & ~placed == 0:
                steps += 1
                order.append(fields[k])
                extend(placed | 1 << k)
                order.pop()

    extend(0)
    SEARCH.bump("orders_extended", steps)
    return out


@dataclass(frozen=True)
class ScheduleReport:
    """How one query's loop order was chosen: how many candidate orders there were, which
    the asymptotic model kept (all of them when it did not run: one candidate, or more than
    ``MAX_MODEL_CANDIDATES``), the chosen order and its estimated task count."""

    candidates: int
    survivors: tuple[tuple[Field, ...], ...]
    chosen: tuple[Field, ...]
    estimate: float
    modeled: bool

    def describe(self, names: dict[Field, str] | None = None) -> str:
        """``schedules: N candidates, M undominated: <orders>; chosen <order> (…)``, fields
        renamed by ``names`` (e.g. to the kernel's ``i0, i1, …``)."""
        def show(order: tuple[Field, ...]) -> str:
            return ",".join((names or {}).get(f, f.name) for f in order) or "()"

        n = self.candidates
        head = f"schedules: {n} candidate{'s' if n != 1 else ''}"
        if self.modeled:
            shown = " | ".join(show(o) for o in self.survivors[:MAX_SHOWN])
            more = (f" | … ({len(self.survivors) - MAX_SHOWN} more)"
                    if len(self.survivors) > MAX_SHOWN else "")
            head += f", {len(self.survivors)} undominated: {shown}{more}"
        elif n > MAX_MODEL_CANDIDATES:
            head += f" (over the model's bound {MAX_MODEL_CANDIDATES}: estimate alone)"
        return f"{head}; chosen {show(self.chosen)} (estimated tasks {self.estimate:.3g})"


def access_protocols(acc: Relabel, info: AliasInfo, order: tuple[Field, ...]
                     ) -> tuple[str, ...]:
    """Each mode's protocol when ``order`` reads ``acc``: a dense level locates, any other
    level steps (a dense alias only locates). A discordant access reads ``concordize``'s
    copy, whose level kinds follow the source's level positions in the loop's order."""
    n = len(acc.idxs)
    if not info.sparse or info.level_kinds is None:
        return (LOCATE,) * n
    if subsequence(storage_chain(acc, info), order):
        kinds, modes = info.level_kinds, info.mode_order
    else:
        kinds = _copy_kinds(info)
        modes = tuple(sorted(range(n), key=lambda m: order.index(acc.idxs[m])))
    proto = [LOCATE] * n
    for kind, m in zip(kinds, modes, strict=True):
        proto[m] = LOCATE if is_located(kind) else STEP
    return tuple(proto)


def _survivors(body: LogicNode, agg: Aggregate | None, cands: list[tuple[Field, ...]],
               sizes: dict[Field, int], infos: dict[Alias, AliasInfo]
               ) -> list[tuple[Field, ...]]:
    """The candidates whose asymptotic task sets are undominated (``asymptotic.py``).
    Loops of extent 1 cost nothing: the model leaves them out of its orders."""
    accs = accesses(body)
    schedules = tuple(
        (tuple(f for f in o if sizes[f] != 1),
         tuple(access_protocols(a, infos[a.arg], o) for a in accs))  # type: ignore[index]
        for o in cands)
    return [cands[k] for k in undominated(body, agg, infos, schedules)]


def _all_dominated(body: LogicNode, agg: Aggregate | None, fields: tuple[Field, ...],
                   concordant: list[tuple[Field, ...]], out_chain: list[tuple[Field, ...]],
                   natural: tuple[Field, ...], sizes: dict[Field, int],
                   infos: dict[Alias, AliasInfo]) -> bool:
    """Whether every concordant order is dominated once orders reading a transposed copy
    of some input (``concordize``) compete too, within the model's bound."""
    if len(fields) > MAX_ENUMERATE:
        return False
    count = _count_orders(fields, out_chain)  # built only when the model takes them
    if count <= len(concordant) or count > MAX_MODEL_CANDIDATES:
        return False
    every = _candidates(fields, out_chain, natural)
    return not set(_survivors(body, agg, every, sizes, infos)) & set(concordant)


def _schedule(body: LogicNode, agg: Aggregate | None, fields: tuple[Field, ...],
              outputs: tuple[Field, ...], reduced: tuple[Field, ...],
              acc_chains: list[tuple[Relabel, tuple[Field, ...]]], is_produced: bool,
              infos: dict[Alias, AliasInfo], result_reorders: bool = True) -> ScheduleReport:
    """The loop order: concordant if possible, asymptotically undominated, then cheapest
    by the task-count estimate."""
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
    if concordant and _all_dominated(body, agg, fields, cands, out_chain, natural, sizes,
                                     infos):
        # every concordant order is asymptotically worse than one that transposes an
        # input (CSR A @ B.T as inner products): a linear copy is worth its constant
        cands, concordant = _candidates(fields, out_chain, natural), False
    price = _Pricer(body, agg, sizes, infos, outputs, set(reduced), acc_chains, is_produced,
                    {f: k for k, f in enumerate(natural)})
    survivors, modeled, chosen = price.pick(cands)
    if (concordant and len(fields) <= MAX_ENUMERATE
            and price.sort_buffer(chosen) > 0):
        # the concordant order sorts every product (B.T @ B of CSR B: the reduced field
        # outermost scatters into both output levels): an order reading a transposed copy
        # (Gustavson over B.T's rows, a dense row workspace) competes, copy included
        every = _candidates(fields, out_chain, natural)
        alt = price.pick(every)
        if price.total(alt[2]) < price.total(chosen):
            cands, (survivors, modeled, chosen) = every, alt
    if (result_reorders and is_produced and agg is not None
            and agg.op.val.name != "overwrite" and reduced
            and len(outputs) > 1
            and len(fields) <= MAX_ENUMERATE and price.copies(chosen)):
        # a product that copies an operand (X[:k] @ X.T copies all of X): orders writing
        # the result out of its axis order compete (X's rows outermost, the small operand
        # copied, the few products sorted into the result), every operand read included
        if _count_orders(fields, []) <= MAX_MODEL_CANDIDATES:
            every = _candidates(fields, [], natural)
            alt = price.pick(every, read=True)
            if price.total(alt[2], read=True) < price.total(chosen, read=True):
                cands, (survivors, modeled, chosen) = every, alt
    return ScheduleReport(len(cands), tuple(survivors), chosen, price.total(chosen), modeled)


@dataclass
class _Pricer:
    """Estimated cost of one query's loop orders: iteration tasks (``_Cost``), a transposed
    copy per discordant access, a workspace when a reduced loop encloses an output loop, a
    sort buffer when two or more result levels receive scattered writes and, on request,
    the full reads of the sparse operands that drive the outermost loop."""

    body: LogicNode
    agg: Aggregate | None
    sizes: dict[Field, int]
    infos: dict[Alias, AliasInfo]
    outputs: tuple[Field, ...]
    red: set[Field]
    acc_chains: list[tuple[Relabel, tuple[Field, ...]]]
    is_produced: bool
    rank: dict[Field, int]

    def __post_init__(self) -> None:
        self.cost = _Cost(self.body, self.sizes, self.infos)

    def copies(self, order: tuple[Field, ...]) -> float:
        """Transposed copies ``order`` needs, by their stored entries."""
        return sum(TRANSPOSE_WEIGHT * (self.infos[acc.arg].nnz + 1)  # type: ignore[index]
                   for acc, chain in self.acc_chains if not subsequence(chain, order))

    def reads(self, order: tuple[Field, ...]) -> float:
        """Stored entries of the sparse operands read whole: those whose outermost stored
        field is the outermost loop (a located operand is read in part)."""
        return sum(float(self.infos[acc.arg].nnz)  # type: ignore[index]
                   for acc, chain in self.acc_chains
                   if self.infos[acc.arg].sparse and chain[:1] == order[:1]  # type: ignore[index]
                   and subsequence(chain, order))

    def storage(self, order: tuple[Field, ...]) -> tuple[Field, ...]:
        """The result's storage order: its axes when produced, else the loop's."""
        return self.outputs if self.is_produced else tuple(f for f in order
                                                            if f not in self.red)

    def sort_buffer(self, order: tuple[Field, ...]) -> float:
        """``SORT_WEIGHT · T log2 T`` when ``order`` writes a sparse result through a sort
        buffer (two or more result levels receive scattered writes: a reduced loop encloses
        them or they run out of storage order; every one of the ``T`` tasks of the innermost
        loop is appended, then the buffer is sorted once), else 0. A result estimated dense
        (``dense_threshold``) takes scattered writes in place."""
        storage = self.storage(order)
        in_order = 0
        for f in order:
            if f in self.red or in_order == len(storage) or f != storage[in_order]:
                break
            in_order += 1
        if len(storage) - in_order < 2:
            return 0.0
        if self.result_dense:
            return 0.0
        t = self.cost.tasks(frozenset(order))
        return SORT_WEIGHT * t * math.log2(t + 2.0)

    @functools.cached_property
    def result_dense(self) -> bool:
        """Whether the result is stored dense (it takes scattered writes in place): an
        exact count's verdict where the estimate is unsure and one decides
        (``exact_counts.py``: a product counted sparse sorts or gathers its writes), else
        the estimate against ``dense_threshold``."""
        space = math.prod(self.sizes[f] for f in self.outputs)
        if space == 0:
            return True
        out = frozenset(self.outputs)
        p = self.cost.tasks(out) / space
        expr = self.body if self.agg is None else Aggregate(
            self.agg.op, self.agg.init, self.body, self.agg.idxs)
        self.cost.algebra[("kept", id(expr))] = expr  # its id keys the memo: not reused
        exact = exact_count(expr, self.outputs, self.sizes, self.infos,
                            self.cost.algebra) if unsure(p) else None
        if exact is not None:
            return exact.dense
        return p > dense_threshold(self.body, set(out), self.sizes, self.infos,
                                   self.cost.algebra)

    def total(self, order: tuple[Field, ...], read: bool = False) -> float:
        """The estimated cost of ``order`` (``read``: with the driving operands' reads)."""
        SEARCH.bump("orders_priced")
        c = self.cost(order) + self.sort_buffer(order) + self.copies(order)
        first_red = next((k for k, f in enumerate(order) if f in self.red), len(order))
        if any(f not in self.red for f in order[first_red:]):
            c += WORKSPACE_WEIGHT * self.cost.tasks(frozenset(self.outputs))
        return c + (self.reads(order) if read else 0.0)

    def pick(self, orders: list[tuple[Field, ...]], read: bool = False
             ) -> tuple[list[tuple[Field, ...]], bool, tuple[Field, ...]]:
        """(undominated orders, whether the model ran, the cheapest of them)."""
        modeled = 1 < len(orders) <= MAX_MODEL_CANDIDATES
        survivors = (_survivors(self.body, self.agg, orders, self.sizes, self.infos)
                     if modeled else orders)
        return survivors, modeled, self.cheapest(survivors, read)

    def cheapest(self, orders: list[tuple[Field, ...]], read: bool = False
                 ) -> tuple[Field, ...]:
        """``min(orders)`` by (:meth:`total`, rank) over permutations of one field set (a
        query's candidates), by branch and bound. Every order's cost ends with the tasks of
        the whole set and every other term is nonnegative, so an order whose first loops
        plus that last term already cost more than the best total found cannot win, nor
        can any order sharing those first loops (adjacent in permutations order: skipped
        unpriced). The running sums are :meth:`total`'s own (same additions in the same
        order, and float addition is monotone), so the winner is the exhaustive one."""
        whole = self.cost.tasks(frozenset(orders[0])) if len(orders[0]) > 1 else 0.0
        bit = {f: 1 << k for k, f in enumerate(orders[0])}
        tasks: dict[int, float] = {}
        best: tuple[Field, ...] | None = None
        best_key: tuple[float, tuple[int, ...]] | None = None
        prev: tuple[Field, ...] = ()
        sums: list[float] = [0]
        masks = [0]
        pruned: tuple[Field, ...] | None = None
        for o in orders:
            if pruned is not None and o[:len(pruned)] == pruned:
                continue
            pruned = None
            k = 0
            while k < min(len(prev), len(o), len(sums) - 1) and prev[k] == o[k]:
                k += 1
            del sums[k + 1:], masks[k + 1:]
            prev = o
            for d in range(k, len(o) - 1):
                m = masks[d] | bit[o[d]]
                if m not in tasks:
                    tasks[m] = self.cost.tasks(frozenset(o[:d + 1]))
                masks.append(m)
                sums.append(sums[d] + tasks[m])
                if best_key is not None and sums[-1] + whole > best_key[0]:
                    pruned = o[:d + 1]
                    break
            if pruned is not None:
                continue
            key = (self.total(o, read), tuple(self.rank[f] for f in o))
            if best_key is None or key < best_key:
                best, best_key = o, key
        assert best is not None, "no candidate order"
        return best


def _translate_spec(spec: FormatSpec, logical: tuple[Field, ...],
                    physical: tuple[Field, ...]) -> FormatSpec:
    """A spec whose mode order is relative to ``logical`` axes, made relative to ``physical``."""
    storage = [logical[m] for m in spec.mode_order]
    mode = tuple(physical.index(f) for f in storage)
    if mode == spec.mode_order:
        return spec
    return infer_spec(spec.level_kinds, mode)


def _order_query(rhs: LogicNode, infos: dict[Alias, AliasInfo], is_produced: bool,
                 result_reorders: bool = True
                 ) -> tuple[LogicNode, tuple[Field, ...], tuple[Field, ...], ScheduleReport]:
    """(new rhs with its loop order, logical axes, physical axes, how the order was chosen)
    of one canonical query."""
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
    report = _schedule(body, agg, fields, outputs, red, acc_chains, is_produced, infos,
                       result_reorders)
    order = report.chosen
    physical = tuple(f for f in order if f not in set(red))
    new: LogicNode = Reorder(body, order)
    if agg is not None:
        new = Aggregate(agg.op, agg.init, new, red)
    if is_produced and physical != outputs:
        # a produced reduction looping out of its axis order (``_schedule``): a RESULT
        # reorder keeps the user's axes, stored in that order (the kernel sorts its writes)
        assert agg is not None
        if spec is None:
            logical = Aggregate(agg.op, agg.init, Reorder(body, (*outputs, *red)), red)
            kinds = choose_level_kinds(logical, infos)
            check_dense_result(logical, infos, kinds)
            spec = Immediate(infer_spec(kinds, tuple(range(len(kinds)))))
        return Reformat(spec, Reorder(new, outputs)), outputs, outputs, report
    if spec is not None:
        new = Reformat(Immediate(_translate_spec(spec.val, outputs, physical)), new)
    return new, outputs, physical, report


def choose_loop_orders(plan: Plan) -> Plan:
    """Give every compute query an explicit loop order (see module doc)."""
    return _choose(plan)[0]


def choose_axis_ordered_loops(plan: Plan) -> Plan:
    """:func:`choose_loop_orders` without RESULT reorders: every produced reduction loops
    in its axis order (the CUDA kernels write results in loop order)."""
    return _choose(plan, result_reorders=False)[0]


def loop_order_reports(plan: Plan) -> dict[Alias, ScheduleReport]:
    """How ``choose_loop_orders`` chooses each compute query's order on ``plan`` (the plan
    that pass receives), by the query's alias: recomputed, nothing is stored."""
    return _choose(plan)[1]


def _choose(plan: Plan, result_reorders: bool = True
            ) -> tuple[Plan, dict[Alias, ScheduleReport]]:
    keep = produced(plan)
    reports: dict[Alias, ScheduleReport] = {}
    infos: dict[Alias, AliasInfo] = {}
    perms: dict[Alias, tuple[int, ...]] = {}
    out: list[LogicNode] = []

    def relabel(acc: Relabel) -> LogicNode | None:
        perm = perms.get(acc.arg)  # type: ignore[arg-type]
        return None if perm is None else Relabel(acc.arg, tuple(acc.idxs[k] for k in perm))

    for body in compute_queries(plan, infos, out):
        rhs = substitute_access(body.rhs, relabel)
        new, logical, physical, reports[body.lhs] = _order_query(rhs, infos, body.lhs in keep,
                                                                 result_reorders)
        if physical != logical:
            perms[body.lhs] = tuple(logical.index(f) for f in physical)
        infos[body.lhs] = computed_info(new, infos)
        out.append(Query(body.lhs, new))
    return Plan(tuple(out)), reports


def _copy_kinds(info: AliasInfo, keeps_region: bool = False) -> tuple[str, ...]:
    """Level kinds of a transposed copy: the source's, with COO made compressed; sparse
    for an aggregate whose implicit region a reader's map needs (``keeps_region``: the
    source will be stored sparse, ``optimizer.unreached``), whatever its predicted ones."""
    kinds = info.level_kinds or (DENSE_KIND,) * len(info.shape)
    if keeps_region and all(is_located(k) for k in kinds):
        return sparse_kinds(len(kinds))
    if any(is_coo_kind(k) for k in kinds):
        return (PLAIN_KIND,) * len(kinds)
    # a relayout sorts anyway; a bytemap copy would span every position of a new order; a
    # structured level describes one axis order (DIA's diagonals are a row's columns)
    return tuple(copy_kind(k) for k in kinds)


def concordize(plan: Plan) -> Plan:
    """Insert one stored-transposed copy per (alias, order) read discordantly."""
    namer = Namer(plan, field_prefix="t", alias_prefix="T")
    infos: dict[Alias, AliasInfo] = {}
    copies: dict[tuple[Alias, tuple[int, ...]], Alias] = {}
    out: list[LogicNode] = []
    keep_region = region_readers(region_uses(plan))
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
                spec = infer_spec(_copy_kinds(info, src in keep_region), mode)
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
