"""Where an aggregate's implicit region decides a map of its result (docs/api.md, "The fill
rule"): ``(A @ B) / D`` is 0 wherever no product reached, even where ``D`` is 0, because
the product's implicit 0 annihilates the division there, while a reached sum that cancels
to 0 is data (0 / 0 = NaN). A dense-stored result has no implicit region: ``sum(S, axis=1)``
is dense as in NumPy, so ``sum(S, axis=1) / d`` divides every entry. So where the optimizer
chooses the formats (``formats.choose_formats``), an aggregate that such a map reads, and
the map itself, are stored sparse (the map holds exactly the reached entries), and a sparse
aggregate is fused into that map only when the map's result is sparse too
(``epilogue.fuse_epilogues``): the fused kernel writes only the entries the reduction
reached.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lazysparse.formats.dtypes import same_value
from lazysparse.formats.levels.registry import DENSE_KIND, PLAIN_KIND, all_located
from lazysparse.formats.statistics import holds_nonfinite
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
from lazysparse.logic.normal_form import epilogue_aggregate
from lazysparse.logic.operators import Operator, mapjoin_region
from lazysparse.optimizer.rewrite import accesses

# the region of a value: (fill, full), None where it is not known
Region = tuple[Any, bool] | None


def map_body(rhs: LogicNode) -> LogicNode | None:
    """The pointwise tree of a map query (``[Reformat(] Reorder(body, F) [)]``), else None."""
    if isinstance(rhs, Reformat):
        rhs = rhs.arg
    if not isinstance(rhs, Reorder) or isinstance(rhs.arg, Reorder | Aggregate):
        return None
    return rhs.arg


def annihilated_reader(body: LogicNode, alias: Alias, init: Any,
                       other: Callable[[Alias], Region]) -> bool:
    """Whether the map ``body``, reading ``alias`` (an aggregate of fill ``init``), is
    annihilated where the aggregate holds its fill while reading a full value there (a
    dense operand, a field): its value at the aggregate's unreached entries is then the
    map's fill, not the map of ``init``. ``other``: the region of every other alias read."""
    r, reads_full = map_region(body, alias, init, other)
    return r is not None and not r[1] and reads_full


def region_decides(body: LogicNode, alias: Alias, init: Any,
                   other: Callable[[Alias], Region]) -> bool:
    """Whether the aggregate ``alias``'s implicit region decides some operation of the map
    ``body`` reading it (:func:`annihilated_reader` of ``body`` or of a sub-expression:
    ``maximum(P, D) + P / D`` is full, but its division is 0 where ``P`` is implicit); a
    kernel that maps every entry, ``init`` where nothing was reached, would compute that
    operation by IEEE there."""
    if not isinstance(body, MapJoin) or alias not in {a.arg for a in accesses(body)}:
        return False
    return annihilated_reader(body, alias, init, other) or \
        any(region_decides(x, alias, init, other) for x in body.args)


def map_region(body: LogicNode, alias: Alias | None, init: Any,
               other: Callable[[Alias], Region]) -> tuple[Region, bool]:
    """The region of the map ``body`` where the aggregate ``alias`` (fill ``init``) is
    implicit (None: not known), and whether the map reads a full value (a dense operand,
    a field): see :func:`annihilated_reader`; ``alias`` None: every alias is ``other``."""
    reads_full = False

    def region(n: LogicNode) -> Region:
        nonlocal reads_full
        match n:
            case Relabel(arg=Alias() as a):
                r = (np.asarray(init)[()], False) if alias is not None and a == alias \
                    else other(a)
                reads_full = reads_full or (r is not None and r[1])
                return r
            case Immediate(val=v):
                return v, False
            case Field():
                reads_full = True
                return np.int64(0), True
            case MapJoin(op=Immediate(val=Operator() as op), args=args):
                parts = [region(x) for x in args]
                if any(p is None for p in parts):
                    return None
                try:
                    with np.errstate(all="ignore"):
                        return mapjoin_region(op, [p[0] for p in parts],  # type: ignore[index]
                                              [p[1] for p in parts])  # type: ignore[index]
                except (TypeError, ValueError):
                    return None
        return None

    return region(body), reads_full


