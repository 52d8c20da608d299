"""What the optimizer knows about each alias: shape, dtype, fill, storage order, nnz estimate.

Facts come from input tensors and are propagated through queries with the operator registry
(fill values, dtypes, annihilators). Sparsity is estimated under uniform independence: an
access to a tensor of density ``rho`` with ``N`` entries per bound prefix is nonempty with
probability ``1 - (1 - rho)^N``; annihilating mapjoins intersect, others unite.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from lazysparse.formats.compiled.sync import Counters
from lazysparse.formats.config import check_densify, get_densify_limit
from lazysparse.formats.dtypes import same_value
from lazysparse.formats.levels.registry import DENSE_KIND, PLAIN_KIND, all_located
from lazysparse.formats.statistics import statistics
from lazysparse.formats.tensor import Tensor
from lazysparse.logic.dtypes import scalar_as
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
    Table,
)
from lazysparse.logic.normal_form import epilogue_aggregate, replace_epilogue_aggregate
from lazysparse.logic.operators import (
    Operator,
    aggregate_dtype,
    aggregate_fill,
    mapjoin_fill,
    mapjoin_region,
)
from lazysparse.logic.traversal import walk
from lazysparse.optimizer.degrees import StatsView, intersection_probability
from lazysparse.optimizer.exact_counts import ExactCount, map_count, product_count, unsure
from lazysparse.optimizer.rewrite import accesses
from lazysparse.optimizer.unreached import Finiteness, finiteness_verdicts

INDEX_DTYPE = np.dtype("int64")
# a result whose estimated density exceeds this is stored dense
DENSE_THRESHOLD = 0.25
# ... or this, when degree statistics sized it (``degrees.py``): that estimate is close
# enough to store sparse what a sparse library keeps sparse up to the break-even density
SKEWED_DENSE_THRESHOLD = 0.5
# a first level whose slices are nonempty with at least this probability is a dense level
DENSE_LEVEL_THRESHOLD = 0.5

#: fill values and dtypes inferred node by node (memo misses): a deterministic measure of
#: the analysis's work per optimization (tests/optimizer/test_optimizer_cost.py)
INFERENCES = Counters("fill", "dtype")


@dataclass(frozen=True)
class AliasInfo:
    """Facts about one alias: its axes' sizes (axis order), dtype, fill value, storage.

    ``mode_order`` lists axes outermost level first; ``level_kinds`` parallels it (None while
    unknown); ``nnz`` is the stored-entry count or its estimate; ``stats`` the degree
    statistics of a stored sparse tensor (or a copy of one), else None (``degrees.py``).
    """

    shape: tuple[int, ...]
    dtype: np.dtype
    fill: Any
    mode_order: tuple[int, ...]
    nnz: float
    level_kinds: tuple[str, ...] | None = None
    stats: StatsView | None = None

    @property
    def size(self) -> int:
        """Number of entries (product of the shape)."""
        return math.prod(self.shape)

    @property
    def sparse(self) -> bool:
        """True when some level is not dense (the tensor skips fill entries)."""
        if self.level_kinds is None:
            return False
        return not all_located(self.level_kinds)

    @property
    def density(self) -> float:
        """Stored fraction of entries (1.0 for an empty-shaped or dense tensor)."""
        if not self.sparse:
            return 1.0
        return min(1.0, self.nnz / self.size) if self.size else 0.0


def op_of(node: Immediate) -> Operator:
    """The Operator inside an ``Immediate`` (TypeError otherwise)."""
    if not isinstance(node, Immediate) or not isinstance(node.val, Operator):
        raise TypeError(f"expected Immediate(Operator), got {node!r}")
    return node.val


def tensor_info(tns: Any) -> AliasInfo:
    """Facts of a stored ``formats.Tensor``."""
    spec = getattr(tns, "spec", None)
    kinds = tuple(spec.level_kinds) if spec is not None else None
    shape = tuple(int(d) for d in tns.shape)
    stats = None
    if isinstance(tns, Tensor) and kinds is not None and not all_located(kinds):
        stats = StatsView(statistics(tns), tuple(range(len(shape))))
    return AliasInfo(shape, np.dtype(tns.dtype), tns.fill_value,
                     tuple(int(m) for m in tns.mode_order), float(tns.nnz), kinds, stats)


def field_sizes(expr: LogicNode, infos: dict[Alias, AliasInfo]) -> dict[Field, int]:
    """Size of each field that an access ranges over (max over accesses; broadcast = 1)."""
    sizes: dict[Field, int] = {}
    for n in _nodes(expr):
        if isinstance(n, Relabel) and isinstance(n.arg, Alias):
            shape = infos[n.arg].shape
            for f, d in zip(n.idxs, shape, strict=True):
                sizes[f] = max(sizes.get(f, 1), d)
        elif isinstance(n, Table):
            for f, d in zip(n.idxs, n.tns.val.shape, strict=True):
                sizes[f] = max(sizes.get(f, 1), int(d))
    return sizes


def _nodes(expr: LogicNode) -> list[LogicNode]:
    return list(walk(expr))


def expr_dtype(expr: LogicNode, infos: dict[Alias, AliasInfo],
               memo: dict[Any, Any] | None = None) -> np.dtype:
    """The dtype of a (pointwise or aggregate) expression, by the registry's rules.

    ``memo`` (keyed by node identity, for one ``infos``) shares sub-results across calls on
    the nodes of one expression; each call memoizes its own walk, so it stays linear."""
    return np.dtype(_dtype_or_scalar(expr, infos, True, {} if memo is None else memo))


def _dtype_or_scalar(expr: LogicNode, infos: dict[Alias, AliasInfo], top: bool = False,
                     memo: dict[Any, Any] | None = None) -> Any:
    if memo is None:
        memo = {}
    key = ("dtype", id(expr), top)
    if key not in memo:  # the node is kept with its value: its id is not reused meanwhile
        INFERENCES.bump("dtype")
        memo[key] = (expr, _infer_dtype(expr, infos, top, memo))
    return memo[key][1]


def _infer_dtype(expr: LogicNode, infos: dict[Alias, AliasInfo], top: bool,
                 memo: dict[Any, Any]) -> Any:
    match expr:
        case Relabel(arg=Alias() as a):
            return infos[a].dtype
        case Immediate(val=v):
            return v if top is False else np.asarray(v).dtype
        case Field():
            return INDEX_DTYPE
        case MapJoin(op=op, args=args):
            return op_of(op).result_dtype(*[_dtype_or_scalar(a, infos, False, memo)
                                            for a in args])
        case Aggregate(op=op, init=init, arg=arg):
            return aggregate_dtype(op_of(op), init.val, expr_dtype(arg, infos, memo))
        case Reorder(arg=arg) | Relabel(arg=arg) | Reformat(arg=arg):
            return _dtype_or_scalar(arg, infos, top, memo)
        case Table(tns=tns):
            return np.dtype(tns.val.dtype)
    raise TypeError(f"cannot infer the dtype of {expr!r}")


def expr_fill(expr: LogicNode, infos: dict[Alias, AliasInfo],
              memo: dict[Any, Any] | None = None) -> Any:
    """The fill value of an expression, or None when it has no implicit region: it reads a
    dense operand or a Field as a value and no sparse operand's fill annihilates or selects
    it away (the fill rule, ``logic.operators.mapjoin_region``). ``memo`` as for
    :func:`expr_dtype`."""
    if memo is None:
        memo = {}
    key = ("fill", id(expr))
    if key not in memo:  # the node is kept with its value: its id is not reused meanwhile
        INFERENCES.bump("fill")
        memo[key] = (expr, _infer_fill(expr, infos, memo))
    return memo[key][1]


def _infer_fill(expr: LogicNode, infos: dict[Alias, AliasInfo], memo: dict[Any, Any]) -> Any:
    match expr:
        case Relabel(arg=Alias() as a):
            return infos[a].fill if infos[a].sparse else None
        case Immediate(val=v):
            return v
        case Field():
            return None
        case MapJoin(op=op, args=args):
            return _mapjoin_fill(op_of(op), args, infos, memo)
        case Aggregate(op=op, init=init, arg=arg):
            if expr_fill(arg, infos, memo) is None:
                return None
            return aggregate_fill(op_of(op), init.val, expr_dtype(arg, infos, memo))
        case Reorder(arg=arg) | Relabel(arg=arg) | Reformat(arg=arg):
            return expr_fill(arg, infos, memo)
        case Table(tns=tns):
            t = tns.val
            full = all_located(getattr(getattr(t, "spec", None), "level_kinds", ()))
            return None if full else t.fill_value
    raise TypeError(f"cannot infer the fill value of {expr!r}")


def _mapjoin_fill(o: Operator, args: tuple[LogicNode, ...], infos: dict[Alias, AliasInfo],
                  memo: dict[Any, Any]) -> Any:
    """A mapjoin's fill (:func:`expr_fill`) from its arguments'."""
    fills = [expr_fill(a, infos, memo) for a in args]
    full = [f is None for f in fills]
    if not any(full):
        return mapjoin_fill(o, fills)
    try:
        # a full argument (never a scalar) takes the nominal 0 of its dtype
        nominal = [expr_dtype(a, infos, memo).type(0) if f is None else f
                   for a, f in zip(args, fills, strict=True)]
        fill, is_full = mapjoin_region(o, nominal, full)
    except (TypeError, ValueError):
        return None
    return None if is_full else fill


def stored_fill(expr: LogicNode, infos: dict[Alias, AliasInfo],
                memo: dict[Any, Any] | None = None) -> Any:
    """The fill value a query's result is stored with: :func:`expr_fill`, else (no implicit
    region) the nominal fill the kernels give it: a reduction's init, 0 for a map."""
    memo = {} if memo is None else memo
    fill = expr_fill(expr, infos, memo)
    if fill is not None:
        return fill
    while isinstance(expr, Reorder | Reformat):
        expr = expr.arg
    if isinstance(expr, Aggregate):
        return aggregate_fill(op_of(expr.op), expr.init.val, expr_dtype(expr.arg, infos, memo))
    return expr_dtype(expr, infos, memo).type(0)


