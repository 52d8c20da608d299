"""The loop nest of one phase: per loop, the co-iteration its ``LevelPlan`` chose.

Located operands are addressed ``p * size + c``; iterated operands either drive the loop
(one operand: a position loop; several: the merge lattice of :mod:`compile.lowering.merges`)
or follow it with a forward-seeking cursor. Non-unique levels hand their children a
position *range* (iterator chaining), which branchless levels continue. The output
strategy (:mod:`compile.lowering.outputs`) adds its statements around loops, at each
coordinate and at the innermost point.
"""

from __future__ import annotations

from lazysparse.formats.levels.base import Walk
from lazysparse.formats.levels.registry import walk_of_kind
from lazysparse.kernels.compile.ir.build import C, OpState, State, V, land
from lazysparse.kernels.compile.ir.loop_ir import (
    Assign,
    Bin,
    BinOp,
    Comment,
    Const,
    Expr,
    For,
    If,
    Stmt,
    Var,
    While,
)
from lazysparse.kernels.compile.lowering.band_major import band_major_nest
from lazysparse.kernels.compile.lowering.block_major import block_major_nest
from lazysparse.kernels.compile.lowering.context import LowerContext
from lazysparse.kernels.compile.lowering.merges import BodyFor, Ranges, merge_loop
from lazysparse.kernels.compile.lowering.outputs import OutputLowering
from lazysparse.kernels.compile.planning.analysis import KernelInfo
from lazysparse.kernels.compile.planning.coiterate import LevelPlan, LoopKind


def describe(info: KernelInfo, lp: LevelPlan) -> str:
    """The operands a loop drives, follows and locates (for its comment), named by slot as
    the code's parameters are (``a0``), not by the plan's aliases: one loop nest prints one
    source, so it compiles once whatever its operands were called."""
    names = {o.slot: f"a{o.slot}" for o in info.operands}
    txt = []
    if lp.drivers:
        txt.append("drivers " + ",".join(names[s] for s in lp.drivers))
    if lp.followers:
        txt.append("follow " + ",".join(names[s] for s in lp.followers))
    if lp.located:
        txt.append("locate " + ",".join(names[s] for s in lp.located))
    if lp.probed:
        txt.append("probe " + ",".join(names[s] for s in lp.probed))
    return "; ".join(txt)


# the storage-order nest of each walk that has one (``KernelPlan.storage_major``)
STORAGE_MAJOR = {Walk.BAND: band_major_nest, Walk.BLOCKS: block_major_nest}


