"""Which structured operands a kernel reads natively, and when a structured result is
written as another layout (issue 16).

Banded, ELL and blocked levels drive, follow and merge like compressed ones
(``compile.lowering.level_walks``); a run-length level drives (a run's coordinates) and follows
(the run covering a coordinate). Kernels read them natively when

- the result is dense or shares the operand's pattern (``OutputMode.SHARED``): the
  host-side bounds of sparse appends and workspaces count compressed positions only;
- the structured level is not the root (its parent is a dense row level);
- a run-length level is not merged with another driver.

Queries the run-length executor takes (``backends.run_length``) keep their run-length
operands whatever they merge. Other structured operands are read as their canonical
csr-like layout
(``formats.layouts.canonical``), once per call. A structured result (the optimizer asks
for one when a map keeps an operand's structure, ``A * 2`` on DIA) is written by sharing
that operand's index arrays; where the kernel cannot share them it writes the csr-like
layout and the host converts (``KernelInfo.stored_spec``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from lazysparse.formats.layouts import canonical
from lazysparse.formats.levels.registry import PLAIN_KIND, is_run_valued
from lazysparse.formats.specs import STRUCTURED_KINDS, FormatSpec, infer_spec, is_structured
from lazysparse.kernels.compile.planning.analysis import KernelInfo
from lazysparse.kernels.compile.planning.coiterate import LoopKind
from lazysparse.kernels.compile.planning.decisions import QueryDecisions
from lazysparse.kernels.compile.planning.kernel_plan import KernelPlan, plan_kernel
from lazysparse.kernels.compile.planning.ordering import decide_order
from lazysparse.kernels.compile.planning.output_plan import OutputMode, shared_operand
from lazysparse.kernels.compile.planning.runners import is_relayout, run_length_eligible
from lazysparse.logic.nodes import Alias, Immediate, Query, Reformat


def _structured_slots(info: KernelInfo) -> set[int]:
    return {op.slot for op in info.operands
            if any(lv.kind in STRUCTURED_KINDS for lv in op.levels)}


def written_layout(spec: FormatSpec) -> FormatSpec:
    """The csr-like layout a structured ``spec`` is written as when not shared."""
    kinds = tuple(PLAIN_KIND if k in STRUCTURED_KINDS else k for k in spec.level_kinds)
    return FormatSpec(infer_spec(kinds, spec.mode_order).name, kinds, spec.mode_order)


def _plan(d: QueryDecisions) -> tuple[KernelPlan, int | None]:
    """The kernel plan (a structured result planned as its csr-like layout) and the operand
    whose pattern a structured result can share (None: it cannot)."""
    info = d.info
    if not is_structured(info.out_spec):
        return d.layout_plan(), None
    as_csr = replace(info, out_spec=written_layout(info.out_spec))
    plan = plan_kernel(as_csr, d.fills, d.data.out_fill)
    return plan, shared_operand(info, plan.levels, plan.output.acc_depth)


def _native(info: KernelInfo, plan: KernelPlan, shared: int | None, slot: int) -> bool:
    """Whether operand ``slot``'s structured level can be read by this kernel as it is."""
    if plan.output.mode not in (OutputMode.DENSE, OutputMode.SHARED) and shared is None:
        return False
    op = info.operands[slot]
    for k, lv in enumerate(op.levels):
        if lv.kind not in STRUCTURED_KINDS:
            continue
        if k == 0:
            return False
        for lp in plan.levels:
            if lp.field != lv.field:
                continue
            if slot in lp.probed or slot in lp.located:
                return False
            if is_run_valued(lv.kind) and lp.kind is LoopKind.MERGE and slot in lp.drivers:
                return False
    return True


def _writing(query: Query, spec: FormatSpec) -> Query:
    rhs = query.rhs
    assert isinstance(rhs, Reformat)
    return Query(query.lhs, Reformat(Immediate(spec), rhs.arg))


def read_structured(d: QueryDecisions, query: Query, env: dict[Alias, Any]) -> QueryDecisions:
    """``d`` (the query's ordered decisions, ``compile.planning.ordering.decide_order``) after
    reading the structured operands this kernel cannot walk as their canonical layout
    (recorded in ``converted``), and writing an unshareable structured result as csr-like
    (converted by the host)."""
    info = d.info
    out_structured = is_structured(info.out_spec)
    slots = _structured_slots(info)
    if (not slots and not out_structured) or is_relayout(info):  # formats.convert reads all
        return d
    if run_length_eligible(info, d.data):  # merged a run at a time (backends.run_length)
        return d
    plan, shared = _plan(d)
    need = {s for s in slots if not _native(info, plan, shared, s)}
    rewrite = out_structured and (shared is None or shared in need)
    if not need and not rewrite:
        return d if plan.info is not info else replace(d, plan=plan)
    names = tuple(sorted({info.operands[s].alias for s in need}))
    env = {a: (canonical(t) if a.name in names else t) for a, t in env.items()}
    if rewrite:
        requested = info.out_spec
        again = decide_order(_writing(query, written_layout(requested)), env)
        again = replace(again, info=replace(again.info, stored_spec=requested), plan=None)
    else:
        again = decide_order(query, env)
    return replace(again, sorted=tuple(sorted({*d.sorted, *again.sorted})), converted=names)


def decide_layouts(query: Query, env: dict[Alias, Any]) -> QueryDecisions:
    """The decisions about how a query's kernel reads its operands: sorted first where it
    needs order, structured ones read as they are or as csr-like (see the module doc)."""
    return read_structured(decide_order(query, env), query, env)


__all__ = ["decide_layouts", "read_structured", "written_layout"]