def masks(op: Operator, arg: LogicNode, args: tuple[LogicNode, ...],
          infos: dict[Alias, AliasInfo], memo: dict[Any, Any] | None = None) -> bool:
    """Does ``arg`` at its fill value annihilate ``op`` (so the mapjoin is an intersection)?
    ``memo`` as for :func:`expr_dtype`."""
    memo = {} if memo is None else memo
    fill = expr_fill(arg, infos, memo)
    if fill is None:
        return False
    try:
        dts = op.operand_dtypes(*[_dtype_or_scalar(a, infos, False, memo) for a in args])
        i = list(args).index(arg)
        z = op.annihilator_at(i, dts[i])
    except (TypeError, ValueError):
        return False
    return same_value(fill, z)


def selected_arguments(node: MapJoin, infos: dict[Alias, AliasInfo],
                       memo: dict[Any, Any] | None = None) -> tuple[tuple[int, int], ...]:
    """``(i, j)`` for each argument ``i`` of ``node`` whose fill value makes the op return
    argument ``j`` (the registry's ``Operator.selections``: ``where(c, x, k)`` with ``c``'s
    fill False is ``k`` wherever ``c`` is absent, so a sparse ``c`` is a mask driver)."""
    op = op_of(node.op)
    if not op.selections:
        return ()
    memo = {} if memo is None else memo
    try:
        dts = op.operand_dtypes(*[_dtype_or_scalar(a, infos, False, memo) for a in node.args])
    except (TypeError, ValueError):
        return ()
    out: list[tuple[int, int]] = []
    for i in sorted({s.arg for s in op.selections}):
        fill = expr_fill(node.args[i], infos, memo)
        if fill is None:
            continue
        j = op.selected_by(i, scalar_as(fill, dts[i]))
        if j is not None:
            out.append((i, j))
    return tuple(out)