def _table_region(rhs: LogicNode) -> Region:
    """A stored table's region: its fill, and whether it stores every entry."""
    if not isinstance(rhs, Table):
        return None
    t = rhs.tns.val
    return np.asarray(t.fill_value)[()], bool(getattr(t, "full", True))


def _dense_spec(spec: Any) -> bool:
    """Whether a Reformat's layout (a spec or a prototype tensor) stores every entry."""
    return all_located(getattr(getattr(spec, "spec", spec), "level_kinds", ("?",)))


def _query_region(rhs: LogicNode, regions: Callable[[Alias], Region]) -> Region:
    """The region of a query: a stored table's, or that of a map stored in a layout of its
    own (a relayout of a sparse operand keeps its implicit region, as the reference says;
    a dense layout stores every entry); None for anything else (an aggregate, a map whose
    format is not chosen yet)."""
    if isinstance(rhs, Table):
        return _table_region(rhs)
    body = map_body(rhs) if isinstance(rhs, Reformat) else None
    if body is None:
        return None
    r, _ = map_region(body, None, None, regions)
    if r is None:
        return None
    return (r[0], True) if _dense_spec(rhs.tns.val) else r  # type: ignore[attr-defined]


def _has_region(agg: Aggregate, tables: Callable[[Alias], Region]) -> bool:
    """Whether ``agg`` (over stored tables) has an implicit region: its argument has one
    and folding the argument's fill keeps the init (``op(init, fill) == init``), as the
    reference interpreter says; a product of dense operands has none."""
    arg = agg.arg.arg if isinstance(agg.arg, Reorder) else agg.arg
    r, _ = map_region(arg, None, None, tables)
    if r is None or r[1] or not isinstance(agg.op, Immediate) or \
            not isinstance(agg.op.val, Operator):
        return False
    init = agg.init.val  # type: ignore[attr-defined]
    try:
        with np.errstate(all="ignore"):
            return same_value(agg.op.val.apply(init, r[0]), init)
    except (TypeError, ValueError):
        return False


def sparse_kinds(n: int) -> tuple[str, ...]:
    """CSR-like levels for ``n`` axes (a dense first level above compressed ones): what an
    aggregate whose implicit region a reader's map needs is stored in."""
    return (DENSE_KIND,) + (PLAIN_KIND,) * (n - 1) if n > 1 else (PLAIN_KIND,)


def _aggregate_query(rhs: LogicNode, chosen: bool = False) -> tuple[Aggregate | None, bool]:
    """The aggregate a query computes (None if it computes none) and whether the query has a
    format of its own; an aggregate stored dense by its own format has no implicit region,
    unless ``chosen`` (a plan whose formats the optimizer chose: dense may be its choice)."""
    own = isinstance(rhs, Reformat)
    inner = rhs.arg if isinstance(rhs, Reformat) else rhs
    agg = inner.arg if isinstance(inner, Reorder) else inner
    if not isinstance(agg, Aggregate) or not isinstance(agg.init, Immediate) or \
            (own and not chosen and _dense_spec(rhs.tns.val)):  # type: ignore[attr-defined]
        return None, own
    return agg, own


def aggregate_argument(rhs: LogicNode) -> LogicNode | None:
    """The pointwise tree an aggregate query (or an epilogue's aggregate) folds, else None:
    where the optimizer puts a map it pushed into a product (``(a @ X) * (P / D)`` folds
    ``a * X * (P / D)``; ``P @ (S * D)`` folds ``P * (S * D)``)."""
    inner = rhs.arg if isinstance(rhs, Reformat) else rhs
    inner = inner.arg if isinstance(inner, Reorder) else inner
    agg = inner if isinstance(inner, Aggregate) else epilogue_aggregate(inner)
    if agg is None:
        return None
    return agg.arg.arg if isinstance(agg.arg, Reorder) else agg.arg


