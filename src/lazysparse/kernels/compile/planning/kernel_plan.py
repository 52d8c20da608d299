"""The kernel plan: every decision that shapes one kernel, taken before any loop IR exists.

From a :class:`KernelInfo` and the call's fill values: how each loop iterates
(:mod:`compile.planning.coiterate`), how the result is written
(:mod:`compile.planning.output_plan`), which loop runs in parallel
(:mod:`compile.planning.parallel`), which loops skip entries the host folds in, and where an
epilogue runs. Lowering (:mod:`compile.lowering.kernel`) reads the plan and decides nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from lazysparse.formats.levels.registry import level_class
from lazysparse.kernels.compile.planning.analysis import KernelInfo
from lazysparse.kernels.compile.planning.coiterate import (
    LevelPlan,
    LoopKind,
    fold_levels,
    plan_level,
)
from lazysparse.kernels.compile.planning.output_plan import OutputMode, OutputPlan, plan_output
from lazysparse.kernels.compile.planning.parallel import ParallelChoice, choose_parallel
from lazysparse.kernels.compile.planning.stored_fill import FillTest, fill_test


class EpiloguePlace(StrEnum):
    """Where a kernel maps each result entry's reduced value (the normal form's epilogue)."""

    ENTRY = "entry"  # as each entry is written (it is final there)
    FINALIZE = "finalize"  # in a pass over the dense output after partials and folding


@dataclass(frozen=True)
class KernelPlan:
    """The decisions behind one kernel: per-loop iteration, output strategy, parallel loop,
    folded loops (None: the kernel visits every entry it must) and epilogue place."""

    info: KernelInfo
    levels: tuple[LevelPlan, ...]
    output: OutputPlan
    choice: ParallelChoice
    fold: tuple[int, ...] | None
    epilogue: EpiloguePlace | None
    # the depth of a row loop whose banded (DIA) or blocked (BSR) operand is walked in its
    # storage's order, a diagonal or a block row at a time (``storage_major_depth``;
    # lowered by ``compile.lowering.band_major`` / ``compile.lowering.block_major``), else None
    storage_major: int | None = None
    # the test that keeps entries equal to the result fill from being stored
    # (``compile.planning.stored_fill``); None: every entry written is stored
    drop_fill: FillTest | None = None

    @property
    def partials(self) -> bool:
        """Whether chunks reduce into per-chunk partials."""
        return self.choice.partials

    def row_count_depth(self) -> int | None:
        """Loop depth of the last dense output level above sparse ones (its positions get
        their entry counts, from which the first sparse group's ``ptr`` is summed)."""
        o = self.output
        if not o.mode.sparse or not o.dense_prefix:
            return None
        fld = self.info.out_storage_fields[o.dense_prefix - 1]
        d = self.info.loop_order.index(fld)
        if o.ws_depth is not None and d >= o.ws_depth:
            return None
        return d


def plan_kernel(info: KernelInfo, fills: tuple[Any, ...], out_fill: Any,
                fold: bool = False, hash_ws: bool = False,
                drop_fill: bool = False) -> KernelPlan:
    """Plan the kernel of ``info`` for operands with ``fills`` and result fill ``out_fill``.

    ``fold``: let reductions skip entries whose value is a non-identity constant and count
    visits instead (see ``coiterate.fold_levels``); dropped unless the output is dense.
    ``hash_ws``: write a scattered unordered row through a hash workspace.
    ``drop_fill``: entries equal to the result fill are not stored (``stored_fill``)."""
    k = len(info.loop_order)
    folded = fold_levels(info, fills, out_fill) if fold else None
    levels = tuple(plan_level(info, d, fills, out_fill, folded) for d in range(k))
    out = plan_output(info, levels, hash_ws)
    if folded is not None and out.mode is not OutputMode.DENSE:
        folded = None
        levels = tuple(plan_level(info, d, fills, out_fill) for d in range(k))
        out = plan_output(info, levels, hash_ws)
    choice = choose_parallel(info, levels, out)
    plan = KernelPlan(info, levels, out, choice, folded,
                      epilogue_place(info, levels, out, folded, choice.partials),
                      storage_major_depth(info, levels, out, folded, choice.partials))
    return dropping_fill(plan, out_fill) if drop_fill else plan


def dropping_fill(plan: KernelPlan, out_fill: Any) -> KernelPlan:
    """``plan`` keeping computed entries equal to the result fill ``out_fill`` from being
    stored (``compile.planning.stored_fill``): the only decision ``plan_kernel``'s ``drop_fill``
    changes, so a plan made without it is reused rather than made again."""
    return replace(plan, drop_fill=fill_test(plan.info, plan.output.mode, out_fill))


def storage_major_depth(info: KernelInfo, levels: tuple[LevelPlan, ...], out: OutputPlan,
                     fold: tuple[int, ...] | None, partials: bool) -> int | None:
    """The row loop ``d`` of a reduction over a banded or blocked operand's columns, walked
    in storage order: diagonal by diagonal (scipy's DIA order, each diagonal a unit-stride
    stream) or block row by block row (each block read once, its ``R`` rows summed
    together); every row's sum still takes its columns in ascending order. Applies when the
    last two loops are that row loop (every other operand located) and the structure's
    column loop, driven by it alone, and the result is a dense array of the rows' sums
    with no epilogue; or, for a banded operand, the reduction runs over the rows and
    scatters into the columns (``A.T @ x``, see ``_band_scatter``)."""
    k = len(info.loop_order)
    if (k < 2 or out.mode is not OutputMode.DENSE or fold is not None
            or info.reduce_op is None or info.epilogue is not None):
        return None
    rows, cols = levels[-2], levels[-1]
    sums = (not partials and out.acc_depth == k - 1
            and info.reduced == (info.loop_order[-1],))
    if not sums and not _band_scatter(info, out, rows.field, cols.field):
        return None
    if (rows.kind is not LoopKind.RANGE or rows.followers or rows.probed
            or cols.kind is not LoopKind.DRIVER or cols.followers or cols.probed
            or len(cols.drivers) != 1):
        return None
    op = info.operands[cols.drivers[0]]
    if len(op.levels) != 2 or op.levels[0].field != rows.field \
            or cols.drivers[0] not in rows.located:
        return None
    cls = level_class(op.levels[1].kind)
    if not (cls.storage_row_sums if sums else cls.storage_column_scatter):
        return None
    return k - 2


def _band_scatter(info: KernelInfo, out: OutputPlan, rows: str, cols: str) -> bool:
    """Whether the last two loops scatter a reduction over the rows into the columns
    (``A.T @ x``: ``out[j] ⊕= f(A[i, j], ...)``, reduced over ``i``) with a commutative,
    associative operator: walked diagonal by diagonal, each column receives its rows in
    another order, which such an operator allows (chunks reduce into partials as usual)."""
    rop = info.reduce_op
    return (rop is not None and rop.commutative and rop.associative
            and out.acc_depth is None and info.reduced == (rows,)
            and cols in info.out_fields)


def epilogue_place(info: KernelInfo, levels: tuple[LevelPlan, ...], out: OutputPlan,
                   fold: tuple[int, ...] | None, partials: bool) -> EpiloguePlace | None:
    """Where the epilogue runs: as entries are written when each is stored exactly once
    (sparse outputs, or a scalar accumulator under full-range loops), else in ``finalize``
    after partials and folding; None without an epilogue."""
    if info.epilogue is None:
        return None
    if out.mode is not OutputMode.DENSE:
        return EpiloguePlace.ENTRY
    once = (out.acc_depth is not None and fold is None and not partials
            and not any(p.kind.skips for p in levels[:out.acc_depth]))
    return EpiloguePlace.ENTRY if once else EpiloguePlace.FINALIZE


@dataclass(frozen=True)
class EntryBound:
    """A bound on one output group's entries, known before the kernel runs: the position
    counts of the operands driving the group's loop (``levels``: (operand, level) pairs),
    summed, or for an intersection (every driver required) their least; or, for a
    ``range`` outermost loop, its extent (``extent``: the field; a DCSR result's rows),
    capped by ``levels`` when given: the drivers of the loop below, a row being written
    only when that loop visits one of their positions in it (a CSR's row sums store at
    most one entry per stored row, not one per row)."""

    levels: tuple[tuple[int, int], ...] = ()
    least: bool = False
    extent: str | None = None

    def count(self, tensors: tuple[Any, ...], extents: dict[str, int]) -> int:
        """The bound for one call's operands and loop extents."""
        sizes = [int(tensors[s].levels[lv].idx.shape[0]) for s, lv in self.levels]
        held = (min(sizes) if self.least else sum(sizes)) if sizes else None
        if self.extent is None:
            return held or 0
        n = int(extents[self.extent])
        return n if held is None else min(n, held)


def _driver_atoms(plan: KernelPlan, d: int) -> EntryBound | None:
    """The positions of loop ``d``'s drivers, when they carry every output field of the
    loops above it (each position then belongs to one entry of the enclosing groups)."""
    info, lp = plan.info, plan.levels[d]
    if not lp.kind.skips:
        return None
    outer = [f for f in info.loop_order[:d] if f in info.out_fields]
    atoms = []
    for s in lp.drivers:
        op = info.operands[s]
        if any(op.level_of(f) is None for f in outer):
            return None
        atoms.append((s, op.level_of(lp.field)))
    least = bool(lp.required) and set(lp.drivers) <= set(lp.required)
    return EntryBound(tuple(atoms), least=least)  # type: ignore[arg-type]


def append_bounds(plan: KernelPlan) -> tuple[EntryBound, ...] | None:
    """Per output group, a bound on its entries (:class:`EntryBound`); None unless every
    group's loop is driven by operands that carry all enclosing output fields, or is the
    outermost ``range`` loop (then one fill pass can run without counting first). An
    append writes only at points its loops visit, so a ``range`` loop's group is also
    bounded by the drivers of a skipping loop below it."""
    info, out = plan.info, plan.output
    if out.mode is not OutputMode.APPEND:
        return None
    bounds = []
    for grp in out.groups:
        fld = info.out_storage_fields[grp[-1]]
        d = info.loop_order.index(fld)
        if d == 0 and plan.levels[0].kind is LoopKind.RANGE:
            below = _driver_atoms(plan, 1) if len(plan.levels) > 1 else None
            bounds.append(EntryBound(extent=fld) if below is None else
                          EntryBound(below.levels, below.least, extent=fld))
            continue
        b = _driver_atoms(plan, d)
        if b is None:
            return None
        bounds.append(b)
    return tuple(bounds)


def workspace_bound(plan: KernelPlan) -> tuple[int, int, int] | None:
    """``(a, la, b)`` when a row workspace's entries are bounded by the multiplications
    of a Gustavson SpGEMM or an SpMSpV: the last two loops ``r, f`` scatter (the workspace
    starts at ``r``; every loop above it is a dense output level), ``r`` driven by operand
    ``a``'s level ``la`` alone (``a`` also stores every outer field, so each of its
    positions is visited once), ``f`` by operand ``b``'s level 1 alone, under ``b``'s level
    0 located by ``r``. The host sums ``b``'s row lengths at ``a``'s coordinates; None
    otherwise. A sort buffer spanning the whole nest (``X[:k] @ X.T`` looping over ``X``'s
    rows: ``loop_order``'s RESULT reorder) appends at most one entry per multiplication of
    the same two loops, so it gets the same bound."""
    info, o = plan.info, plan.output
    k = len(info.loop_order)
    if k < 2 or len(o.groups) != 1:
        return None
    if o.mode is OutputMode.ISM:
        if o.ws_depth != 0:
            return None
    elif (o.mode not in (OutputMode.ROWWS, OutputMode.HASHWS) or o.ws_depth != k - 2
            or o.dense_prefix != k - 2
            or info.out_storage_fields[:k - 2] != info.loop_order[:k - 2]):
        return None
    return _product_drivers(plan)


def _product_drivers(plan: KernelPlan) -> tuple[int, int, int] | None:
    """``(a, la, b)`` of ``workspace_bound``'s last two loops, else None."""
    info = plan.info
    k = len(info.loop_order)
    *outer, f1, f2 = info.loop_order
    p1, p2 = plan.levels[k - 2], plan.levels[k - 1]
    if p1.kind is not LoopKind.DRIVER or p2.kind is not LoopKind.DRIVER \
            or len(p1.drivers) != 1 or len(p2.drivers) != 1 or p1.probed or p2.probed:
        return None
    (a,), (b,) = p1.drivers, p2.drivers
    oa, ob = info.operands[a], info.operands[b]
    la = oa.level_of(f1)
    if la is None or any(oa.level_of(g) is None for g in outer) or oa.levels[la].chained:
        return None
    if (len(ob.levels) != 2 or ob.levels[0].field != f1 or not ob.levels[0].located
            or ob.levels[1].field != f2 or ob.levels[1].chained):
        return None
    return a, la, b


# a Gustavson bound (the multiplications) replaces the count pass while the buffers it
# sizes take at most this many bytes (virtual: pages past the result are never touched)
# and fit the densify limit; the count pass costs a third of the SpGEMM (issue 36: a
# co-occurrence X.T @ X with 5.8M multiplications for 2.2M entries, 0.91x -> 0.7x scipy)
WS_SINGLE_PASS_BYTES = 512 << 20


def workspace_single_pass(bound: int, entry_bytes: int, limit: int | None) -> bool:
    """Whether a row workspace's fill may run once into buffers of ``bound`` entries of
    ``entry_bytes`` each (index + value) instead of after a count pass; ``limit``: the
    densify limit in bytes (None: none)."""
    nbytes = bound * entry_bytes
    return nbytes <= WS_SINGLE_PASS_BYTES and (limit is None or nbytes <= limit)


__all__ = ["WS_SINGLE_PASS_BYTES", "EntryBound", "EpiloguePlace", "KernelPlan",
           "append_bounds", "dropping_fill", "epilogue_place", "plan_kernel",
           "workspace_bound", "workspace_single_pass"]