def selection_distributes(node: MapJoin, site: int, agg: Aggregate, dtype: Any) -> bool:
    """Does ``node`` (a selection, e.g. ``where``) at argument ``site`` commute with the
    reduction ``agg``? Yes when every other argument it may return is a scalar equal to
    ``agg``'s init and that init is the reduction's identity ``e``:
    ``where(c, ⊕_k x_k, e) == ⊕_k where(c, x_k, e)`` (SDDMM written with a mask)."""
    op = op_of(node.op)
    if not op.selects_only_arguments or site in {s.arg for s in op.selections}:
        return False
    results = {s.result for s in op.selections}
    init = agg.init.val
    try:
        if site not in results or not same_value(op_of(agg.op).identity_for(dtype), init):
            return False
    except (TypeError, ValueError):
        return False
    return all(isinstance(node.args[r], Immediate) and same_value(node.args[r].val, init)
               for r in results - {site})


def nonzero_probability(expr: LogicNode, bound: set[Field], sizes: dict[Field, int],
                        infos: dict[Alias, AliasInfo],
                        memo: dict[Any, Any] | None = None) -> float:
    """Probability that ``expr`` restricted to the ``bound`` fields is not all fill.

    Structural (per-access projections, intersections multiply, unions combine) and capped
    by projecting the whole expression's density onto ``bound``. ``memo`` caches per-node
    algebra (which operands mask) across calls on the same expression.
    """
    if memo is None:
        memo = {}
    p_deg = _degree_probability(expr, bound, sizes, infos, memo)
    if p_deg is not None:
        return p_deg
    p_struct = _prob(expr, bound, sizes, infos, memo)
    all_fields = set(sizes)
    if bound >= all_fields:
        return p_struct
    p_all = _prob(expr, all_fields, sizes, infos, memo)
    rest = math.prod(sizes[f] for f in all_fields - bound)
    return min(p_struct, _project(p_all, rest))


def _union(probs: Any) -> float:
    """Probability that any of independent events of probabilities ``probs`` happens,
    ``1 - prod(1 - p)`` without rounding a tiny ``p`` away (a 10⁹ × 10⁹ array with three
    entries has density 3e-18, and ``1 - 3e-18 == 1.0``)."""
    total = 0.0
    for p in probs:
        if p >= 1.0:
            return 1.0
        total += math.log1p(-p)
    return -math.expm1(total)


def _degree_probability(expr: LogicNode, bound: set[Field], sizes: dict[Field, int],
                        infos: dict[Alias, AliasInfo], memo: dict[Any, Any]) -> float | None:
    """The degree-statistics estimate (``degrees.py``) of ``expr`` under reductions that
    keep its fill, when its pattern is the intersection of sparse accesses with statistics
    (``_pattern_accesses``); else None."""
    key = ("degrees", id(expr), frozenset(bound))
    if key in memo:
        return memo[key]
    memo[key] = None
    e = expr
    while isinstance(e, Reorder | Reformat | Aggregate):
        if isinstance(e, Aggregate) and not _keeps_sparse(e, infos, memo):
            return None
        e = e.arg
    accs = _pattern_accesses(e, infos, memo)
    if not accs or any(infos[a.arg].stats is None for a in accs):  # type: ignore[index]
        return None
    items = [(a.idxs, infos[a.arg].stats) for a in accs]  # type: ignore[index]
    memo[key] = intersection_probability(items, bound, sizes)  # type: ignore[arg-type]
    return memo[key]