def _relayout_source(rhs: LogicNode) -> Alias | None:
    """The alias a query copies into a sparse layout of its own (``Reformat(spec,
    Reorder(Relabel(a)))``, a concordizing transpose), else None."""
    if not isinstance(rhs, Reformat) or _dense_spec(rhs.tns.val):
        return None
    arg = rhs.arg.arg if isinstance(rhs.arg, Reorder) else rhs.arg
    if isinstance(arg, Relabel) and isinstance(arg.arg, Alias):
        return arg.arg
    return None


@dataclass
class _Facts:
    """What :func:`region_uses` reads off a plan, per query alias."""

    readers: dict[Alias, list[Query]] = field(default_factory=dict)
    defs: dict[Alias, Query] = field(default_factory=dict)
    aggs: dict[Alias, tuple[Aggregate, bool]] = field(default_factory=dict)
    origin: dict[Alias, Alias] = field(default_factory=dict)  # a copy -> what it copies
    regions: dict[Alias, Region] = field(default_factory=dict)
    # the stored tables whose finiteness was read, and whether each holds a non-finite value
    consulted: dict[Alias, bool] = field(default_factory=dict)
    chosen: bool = False  # the formats are the optimizer's (``_aggregate_query``)
    # ``regions`` with those of maps without a format yet (the region a map has unless
    # stored dense) and of aggregates over them: what a query keeping fills keeps
    potential: dict[Alias, Region] = field(default_factory=dict)
    maps: set[Alias] = field(default_factory=set)  # those maps

    def nonfinite(self, a: Alias) -> bool:
        """Whether the query ``a`` may hold ±inf or NaN: a stored table's data (read and
        recorded), a map's operands and operators, else (a fold: sums overflow) True."""
        rhs = self.defs[a].rhs
        if isinstance(rhs, Table):
            if a not in self.consulted:
                self.consulted[a] = _nonfinite(rhs.tns.val)
            return self.consulted[a]
        body = map_body(rhs)
        return True if body is None else may_be_nonfinite(body, self.nonfinite)


def _keeps_fills(rhs: LogicNode) -> bool:
    """Whether a query asks for a layout keeping every reached entry (``keeps_fills``)."""
    return isinstance(rhs, Reformat) and bool(getattr(rhs.tns.val, "keeps_fills", False))


def _map_region_uses(f: _Facts) -> list[tuple[Alias, bool, Query, bool]]:
    """Each map query without a format of its own whose implicit region a fold reading it
    needs (:func:`region_matters`: ``q = S * S`` shared by ``q @ Dinf`` and another reader,
    so stored first: dense, ``0 * inf`` would be NaN where ``S`` stores nothing), with that
    fold; and the aggregates with a region the map reads, whose regions make its own."""
    out: list[tuple[Alias, bool, Query, bool]] = []
    for a, q in f.defs.items():
        if a in f.aggs or isinstance(q.rhs, Reformat | Table):
            continue
        body = map_body(q.rhs)
        r = map_region(body, None, None, f.regions.get)[0] if body is not None else None
        if r is None or r[1]:
            continue
        for use in f.readers.get(a, []):
            arg = aggregate_argument(use.rhs) if map_body(use.rhs) is None else None
            if arg is not None and region_matters(arg, a, r[0], f.regions.get, f.nonfinite):
                out.append((a, False, use, False))
                out += [c for x in accesses(body) if x.arg in f.aggs  # type: ignore[arg-type]
                        and (rx := f.regions.get(x.arg)) is not None and not rx[1]  # type: ignore[arg-type]
                        for c in _chain(f, x.arg, q, False)]  # type: ignore[arg-type]
    return out


