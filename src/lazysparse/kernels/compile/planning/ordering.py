"""Sorting an operand only where its kernel needs order (issue 14).

An unordered level (siblings in any order: a scattered write drained without sorting,
scipy's unsorted CSR) can drive a loop alone: its positions are visited in storage order
and every coordinate once. Order is needed where the generated code compares coordinates
across operands or promises it to the result:

- a multi-way merge (``LoopKind.MERGE``) or a forward-seeking follower;
- an append into an *ordered* output level driven by the unordered level (the result's
  coordinates would come out in the operand's order).

Those operands are sorted (``formats.ordering.ordered``) before the kernel is analysed
again (the record's ``sorted`` names them); everything else reads them as they are.
"""

from __future__ import annotations

from typing import Any

from lazysparse.formats.ordering import ordered
from lazysparse.kernels.compile.planning.analysis import KernelInfo, analyze_query
from lazysparse.kernels.compile.planning.coiterate import LevelPlan, LoopKind
from lazysparse.kernels.compile.planning.decisions import QueryDecisions
from lazysparse.kernels.compile.planning.output_plan import OutputMode
from lazysparse.logic.nodes import Alias, Query


def _unordered_at(info: KernelInfo, slot: int, fld: str) -> bool:
    """Whether operand ``slot`` stores loop field ``fld`` in an unordered level."""
    op = info.operands[slot]
    k = op.level_of(fld)
    return k is not None and not op.levels[k].props.ordered


def slots_needing_order(info: KernelInfo, levels: tuple[LevelPlan, ...],
                        out_mode: OutputMode) -> set[int]:
    """Operand slots whose unordered levels this kernel plan reads in coordinate order."""
    need: set[int] = set()
    out_props = info.out_spec.level_properties()
    storage = info.out_storage_fields
    for lp in levels:
        merged = lp.drivers if lp.kind is LoopKind.MERGE else ()
        for s in (*merged, *lp.followers):
            if _unordered_at(info, s, lp.field):
                need.add(s)
        if out_mode is OutputMode.APPEND and lp.kind is LoopKind.DRIVER \
                and lp.field in storage and out_props[storage.index(lp.field)].ordered:
            need.update(s for s in lp.drivers if _unordered_at(info, s, lp.field))
    return need


def has_unordered(info: KernelInfo) -> bool:
    """Whether any operand has an unordered level (the only case with anything to check)."""
    return any(not lv.props.ordered for op in info.operands for lv in op.levels)


def decide_order(query: Query, env: dict[Alias, Any]) -> QueryDecisions:
    """The query's analysis, after sorting the operands whose unordered levels the kernel
    would read in order (see the module docstring; recorded in ``sorted``); other operands
    are left as they are. Where nothing is sorted the plan that decided it is recorded."""
    d = QueryDecisions(*analyze_query(query, env))
    if not has_unordered(d.info):
        return d
    d = d.planned()
    plan = d.layout_plan()
    need = slots_needing_order(d.info, plan.levels, plan.output.mode)
    if not need:
        return d
    names = tuple(sorted({d.info.operands[s].alias for s in need}))
    env = {a: (ordered(t) if a.name in names else t) for a, t in env.items()}
    return QueryDecisions(*analyze_query(query, env), sorted=names)


__all__ = ["decide_order", "has_unordered", "slots_needing_order"]
