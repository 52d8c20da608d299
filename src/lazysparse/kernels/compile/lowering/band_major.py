"""Diagonal-major lowering of a row reduction over a banded (DIA) operand (issue 16).

Row by row, a DIA row of a few diagonals is a short loop whose sum is a chain of dependent
adds; scipy's DIA kernel instead walks one diagonal at a time, a unit-stride stream of
values and of the other operands. :func:`band_major_nest` emits that order for the plan's
``storage_major`` loops (``plan.storage_major_depth``), over tiles of :data:`BAND_TILE` rows so
that a tile's results and operand rows stay in cache across its diagonals: the tile's
results are set to the reduction's start, then for each diagonal ``q`` with offset ``o``
and each row ``i`` of the tile it meets, ``out[i] = out[i] ⊕ f(..., A[i, i + o], ...)``.
Offsets ascend, so each row still sums its columns in ascending order: the same result as
the row-major kernel. The same walk serves a reduction over the rows scattered into the
columns (``A.T @ x``, a commutative and associative operator): the host presets the result,
and each diagonal adds ``f(A[i, i + o], x[i])`` into ``out[i + o]``.
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
from lazysparse.kernels.compile.lowering.outputs import OutputLowering
from lazysparse.kernels.compile.lowering.storage_major import storage_nest

BAND_TILE = 8192  # rows per tile: a tile's results and operand windows (64 KiB each) in L2


def band_major_nest(ctx: LowerContext, output: OutputLowering, d: int, st: State,
                    bounds: tuple[Expr, Expr] | None) -> list[Stmt]:
    """Loops ``d`` (rows) and ``d + 1`` (the band's columns) in diagonal-major order."""
    nest = storage_nest(ctx, output, d, st, bounds)
    s, i, j = nest.s, nest.i, nest.j
    tb, te, tt = f"tb{s}", f"te{s}", f"tt{s}"
    scatter = nest.rows.field in ctx.info.reduced  # A.T @ x: out[j] ⊕= ..., preset by the host
    q, o = f"q{s}_1", f"o{s}_1"
    off, lim, length = ctx.arr(s, "off", 1), ctx.arr(s, "lim", 1), ctx.arr(s, "len", 1)
    first = Bin(BinOp.MAX, V(tb), Bin(BinOp.SUB, C(0), V(o)))
    last = Bin(BinOp.MIN, V(te), Bin(BinOp.SUB, V(lim), V(o)))
    at_row, at_col, point = nest.locate(
        ctx, st, Bin(BinOp.ADD, Bin(BinOp.MUL, V(q), V(length)), V(j)))
    body: list[Stmt] = [*at_row, Assign(j, Bin(BinOp.ADD, V(i), V(o))), *at_col]
    if scatter:
        point.od = output.out_pos(nest.cols.field, V(j), st.od)
    val = ctx.value(ctx.info.expr, point)
    at = output.index(point)  # type: ignore[attr-defined]  # DenseOutput: partials' base
    body.append(Store("out", at, ctx.reduce(Load("out", at), val)))
    diagonals = For(q, C(0), V(ctx.arr(s, "nd", 1)), (
        Assign(o, Cast(I64, Load(off, V(q)))),
        For(i, first, last, tuple(body))))
    lo, hi = nest.lo, nest.hi
    ntiles = Bin(BinOp.FLOORDIV, Bin(BinOp.ADD, Bin(BinOp.SUB, hi, lo), C(BAND_TILE - 1)),
                 C(BAND_TILE))
    tile = (Assign(tb, Bin(BinOp.ADD, lo, Bin(BinOp.MUL, V(tt), C(BAND_TILE)))),
            Assign(te, Bin(BinOp.MIN, hi, Bin(BinOp.ADD, V(tb), C(BAND_TILE)))),
            *(() if scatter else (For(i, V(tb), V(te), (Store("out", nest.od, nest.start),)),)),
            diagonals)
    return [nest.comment(ctx, "diagonal-major", f", {BAND_TILE}-row tiles"),
            For(tt, C(0), ntiles, tile)]