def _held_region_uses(f: _Facts) -> list[tuple[Alias, bool, Query, bool]]:
    """What a query computed into a layout keeping fills (a held value kept with its
    region: ``api.array.held_regions``) needs: later plans this one cannot see read its
    region, so the aggregates and maps without a format yet whose regions make its own
    (``_Facts.potential``: ``where(W, 3, (S * S) @ B)`` is unreached where ``S * S`` is)
    keep theirs, and theirs in turn."""
    out: list[tuple[Alias, bool, Query, bool]] = []
    todo = [a for a, q in f.defs.items() if _keeps_fills(q.rhs)]
    seen = set(todo)
    while todo:
        a = todo.pop()
        rhs = f.defs[a].rhs
        agg, _ = _aggregate_query(rhs, f.chosen)
        body = agg.arg if agg is not None else map_body(rhs)
        for x in accesses(body) if body is not None else ():
            b = x.arg
            if b in seen or not (b in f.aggs or b in f.maps) or \
                    (r := f.potential.get(b)) is None or r[1]:  # type: ignore[arg-type]
                continue
            seen.add(b)  # type: ignore[arg-type]
            out += _chain(f, b, f.defs[a], False) if b in f.aggs else \
                [(b, False, f.defs[a], False)]  # type: ignore[list-item]
            todo.append(b)  # type: ignore[arg-type]
    return out


def _plan_facts(plan: Plan, chosen: bool = False) -> _Facts:
    """Readers, aggregates (and sparse copies of them) and regions of ``plan``'s queries;
    an aggregate with an implicit region holds its init there (the reference's).
    ``chosen``: the formats are the optimizer's (a dense aggregate may have had a region)."""
    f = _Facts(chosen=chosen)
    for body in plan.bodies:
        if not isinstance(body, Query):
            continue
        f.defs[body.lhs] = body
        agg, own = _aggregate_query(body.rhs, chosen)
        src = _relayout_source(body.rhs)
        if agg is not None:
            f.aggs[body.lhs] = (agg, own)
            init = (np.asarray(agg.init.val)[()], False)  # type: ignore[attr-defined]
            f.regions[body.lhs] = init if _has_region(agg, f.regions.get) else None
            f.potential[body.lhs] = init if _has_region(agg, f.potential.get) else None
        else:
            if src in f.aggs:
                f.aggs[body.lhs], f.origin[body.lhs] = (f.aggs[src][0], True), src  # type: ignore[index]
            f.regions[body.lhs] = _query_region(body.rhs, f.regions.get)
            f.potential[body.lhs] = _query_region(body.rhs, f.potential.get)
            mb = map_body(body.rhs) if not isinstance(body.rhs, Reformat | Table) else None
            if f.potential[body.lhs] is None and mb is not None:
                f.potential[body.lhs] = map_region(mb, None, None, f.potential.get)[0]
                f.maps.add(body.lhs)
        for acc in accesses(body.rhs):
            f.readers.setdefault(acc.arg, []).append(body)  # type: ignore[arg-type]
    return f


def _chain(f: _Facts, a: Alias, use: Query, whole: bool) -> list[tuple[Alias, bool, Query, bool]]:
    """``a`` and every aggregate or copy it copies, each with ``use``."""
    out: list[tuple[Alias, bool, Query, bool]] = []
    x: Alias | None = a
    while x is not None:
        out.append((x, f.aggs[x][1], use, whole))
        x = f.origin.get(x)
    return out


def _feeders(f: _Facts, a: Alias) -> list[Alias]:
    """The aggregates (or their copies) with an implicit region that aggregate ``a``'s
    argument reads: their regions make ``a``'s (no product reaches past an unreached entry)."""
    agg, _ = _aggregate_query(f.defs[a].rhs, f.chosen)
    if agg is None:
        return []
    return [x.arg for x in accesses(agg.arg) if x.arg in f.aggs  # type: ignore[misc]
            and (r := f.regions.get(x.arg)) is not None and not r[1]]  # type: ignore[arg-type]