def _pattern_accesses(e: LogicNode, infos: dict[Alias, AliasInfo],
                      memo: dict[Any, Any]) -> list[Relabel] | None:
    """The sparse accesses whose intersection is ``e``'s pattern: a sparse access itself; a
    mapjoin's masking operands' (recursively: ``(A / n[:, None]) * (B / m[:, None])``),
    its other operands dense or scalars. None when something else can add entries."""
    if isinstance(e, Relabel) and isinstance(e.arg, Alias):
        return [e] if infos[e.arg].sparse else None
    if not isinstance(e, MapJoin) or _selection_flags(e, infos, memo):
        return None
    out: list[Relabel] = []
    for x, m in zip(e.args, _mask_flags(e, infos, memo), strict=True):
        if m:
            sub = _pattern_accesses(x, infos, memo)
            if sub is None:
                return None
            out += sub
        elif not isinstance(x, Immediate) and expr_fill(x, infos, memo) is not None:
            return None
    return out or None


def dense_threshold(expr: LogicNode, bound: set[Field], sizes: dict[Field, int],
                    infos: dict[Alias, AliasInfo], memo: dict[Any, Any] | None = None) -> float:
    """The density above which ``expr`` over the ``bound`` axes is stored dense:
    ``SKEWED_DENSE_THRESHOLD`` when degree statistics size it, else ``DENSE_THRESHOLD``."""
    p = _degree_probability(expr, bound, sizes, infos, {} if memo is None else memo)
    return DENSE_THRESHOLD if p is None else SKEWED_DENSE_THRESHOLD


def _project(p: float, n: float) -> float:
    if p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    return -math.expm1(n * math.log1p(-p))


def _mask_flags(node: MapJoin, infos: dict[Alias, AliasInfo],
                memo: dict[int, Any]) -> tuple[bool, ...]:
    key = id(node)
    if key not in memo:
        o = op_of(node.op)
        memo[key] = tuple(masks(o, x, node.args, infos, memo) for x in node.args)
    return memo[key]


def _selection_flags(node: MapJoin, infos: dict[Alias, AliasInfo],
                     memo: dict[Any, Any]) -> tuple[tuple[int, int], ...]:
    key = ("selects", id(node))
    if key not in memo:
        memo[key] = selected_arguments(node, infos, memo)
    return memo[key]


def _keeps_fill(node: MapJoin, infos: dict[Alias, AliasInfo], memo: dict[Any, Any]) -> bool:
    """Whether the map's scalars leave its operands' common fill unchanged
    (``maximum(X, 0)``, ``X * 2``, ``where(m, X, 0)``): the result then differs from its
    fill only where an operand does, so the scalars add no entries (``X + 1`` changes the
    fill and is sized as dense)."""
    key = ("keeps_fill", id(node))
    if key not in memo:
        fill = expr_fill(node, infos, memo)
        others = [expr_fill(a, infos, memo) for a in node.args if not isinstance(a, Immediate)]
        memo[key] = fill is not None and bool(others) and all(
            f is not None and same_value(f, fill) for f in others)
    return memo[key]


def _keeps_sparse(node: Aggregate, infos: dict[Alias, AliasInfo],
                  memo: dict[int, Any]) -> bool:
    key = id(node)
    if key not in memo:
        fill = expr_fill(node.arg, infos, memo)
        try:
            memo[key] = (fill is not None
                         and same_value(op_of(node.op).apply(node.init.val, fill), node.init.val))
        except (TypeError, ValueError):
            memo[key] = False
    return memo[key]


def _prob(expr: LogicNode, bound: set[Field], sizes: dict[Field, int],
          infos: dict[Alias, AliasInfo], memo: dict[Any, Any]) -> float:
    match expr:
        case Immediate() if memo.get("scalars_sparse"):
            return 0.0
        case Relabel(arg=Alias() as a, idxs=idxs):
            info = infos[a]
            if not info.sparse:
                return 1.0
            free = math.prod(sizes.get(f, 1) for f in set(idxs) - bound)
            return _project(info.density, free)
        case MapJoin(args=args):
            keeps = _keeps_fill(expr, infos, memo)
            probs = [0.0 if keeps and isinstance(x, Immediate) else
                     _prob(x, bound, sizes, infos, memo) for x in args]
            flags = _mask_flags(expr, infos, memo)
            masked = [p for p, m in zip(probs, flags, strict=True) if m]
            union = _union(probs)
            for i, j in _selection_flags(expr, infos, memo):
                # outside the deciding argument's pattern the value is argument j's, so the
                # result differs from its fill only on the union of their structural
                # patterns (scalars there are the fill itself: ``where(A != 0, x, k)``)
                structural = memo.setdefault("structural", {"scalars_sparse": True})
                pi, pj = (_prob(args[k], bound, sizes, infos, structural) for k in (i, j))
                union = min(union, _union((pi, pj)))
            if not masked:
                return union
            atoms = [_sparse_atoms(x, infos) for x, m in zip(args, flags, strict=True) if m]
            return min(union, _correlated_product(list(zip(masked, atoms, strict=True))))
        case Aggregate(arg=arg):
            if not _keeps_sparse(expr, infos, memo):
                return 1.0
            return _prob(arg, bound, sizes, infos, memo)
        case Reorder(arg=arg) | Reformat(arg=arg):
            return _prob(arg, bound, sizes, infos, memo)
    return 1.0


