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


def region_readers(plan: Plan) -> set[Alias]:
    """The aggregate queries of ``plan`` without a format of their own read by a map query
    that their implicit region decides (:func:`annihilated_reader`, the map's other
    operands stored tables), and those map queries when they have no format of their own
    either: their chosen formats keep that region (sparse)."""
    readers: dict[Alias, list[Query]] = {}
    aggs: dict[Alias, Aggregate] = {}
    tables: dict[Alias, Region] = {}
    for body in plan.bodies:
        if not isinstance(body, Query):
            continue
        rhs = body.rhs
        agg = rhs.arg if isinstance(rhs, Reorder) else rhs
        if isinstance(agg, Aggregate) and isinstance(agg.init, Immediate):
            aggs[body.lhs] = agg
        tables[body.lhs] = _table_region(rhs)
        for acc in accesses(rhs):
            readers.setdefault(acc.arg, []).append(body)  # type: ignore[arg-type]
    out: set[Alias] = set()
    for a, agg in aggs.items():
        if not _has_region(agg, tables.get):
            continue
        for use in readers.get(a, []):
            body = map_body(use.rhs)
            if body is not None and annihilated_reader(body, a, agg.init.val, tables.get):
                out.add(a)
                if not isinstance(use.rhs, Reformat):
                    out.add(use.lhs)
    return out


__all__ = ["Region", "annihilated_reader", "map_body", "map_region", "region_readers"]