def region_uses(plan: Plan) -> list[tuple[Alias, bool, Query, bool]]:
    """Each ``(aggregate, whether it has a format of its own, reader query, whether the
    whole map is annihilated there)`` of ``plan`` where the reader is a map whose operation
    the aggregate's implicit region decides (:func:`region_decides`; the map's other
    operands are stored tables, maps of them stored in a layout of their own, a relayout
    included, or aggregates), or an aggregate listed already whose product reads it. A
    sparse copy of an aggregate (a transpose) keeps its region: its readers are listed for
    the copy (with a format of its own) and for the aggregate it copies."""
    return _region_uses(_plan_facts(plan))


def _region_uses(f: _Facts) -> list[tuple[Alias, bool, Query, bool]]:
    """:func:`region_uses` of the facts ``f`` (recording the tables whose finiteness the
    folds' readers read: ``f.consulted``)."""
    out: list[tuple[Alias, bool, Query, bool]] = []
    for a, (agg, _) in f.aggs.items():
        r = f.regions.get(a)
        if r is None or r[1]:
            continue
        init = agg.init.val  # type: ignore[attr-defined]
        for use in f.readers.get(a, []):
            body = map_body(use.rhs)
            if body is not None and region_decides(body, a, init, f.regions.get):
                out += _chain(f, a, use, annihilated_reader(body, a, init, f.regions.get))
            elif body is None and (arg := aggregate_argument(use.rhs)) is not None and \
                    region_matters(arg, a, init, f.regions.get, f.nonfinite):
                out += _chain(f, a, use, False)
    out += _map_region_uses(f)
    todo = [u[0] for u in out]
    seen = set(todo)
    while todo:
        a = todo.pop()
        for b in _feeders(f, a):
            if b not in seen:
                seen.add(b)
                chain = _chain(f, b, f.defs[a], False)
                out += chain
                todo += [c[0] for c in chain]
    return out + _held_region_uses(f)


def may_be_nonfinite(body: LogicNode, alias_nonfinite: Callable[[Alias], bool]) -> bool:
    """Whether the pointwise tree ``body`` may give ±inf or NaN: an operator that finite
    operands can drive there (``Operator.keeps_finite`` False: ``exp``, ``/``, overflowing
    ``*``), a non-finite constant, or an alias read that may hold one (``alias_nonfinite``)."""
    match body:
        case Relabel(arg=Alias() as a):
            return alias_nonfinite(a)
        case Immediate(val=v):
            try:
                return not np.all(np.isfinite(np.asarray(v)))
            except TypeError:
                return False  # not a number (a bool, an operator)
        case Field():
            return False
        case MapJoin(op=Immediate(val=Operator() as op), args=args):
            return not op.keeps_finite or any(may_be_nonfinite(x, alias_nonfinite)
                                              for x in args)
    return True


def _annihilated_by(n: MapJoin, alias: Alias, init: Any,
                    other: Callable[[Alias], Region]) -> bool:
    """Whether the op of ``n`` is annihilated by an argument reading ``alias`` where that
    aggregate holds its init: the argument's region there is the op's annihilator at its
    position (``P * X``, ``P / D``; not ``D / P``, not ``P + X``)."""
    op = n.op.val  # type: ignore[attr-defined]
    parts = [map_region(x, alias, init, other)[0] for x in n.args]
    if any(p is None for p in parts):
        return False
    try:
        dtypes = op.operand_dtypes(*[p[0] for p in parts])  # type: ignore[index]
    except (TypeError, ValueError):
        return False
    for i, (x, p) in enumerate(zip(n.args, parts, strict=True)):
        if alias not in {a.arg for a in accesses(x)} or p[1]:  # type: ignore[index]
            continue
        z = op.annihilator_at(i, dtypes[i])
        if z is not None and same_value(p[0], z):  # type: ignore[index]
            return True
    return False


