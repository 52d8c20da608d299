"""How a loop walks one sparse level's positions under a parent position: one class per
way of finding a parent's children (issue 16).

Every walk gives the loop nest the same four things: the bounds of a parent's positions
(``bounds``), the coordinate at a position (``crd``), the child state at a position
(``child``), and a forward seek of a follower to a coordinate (``seek``). A walk may also
``drive`` a loop alone with a loop of its own shape (a block's dense inner loop, a run's
coordinates), else the loop nest walks ``lo..hi`` one position at a time.

- compressed: ``ptr[p] .. ptr[p+1]``, coordinate ``idx[q]``;
- bytemap: the touched list like compressed, child at ``p * size + c``;
- banded (DIA): the diagonals meeting row ``p``, coordinate ``p + offsets[q]``, child at
  ``q * length + c``;
- ELL: slots ``p * width ..`` up to the first padding slot;
- blocked (BSR): a flat walk ``t`` over the row's blocks' columns (``ptr[p // R] * C ..``),
  coordinate ``idx[t // C] * C + t % C``; driving, a loop over blocks and a dense loop over
  the block's ``C`` columns;
- runs: ``ptr[p] .. ptr[p+1]`` over runs; driving, every coordinate of each run; following,
  the run covering the coordinate (``idx[q] <= c < end[q]``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from lazysparse.formats.levels.base import Walk
from lazysparse.formats.levels.registry import walk_of_kind
from lazysparse.kernels.compile.ir.build import I64, C, OpState, V, add, sel
from lazysparse.kernels.compile.ir.loop_ir import (
    Assign,
    Bin,
    BinOp,
    Cast,
    Const,
    Expr,
    For,
    Load,
    Stmt,
    Var,
    While,
)

if TYPE_CHECKING:
    from lazysparse.kernels.compile.lowering.context import LowerContext

Body = Callable[[Expr, OpState], list[Stmt]]  # statements at coordinate c, child state


def _lt(a: Expr, b: Expr) -> Expr:
    return Bin(BinOp.LT, a, b)


class LevelWalk:
    """A compressed level: ``ptr`` bounds, ``idx`` coordinates, children at ``q``."""

    merges = True  # whether two-pointer merges may compare its coordinates

    def bounds(self, ctx: LowerContext, s: int, k: int, o: OpState
               ) -> tuple[list[Stmt], Expr, Expr]:
        """Statements binding ``lo``/``hi`` of parent ``o.pos``'s positions."""
        assert o.pos is not None
        ptr = ctx.arr(s, "ptr", k)
        lo: Expr = Cast(I64, Load(ptr, o.pos))
        hi: Expr = Cast(I64, Load(ptr, add(o.pos, C(1))))
        return self._gated(s, k, o, lo, hi)

    @staticmethod
    def _gated(s: int, k: int, o: OpState, lo: Expr, hi: Expr
               ) -> tuple[list[Stmt], Expr, Expr]:
        lo_n, hi_n = f"lo{s}_{k}", f"hi{s}_{k}"
        if isinstance(o.present, Const) and o.present.value is False:
            lo, hi = C(0), C(0)
        else:
            lo, hi = sel(o.present, lo, C(0)), sel(o.present, hi, C(0))
        return [Assign(lo_n, lo), Assign(hi_n, hi)], V(lo_n), V(hi_n)

    def crd(self, ctx: LowerContext, s: int, k: int, q: Expr) -> Expr:
        """The coordinate at position ``q``."""
        return Cast(I64, Load(ctx.arr(s, "idx", k), q))

    def child(self, ctx: LowerContext, s: int, k: int, o: OpState, q: Expr,
              present: Expr | None) -> OpState:
        """The operand's state at position ``q`` (a unique level's child sits at ``q``;
        a non-unique one hands its run of equal coordinates down as a range)."""
        if ctx.unique(s, k):
            return OpState(k + 1, q, None, present)
        return OpState(k + 1, None, (q, V(f"e{s}_{k}")), present)

    def seek(self, ctx: LowerContext, s: int, k: int, q: Expr, hi: Expr, c: Expr
             ) -> tuple[list[Stmt], Expr]:
        """A follower's cursor ``q`` moved to coordinate ``c``; whether it holds ``c``."""
        assert isinstance(q, Var)
        move = While(Bin(BinOp.AND, _lt(q, hi), _lt(self.crd(ctx, s, k, q), c)),
                     (Assign(q.name, add(q, C(1))),))
        return [move], Bin(BinOp.AND, _lt(q, hi), Bin(BinOp.EQ, self.crd(ctx, s, k, q), c))

    def drive(self, ctx: LowerContext, s: int, k: int, o: OpState, lo: Expr, hi: Expr,
              c: str, body: Body) -> list[Stmt] | None:
        """A loop of the walk's own shape driving coordinate ``c`` (None: one position at
        a time, ``for q in lo..hi``)."""
        return None


