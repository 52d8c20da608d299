"""Which structured operands a kernel reads natively, and when a structured result is
written as another layout (issue 16).

Banded, ELL and blocked levels drive, follow and merge like compressed ones
(``compile.level_walks``); a run-length level drives (a run's coordinates) and follows
(the run covering a coordinate). Kernels read them natively when

- the result is dense or shares the operand's pattern (``OutputMode.SHARED``): the
  host-side bounds of sparse appends and workspaces count compressed positions only;
- the structured level is not the root (its parent is a dense row level);
- a run-length level is not merged with another driver.

Queries the run-length executor takes (``backends.run_length``) keep their run-length
operands whatever they merge. Other structured operands are read as their canonical
csr-like layout
(``formats.ordering.canonical``), once per call. A structured result (the optimizer asks
for one when a map keeps an operand's structure, ``A * 2`` on DIA) is written by sharing
that operand's index arrays; where the kernel cannot share them it writes the csr-like
layout and the host converts (``KernelInfo.stored_spec``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from lazysparse.compile.analysis import KernelInfo, QueryData
from lazysparse.compile.coiterate import LoopKind
from lazysparse.compile.level_walks import walk_of
from lazysparse.compile.ordering import analyze_ordered
from lazysparse.compile.plan import KernelPlan, plan_kernel
from lazysparse.compile.runners import is_relayout, run_length_eligible
from lazysparse.compile.workspace import OutputMode, shared_operand
from lazysparse.formats.levels.registry import PLAIN_KIND
from lazysparse.formats.ordering import canonical
from lazysparse.formats.specs import STRUCTURED_KINDS, FormatSpec, infer_spec, is_structured
from lazysparse.logic.nodes import Alias, Immediate, Query, Reformat


def _structured_slots(info: KernelInfo) -> set[int]:
    return {op.slot for op in info.operands
            if any(lv.kind in STRUCTURED_KINDS for lv in op.levels)}


def written_layout(spec: FormatSpec) -> FormatSpec:
    """The csr-like layout a structured ``spec`` is written as when not shared."""
    kinds = tuple(PLAIN_KIND if k in STRUCTURED_KINDS else k for k in spec.level_kinds)
    return FormatSpec(infer_spec(kinds, spec.mode_order).name, kinds, spec.mode_order)


def _plan(info: KernelInfo, data: QueryData) -> tuple[KernelPlan, int | None]:
    """The kernel plan (a structured result planned as its csr-like layout) and the operand
    whose pattern a structured result can share (None: it cannot)."""
    fills = tuple(t.fill_value for t in data.tensors)
    if not is_structured(info.out_spec):
        return plan_kernel(info, fills, data.out_fill), None
    as_csr = replace(info, out_spec=written_layout(info.out_spec))
    plan = plan_kernel(as_csr, fills, data.out_fill)
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
            if not walk_of(lv.kind).merges and lp.kind is LoopKind.MERGE and slot in lp.drivers:
                return False
    return True


def converted_operands(info: KernelInfo, data: QueryData) -> set[int]:
    """Operand slots the kernel reads as their canonical layout (see the module doc)."""
    slots = _structured_slots(info)
    if not slots or is_relayout(info) or run_length_eligible(info, data):
        return set()
    plan, shared = _plan(info, data)
    return {s for s in slots if not _native(info, plan, shared, s)}


def _writing(query: Query, spec: FormatSpec) -> Query:
    rhs = query.rhs
    assert isinstance(rhs, Reformat)
    return Query(query.lhs, Reformat(Immediate(spec), rhs.arg))


def analyze_readable(query: Query, env: dict[Alias, Any]) -> tuple[KernelInfo, QueryData]:
    """``analyze_ordered``, after reading the structured operands this kernel cannot walk
    as their canonical layout, and writing an unshareable structured result as csr-like
    (converted by the host)."""
    info, data = analyze_ordered(query, env)
    out_structured = is_structured(info.out_spec)
    slots = _structured_slots(info)
    if (not slots and not out_structured) or is_relayout(info):  # formats.convert reads all
        return info, data
    if run_length_eligible(info, data):  # merged a run at a time (backends.run_length)
        return info, data
    plan, shared = _plan(info, data)
    need = {s for s in slots if not _native(info, plan, shared, s)}
    if need:
        names = {info.operands[s].alias for s in need}
        env = {a: (canonical(t) if a.name in names else t) for a, t in env.items()}
    if out_structured and (shared is None or shared in need):
        requested = info.out_spec
        info, data = analyze_ordered(_writing(query, written_layout(requested)), env)
        return replace(info, stored_spec=requested), data
    if need:
        return analyze_ordered(query, env)
    return info, data


def converted_aliases(query: Query, env: dict[Alias, Any]) -> tuple[str, ...]:
    """The aliases :func:`analyze_readable` reads as their canonical layout (for explain)."""
    info, data = analyze_ordered(query, env)
    return tuple(sorted({info.operands[s].alias for s in converted_operands(info, data)}))


__all__ = ["analyze_readable", "converted_aliases", "converted_operands", "written_layout"]