def region_matters(body: LogicNode, alias: Alias, init: Any, other: Callable[[Alias], Region],
                   alias_nonfinite: Callable[[Alias], bool]) -> bool:
    """Whether a fold of the pointwise ``body`` (another aggregate's argument, reading the
    aggregate ``alias`` of fill ``init``) needs ``alias``'s implicit region, as the reference
    interpreter says: an op of ``body`` that the region annihilates keeps its annihilator,
    computed on a stored ``init``, only when the op does so for finite operands
    (``Operator.finite_annihilator``: not ``divide``, 0 / 0 is NaN) and no other operand may
    be non-finite (:func:`may_be_nonfinite`: ``(A @ B) @ (S * D)`` with ``D`` holding inf:
    0 * inf is NaN). With finite data ``(A @ B) @ X`` folds the same stored dense."""
    if not isinstance(body, MapJoin) or not isinstance(body.op, Immediate) or \
            alias not in {a.arg for a in accesses(body)}:
        return False
    if _annihilated_by(body, alias, init, other):
        op = body.op.val
        others = [x for x in body.args if alias not in {a.arg for a in accesses(x)}]
        if not op.finite_annihilator or any(may_be_nonfinite(x, alias_nonfinite)
                                            for x in others):
            return True
    return any(region_matters(x, alias, init, other, alias_nonfinite) for x in body.args)


@dataclass(frozen=True)
class Finiteness:
    """A plan cache verdict (``analysis.counted_formats``): whether the stored table
    ``table`` of an optimized plan holds a non-finite value now; a format depends on it
    (:func:`region_matters`), and it is read again on every call (data may be written in
    place, and a NumPy leaf shares the caller's memory)."""

    table: str
    nonfinite: bool


def finiteness_verdicts(plan: Plan) -> tuple[Finiteness, ...]:
    """The :class:`Finiteness` of each stored table whose finiteness decides a format of
    the optimized ``plan`` (its aggregates counted with a region whatever their chosen
    format, so a plan chosen on finite data and one chosen on other data read the same
    tables)."""
    f = _plan_facts(plan, chosen=True)
    _region_uses(f)
    return tuple(Finiteness(a.name, v) for a, v in f.consulted.items())


def reads_values(verdicts: tuple[Any, ...]) -> bool:
    """Whether plan cache verdicts hold a :class:`Finiteness` (read again on every call)."""
    return any(isinstance(v, Finiteness) for v in verdicts)


def reread_values(verdicts: tuple[Any, ...], tables: dict[str, Any]) -> tuple[Any, ...]:
    """``verdicts`` with each :class:`Finiteness` read again from a call's data: ``tables``
    maps the input tables of the optimized plan they came from to that call's tensors
    (O(those tensors); a table not there counts as non-finite, the safe side)."""
    return tuple(Finiteness(v.table, _nonfinite(tables.get(v.table)))
                 if isinstance(v, Finiteness) else v for v in verdicts)


def _nonfinite(t: Any) -> bool:
    """Whether stored data may hold ±inf or NaN (True for data without values)."""
    return holds_nonfinite(t) if hasattr(t, "values") else True


def region_readers(uses: list[tuple[Alias, bool, Query, bool]]) -> set[Alias]:
    """The aggregate queries of :func:`region_uses` without a format of their own, and their
    map queries annihilated as a whole when they have no format of their own either: their
    chosen formats keep that region (sparse)."""
    out: set[Alias] = set()
    for a, own, use, whole in uses:
        if own:
            continue
        out.add(a)
        if whole and not isinstance(use.rhs, Reformat):
            out.add(use.lhs)
    return out


def reached_keepers(uses: list[tuple[Alias, bool, Query, bool]]) -> set[Alias]:
    """The aggregate queries of :func:`region_uses`: stored sparse, they keep every entry
    they reach (``FormatSpec.keeps_fills``), since their map tells a reached sum that
    cancels to the init (``0 / 0``: NaN) from an unreached entry (the map's fill, 0), as
    the reference interpreter does; fused into that map they are never stored."""
    return {use[0] for use in uses}


__all__ = ["Finiteness", "Region", "aggregate_argument", "annihilated_reader",
           "finiteness_verdicts", "map_body", "map_region", "may_be_nonfinite",
           "reached_keepers", "reads_values", "region_decides", "reread_values", "region_matters",
           "region_readers", "region_uses", "sparse_kinds"]