def _sparse_atoms(expr: LogicNode, infos: dict[Alias, AliasInfo]) -> frozenset[Relabel]:
    """The sparse accesses an expression reads (its pattern's ingredients)."""
    out: set[Relabel] = set()

    def visit(n: LogicNode) -> None:
        if isinstance(n, Relabel) and isinstance(n.arg, Alias):
            if infos[n.arg].sparse:
                out.add(n)
        elif isinstance(n, MapJoin):
            for a in n.args:
                visit(a)
        elif isinstance(n, Aggregate | Reorder | Reformat):
            visit(n.arg)

    visit(expr)
    return frozenset(out)


def _correlated_product(items: list[tuple[float, frozenset[Relabel]]]) -> float:
    """Probability that every item is nonzero: independent items multiply, items reading a
    common sparse access are one event (``where(S != 0, x, 0) * S`` is as sparse as S)."""
    groups: list[tuple[float, frozenset[Relabel]]] = []
    for p, atoms in items:
        rest = []
        for gp, g_atoms in groups:
            if g_atoms & atoms:
                p, atoms = min(p, gp), atoms | g_atoms
            else:
                rest.append((gp, g_atoms))
        groups = [*rest, (p, atoms)]
    return math.prod(p for p, _ in groups)


def sparse_representable(expr: LogicNode, infos: dict[Alias, AliasInfo]) -> bool:
    """Does ``expr`` equal its fill wherever every sparse operand is at its fill?

    Then it can be stored exactly as a sparse tensor on (a subset of) the union of its sparse
    operands' patterns, with fill ``expr_fill``: scalars are constants, a sparse operand whose
    fill annihilates a mapjoin masks it, and an aggregate keeps that fill iff ``op(init, fill)
    == init``. Dense operands and Fields used as values vary, so they are not representable.
    """
    memo: dict[int, Any] = {}

    def rep(e: LogicNode) -> bool:
        match e:
            case Relabel(arg=Alias() as a):
                return infos[a].sparse
            case Immediate():
                return True
            case MapJoin(args=args):
                flags = _mask_flags(e, infos, memo)
                oks = [rep(x) for x in args]
                return (all(oks) or any(m and ok for m, ok in zip(flags, oks, strict=True))
                        or any(oks[i] and oks[j]
                               for i, j in _selection_flags(e, infos, memo)))
            case Aggregate(arg=arg):
                return rep(arg) and _keeps_sparse(e, infos, memo)
            case Reorder(arg=arg) | Reformat(arg=arg):
                return rep(arg)
        return False

    return expr_fill(expr, infos, memo) is not None and rep(expr)


def reduction_result(rhs: LogicNode) -> tuple[LogicNode, tuple[Field, ...] | None]:
    """``(rhs without it, result axes)`` of a RESULT reorder around a reduction
    (``reorder(aggregate(...), axes)``: a product whose loop order writes its result out of
    the result's storage order, ``loop_order``); ``(rhs, None)`` otherwise. A map's RESULT
    reorder (``transpose.py``) is left alone: its outer Reorder serves as the loop."""
    spec = None
    if isinstance(rhs, Reformat):
        spec, rhs = rhs.tns, rhs.arg
    if isinstance(rhs, Reorder) and (isinstance(rhs.arg, Aggregate) or (
            isinstance(rhs.arg, MapJoin) and epilogue_aggregate(rhs.arg) is not None)):
        inner = rhs.arg
        return (inner if spec is None else Reformat(spec, inner)), rhs.idxs
    return (rhs if spec is None else Reformat(spec, rhs)), None


def query_parts(rhs: LogicNode) -> tuple[Immediate | None, Aggregate | None, Reorder]:
    """Split a canonical rhs ``[Reformat(spec,)] [reorder(] [Aggregate(op, init,]
    Reorder(body, F) [), axes]`` (a reduction's RESULT reorder is skipped)."""
    rhs = reduction_result(rhs)[0]
    spec = None
    if isinstance(rhs, Reformat):
        spec, rhs = rhs.tns, rhs.arg
    agg = None
    if isinstance(rhs, MapJoin):  # an EPILOGUE (logic.normal_form): its aggregate's parts
        rhs = epilogue_aggregate(rhs) or rhs
    if isinstance(rhs, Aggregate):
        agg, rhs = rhs, rhs.arg
    if not isinstance(rhs, Reorder):
        raise ValueError(f"query rhs is not in canonical form: {rhs!r}")
    return spec, agg, rhs


def result_axes(rhs: LogicNode) -> tuple[Field, ...]:
    """The axes of a canonical query's result: the Reorder's fields minus the reduced ones,
    or a reduction's RESULT reorder's axes."""
    axes = reduction_result(rhs)[1]
    if axes is not None:
        return axes
    _, agg, loop = query_parts(rhs)
    red = set(agg.idxs) if agg is not None else set()
    return tuple(f for f in loop.idxs if f not in red)


