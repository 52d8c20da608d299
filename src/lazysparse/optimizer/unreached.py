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


def region_uses(plan: Plan) -> list[tuple[Alias, bool, Query]]:
    """Each ``(aggregate, whether it has a format of its own, map query)`` of ``plan`` where
    the map reads the aggregate's result and the aggregate's implicit region decides the map
    (:func:`annihilated_reader`; the map's other operands are stored tables, or maps of
    them stored in a layout of their own, a relayout included). A sparse copy of an
    aggregate (a transpose) keeps its region: its readers are listed for the copy (with a
    format of its own) and for the aggregate it copies."""
    readers: dict[Alias, list[Query]] = {}
    aggs: dict[Alias, tuple[Aggregate, bool]] = {}
    origin: dict[Alias, Alias] = {}
    regions: dict[Alias, Region] = {}
    for body in plan.bodies:
        if not isinstance(body, Query):
            continue
        agg, own = _aggregate_query(body.rhs)
        src = _relayout_source(body.rhs)
        if agg is None and src in aggs:
            agg, origin[body.lhs] = aggs[src][0], src  # type: ignore[index]
        if agg is not None:
            aggs[body.lhs] = (agg, own)
        regions[body.lhs] = _query_region(body.rhs, regions.get)
        for acc in accesses(body.rhs):
            readers.setdefault(acc.arg, []).append(body)  # type: ignore[arg-type]
    out: list[tuple[Alias, bool, Query]] = []
    for a, (agg, _) in aggs.items():
        if not _has_region(agg, regions.get):
            continue
        for use in readers.get(a, []):
            body = map_body(use.rhs)
            if body is None or not annihilated_reader(body, a, agg.init.val,  # type: ignore[attr-defined]
                                                      regions.get):
                continue
            x: Alias | None = a
            while x is not None:  # the aggregate and every copy between it and the map
                out.append((x, aggs[x][1], use))
                x = origin.get(x)
    return out


def region_readers(uses: list[tuple[Alias, bool, Query]]) -> set[Alias]:
    """The aggregate queries of :func:`region_uses` without a format of their own, and their
    map queries when they have no format of their own either: their chosen formats keep
    that region (sparse)."""
    out: set[Alias] = set()
    for a, own, use in uses:
        if own:
            continue
        out.add(a)
        if not isinstance(use.rhs, Reformat):
            out.add(use.lhs)
    return out


def reached_keepers(uses: list[tuple[Alias, bool, Query]]) -> set[Alias]:
    """The aggregate queries of :func:`region_uses`: stored sparse, they keep every entry
    they reach (``FormatSpec.keeps_fills``), since their map tells a reached sum that
    cancels to the init (``0 / 0``: NaN) from an unreached entry (the map's fill, 0), as
    the reference interpreter does; fused into that map they are never stored."""
    return {a for a, _, _ in uses}


__all__ = ["Region", "annihilated_reader", "map_body", "map_region", "reached_keepers",
           "region_readers", "region_uses", "sparse_kinds"]
