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


def _aggregate_query(rhs: LogicNode) -> tuple[Aggregate | None, bool]:
    """The aggregate a query computes (None if it computes none) and whether the query has a
    format of its own; an aggregate stored dense by its own format has no implicit region."""
    own = isinstance(rhs, Reformat)
    inner = rhs.arg if isinstance(rhs, Reformat) else rhs
    agg = inner.arg if isinstance(inner, Reorder) else inner
    if not isinstance(agg, Aggregate) or not isinstance(agg.init, Immediate) or \
            (own and _dense_spec(rhs.tns.val)):  # type: ignore[attr-defined]
        return None, own
    return agg, own


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


def _plan_facts(plan: Plan) -> _Facts:
    """Readers, aggregates (and sparse copies of them) and regions of ``plan``'s queries;
    an aggregate with an implicit region holds its init there (the reference's)."""
    f = _Facts()
    for body in plan.bodies:
        if not isinstance(body, Query):
            continue
        f.defs[body.lhs] = body
        agg, own = _aggregate_query(body.rhs)
        src = _relayout_source(body.rhs)
        if agg is not None:
            f.aggs[body.lhs] = (agg, own)
            f.regions[body.lhs] = (np.asarray(agg.init.val)[()], False) \
                if _has_region(agg, f.regions.get) else None  # type: ignore[attr-defined]
        else:
            if src in f.aggs:
                f.aggs[body.lhs], f.origin[body.lhs] = (f.aggs[src][0], True), src  # type: ignore[index]
            f.regions[body.lhs] = _query_region(body.rhs, f.regions.get)
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
    agg, _ = _aggregate_query(f.defs[a].rhs)
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
    f = _plan_facts(plan)
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
    return out


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


__all__ = ["Region", "annihilated_reader", "map_body", "map_region", "reached_keepers",
           "region_decides", "region_readers", "region_uses", "sparse_kinds"]