def choose_level_kinds(rhs: LogicNode, infos: dict[Alias, AliasInfo],
                       memo: dict[Any, Any] | None = None) -> tuple[str, ...]:
    """Level kinds for a canonical query's result stored in its axis order.

    Dense when the result cannot skip entries (the fill does not survive the operation) or
    its estimated density exceeds ``dense_threshold``; otherwise compressed levels, with a
    dense first level when most of its slices are expected nonempty (CSR rather than DCSR).
    A dense result past the densify limit that is ``sparse_representable`` stays sparse
    (sized with scalars adding no entries): a huge ``A + 1`` is never densified. ``memo``
    (one ``infos``'s, by node identity) shares the body's algebra with the caller's.
    """
    _, agg, loop = query_parts(rhs)
    axes = result_axes(rhs)
    if not axes:
        return ()
    expr: LogicNode = loop.arg if agg is None else Aggregate(agg.op, agg.init, loop.arg, agg.idxs)
    sizes = field_sizes(loop.arg, infos)
    for f in loop.idxs:
        sizes.setdefault(f, 1)
    memo = {} if memo is None else memo
    memo[("kept", id(expr))] = expr  # memo keys hold ids: this node's is not reused meanwhile
    p_out = nonzero_probability(expr, set(axes), sizes, infos, memo)
    size = math.prod(sizes[f] for f in axes)
    exact = exact_count(expr, axes, sizes, infos, memo) if unsure(p_out) else None
    dense = exact.dense if exact is not None else p_out > dense_threshold(
        expr, set(axes), sizes, infos, memo)
    if dense or size == 0:
        nbytes = size * expr_dtype(expr, infos, memo).itemsize
        limit = get_densify_limit()
        if size == 0 or limit is None or nbytes <= limit:
            return (DENSE_KIND,) * len(axes)
        if not sparse_representable(expr, infos):
            return (DENSE_KIND,) * len(axes)  # choose_formats raises if it densifies sparse data
        # too large to densify, exactly sparse on its operands' union: size it structurally
        memo = {"scalars_sparse": True}
    p_first = nonzero_probability(expr, {axes[0]}, sizes, infos, memo)
    first = DENSE_KIND if p_first >= DENSE_LEVEL_THRESHOLD and len(axes) > 1 else PLAIN_KIND
    return (first,) + (PLAIN_KIND,) * (len(axes) - 1)


def exact_count(expr: LogicNode, axes: tuple[Field, ...], sizes: dict[Field, int],
                infos: dict[Alias, AliasInfo], memo: dict[Any, Any]) -> ExactCount | None:
    """The exact stored entries of a query's result over ``axes`` (``exact_counts.py``):
    a product of stored tensors (``A @ A``; ``A[:k] @ B`` of skewed operands, where cheap),
    or a map of one stored tensor whose values decide its pattern (``X * (X > 8)``); None
    for anything else."""
    key = ("exact", id(expr), axes)
    if key not in memo:
        memo[key] = _exact_count(expr, axes, sizes, infos, memo)
    return memo[key]


def _exact_count(expr: LogicNode, axes: tuple[Field, ...], sizes: dict[Field, int],
                 infos: dict[Alias, AliasInfo], memo: dict[Any, Any]) -> ExactCount | None:
    e, agg = expr, None
    while isinstance(e, Reorder | Reformat | Aggregate):
        if isinstance(e, Aggregate):
            if agg is not None or not _keeps_sparse(e, infos, memo):
                return None
            agg = e
        e = e.arg
    pattern = _pattern_accesses(e, infos, memo)
    if agg is not None:
        if not pattern or any(infos[a.arg].stats is None for a in pattern):  # type: ignore[index]
            return None
        items = [(a.idxs, infos[a.arg].stats) for a in pattern]  # type: ignore[index]
        if len({id(v.stats) for _, v in items}) > 1 and not _pair_estimated_dense(  # type: ignore
                expr, axes, sizes, infos, memo):
            return None
        return product_count(items, axes, sizes)  # type: ignore[arg-type]
    reads = {(a.arg, a.idxs) for a in accesses(e)}
    if pattern is not None or len(reads) != 1:
        return None  # a structural pattern: the estimate is exact (degrees._single)
    ((alias, idxs),) = reads
    view = infos[alias].stats  # type: ignore[index]
    if view is None or set(idxs) != set(axes) or len(set(idxs)) != len(idxs):
        return None
    fill = expr_fill(expr, infos, memo)
    if fill is None or not same_value(fill, infos[alias].fill):  # type: ignore[index]
        return None  # the fill changes (``X + 1``): dense unless huge, by the rules
    size = math.prod(sizes[f] for f in axes)
    try:
        return map_count(e, view, fill, size)
    except TypeError:  # an unhashable constant in the map
        return None