class BytemapWalk(LevelWalk):
    """A bytemap's touched list; children at ``p * size + c`` (dense positions)."""

    def child(self, ctx: LowerContext, s: int, k: int, o: OpState, q: Expr,
              present: Expr | None) -> OpState:
        assert o.pos is not None
        p = add(Bin(BinOp.MUL, o.pos, V(ctx.arr(s, "n", k))), self.crd(ctx, s, k, q))
        return OpState(k + 1, p, None, present)


def _parent(s: int, k: int) -> Expr:
    return V(f"par{s}_{k}")


class BandWalk(LevelWalk):
    """DIA: the diagonals ``lo..hi-1`` meeting row ``p`` (offsets ascend)."""

    def bounds(self, ctx: LowerContext, s: int, k: int, o: OpState
               ) -> tuple[list[Stmt], Expr, Expr]:
        assert o.pos is not None
        off = ctx.arr(s, "off", k)
        par = _parent(s, k)
        stm, lo, hi = self._gated(s, k, o, C(0), V(ctx.arr(s, "nd", k)))
        first = Bin(BinOp.ADD, par, Cast(I64, Load(off, lo)))
        last = Bin(BinOp.ADD, par, Cast(I64, Load(off, Bin(BinOp.SUB, hi, C(1)))))
        return [Assign(par.name, Cast(I64, o.pos)), *stm,  # type: ignore[attr-defined]
                While(Bin(BinOp.AND, _lt(lo, hi), _lt(first, C(0))),
                      (Assign(lo.name, add(lo, C(1))),)),  # type: ignore[attr-defined]
                While(Bin(BinOp.AND, _lt(lo, hi),
                          Bin(BinOp.GE, last, V(ctx.arr(s, "lim", k)))),
                      (Assign(hi.name, Bin(BinOp.SUB, hi, C(1))),))], lo, hi  # type: ignore[attr-defined]

    def crd(self, ctx: LowerContext, s: int, k: int, q: Expr) -> Expr:
        return Bin(BinOp.ADD, _parent(s, k), Cast(I64, Load(ctx.arr(s, "off", k), q)))

    def child(self, ctx: LowerContext, s: int, k: int, o: OpState, q: Expr,
              present: Expr | None) -> OpState:
        p = Bin(BinOp.ADD, Bin(BinOp.MUL, q, V(ctx.arr(s, "len", k))), self.crd(ctx, s, k, q))
        return OpState(k + 1, p, None, present)


class SlotWalk(LevelWalk):
    """ELL: slots ``p * width ..`` up to the first padding slot (``idx < 0``)."""

    def bounds(self, ctx: LowerContext, s: int, k: int, o: OpState
               ) -> tuple[list[Stmt], Expr, Expr]:
        assert o.pos is not None
        w = V(ctx.arr(s, "w", k))
        lo = Bin(BinOp.MUL, o.pos, w)
        stm, lo_v, hi_v = self._gated(s, k, o, lo, Bin(BinOp.ADD, lo, w))
        pad = _lt(Cast(I64, Load(ctx.arr(s, "idx", k), Bin(BinOp.SUB, hi_v, C(1)))), C(0))
        stm.append(While(Bin(BinOp.AND, _lt(lo_v, hi_v), pad),
                         (Assign(hi_v.name, Bin(BinOp.SUB, hi_v, C(1))),)))  # type: ignore[attr-defined]
        return stm, lo_v, hi_v


def block_shape(ctx: LowerContext, s: int, k: int) -> tuple[Expr, Expr]:
    """A blocked level's ``R`` and ``C``: the kernel's constants (its structure includes
    the block shape, ``LevelInfo.block``), else its arguments."""
    shape = ctx.info.operands[s].levels[k].block
    if shape is not None:
        return C(shape[0]), C(shape[1])
    return V(ctx.arr(s, "br", k)), V(ctx.arr(s, "bc", k))


