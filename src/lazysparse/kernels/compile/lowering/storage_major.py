"""What the storage-major nests share (issue 16: :mod:`band_major` for DIA,
:mod:`block_major` for BSR): loops ``d`` (rows ``i``) and ``d + 1`` (the driver's stored
columns ``j``) lowered in the driver's storage order rather than row by row. Both read the
same loop plans, bounds, output position and reduction start (:func:`storage_nest`), and
both locate the other operands at row ``i`` and at column ``j`` with the driver's value at a
position of its own (:meth:`StorageNest.locate`); only the walk between them differs."""

from __future__ import annotations

from dataclasses import dataclass

from lazysparse.kernels.compile.ir.build import C, OpState, State, V
from lazysparse.kernels.compile.ir.loop_ir import Cast, Comment, Expr, Stmt
from lazysparse.kernels.compile.lowering.context import LowerContext
from lazysparse.kernels.compile.lowering.outputs import OutputLowering
from lazysparse.kernels.compile.planning.coiterate import LevelPlan


@dataclass(frozen=True)
class StorageNest:
    """Loops ``d`` and ``d + 1`` of a storage-major nest: their plans, the driving operand
    ``s``, the row and column variables ``i``, ``j``, the rows ``[lo, hi)`` to walk, the
    output position ``od`` at row ``i`` and the reduction's start in the accumulator dtype."""

    rows: LevelPlan
    cols: LevelPlan
    s: int
    i: str
    j: str
    lo: Expr
    hi: Expr
    od: Expr
    start: Expr

    def locate(self, ctx: LowerContext, st: State, pos: Expr
               ) -> tuple[list[Stmt], list[Stmt], State]:
        """The statements locating the other operands at row ``i`` and at column ``j``,
        and the state at point ``(i, j)`` with the driver's value at position ``pos``."""
        rows, cols = self.rows, self.cols
        ops = dict(st.ops)
        at_row: list[Stmt] = []
        for t in rows.located:
            ops[t], asg = ctx.locate(t, st, V(self.i))
            at_row.append(asg)
        inner = State(ops, {**st.coords, rows.field: V(self.i)}, self.od)
        at_col: list[Stmt] = []
        for t in cols.located:
            ops[t], asg = ctx.locate(t, inner, V(self.j))
            at_col.append(asg)
        ops[self.s] = OpState(2, pos, None, ops[self.s].present)
        return at_row, at_col, State(ops, {**inner.coords, cols.field: V(self.j)}, self.od)

    def comment(self, ctx: LowerContext, order: str, note: str = "") -> Comment:
        """The nest's comment: its loops, the ``order`` it walks them in, its driver."""
        return Comment(f"loops {self.rows.field}, {self.cols.field}: {order} over "
                       f"a{self.s}{note}")


def storage_nest(ctx: LowerContext, output: OutputLowering, d: int, st: State,
                 bounds: tuple[Expr, Expr] | None) -> StorageNest:
    """The shared part of loops ``d`` and ``d + 1`` (``bounds``: a chunk's rows, else all)."""
    rows, cols = ctx.plans[d], ctx.plans[d + 1]
    i = ctx.cvar[rows.field]
    lo, hi = bounds if bounds is not None else (C(0), ctx.extent(rows.field))
    return StorageNest(rows, cols, cols.drivers[0], i, ctx.cvar[cols.field], lo, hi,
                       output.out_pos(rows.field, V(i), st.od),
                       Cast(str(ctx.info.acc_dtype), V("init")))
