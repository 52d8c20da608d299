"""How a kernel writes its output: by level capabilities, with workspaces where writes scatter.

Rules (Zhang et al., "Compilation of Modular and General Sparse Workspaces", §6.2, adapted
to row-major loop orders): an all-dense output is *inserted* (random access). A sparse output
is *appended* in storage order when the loop order visits its fields in that order with no
reduced loop above an output loop. Otherwise the writes scatter from the first loop where a
reduced field precedes an output field, or where the loop order departs from the output's
level order; the output fields from there on are the workspace's order: 1 gives a dense row
workspace with a touched list (Gustavson), 2 or more an insert-sort-merge buffer, as does
1 whose extent would make the dense workspace pass the densify limit (hypersparse results).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from lazysparse.formats.levels.registry import is_run_valued
from lazysparse.formats.specs import STRUCTURED_KINDS, is_structured
from lazysparse.kernels.compile.planning.analysis import KernelInfo, PField, walk_pointwise
from lazysparse.kernels.compile.planning.coiterate import LevelPlan, LoopKind


class OutputMode(StrEnum):
    """How a kernel writes its result (the value is the name the loop IR's notes use)."""

    DENSE = "dense"  # insert into a dense array
    SHARED = "shared"  # one value per stored entry of an operand whose pattern it reuses
    APPEND = "append"  # sparse, in storage order: count then fill
    ROWWS = "rowws"  # sparse through a dense row workspace with a touched list
    HASHWS = "hashws"  # sparse through a hash workspace (large, sparsely touched rows)
    ISM = "ism"  # sparse through an insert-sort-merge buffer

    @property
    def sparse(self) -> bool:
        """Whether the result gets new index arrays (a count phase, then a fill phase)."""
        return self in (OutputMode.APPEND, OutputMode.ROWWS, OutputMode.HASHWS, OutputMode.ISM)

    @property
    def workspace(self) -> bool:
        """Whether writes scatter into a workspace that drains in storage order."""
        return self in (OutputMode.ROWWS, OutputMode.HASHWS, OutputMode.ISM)


@dataclass(frozen=True)
class OutputPlan:
    """The output strategy of one kernel.

    mode: see :class:`OutputMode` (``shared``: operand ``shared_slot``'s index arrays are
    the result's; ``rowws`` / ``ism``: the workspace starts at loop ``ws_depth``).
    acc_depth: loops at depth >= acc_depth are all reduced and accumulate into a scalar;
    None when some reduced loop encloses an output loop (accumulate in place / workspace).
    """

    mode: OutputMode
    acc_depth: int | None
    ws_depth: int | None
    ws_fields: tuple[str, ...]
    shared_slot: int | None
    groups: tuple[tuple[int, ...], ...]  # sparse output levels grouped (compressed + singletons)
    dense_prefix: int  # number of leading dense output levels


def _acc_depth(info: KernelInfo) -> int | None:
    """First depth from which every loop is reduced (None if a reduced loop is above an
    output loop)."""
    if info.reduce_op is None:
        return None
    last_out = max((info.loop_order.index(f) for f in info.out_fields), default=-1)
    first_red = min(info.loop_order.index(f) for f in info.reduced)
    return last_out + 1 if first_red > last_out else None


def _groups(info: KernelInfo) -> tuple[int, tuple[tuple[int, ...], ...]]:
    kinds = info.out_spec.level_kinds
    props = info.out_spec.level_properties()
    caps = info.out_spec.level_capabilities()
    m = 0
    while m < len(kinds) and props[m].full and caps[m].insert:
        m += 1
    dense_prefix = m
    groups: list[tuple[int, ...]] = []
    while m < len(kinds):
        if props[m].full or not caps[m].append or props[m].branchless:
            raise ValueError(
                f"output format {info.out_spec}: level {m} ({kinds[m]}) cannot be written "
                "after a sparse level; supported outputs are dense levels followed by "
                "appendable compressed levels, each optionally followed by singletons")
        g = [m]
        m += 1
        while m < len(kinds) and props[m].branchless:
            g.append(m)
            m += 1
        groups.append(tuple(g))
    return dense_prefix, tuple(groups)


def plan_output(info: KernelInfo, plans: tuple[LevelPlan, ...],
                hash_ws: bool = False) -> OutputPlan:
    """Decide the output strategy from the output levels' capabilities and the loop order.
    ``hash_ws``: a row workspace over an unordered last level becomes a hash workspace
    (the host's choice for this call's data, ``compile.planning.hash_workspace``)."""
    acc = _acc_depth(info)
    if is_structured(info.out_spec):  # written only as an operand's shared pattern
        shared = shared_operand(info, plans, acc)
        if shared is None:
            raise ValueError(f"output {info.out_spec}: a structured result is written only "
                             "by sharing the pattern of an operand with the same structure "
                             "(compile.planning.structured_inputs writes it csr-like otherwise)")
        prefix = len(info.out_spec.level_kinds) - 1
        return OutputPlan(OutputMode.SHARED, acc, None, (), shared, (), prefix)
    dense_prefix, groups = _groups(info)
    if not groups:
        return OutputPlan(OutputMode.DENSE, acc, None, (), None, (), dense_prefix)
    shared = shared_operand(info, plans, acc)
    if shared is not None:
        return OutputPlan(OutputMode.SHARED, acc, None, (), shared, groups, dense_prefix)
    order = info.loop_order
    storage = info.out_storage_fields
    out_in_loop = [f for f in order if f in info.out_fields]
    ws_depth: int | None = None
    # first mismatch of output fields (in loop order) against the output's level order
    for m, f in enumerate(out_in_loop):
        if storage[m] != f:
            ws_depth = order.index(f)
            break
    # first reduced loop with an output loop inside it
    for d, f in enumerate(order):
        if f in info.reduced and any(g in info.out_fields for g in order[d + 1:]):
            ws_depth = d if ws_depth is None else min(ws_depth, d)
            break
    if ws_depth is None:
        return OutputPlan(OutputMode.APPEND, acc, None, (), None, groups, dense_prefix)
    before = [f for f in order[:ws_depth] if f in info.out_fields]
    ws_fields = storage[len(before):]
    # one scattered field gets a dense row workspace unless it is too long for one
    # (``KernelInfo.wide``): then the writes sort, in memory proportional to them
    row = len(ws_fields) == 1 and ws_fields[0] not in info.wide
    mode = OutputMode.ROWWS if row else OutputMode.ISM
    if row and hash_ws and not info.out_spec.level_properties()[-1].ordered:
        mode = OutputMode.HASHWS
    if len(before) < dense_prefix and mode in (OutputMode.ROWWS, OutputMode.HASHWS):
        raise ValueError(f"output {info.out_spec}: dense output levels must be looped "
                         f"before the scattered writes at loop {order[ws_depth]!r}")
    return OutputPlan(mode, acc, ws_depth, tuple(ws_fields), None, groups, dense_prefix)


def _varies_along(info: KernelInfo, slot: int, fld: str) -> bool:
    """Whether the value may change along ``fld`` other than through operand ``slot``:
    another operand stores ``fld``, or the coordinate itself is a value."""
    if any(op.slot != slot and op.level_of(fld) is not None for op in info.operands):
        return True
    return any(isinstance(n, PField) and n.name == fld for n in walk_pointwise(info.expr))


def shared_operand(info: KernelInfo, plans: tuple[LevelPlan, ...],
                   acc: int | None) -> int | None:
    """An operand whose stored pattern is exactly the result's: the output reuses its index
    arrays (intersection with one sparse operand, everything else located, and every reduced
    loop visits its whole extent, so each entry receives a value)."""
    if info.reduce_op is not None and acc is None:
        return None
    if any(lp.kind.skips for lp in plans if lp.field in info.reduced):
        return None  # a reduced loop that skips may leave an entry at the fill: not stored
    storage = info.out_storage_fields
    out_kinds = info.out_spec.level_kinds
    for op in info.operands:
        if tuple(lv.field for lv in op.levels) != storage:
            continue
        if any(lv.kind != k for lv, k in zip(op.levels, out_kinds, strict=False)
               if k in STRUCTURED_KINDS or lv.kind in STRUCTURED_KINDS):
            continue  # a structured pattern is shared only by the same structure
        if is_run_valued(op.levels[-1].kind) and _varies_along(info, op.slot, op.levels[-1].field):
            continue  # one value per run: nothing else may vary along the run
        kinds_ok = all(
            lv.props == p and lv.caps == c for lv, p, c in zip(
                op.levels, info.out_spec.level_properties(),
                info.out_spec.level_capabilities(), strict=True))
        if not kinds_ok or len(out_kinds) != len(op.levels):
            continue
        ok = True
        for lp in plans:
            if lp.field not in storage:
                continue
            k = op.level_of(lp.field)
            lv = op.levels[k]  # type: ignore[index]
            if lv.located:
                ok = ok and lp.kind is LoopKind.RANGE and not lp.followers and not lp.probed
            else:
                ok = (ok and lp.kind is LoopKind.DRIVER and lp.drivers == (op.slot,)
                      and not lp.followers and not lp.probed)
        if ok:
            return op.slot
    return None