def _pair_estimated_dense(expr: LogicNode, axes: tuple[Field, ...], sizes: dict[Field, int],
                          infos: dict[Alias, AliasInfo], memo: dict[Any, Any]) -> bool:
    """Whether a product of two different stored tensors is worth counting: degree
    statistics sized it (uniform operands keep the estimate and its thresholds) and dense.
    The degree model's misses on skewed data are clustered rows and columns (communities,
    topics), which meet fewer distinct pairs than it assumes: a pair it sizes sparse stays
    sparse, one it sizes dense is counted."""
    p = _degree_probability(expr, set(axes), sizes, infos, memo)
    return p is not None and p > SKEWED_DENSE_THRESHOLD


def output_estimate(rhs: LogicNode, infos: dict[Alias, AliasInfo]
                    ) -> tuple[float, ExactCount | None]:
    """A canonical query's estimated result density, and the exact count that decided its
    format where the estimate was unsure (``exact_counts.py``; else None)."""
    _, agg, loop = query_parts(rhs)
    axes = result_axes(rhs)
    expr: LogicNode = loop.arg if agg is None else Aggregate(agg.op, agg.init, loop.arg, agg.idxs)
    sizes = field_sizes(loop.arg, infos)
    for f in loop.idxs:
        sizes.setdefault(f, 1)
    memo: dict[Any, Any] = {}
    p = nonzero_probability(expr, set(axes), sizes, infos, memo) if axes else 1.0
    exact = exact_count(expr, axes, sizes, infos, memo) if axes and unsure(p) else None
    return p, exact


def counted_formats(plan: Plan) -> tuple[tuple[str, bool] | Finiteness, ...]:
    """Per compute query of an optimized ``plan`` whose format an exact count decides
    (``output_estimate``): its alias and whether the count makes it dense; then the
    finiteness of each stored table a format depends on (``unreached.finiteness_verdicts``).
    A cache of optimized plans tells calls apart by them: they read the data, not only the
    facts a plan is keyed on."""
    if not any(isinstance(b, Query) and isinstance(b.rhs, Table) and not all_located(
            getattr(getattr(b.rhs.tns.val, "spec", None), "level_kinds", (DENSE_KIND,)))
               for b in plan.bodies):
        return ()  # no stored sparse input: nothing to count, no implicit region
    infos = plan_infos(plan)
    out: list[tuple[str, bool] | Finiteness] = []
    for body in plan.bodies:
        if (isinstance(body, Query) and not isinstance(body.rhs, Table)
                and _stored_tensors(body.rhs, infos)):
            exact = output_estimate(body.rhs, infos)[1]
            if exact is not None:
                out.append((body.lhs.name, exact.dense))
    return (*out, *finiteness_verdicts(plan))


def _stored_tensors(rhs: LogicNode, infos: dict[Alias, AliasInfo]) -> bool:
    """Whether the sparse operands ``rhs`` reads all have a stored tensor's statistics
    (what an exact count can read: ``exact_counts.py``)."""
    views = [infos[a.arg].stats for a in accesses(rhs) if infos[a.arg].sparse]  # type: ignore[index]
    return bool(views) and all(v is not None for v in views)


def check_dense_result(rhs: LogicNode, infos: dict[Alias, AliasInfo],
                       kinds: tuple[str, ...]) -> None:
    """DensifyError when a canonical query's all-dense result passes the densify limit and
    no dense operand is as large (the result would densify sparse data behind the user's
    back); a result no larger than some dense operand densifies nothing not already dense."""
    _, agg, loop = query_parts(rhs)
    axes = result_axes(rhs)
    limit = get_densify_limit()
    if limit is None or not all_located(kinds):
        return
    sizes = field_sizes(loop.arg, infos)
    shape = tuple(sizes.get(f, 1) for f in axes)
    size = math.prod(shape)
    expr: LogicNode = loop.arg if agg is None else Aggregate(agg.op, agg.init, loop.arg, agg.idxs)
    dtype = expr_dtype(expr, infos)
    if size * dtype.itemsize > limit and not any(
            not infos[a.arg].sparse and infos[a.arg].size >= size  # type: ignore[index]
            for a in accesses(expr)):
        check_densify(size * dtype.itemsize, shape, dtype,
                      f"the optimizer's dense result of {_describe(expr)}")
    if agg is not None:
        _check_fold_counts(agg, loop.arg, shape, dtype, infos)


def _check_fold_counts(agg: Aggregate, body: LogicNode, shape: tuple[int, ...],
                       acc_dtype: np.dtype, infos: dict[Alias, AliasInfo]) -> None:
    """DensifyError when a dense reduction result needs a per-entry count of the coordinates its
    sparse operands skip and those counts pass the densify limit: the kernel visits only
    stored entries and folds the rest in afterwards
    (``compile.planning.coiterate.fold_levels``) when the fill is not the reduction's
    identity (``all``/``max`` along a sparse axis), keeping an int64 count per result entry:
    a 1 GB bool result of ``all(A, axis=0)`` would take 8 GB of counts."""
    if not any(infos[a.arg].sparse for a in accesses(body)):  # type: ignore[index]
        return
    op, fill = op_of(agg.op), expr_fill(body, infos)
    ident = op.identity_for(acc_dtype)
    if fill is None or ident is not None and same_value(scalar_as(fill, acc_dtype), ident):
        return
    count = np.dtype(np.int64)
    check_densify(math.prod(shape) * count.itemsize, shape, count,
                  f"counting the skipped entries of the optimizer's dense result of "
                  f"aggregate({op.name})")


