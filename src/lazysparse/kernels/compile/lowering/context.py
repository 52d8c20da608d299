"""What every part of lowering reads: the kernel plan, the phase being lowered, and the
names of the loop variables and kernel arrays; plus the expressions over operands that
loops and outputs share (values, reductions, positions at a level).

One :class:`LowerContext` per phase is passed explicitly to the loop nest
(:mod:`compile.lowering.loop_nest`), the merge lattice (:mod:`compile.lowering.merges`) and the
output strategies (:mod:`compile.lowering.outputs`); none of them calls back into another.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

import numpy as np

from lazysparse.kernels.compile.ir.build import C, OpState, State, V, add, cast, land, native, sel
from lazysparse.kernels.compile.ir.loop_ir import (
    Apply,
    Assign,
    Bin,
    BinOp,
    CallExpr,
    Cast,
    Const,
    Expr,
    Intrinsic,
    Load,
    Stmt,
    Var,
    While,
)
from lazysparse.kernels.compile.lowering.level_walks import LevelWalk, walk_of
from lazysparse.kernels.compile.planning.analysis import (
    KernelInfo,
    PAccess,
    PApply,
    PConst,
    PField,
    PNode,
)
from lazysparse.kernels.compile.planning.coiterate import LevelPlan
from lazysparse.kernels.compile.planning.kernel_plan import KernelPlan
from lazysparse.kernels.compile.planning.output_plan import OutputPlan


class Phase(StrEnum):
    """A pass of a kernel over its chunks: ``count`` sizes a sparse result, ``fill`` writes
    it (in-place outputs have only a fill pass, the ``chunk`` function)."""

    COUNT = "count"
    FILL = "fill"

    def tag(self, name: str) -> str:
        """A phase-local variable name (the count and fill loops keep separate locals)."""
        return f"{name}_c" if self is Phase.COUNT else name


def _ident(name: str, d: int) -> str:
    return name if re.fullmatch(r"[A-Za-z][A-Za-z0-9]{0,8}", name) else f"f{d}"


def loop_vars(info: KernelInfo) -> dict[str, str]:
    """The coordinate variable of each loop field (``i_<field>``, or ``i_f<depth>`` for a
    field whose name is not a short identifier)."""
    return {f: f"i_{_ident(f, d)}" for d, f in enumerate(info.loop_order)}


@dataclass(frozen=True, eq=False)
class LowerContext:
    """The plan and phase one lowering pass reads (immutable: a phase gets its own)."""

    plan: KernelPlan
    phase: Phase = Phase.FILL
    cvar: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, plan: KernelPlan, phase: Phase = Phase.FILL) -> LowerContext:
        """The context of ``plan`` in ``phase``."""
        return cls(plan, phase, loop_vars(plan.info))

    def with_phase(self, phase: Phase) -> LowerContext:
        """The same plan lowered in another phase."""
        return replace(self, phase=phase)

    # ------------------------------------------------------------------ plan facts
    @property
    def info(self) -> KernelInfo:
        """The kernel's structure."""
        return self.plan.info

    @property
    def plans(self) -> tuple[LevelPlan, ...]:
        """How each loop iterates."""
        return self.plan.levels

    @property
    def out(self) -> OutputPlan:
        """How the result is written."""
        return self.plan.output

    @property
    def K(self) -> int:  # noqa: N802 - the loop count, as in the papers
        """Number of loops."""
        return len(self.plan.levels)

    @property
    def fill(self) -> bool:
        """Whether this pass writes values (the fill phase)."""
        return self.phase is Phase.FILL

    @property
    def storage(self) -> tuple[str, ...]:
        """Result fields in storage order."""
        return self.info.out_storage_fields

    # ------------------------------------------------------------------ names
    def tag(self, name: str) -> str:
        """Phase-local variable name."""
        return self.phase.tag(name)

    @staticmethod
    def arr(s: int, what: str, k: int | None = None) -> str:
        """Name of operand ``s``'s array ``what`` (of level ``k``)."""
        return f"a{s}_{what}" if k is None else f"a{s}_{what}{k}"

    def extent(self, fld: str) -> Var:
        """The extent argument of loop field ``fld``."""
        return V(f"n_{self.cvar[fld]}")

    # ------------------------------------------------------------------ values
    def value(self, node: PNode, st: State) -> Expr:
        """The pointwise tree's value at the current coordinates."""
        match node:
            case PAccess(slot=s):
                o = st.ops[s]
                if o.level != len(self.info.operands[s].levels) or o.pos is None:
                    raise ValueError("internal: access value read before its last level")
                if isinstance(o.present, Const) and o.present.value is False:
                    return V(f"a{s}_fill")
                return sel(o.present, Load(self.arr(s, "vals"), o.pos), V(f"a{s}_fill"))
            case PConst(slot=k):
                return V(f"k{k}")
            case PField(name=name):
                return st.coords[name]
            case PApply(op=op, args=args, operand_dtypes=opds, dtype=rd):
                vals = tuple(cast(d, self.value(a, st), a.dtype) for a, d in  # type: ignore
                             zip(args, opds, strict=True))
                app = Apply(op, vals, tuple(str(d) for d in opds))
                out = app if native(rd) else Cast(str(rd), app)
                return self._annihilated(node, st, out)
        raise TypeError(f"unknown pointwise node {node!r}")

    def holds_data(self, node: PNode, st: State) -> Expr | bool:
        """Whether ``node`` holds data here (True: always; False: never, a constant): a
        dense operand always, a sparse one where it stores an entry, a map where all its
        annihilating arguments do (their patterns' intersection, the fill rule) when it is
        the annihilator where no operand stores (``PApply.absent_annihilated``; else the
        annihilator it takes where only another argument stores is data: ``minimum(S-inf,
        Snan * 0)`` is -inf there and NaN where neither stores), a selection
        (``where(S > 0, D, 0)``) where its selector or the argument it then selects does,
        or else where any of its arguments does."""
        match node:
            case PAccess(slot=s):
                o = st.ops[s]
                if o.present is None or (isinstance(o.present, Const)
                                         and o.present.value is True):
                    return True
                if isinstance(o.present, Const) and o.present.value is False:
                    return False
                return o.present
            case PConst():
                return False
            case PApply(args=args):
                if self._annihilator(node) is not None and node.absent_annihilated:
                    # data where they all store
                    both: Expr | bool = True
                    for i in node.annihilates:
                        h = self.holds_data(args[i], st)
                        if h is False:
                            return False
                        if h is not True:
                            both = h if both is True else Bin(BinOp.AND, both, h)  # type: ignore
                    return both
                if node.selects:  # data where the selector does, else the selected's
                    i, j = node.selects[0]
                    return _either(self.holds_data(args[i], st), self.holds_data(args[j], st))
                out: Expr | bool = False
                for a in args:
                    h = self.holds_data(a, st)
                    if h is True:
                        return True
                    if h is not False:
                        out = h if out is False else Bin(BinOp.OR, out, h)  # type: ignore[arg-type]
                return out
        return True

    @staticmethod
    def _annihilator(node: PApply) -> Any:
        """The value an implicit annihilating argument of ``node`` forces (the fill rule),
        or None where the kernels do not apply it (no such argument, complex results).
        Infinite annihilators count: ``maximum(Sinf, x)`` is inf where ``Sinf`` stores
        nothing even where ``x`` is NaN, as in the reference interpreter."""
        if not node.annihilates:
            return None
        i = node.annihilates[0]
        z = node.op.annihilator_at(i, node.operand_dtypes[i])
        if z is None or np.dtype(node.dtype).kind == "c":
            return None
        return z

    def _annihilated(self, node: PApply, st: State, value: Expr) -> Expr:
        """``value``, or the annihilator where an annihilating argument stores nothing and
        another argument holds data (the fill rule: ``0 * inf`` is 0 and ``0 * -2`` is +0
        where ``S`` stores nothing, as co-iteration computes where it skips the entry;
        where no argument holds data the value stays ``op(fills)``, IEEE). Every
        annihilating argument guards in turn: ``(S1 / D) * S2`` is 0 where ``S1`` stores
        and ``S2`` does not."""
        if self._annihilator(node) is None:
            return value
        for i in node.annihilates:
            value = self._annihilated_by(node, i, st, value)
        return value

    def _annihilated_by(self, node: PApply, i: int, st: State, value: Expr) -> Expr:
        """``value``, or argument ``i``'s annihilator where that argument stores nothing and
        another argument holds data."""
        z = node.op.annihilator_at(i, node.operand_dtypes[i])
        if z is None:
            return value
        mine = self.holds_data(node.args[i], st)
        if mine is True:
            return value
        others: Expr | bool = False
        for j, a in enumerate(node.args):
            if j == i:
                continue
            h = self.holds_data(a, st)
            if h is True:
                others = True
                break
            if h is not False:
                others = h if others is False else Bin(BinOp.OR, others, h)  # type: ignore
        if others is False:
            return value
        zc = Const(np.asarray(z).astype(node.dtype)[()].item(), str(node.dtype))
        when_absent = zc if others is True else sel(others, zc, value)
        return sel(mine if mine is not False else Const(False), value, when_absent)

    def reduce(self, acc: Expr, val: Expr) -> Expr:
        """``acc ⊕ val`` with the kernel's reduction, in the accumulator's dtype."""
        rop = self.info.reduce_op
        assert rop is not None
        ad = self.info.acc_dtype
        ods = tuple(np.dtype(d) for d in rop.operand_dtypes(ad, self.info.expr.dtype))
        app = Apply(rop, (cast(ods[0], acc, ad), cast(ods[1], val, self.info.expr.dtype)),
                    tuple(str(d) for d in ods))
        return app if native(ad) and ods[0] == ad else Cast(str(ad), app)

    # ------------------------------------------------------------------ operand levels
    def level_range(self, s: int, st: State) -> tuple[list[Stmt], Expr, Expr]:
        """Statements and bounds of operand ``s``'s positions at its next (iterated) level."""
        o = st.ops[s]
        k = o.level
        lv = self.info.operands[s].levels[k]
        lo_n, hi_n = f"lo{s}_{k}", f"hi{s}_{k}"
        if lv.chained:
            if o.rng is not None:
                lo, hi = o.rng
            else:
                assert o.pos is not None
                lo, hi = o.pos, add(o.pos, C(1))
            hi = sel(o.present, hi, lo)
        else:
            if o.pos is None:
                raise ValueError(f"operand {self.info.operands[s].alias}: a compressed level "
                                 "below a non-unique level is not supported")
            return self.walk(s, k).bounds(self, s, k, o)
        return [Assign(lo_n, lo), Assign(hi_n, hi)], V(lo_n), V(hi_n)

    def walk(self, s: int, k: int) -> LevelWalk:
        """How operand ``s``'s level ``k`` finds a parent's children."""
        return walk_of(self.info.operands[s].levels[k].kind)

    def crd(self, s: int, k: int, q: Expr) -> Expr:
        """Operand ``s``'s coordinate at position ``q`` of level ``k``."""
        return self.walk(s, k).crd(self, s, k, q)

    def unique(self, s: int, k: int) -> bool:
        """Whether operand ``s``'s level ``k`` holds each coordinate once per parent."""
        return self.info.operands[s].levels[k].props.unique

    def seg_end(self, s: int, k: int, q: Expr, hi: Expr, c: Expr) -> list[Stmt]:
        """``e = end of the run of coordinate c starting at q`` for a non-unique level."""
        e = f"e{s}_{k}"
        return [Assign(e, add(q, C(1))),
                While(Bin(BinOp.AND, Bin(BinOp.LT, V(e), hi),
                          Bin(BinOp.EQ, self.crd(s, k, V(e)), c)),
                      (Assign(e, add(V(e), C(1))),))]

    def child(self, s: int, st: State, q: Expr, present: Expr | None) -> OpState:
        """Operand ``s``'s state after stepping to position ``q`` of its current level."""
        k = st.ops[s].level
        return self.walk(s, k).child(self, s, k, st.ops[s], q, present)

    def probe(self, s: int, st: State, c: Expr) -> tuple[list[Stmt], OpState, Expr]:
        """Operand ``s`` looked up at coordinate ``c`` of a sparse level that can locate
        (hashed: the table's probe; bytemap: its mask): statements, its state, presence."""
        o = st.ops[s]
        k = o.level
        if o.pos is None:
            raise ValueError(f"operand {self.info.operands[s].alias}: a hashed or bytemap "
                             "level below a non-unique level is not supported")
        name = f"p{s}_{k}"
        if self.info.operands[s].levels[k].props.compact:  # hashed
            q: Expr = CallExpr(Intrinsic.HASHED_LOCATE_SHIFT, (
                V(self.arr(s, "ptr", k)), V(self.arr(s, "idx", k)), V(self.arr(s, "table", k)),
                V(self.arr(s, "shift", k)), V(self.arr(s, "n", k)), o.pos, c))
            stm: list[Stmt] = [Assign(name, sel(o.present, q, C(-1)))]
            has: Expr = Bin(BinOp.GE, V(name), C(0))
        else:  # bytemap: position p * size + c, stored where the mask says so
            stm = [Assign(name, add(Bin(BinOp.MUL, o.pos, V(self.arr(s, "n", k))), c))]
            has = land(o.present, Bin(BinOp.NE, Load(self.arr(s, "mask", k), V(name)), C(0)))
        pres = f"has{s}_{k}"
        stm.append(Assign(pres, has))
        return stm, OpState(k + 1, V(name), None, V(pres)), V(pres)

    def locate(self, s: int, st: State, c: Expr) -> tuple[OpState, Stmt]:
        """Operand ``s``'s state at coordinate ``c`` of a located level, and its position."""
        o = st.ops[s]
        k = o.level
        if o.pos is None:
            raise ValueError(f"operand {self.info.operands[s].alias}: a dense level below a "
                             "non-unique level is not supported")
        name = f"p{s}_{k}"
        p = add(Bin(BinOp.MUL, o.pos, V(self.arr(s, "n", k))), c)
        return OpState(k + 1, V(name), None, o.present), Assign(name, p)


__all__ = ["LowerContext", "Phase", "loop_vars"]


def _either(a: Expr | bool, b: Expr | bool) -> Expr | bool:
    """``a or b`` of two holds-data answers (True, False or a run-time condition)."""
    if a is True or b is True:
        return True
    if a is False:
        return b
    if b is False:
        return a
    return Bin(BinOp.OR, a, b)  # type: ignore[arg-type]
