"""Which coordinates a loop must visit: iteration regions from operator algebra.

At each loop index, every operand whose next level stores that index is a participant.
Participants whose level is not full are *atoms*: they have coordinates where they read as
their fill value. The pointwise tree decides, from the registry's annihilators and
identities, the region where the value may differ from what the skipped coordinates would
produce (an intersection below an annihilating operator, a union otherwise). The region is
then lowered as a single position loop, a multi-way merge, or a full coordinate loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from lazysparse.kernels.compile.planning.analysis import (
    KernelInfo,
    PAccess,
    PApply,
    PConst,
    PField,
    PNode,
    apply_to_values,
    same_in,
    same_value,
)
from lazysparse.kernels.compile.planning.regions import (
    ALL,
    DATA,
    FILL_EXPR,
    HELD_FILL_EXPR,
    NONE,
    Atom,
    Known,
    Missing,
    Region,
    held_as,
    intersect,
    union,
)


def atoms(region: Region) -> tuple[int, ...]:
    """Operand slots a region mentions, in first-seen order."""
    return region.atoms()


def is_conjunction(region: Region) -> bool:
    """True for one atom or an intersection of atoms (every atom must be present)."""
    return region.conjunction


def region_of(node: PNode, fld: str, info: KernelInfo, fills: tuple[Any, ...],
              sparse: set[int], full: set[int],
              consts: tuple[Any, ...] | None = None) -> tuple[Region, Missing]:
    """Region of ``node`` along ``fld`` and its value outside that region (constants'
    values are known only at run time: pass ``consts`` to evaluate them)."""
    match node:
        case PAccess(slot=s, dtype=d):
            if s in sparse:
                return Atom(s), Known(np.asarray(fills[s]).astype(d)[()])
            if s in full:
                return ALL, DATA
            return NONE, DATA
        case PConst(slot=k, dtype=d):
            if consts is not None:
                return NONE, Known(np.asarray(consts[k])[()])
            return NONE, FILL_EXPR
        case PField(name=name):
            return (ALL, DATA) if name == fld else (NONE, DATA)
        case PApply(op=op, args=args, operand_dtypes=opds, dtype=rd):
            subs = [region_of(a, fld, info, fills, sparse, full, consts) for a in args]
            ann_regions, zval = [], None
            for i, ((reg, miss), od) in enumerate(zip(subs, opds, strict=True)):
                if reg in (ALL, NONE) or miss.data or miss.held:
                    continue  # held data never annihilates
                z = _annihilator(op, i, od)
                if miss is FILL_EXPR:  # needs the constants: decided by analysis
                    if i in node.annihilates:
                        ann_regions.append(reg)
                        zval = z
                    continue
                if z is not None and same_value(np.asarray(miss.value).astype(od)[()], z):
                    ann_regions.append(reg)
                    zval = z
            absent = _value_of_fills(op, subs, opds)  # where no argument holds data
            if ann_regions and zval is not None and (
                    (absent is not None and not same_value(absent, np.asarray(zval)[()]))
                    or not _annihilates_below(node, info, fills, consts, zval)):
                ann_regions = []  # 0 * NaN: op(fills) there is not the annihilator
            if ann_regions:
                if zval is None:
                    return intersect(ann_regions), DATA
                # op(z, x) == z: the annihilator is the value outside the intersection
                return intersect(ann_regions), Known(np.asarray(zval).astype(rd)[()])
            selected = _selected_region(node, subs) or _uniform_region(node, subs)
            if selected is not None:
                return selected
            region = union([r for r, _ in subs])
            if any(m.data for _, m in subs):
                return region, DATA
            held = any(m.held for _, m in subs)
            if absent is not None:
                return region, held_as(Known(absent), held)
            return region, held_as(FILL_EXPR, held)
    raise TypeError(f"unknown pointwise node {node!r}")


def _value_of_fills(op: Any, subs: list[tuple[Region, Missing]],
                    opds: tuple[Any, ...]) -> Any:
    """``op`` of every argument's known outside value: the value where no argument holds
    data (an implicit annihilating argument forces its annihilator only where another one
    does: the lowering's ``_annihilated``); None where some value is not known now."""
    if not all(m.known for _, m in subs):
        return None
    return np.asarray(apply_to_values(op, [m.value for _, m in subs], opds))[()]


class _Deep(StrEnum):
    """What :func:`_deep_fill` finds instead of a value."""

    DATA = "holds data everywhere"  # a dense operand, a field
    UNKNOWN = "needs the call's constants"


def _annihilates_below(node: PApply, info: KernelInfo, fills: tuple[Any, ...],
                       consts: tuple[Any, ...] | None, z: Any) -> bool:
    """Whether ``node`` is its annihilator ``z`` wherever an annihilating argument stores
    nothing, at every deeper level too: another argument is dense there (it holds data,
    the fill rule annihilates), or the value where no operand stores anything is ``z``.
    ``S0 * Sinf`` (fills 0 and inf) is ``0 * inf = NaN`` where neither stores, even where
    ``Sinf``'s rows are all present at this loop; a value needing the constants was decided
    by analysis (``PApply.absent_annihilated``: ``S0 * (Snan * 0.5)`` is NaN there)."""
    vals = [_deep_fill(a, info, fills, consts) for a in node.args]
    if any(v is _Deep.DATA for v in vals):
        return True
    if any(isinstance(v, _Deep) for v in vals):
        return node.absent_annihilated
    return same_in(apply_to_values(node.op, vals, node.operand_dtypes), z, node.dtype)


def _deep_fill(node: PNode, info: KernelInfo, fills: tuple[Any, ...],
               consts: tuple[Any, ...] | None) -> Any:
    """The value of ``node`` where no operand stores an entry at any level (the lowering's
    fill rule: an annihilated op is its annihilator where another argument holds data, a
    decided selection its selected argument), or a :class:`_Deep` marker."""
    match node:
        case PAccess(slot=s, dtype=d):
            if all(lv.located for lv in info.operands[s].levels):
                return _Deep.DATA
            return np.asarray(fills[s]).astype(d)[()]
        case PConst(slot=k):
            return _Deep.UNKNOWN if consts is None else np.asarray(consts[k])[()]
        case PField():
            return _Deep.DATA
    assert isinstance(node, PApply)
    vals = [_deep_fill(a, info, fills, consts) for a in node.args]
    if node.selects:
        return vals[node.selects[0][1]]
    if node.annihilates and any(v is _Deep.DATA for v in vals):
        i = node.annihilates[0]
        return node.op.annihilator_at(i, node.operand_dtypes[i])
    if any(isinstance(v, _Deep) for v in vals):
        return _Deep.DATA if _Deep.DATA in vals else _Deep.UNKNOWN
    return apply_to_values(node.op, vals, node.operand_dtypes)


def _selected_region(node: PApply, subs: list[tuple[Region, Missing]]
                     ) -> tuple[Region, Missing] | None:
    """The region when an argument is a *mask driver*: outside its region it holds a value
    that selects another argument (``where(c, x, k)`` with ``c`` absent is ``k``), so the
    expression differs from that argument's outside value only on the union of the two
    regions; every other argument (``x``, even dense) is irrelevant there. An outside value
    that needs the constants (``c = A != 0``) was decided by ``analysis`` (``selects``)."""
    opds, rd = node.operand_dtypes, node.dtype
    decided = dict(node.selects)
    for i, ((reg, miss), od) in enumerate(zip(subs, opds, strict=True)):
        if reg in (ALL, NONE) or miss.data:
            continue
        if isinstance(miss, Known):
            j = node.op.selected_by(i, np.asarray(miss.value).astype(od)[()])
        else:
            j = decided.get(i)
        if j is None:
            continue
        reg_j, miss_j = subs[j]
        region = union([reg, reg_j])
        if region == ALL:
            return None
        held = miss.held  # the condition ``i`` holds data outside its region
        if isinstance(miss_j, Known):
            v = np.asarray(miss_j.value).astype(opds[j]).astype(rd)[()]
            return region, held_as(Known(v), held or miss_j.held)
        return region, held_as(miss_j, held)
    return None


def _condition_holds_data(subs: list[tuple[Region, Missing]], results: Any) -> bool:
    """Whether an argument of a selection other than ``results`` (its condition) holds data
    outside its region (dense, or itself held): the selection then holds data wherever the
    condition does (the lowering's holds-data rule), so its value there is no implicit fill."""
    return any(reg == ALL or miss.data or miss.held
               for k, (reg, miss) in enumerate(subs) if k not in results)


def _uniform_region(node: PApply, subs: list[tuple[Region, Missing]]
                    ) -> tuple[Region, Missing] | None:
    """The region of a selection whose possible results all take one value outside their
    regions (``PApply.uniform``, decided by analysis with the constants): whatever the
    condition, the op differs from that value only on the union of those regions
    (``where(c, A * B, 0)`` skips where ``A`` is absent even when ``c`` is not iterated)."""
    if not node.uniform:
        return None
    results = sorted({s.result for s in node.op.selections})
    misses = [subs[r][1] for r in results]
    if any(m.data for m in misses):
        return None
    region = union([subs[r][0] for r in results])
    held = any(m.held for m in misses) or _condition_holds_data(subs, results)
    known = [m for m in misses if isinstance(m, Known)]
    if not known:
        return region, held_as(FILL_EXPR, held)
    r0 = results[misses.index(known[0])]
    v = np.asarray(known[0].value).astype(node.operand_dtypes[r0]).astype(node.dtype)[()]
    return region, held_as(Known(v), held)


def _annihilator(op: Any, position: int, dtype: np.dtype) -> Any:
    """The operator's annihilator for argument ``position`` at ``dtype`` (implicit fills
    annihilate, as in scipy)."""
    return op.annihilator_at(position, dtype)


class LoopKind(StrEnum):
    """How a loop visits its coordinates (its value is the name the loop IR's comments use)."""

    RANGE = "range"  # every coordinate 0..n-1 (sparse operands follow)
    DRIVER = "driver"  # the positions of one operand's level
    MERGE = "merge"  # a multi-way merge of several drivers under the region formula

    @property
    def skips(self) -> bool:
        """Whether the loop visits only its region (positions of its drivers)."""
        return self is not LoopKind.RANGE


@dataclass(frozen=True)
class LevelPlan:
    """How loop ``depth`` over ``field`` runs: its region, drivers and followers.

    ``kind``: see :class:`LoopKind`. ``located`` operands are addressed by coordinate;
    ``followers`` are iterated operands that seek to each coordinate; ``probed`` operands
    (sparse levels that can locate: hashed, bytemap) are looked up at each coordinate the
    drivers visit instead of being merged or followed (no order needed); a probed operand
    in ``required`` skips the coordinate when absent (an intersection).
    """

    depth: int
    field: str
    kind: LoopKind
    region: Region
    drivers: tuple[int, ...]
    followers: tuple[int, ...]
    located: tuple[int, ...]
    required: tuple[int, ...]
    probed: tuple[int, ...] = ()


def _can_probe(info: KernelInfo, slot: int, fld: str) -> bool:
    """Whether operand ``slot``'s level storing ``fld`` locates without being full."""
    op = info.operands[slot]
    k = op.level_of(fld)
    return k is not None and op.levels[k].caps.locate and not op.levels[k].located


def _participants(info: KernelInfo, depth: int) -> tuple[set[int], set[int]]:
    """Operands iterated (sparse) and located (full) at loop ``depth``."""
    fld = info.loop_order[depth]
    sparse: set[int] = set()
    full: set[int] = set()
    for op in info.operands:
        k = op.level_of(fld)
        if k is None:
            continue
        lv = op.levels[k]
        if lv.located:
            full.add(op.slot)
        elif lv.caps.iterate == "position":
            # an unordered level may drive alone; compile.planning.ordering sorts it where it merges
            sparse.add(op.slot)
        else:
            raise ValueError(f"operand {op.alias} level {k} can neither locate nor iterate "
                             "positions")
    return sparse, full


def level_region(info: KernelInfo, depth: int, fills: tuple[Any, ...],
                 consts: tuple[Any, ...] | None = None) -> tuple[Region, Missing]:
    """The region of loop ``depth`` and the pointwise value outside it."""
    sparse, full = _participants(info, depth)
    return region_of(info.expr, info.loop_order[depth], info, fills, sparse, full, consts)


def fold_levels(info: KernelInfo, fills: tuple[Any, ...],
                out_fill: Any) -> tuple[int, ...] | None:
    """Loops a reduction may skip by folding the skipped entries' value in afterwards.

    When the value outside a loop's region is a constant that is not the reduction's
    identity (``max`` over fill 0, ``sum`` over fill NaN, ``count_nonzero``), the kernel can
    still iterate only the region if it counts the visited points per output entry and
    folds ``op-repeat(value, extent - count)`` in at the end: for idempotent operators the
    value once, else the registry's ``repeat`` form. Needs a commutative, associative
    operator and a dense result. Returns the loops that skip (every loop whose outside value
    is such a constant), or None when folding does not apply or is not needed.
    """
    rop = info.reduce_op
    if rop is None or not (rop.commutative and rop.associative and rop.nargs == 2):
        return None
    if not (rop.idempotent or rop.repeat is not None):
        return None
    if not all(p.full for p in info.out_spec.level_properties()):
        return None
    ident = rop.identity_for(info.acc_dtype)
    levels: list[int] = []
    known: list[Any] = []
    needed = False
    for d in range(len(info.loop_order)):
        region, miss = level_region(info, d, fills)
        if region in (ALL, NONE) or miss.data:
            continue
        levels.append(d)
        if isinstance(miss, Known):
            known.append(miss.value)
            if ident is None or not same_value(
                    np.asarray(miss.value).astype(info.acc_dtype)[()], ident):
                needed = True
        else:
            needed = True
    if not needed or any(not same_value(k, known[0]) for k in known[1:]):
        return None
    return tuple(levels)


def fold_value(info: KernelInfo, levels: tuple[int, ...], fills: tuple[Any, ...],
               consts: tuple[Any, ...]) -> tuple[bool, Any]:
    """At run time: the value outside the region of the folded loops, and whether it is
    the same at every one of them (else the kernel without folding must run)."""
    vals = [level_region(info, d, fills, consts)[1] for d in levels]
    if not all(isinstance(m, Known) for m in vals):
        return False, None
    v0 = vals[0].value  # type: ignore[attr-defined]
    rop = info.reduce_op
    assert rop is not None
    if not rop.idempotent and info.acc_dtype.kind in "fc":
        # float prod over fill 0: the stored entries alone may overflow to inf and
        # inf * 0 is NaN, where visiting in order meets a 0 first; keep the dense loop
        z = rop.annihilator_for(info.acc_dtype)
        if z is not None and same_value(np.asarray(v0).astype(info.acc_dtype)[()], z):
            return False, v0
    return all(same_value(m.value, v0) for m in vals[1:]), v0  # type: ignore[attr-defined]


def plan_level(info: KernelInfo, depth: int, fills: tuple[Any, ...],
               out_fill: Any, fold: tuple[int, ...] | None = None) -> LevelPlan:
    """Choose the iteration of loop ``depth`` from level properties and operator algebra.

    With ``fold`` (see :func:`fold_levels`) exactly the loops it names skip coordinates
    outside their region."""
    fld = info.loop_order[depth]
    sparse, full = _participants(info, depth)
    region, miss = region_of(info.expr, fld, info, fills, sparse, full)
    if fold is not None:
        if depth not in fold:
            region = ALL
    elif region not in (ALL, NONE) and not _may_skip(info, miss, out_fill):
        region = ALL
    if region == NONE:
        region = ALL
    located = tuple(sorted(full))
    if region == ALL:
        probed = tuple(s for s in sorted(sparse) if _can_probe(info, s, fld))
        return LevelPlan(depth, fld, LoopKind.RANGE, region, (),
                         tuple(s for s in sorted(sparse) if s not in probed), located, (),
                         probed)
    drivers = atoms(region)
    followers = tuple(s for s in sorted(sparse) if s not in drivers)
    required = drivers if is_conjunction(region) else ()
    probed: tuple[int, ...] = ()
    if required and len(drivers) > 1:
        # an intersection: one operand drives, those that can locate are looked up
        walk = [s for s in drivers if not _can_probe(info, s, fld)]
        if len(walk) <= 1:
            lead = walk[0] if walk else drivers[0]
            probed = tuple(s for s in drivers if s != lead)
            drivers = (lead,)
    probe_follow = tuple(s for s in followers if _can_probe(info, s, fld))
    probed += probe_follow
    followers = tuple(s for s in followers if s not in probe_follow)
    kind = LoopKind.DRIVER if len(drivers) == 1 else LoopKind.MERGE
    return LevelPlan(depth, fld, kind, region, drivers, followers, located, required, probed)


def _may_skip(info: KernelInfo, miss: Missing, out_fill: Any) -> bool:
    """Whether coordinates outside the region contribute nothing observable."""
    if info.reduce_op is not None:
        if miss is FILL_EXPR or miss is HELD_FILL_EXPR:  # the constants decide: analysis
            return info.fill_identity
        if not isinstance(miss, Known):
            return False
        v = np.asarray(miss.value).astype(info.acc_dtype)[()]
        ident = info.reduce_op.identity_for(info.acc_dtype)
        if ident is not None and same_value(v, ident):
            return True
        return _keeps_init(info, v, out_fill)
    if miss is FILL_EXPR:  # an implicit value of the constants: the result's fill
        return True
    if miss is HELD_FILL_EXPR:  # held data (``where(D > 0, S, 0) * c``): the result is
        return False  # dense, its fill nominal, so every entry is computed
    if isinstance(miss, Known):
        return same_value(np.asarray(miss.value).astype(info.out_dtype)[()], out_fill)
    return False


def _keeps_init(info: KernelInfo, v: Any, init: Any) -> bool:
    """Whether ``v`` at a skipped coordinate leaves its result entry at ``init`` (the
    result fill without an epilogue) when every reduced field has extent 1: the entry then
    receives exactly ``op(init, v)`` (``x[:, None] * y[None, :]`` on sparse matrices
    reduces the dropped size-1 axes with ``overwrite``, and stays an intersection)."""
    if not info.unit_reduced or info.epilogue is not None:
        return False
    rop = info.reduce_op
    assert rop is not None
    with np.errstate(all="ignore"):
        got = np.asarray(rop.apply(init, v)).astype(info.acc_dtype)[()]
    return same_value(got, np.asarray(init).astype(info.acc_dtype)[()])
