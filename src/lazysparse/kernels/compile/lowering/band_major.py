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

from lazysparse.kernels.compile.ir.build import I64, C, OpState, State, V
from lazysparse.kernels.compile.ir.loop_ir import (
    Assign,
    Bin,
    BinOp,
    Cast,
    Comment,
    Expr,
    For,
    Load,
    Stmt,
    Store,
)
from lazysparse.kernels.compile.lowering.context import LowerContext
from lazysparse.kernels.compile.lowering.outputs import OutputLowering

BAND_TILE = 8192  # rows per tile: a tile's results and operand windows (64 KiB each) in L2


def band_major_nest(ctx: LowerContext, output: OutputLowering, d: int, st: State,
                    bounds: tuple[Expr, Expr] | None) -> list[Stmt]:
    """Loops ``d`` (rows) and ``d + 1`` (the band's columns) in diagonal-major order."""
    rows, cols = ctx.plans[d], ctx.plans[d + 1]
    s = cols.drivers[0]
    i, j = ctx.cvar[rows.field], ctx.cvar[cols.field]
    lo, hi = bounds if bounds is not None else (C(0), ctx.extent(rows.field))
    tb, te, tt = f"tb{s}", f"te{s}", f"tt{s}"
    scatter = rows.field in ctx.info.reduced  # A.T @ x: out[j] ⊕= ..., preset by the host
    od = output.out_pos(rows.field, V(i), st.od)
    start = Cast(str(ctx.info.acc_dtype), V("init"))
    q, o = f"q{s}_1", f"o{s}_1"
    off, lim, length = ctx.arr(s, "off", 1), ctx.arr(s, "lim", 1), ctx.arr(s, "len", 1)
    first = Bin(BinOp.MAX, V(tb), Bin(BinOp.SUB, C(0), V(o)))
    last = Bin(BinOp.MIN, V(te), Bin(BinOp.SUB, V(lim), V(o)))
    body: list[Stmt] = []
    ops = dict(st.ops)
    for t in rows.located:
        ops[t], asg = ctx.locate(t, st, V(i))
        body.append(asg)
    body.append(Assign(j, Bin(BinOp.ADD, V(i), V(o))))
    inner = State(ops, {**st.coords, rows.field: V(i)}, od)
    for t in cols.located:
        ops[t], asg = ctx.locate(t, inner, V(j))
        body.append(asg)
    ops[s] = OpState(2, Bin(BinOp.ADD, Bin(BinOp.MUL, V(q), V(length)), V(j)), None, ops[s].present)
    point = State(ops, {**inner.coords, cols.field: V(j)}, od)
    if scatter:
        point.od = output.out_pos(cols.field, V(j), st.od)
    val = ctx.value(ctx.info.expr, point)
    at = output.index(point)  # type: ignore[attr-defined]  # DenseOutput: partials' base
    body.append(Store("out", at, ctx.reduce(Load("out", at), val)))
    diagonals = For(q, C(0), V(ctx.arr(s, "nd", 1)), (
        Assign(o, Cast(I64, Load(off, V(q)))),
        For(i, first, last, tuple(body))))
    ntiles = Bin(BinOp.FLOORDIV, Bin(BinOp.ADD, Bin(BinOp.SUB, hi, lo), C(BAND_TILE - 1)),
                 C(BAND_TILE))
    tile = (Assign(tb, Bin(BinOp.ADD, lo, Bin(BinOp.MUL, V(tt), C(BAND_TILE)))),
            Assign(te, Bin(BinOp.MIN, hi, Bin(BinOp.ADD, V(tb), C(BAND_TILE)))),
            *(() if scatter else (For(i, V(tb), V(te), (Store("out", od, start),)),)),
            diagonals)
    return [Comment(f"loops {rows.field}, {cols.field}: diagonal-major over "
                    f"{ctx.info.operands[s].alias}, {BAND_TILE}-row tiles"),
            For(tt, C(0), ntiles, tile)]