class LoopNest:
    """Builds loops ``d..K-1`` of one phase with ``output`` writing the result."""

    def __init__(self, ctx: LowerContext, output: OutputLowering) -> None:
        self.ctx = ctx
        self.output = output

    def nest(self, d: int, st: State, bounds: tuple[Expr, Expr] | None = None) -> list[Stmt]:
        """Statements for loops ``d..K-1`` (with the output hooks around them); ``bounds``
        replace loop ``d``'s own range (a chunk of the outermost loop)."""
        pre, post = self.output.hooks_around(d, st)
        inner = self.output.innermost(st) if d == self.ctx.K else self.loop(d, st, bounds)
        return [*pre, *inner, *post]

    def loop(self, d: int, st: State, bounds: tuple[Expr, Expr] | None) -> list[Stmt]:
        """Loop ``d``: its drivers' and followers' ranges, then the loop its kind needs."""
        ctx = self.ctx
        if ctx.plan.storage_major == d:  # DIA/BSR row sums, in the storage's own order
            s = ctx.plans[d + 1].drivers[0]
            nest = STORAGE_MAJOR[walk_of_kind(ctx.info.operands[s].levels[1].kind)]
            return nest(ctx, self.output, d, st, bounds)
        lp = ctx.plans[d]
        c = V(ctx.cvar[lp.field])
        out: list[Stmt] = [Comment(f"loop {lp.field}: {lp.kind} {describe(ctx.info, lp)}")]
        ranges: Ranges = {}
        for s in (*lp.drivers, *lp.followers):
            stm, lo, hi = ctx.level_range(s, st)
            out += stm
            ranges[s] = (lo, hi)
        for s in lp.followers:  # forward-seeking cursors
            out.append(Assign(f"q{s}_{st.ops[s].level}", ranges[s][0]))

        def body_for(coord_state: dict[int, OpState]) -> list[Stmt]:
            return self.body(d, st, ranges, c, coord_state)

        match lp.kind:
            case LoopKind.RANGE:
                lo, hi = bounds if bounds is not None else (C(0), ctx.extent(lp.field))
                out.append(For(c.name, lo, hi, tuple(body_for({})), parallel=False))
            case LoopKind.DRIVER:
                out += self.driver_loop(lp, st, ranges, c, bounds, body_for)
            case LoopKind.MERGE:
                out += merge_loop(ctx, lp, st, ranges, c, body_for)
        return out

    def driver_loop(self, lp: LevelPlan, st: State, ranges: Ranges, c: Var,
                    bounds: tuple[Expr, Expr] | None, body_for: BodyFor) -> list[Stmt]:
        """One driver: a loop over its positions (a run of equal coordinates at a time
        when the level is not unique)."""
        ctx = self.ctx
        s = lp.drivers[0]
        k = st.ops[s].level
        lo, hi = bounds if bounds is not None else ranges[s]
        own = ctx.walk(s, k).drive(ctx, s, k, st.ops[s], lo, hi, c.name,
                                   lambda _c, o: body_for({s: o}))
        if own is not None:  # a block's dense inner loop, a run's coordinates
            return own
        q = V(f"q{s}_{k}")
        cstate = {s: ctx.child(s, st, q, st.ops[s].present)}
        head: list[Stmt] = [Assign(c.name, ctx.crd(s, k, q))]
        if ctx.unique(s, k):
            return [For(q.name, lo, hi, tuple(head + body_for(cstate)))]
        inner = head + ctx.seg_end(s, k, q, hi, c) + body_for(cstate)
        inner.append(Assign(q.name, V(f"e{s}_{k}")))
        return [Assign(q.name, lo), While(Bin(BinOp.LT, q, hi), tuple(inner))]

    def body(self, d: int, st: State, ranges: Ranges, c: Var,
             coord_state: dict[int, OpState]) -> list[Stmt]:
        """Loop ``d``'s body at coordinate ``c``: followers seek it, located operands
        address it, then the output's hooks and the loops inside."""
        ctx = self.ctx
        lp = ctx.plans[d]
        body: list[Stmt] = []
        ops = dict(st.ops)
        ops.update(coord_state)
        for s in lp.followers:
            k = st.ops[s].level
            q, hi = V(f"q{s}_{k}"), ranges[s][1]
            seek, holds = ctx.walk(s, k).seek(ctx, s, k, q, hi, c)
            body += seek
            has = f"has{s}_{k}"
            body.append(Assign(has, holds))
            if not ctx.unique(s, k):
                body += ctx.seg_end(s, k, q, hi, c)
            ops[s] = ctx.child(s, st, q, land(st.ops[s].present, V(has)))
        for s in lp.located:
            ops[s], asg = ctx.locate(s, st, c)
            body.append(asg)
        gate: Expr | None = None
        for s in lp.probed:
            stm, ops[s], has = ctx.probe(s, st, c)
            body += stm
            if s in lp.required:
                gate = land(gate, has)
        coords = dict(st.coords)
        coords[lp.field] = c
        inner = State(ops, coords, self.output.out_pos(lp.field, c, st.od))
        if inner.od is not st.od and not isinstance(inner.od, Const):
            body.append(Assign(f"od{d}", inner.od))
            inner.od = V(f"od{d}")
        pre, post = self.output.around_coord(d, inner)
        rest = [*pre, *self.nest(d + 1, inner), *post]
        if gate is not None:  # an intersection: absent from a probed operand, nothing here
            return [*body, If(gate, tuple(rest))]
        return [*body, *rest]


__all__ = ["LoopNest", "describe"]