class BlockWalk(LevelWalk):
    """BSR: a row's blocks, each ``C`` columns wide; ``t`` counts block columns flat."""

    def bounds(self, ctx: LowerContext, s: int, k: int, o: OpState
               ) -> tuple[list[Stmt], Expr, Expr]:
        assert o.pos is not None
        par = _parent(s, k)
        r, c = block_shape(ctx, s, k)
        ptr = ctx.arr(s, "ptr", k)
        brow = Bin(BinOp.FLOORDIV, par, r)
        lo = Bin(BinOp.MUL, Cast(I64, Load(ptr, brow)), c)
        hi = Bin(BinOp.MUL, Cast(I64, Load(ptr, add(brow, C(1)))), c)
        stm, lo_v, hi_v = self._gated(s, k, o, lo, hi)
        return [Assign(par.name, Cast(I64, o.pos)), *stm], lo_v, hi_v  # type: ignore[attr-defined]

    def crd(self, ctx: LowerContext, s: int, k: int, q: Expr) -> Expr:
        c = block_shape(ctx, s, k)[1]
        blk = Cast(I64, Load(ctx.arr(s, "idx", k), Bin(BinOp.FLOORDIV, q, c)))
        return Bin(BinOp.ADD, Bin(BinOp.MUL, blk, c), Bin(BinOp.MOD, q, c))

    def _base(self, ctx: LowerContext, s: int, k: int, b: Expr) -> Expr:
        r, c = block_shape(ctx, s, k)
        row = Bin(BinOp.ADD, Bin(BinOp.MUL, b, r), Bin(BinOp.MOD, _parent(s, k), r))
        return Bin(BinOp.MUL, row, c)

    def child(self, ctx: LowerContext, s: int, k: int, o: OpState, q: Expr,
              present: Expr | None) -> OpState:
        c = block_shape(ctx, s, k)[1]
        p = Bin(BinOp.ADD, self._base(ctx, s, k, Bin(BinOp.FLOORDIV, q, c)), Bin(BinOp.MOD, q, c))
        return OpState(k + 1, p, None, present)

    def drive(self, ctx: LowerContext, s: int, k: int, o: OpState, lo: Expr, hi: Expr,
              c: str, body: Body) -> list[Stmt] | None:
        cw = block_shape(ctx, s, k)[1]
        b, j, base, pb = f"b{s}_{k}", f"j{s}_{k}", f"cb{s}_{k}", f"pb{s}_{k}"
        inner = [Assign(c, Bin(BinOp.ADD, V(base), V(j))),
                 *body(V(c), OpState(k + 1, Bin(BinOp.ADD, V(pb), V(j)), None, o.present))]
        head = [Assign(base, Bin(BinOp.MUL, Cast(I64, Load(ctx.arr(s, "idx", k), V(b))), cw)),
                Assign(pb, self._base(ctx, s, k, V(b))),
                For(j, C(0), cw, tuple(inner))]
        return [For(b, Bin(BinOp.FLOORDIV, lo, cw), Bin(BinOp.FLOORDIV, hi, cw), tuple(head))]


class RunWalk(LevelWalk):
    """Run-length: runs ``ptr[p] .. ptr[p+1]``, run ``q`` covering ``idx[q] .. end[q]-1``."""

    merges = False  # a run holds many coordinates: merges read it converted

    def seek(self, ctx: LowerContext, s: int, k: int, q: Expr, hi: Expr, c: Expr
             ) -> tuple[list[Stmt], Expr]:
        assert isinstance(q, Var)
        end = Cast(I64, Load(ctx.arr(s, "end", k), q))
        move = While(Bin(BinOp.AND, _lt(q, hi), Bin(BinOp.LE, end, c)),
                     (Assign(q.name, add(q, C(1))),))
        return [move], Bin(BinOp.AND, _lt(q, hi), Bin(BinOp.LE, self.crd(ctx, s, k, q), c))

    def drive(self, ctx: LowerContext, s: int, k: int, o: OpState, lo: Expr, hi: Expr,
              c: str, body: Body) -> list[Stmt] | None:
        q = f"q{s}_{k}"
        end = Cast(I64, Load(ctx.arr(s, "end", k), V(q)))
        run = For(c, self.crd(ctx, s, k, V(q)), end,
                  tuple(body(V(c), OpState(k + 1, V(q), None, o.present))))
        return [For(q, lo, hi, (run,))]


# one walk per way of walking a level (the ``Walk`` each level class declares)
WALKS: dict[Walk, LevelWalk] = {
    Walk.SEGMENT: LevelWalk(),
    Walk.BYTEMAP: BytemapWalk(),
    Walk.BAND: BandWalk(),
    Walk.SLOTS: SlotWalk(),
    Walk.BLOCKS: BlockWalk(),
    Walk.RUNS: RunWalk(),
}


def walk_of(kind: str) -> LevelWalk:
    """The walk of level kind ``kind`` (the one its class declares)."""
    return WALKS[walk_of_kind(kind)]


__all__ = ["WALKS", "LevelWalk", "block_shape", "walk_of"]