def _describe(expr: LogicNode) -> str:
    """A short name of a query's computation, e.g. ``mapjoin(add)`` or ``aggregate(maximum)``."""
    while isinstance(expr, Reorder | Reformat):
        expr = expr.arg
    match expr:
        case MapJoin(op=op):
            return f"mapjoin({op_of(op).name})"
        case Aggregate(op=op):
            return f"aggregate({op_of(op).name})"
    return type(expr).__name__


def computed_info(rhs: LogicNode, infos: dict[Alias, AliasInfo]) -> AliasInfo:
    """Facts of a canonical compute query's result (axes = the Reorder's minus reduced).

    The storage is the Reformat's spec when present, else the predicted format. Cached on
    the query and the facts of the aliases it reads (passes recompute it often).
    """
    deps = tuple(sorted({(a.arg.name, infos[a.arg]) for a in accesses(rhs)},  # type: ignore[union-attr]
                        key=lambda t: t[0]))
    try:
        return _computed_info_cached(rhs, deps)
    except TypeError:  # an unhashable immediate
        return _computed_info(rhs, infos)


@functools.lru_cache(maxsize=512)
def _computed_info_cached(rhs: LogicNode, deps: tuple[tuple[str, AliasInfo], ...]) -> AliasInfo:
    return _computed_info(rhs, {Alias(n): i for n, i in deps})


def _computed_info(rhs: LogicNode, infos: dict[Alias, AliasInfo]) -> AliasInfo:
    spec, agg, loop = query_parts(rhs)
    axes = result_axes(rhs)
    sizes = field_sizes(loop.arg, infos)
    shape = tuple(sizes.get(f, 1) for f in axes)
    expr: LogicNode = loop.arg if agg is None else Aggregate(agg.op, agg.init, loop.arg, agg.idxs)
    plain = reduction_result(rhs)[0]
    expr = replace_epilogue_aggregate(plain.arg if spec is not None else plain, expr)  # type: ignore
    memo: dict[Any, Any] = {}  # fill, dtype and masking facts of expr's nodes, shared
    dtype = expr_dtype(expr, infos, memo)
    fill = stored_fill(expr, infos, memo)
    if spec is not None:
        kinds = tuple(spec.val.level_kinds)
        mode = tuple(spec.val.mode_order)
    else:
        kinds = choose_level_kinds(rhs, infos, memo)
        mode = tuple(range(len(axes)))
    all_sizes = dict(sizes)
    for f in loop.idxs:
        all_sizes.setdefault(f, 1)
    sparse = not all_located(kinds)
    p = nonzero_probability(expr, set(axes), all_sizes, infos, memo)
    if (sparse and p > dense_threshold(expr, set(axes), all_sizes, infos, memo)
            and sparse_representable(expr, infos)):
        # stored on its sparse operands' union (a large ``A + 1``): scalars add no entries
        p = nonzero_probability(expr, set(axes), all_sizes, infos, {"scalars_sparse": True})
    exact = exact_count(expr, axes, all_sizes, infos, memo) if sparse and unsure(p) else None
    nnz = float(exact.entries) if exact is not None else math.prod(shape) * (p if sparse
                                                                              else 1.0)
    return AliasInfo(shape, dtype, fill, mode, nnz, kinds,
                     _copied_stats(loop.arg, agg, axes, infos) if sparse else None)


def _copied_stats(body: LogicNode, agg: Aggregate | None, axes: tuple[Field, ...],
                  infos: dict[Alias, AliasInfo]) -> StatsView | None:
    """The source's statistics when a query only copies one access (a relayout, a
    transposed copy): its axes are a permutation of the source's."""
    if agg is not None or not (isinstance(body, Relabel) and isinstance(body.arg, Alias)):
        return None
    view = infos[body.arg].stats
    idxs = body.idxs
    if view is None or len(set(idxs)) != len(idxs) or set(idxs) != set(axes):
        return None
    return view.permuted([idxs.index(f) for f in axes])


def compute_queries(plan: Plan, infos: dict[Alias, AliasInfo],
                    out: list[LogicNode]) -> Iterator[Query]:
    """The compute queries of ``plan`` in order, for a pass that rebuilds the plan into
    ``out``: other statements go to ``out`` unchanged, and input tables also record their
    facts in ``infos``."""
    for body in plan.bodies:
        if not isinstance(body, Query):
            out.append(body)
        elif isinstance(body.rhs, Table):
            infos[body.lhs] = tensor_info(body.rhs.tns.val)
            out.append(body)
        else:
            yield body


def plan_infos(plan: Plan) -> dict[Alias, AliasInfo]:
    """Facts for every alias of a plan whose queries are input or canonical compute queries."""
    infos: dict[Alias, AliasInfo] = {}
    for body in plan.bodies:
        if isinstance(body, Query):
            if isinstance(body.rhs, Table):
                infos[body.lhs] = tensor_info(body.rhs.tns.val)
            else:
                infos[body.lhs] = computed_info(body.rhs, infos)
    return infos

