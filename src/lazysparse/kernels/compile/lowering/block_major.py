"""Block-row-major lowering of a row reduction over a blocked (BSR) operand (issue 16).

Row by row, each row of a block row re-walks the block row's blocks and reads one row of
each block. :func:`block_major_nest` walks a block row once instead: its ``R`` results are
set to the reduction's start, then each block ``b`` is read whole, ``out[I*R + r] =
out[I*R + r] ⊕ f(..., A[b][r, c], x[idx[b]*C + c], ...)`` for ``r < R``, ``c < C``, with
the block shape a constant of the kernel (``LevelInfo.block``) so the block's loops unroll.
Blocks ascend within a block row, so each row still sums its columns in ascending order:
the same result as the row-major kernel. A chunk of rows ``[lo, hi)`` owns the block rows
``ceil(lo / R) .. ceil(hi / R) - 1``: consecutive chunks tile the block rows exactly.
"""

from __future__ import annotations

from lazysparse.kernels.compile.ir.build import I64, C, State, V
from lazysparse.kernels.compile.ir.loop_ir import (
    Assign,
    Bin,
    BinOp,
    Cast,
    Expr,
    For,
    Load,
    Stmt,
    Store,
)
from lazysparse.kernels.compile.lowering.context import LowerContext
from lazysparse.kernels.compile.lowering.level_walks import block_shape
from lazysparse.kernels.compile.lowering.outputs import OutputLowering
from lazysparse.kernels.compile.lowering.storage_major import storage_nest


def _ceil_div(a: Expr, b: Expr) -> Expr:
    return Bin(BinOp.FLOORDIV, Bin(BinOp.SUB, Bin(BinOp.ADD, a, b), C(1)), b)


def block_major_nest(ctx: LowerContext, output: OutputLowering, d: int, st: State,
                     bounds: tuple[Expr, Expr] | None) -> list[Stmt]:
    """Loops ``d`` (rows) and ``d + 1`` (the blocks' columns) a block row at a time."""
    nest = storage_nest(ctx, output, d, st, bounds)
    s, i, j, od = nest.s, nest.i, nest.j, nest.od
    r_sz, c_sz = block_shape(ctx, s, 1)
    big, b, r, c, cb = f"I{s}", f"b{s}_1", f"r{s}_1", f"c{s}_1", f"cb{s}_1"
    ptr, idx = ctx.arr(s, "ptr", 1), ctx.arr(s, "idx", 1)
    row = Bin(BinOp.ADD, Bin(BinOp.MUL, V(b), r_sz), V(r))
    at_row, at_col, point = nest.locate(ctx, st, Bin(BinOp.ADD, Bin(BinOp.MUL, row, c_sz), V(c)))
    row_i = Assign(i, Bin(BinOp.ADD, Bin(BinOp.MUL, V(big), r_sz), V(r)))
    point_stmts: list[Stmt] = [
        Assign(j, Bin(BinOp.ADD, V(cb), V(c))), *at_col,
        Assign("acc", ctx.reduce(V("acc"), ctx.value(ctx.info.expr, point)))]
    per_row = (row_i, *at_row, Assign("acc", Load("out", od)),
               For(c, C(0), c_sz, tuple(point_stmts)), Store("out", od, V("acc")))
    block = (Assign(cb, Bin(BinOp.MUL, Cast(I64, Load(idx, V(b))), c_sz)),
             For(r, C(0), r_sz, per_row))
    init = For(r, C(0), r_sz, (row_i, Store("out", od, nest.start)))
    blocks = For(b, Cast(I64, Load(ptr, V(big))),
                 Cast(I64, Load(ptr, Bin(BinOp.ADD, V(big), C(1)))), block)
    return [nest.comment(ctx, "block-row-major"),
            For(big, _ceil_div(nest.lo, r_sz), _ceil_div(nest.hi, r_sz), (init, blocks))]


__all__ = ["block_major_nest"]
