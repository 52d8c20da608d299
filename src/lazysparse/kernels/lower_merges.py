"""Merge loops of lowering (several drivers at one loop), as a mixin of ``Lowerer``: the
three-way branch for two unique drivers at the innermost loop, and one guarded loop for
three or more drivers or any merge above the innermost loop (code linear in depth)."""

from __future__ import annotations

from typing import Any

from lazysparse.kernels.coiterate import LevelPlan
from lazysparse.kernels.coiterate import is_conjunction as is_conj
from lazysparse.kernels.ir_build import C, OpState, State, V, add, fold, land
from lazysparse.kernels.loop_ir import Assign, Bin, Const, Expr, If, Stmt, Var, While


class MergeLowering:
    """Methods of :class:`lazysparse.kernels.lower.Lowerer` that emit merge loops."""

    info: Any
    cvar: dict[str, str]
    crd: Any
    child: Any
    seg_end: Any

    def two_way_merge(self, lp: LevelPlan, st: State, sub: tuple[int, ...],
                      ranges: dict[int, tuple[Expr, Expr]], c: Var, body_for: Any) -> Stmt:
        """Two unique drivers both in range: a three-way branch on their coordinates (equal,
        first less, second less), each with its own copy of the body in which presence is a
        constant. Measured 1.5x faster than min-then-compare on a sparse add (fewer
        data-dependent selects in the hot loop)."""
        a, b = sub

        def qv(s: int) -> Var:
            return V(f"q{s}_{st.ops[s].level}")

        ja, jb = V(f"j{a}_{st.ops[a].level}"), V(f"j{b}_{st.ops[b].level}")
        conj = is_conj(lp.region)

        def case(live: set[int], crd: Var) -> tuple[Stmt, ...]:
            stmts: list[Stmt] = [Assign(c.name, crd)]
            cond = fold(lp.region, lambda x: C(x in live))
            if not (isinstance(cond, Const) and cond.value is False):
                cstate: dict[int, OpState] = {}
                for s in sub:
                    if s in live:
                        cstate[s] = self.child(s, st, qv(s), st.ops[s].present)
                    else:
                        cstate[s] = OpState(st.ops[s].level + 1, C(0), None, C(False))
                body = body_for(cstate)
                stmts += body if isinstance(cond, Const) else [If(cond, tuple(body))]
            for s in live:
                stmts.append(Assign(qv(s).name, add(qv(s), C(1))))
            return tuple(stmts)

        inner: list[Stmt] = [Assign(ja.name, self.crd(a, st.ops[a].level, qv(a))),
                             Assign(jb.name, self.crd(b, st.ops[b].level, qv(b)))]
        only_a, only_b = case({a}, ja), case({b}, jb)
        if conj:  # an intersection: unmatched coordinates only advance their cursor
            only_a, only_b = (Assign(qv(a).name, add(qv(a), C(1))),), \
                (Assign(qv(b).name, add(qv(b), C(1))),)
        inner.append(If(Bin("==", ja, jb), case({a, b}, ja),
                        (If(Bin("<", ja, jb), only_a, only_b),)))
        alive = Bin("and", Bin("<", qv(a), ranges[a][1]), Bin("<", qv(b), ranges[b][1]))
        return While(alive, tuple(inner))

    def generic_merge(self, lp: LevelPlan, st: State, ranges: dict[int, tuple[Expr, Expr]],
                      c: Var, body_for: Any) -> Stmt:
        """One merge loop over three or more drivers (bounded code size): the coordinate is
        the least among drivers still in range; the region formula guards the body."""
        drivers = lp.drivers

        def qv(s: int) -> Var:
            return V(f"q{s}_{st.ops[s].level}")

        def inrange(s: int) -> Expr:
            return Bin("<", qv(s), ranges[s][1])

        def has(s: int) -> Var:
            return V(f"has{s}_{st.ops[s].level}")

        inner: list[Stmt] = [Assign(c.name, V(f"n_{self.cvar[lp.field]}"))]
        for s in drivers:
            inner.append(If(inrange(s), (Assign(c.name, Bin("min", c, self.crd(
                s, st.ops[s].level, qv(s)))),)))
        cstate: dict[int, OpState] = {}
        for s in drivers:
            k = st.ops[s].level
            inner.append(Assign(has(s).name, Bin("and", inrange(s), Bin(
                "==", self.crd(s, k, qv(s)), c))))
            if not self.info.operands[s].levels[k].props.unique:
                inner.append(If(has(s), tuple(self.seg_end(s, k, qv(s), ranges[s][1], c))))
            pres = st.ops[s].present if s in lp.required else land(st.ops[s].present, has(s))
            cstate[s] = self.child(s, st, qv(s), pres)
        inner.append(If(fold(lp.region, has), tuple(body_for(cstate))))
        for s in drivers:
            k = st.ops[s].level
            nxt = (add(qv(s), C(1)) if self.info.operands[s].levels[k].props.unique
                   else V(f"e{s}_{k}"))
            inner.append(If(has(s), (Assign(qv(s).name, nxt),)))
        return While(fold(lp.region, inrange), tuple(inner))
