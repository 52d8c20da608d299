"""Output side of lowering: one class per output strategy (``workspace.OutputMode``), each
emitting its own stores. The loop nest (:mod:`compile.lowering.loop_nest`) asks the strategy for
statements around each loop, at each coordinate and at the innermost point; the strategy
reads the :class:`LowerContext` it was built with and nothing else.

Dense outputs insert at computed positions, shared outputs write one value per stored entry
of the operand whose pattern they reuse, appends write sparse levels in storage order (a
count phase, then a fill phase); the workspaces are in :mod:`compile.lowering.workspaces`.
"""

from __future__ import annotations

from lazysparse.kernels.compile.ir.build import C, State, V, add
from lazysparse.kernels.compile.ir.loop_ir import (
    Assign,
    Bin,
    BinOp,
    Cast,
    Expr,
    If,
    Load,
    Not,
    Stmt,
    Store,
)
from lazysparse.kernels.compile.lowering.context import LowerContext, Phase
from lazysparse.kernels.compile.lowering.epilogue import finish
from lazysparse.kernels.compile.planning.kernel_plan import EpiloguePlace
from lazysparse.kernels.compile.planning.stored_fill import keep_expr, same_expr


class OutputLowering:
    """How one phase writes the result: hooks around loops and at the innermost point.

    ``functions`` names the chunk functions this output needs and the phase each lowers."""

    functions: tuple[tuple[str, Phase], ...] = (("chunk", Phase.FILL),)

    def __init__(self, ctx: LowerContext) -> None:
        self.ctx = ctx
        self.out = ctx.out

    def out_pos(self, fld: str, c: Expr, od: Expr) -> Expr:
        """Dense output position after binding ``fld`` (dense levels only)."""
        ctx = self.ctx
        if fld not in ctx.info.out_fields:
            return od
        m = ctx.storage.index(fld)
        if m == self.out.dense_prefix - 1:  # the innermost dense level: unit stride
            return add(od, c)
        if m < self.out.dense_prefix:
            return add(od, Bin(BinOp.MUL, c, V(f"os{m}")))
        return od

    def hooks_around(self, d: int, st: State) -> tuple[list[Stmt], list[Stmt]]:
        """Statements before/after loops ``d..``: a scalar accumulator where every deeper
        loop is reduced."""
        if self.out.acc_depth is None or d != self.out.acc_depth:
            return [], []
        return self.acc_start(), self.store_acc(st)

    def acc_start(self) -> list[Stmt]:
        """Start a scalar accumulator (and its visit count when folding)."""
        ctx = self.ctx
        if not ctx.fill:
            return []
        init = V("red_id") if ctx.plan.partials else V("init")
        out: list[Stmt] = [Assign("acc", Cast(str(ctx.info.acc_dtype), init))]
        if ctx.plan.fold is not None:
            out.append(Assign("nvis", C(0)))
        return out

    def around_coord(self, d: int, st: State) -> tuple[list[Stmt], list[Stmt]]:
        """Statements before/after the loops inside each coordinate of loop ``d``."""
        return [], []

    def innermost(self, st: State) -> list[Stmt]:
        """At each point of the innermost loop: accumulate or write the value."""
        ctx = self.ctx
        val = ctx.value(ctx.info.expr, st) if ctx.fill else None
        if self.out.acc_depth is not None:
            return self.where_reached(st, self.accumulate(val))
        return self.where_reached(st, self.insert(st, val))

    def where_reached(self, st: State, body: list[Stmt]) -> list[Stmt]:
        """``body`` run only where the expression holds data when the layout keeps every
        entry it reaches (``FormatSpec.keeps_fills``): the loops' co-iteration may visit a
        point no term reaches (``A[i,k] * B[j,l] + C[i,k] * D[j,l]`` walks ``k`` over the
        union of ``A``'s and ``C``'s rows and ``l`` over ``B``'s and ``D``'s), whose value
        is the fill and which a kept region must leave implicit. The test is structural, so
        the count phase counts what the fill phase writes; a reduction skips the point as
        co-iteration skips an unstored one (its value is the fill)."""
        ctx = self.ctx
        if not (body and self.out.mode.sparse and ctx.info.out_spec.keeps_fills):
            return body
        held = ctx.holds_data(ctx.info.expr, st)
        if held is True:
            return body
        return [] if held is False else [If(held, tuple(body))]  # type: ignore[arg-type]

    def accumulate(self, val: Expr | None) -> list[Stmt]:
        """Reduce ``val`` into the scalar accumulator."""
        ctx = self.ctx
        if not ctx.fill:
            return self.mark_touched()
        out: list[Stmt] = [Assign("acc", ctx.reduce(V("acc"), val)),  # type: ignore[arg-type]
                           *self.mark_touched()]
        if ctx.plan.fold is not None:
            out.append(Assign("nvis", add(V("nvis"), C(1))))
        return out

    def mark_touched(self) -> list[Stmt]:
        """Note that the accumulator received a value (sparse outputs skip untouched)."""
        return []

    def insert(self, st: State, val: Expr | None) -> list[Stmt]:
        """Write ``val`` at the innermost point (no scalar accumulator)."""
        raise NotImplementedError

    def store_acc(self, st: State) -> list[Stmt]:
        """Write the scalar accumulator after its loops."""
        raise NotImplementedError

    def chunk_start(self) -> list[Stmt]:
        """Statements at the start of each chunk."""
        return []

    def chunk_end(self) -> list[Stmt]:
        """Statements at the end of each chunk."""
        return []

    def params(self) -> tuple[str, ...]:
        """Parameters of this phase's function after the common ones."""
        if self.ctx.plan.fold is not None:
            return ("t", "nch", "out", "ocnt")
        return ("t", "nch", "out")


class DenseOutput(OutputLowering):
    """Insert into a dense array (reducing in place, or storing a scalar accumulator)."""

    def index(self, st: State) -> Expr:
        """The output position (in this chunk's partial when chunks reduce into partials)."""
        return add(V("obase"), st.od) if self.ctx.plan.partials else st.od

    def insert(self, st: State, val: Expr | None) -> list[Stmt]:
        ctx = self.ctx
        pos = self.index(st)
        if ctx.info.reduce_op is None:
            return [Store("out", pos, Cast(str(ctx.info.out_dtype), val))]  # type: ignore
        cnt: list[Stmt] = []
        if ctx.plan.fold is not None:  # visits per output entry, for the host's fold
            cnt.append(Store("ocnt", pos, add(Load("ocnt", pos), C(1))))
        return [Store("out", pos, ctx.reduce(Load("out", pos), val)), *cnt]  # type: ignore

    def store_acc(self, st: State) -> list[Stmt]:
        ctx = self.ctx
        pos = self.index(st)
        if ctx.plan.fold is not None:
            return [Store("out", pos, V("acc")), Store("ocnt", pos, V("nvis"))]
        if ctx.plan.epilogue is EpiloguePlace.ENTRY:
            return [Store("out", pos, finish(ctx.info, V("acc"), st.coords))]
        return [Store("out", pos, V("acc"))]


class SharedOutput(OutputLowering):
    """One value per stored entry of the operand whose index arrays the result reuses."""

    def position(self, st: State) -> Expr:
        """The shared operand's position at the current coordinates."""
        s = self.out.shared_slot
        assert s is not None
        pos = st.ops[s].pos
        assert pos is not None
        return pos

    def insert(self, st: State, val: Expr | None) -> list[Stmt]:
        return self.write(st, Cast(str(self.ctx.info.out_dtype), val))  # type: ignore

    def store_acc(self, st: State) -> list[Stmt]:
        return self.write(st, finish(self.ctx.info, V("acc"), st.coords))

    def write(self, st: State, val: Expr) -> list[Stmt]:
        """Store ``val`` at the shared position; with the plan's ``drop_fill``, count the
        values equal to the result fill (``nf``: the host gives the shared pattern up
        only when some chunk counted one, ``formats.stored_fills.drop_stored_fills``)."""
        test = self.ctx.plan.drop_fill
        if test is None:
            return [Store("out", self.position(st), val)]
        same = Cast("int64", same_expr(test, V("oval")))
        return [Assign("oval", val), Store("out", self.position(st), V("oval")),
                Assign("nf", add(V("nf"), same))]

    def chunk_start(self) -> list[Stmt]:
        return [Assign("nf", C(0))] if self.ctx.plan.drop_fill is not None else []

    def chunk_end(self) -> list[Stmt]:
        if self.ctx.plan.drop_fill is None:
            return []
        return [Store("nfill", V("t"), V("nf"))]

    def params(self) -> tuple[str, ...]:
        if self.ctx.plan.drop_fill is None:
            return super().params()
        return (*super().params(), "nfill")


class AppendOutput(OutputLowering):
    """Sparse levels written in storage order: the count phase sizes each chunk's entries
    per group, the fill phase writes them at the chunk's offsets. A group is a compressed
    level and the singletons below it; a group opens an entry once per parent."""

    functions = (("count", Phase.COUNT), ("fill", Phase.FILL))

    def acc_start(self) -> list[Stmt]:
        return [*super().acc_start(), Assign(self.ctx.tag("touched"), C(False))]

    def mark_touched(self) -> list[Stmt]:
        return [Assign(self.ctx.tag("touched"), C(True))]

    def insert(self, st: State, val: Expr | None) -> list[Stmt]:
        return self.emit(st, val)

    def store_acc(self, st: State) -> list[Stmt]:
        ctx = self.ctx
        if not ctx.fill:
            return [If(V(ctx.tag("touched")), tuple(self.emit(st, None)))]
        return [If(V("touched"), tuple(self.emit(st, V("acc"))))]

    def around_coord(self, d: int, st: State) -> tuple[list[Stmt], list[Stmt]]:
        """Reset the open flags of groups ending at loop ``d``; at the row-count depth,
        note where the row's entries start (count) and store where they end."""
        ctx = self.ctx
        fld = ctx.info.loop_order[d]
        pre: list[Stmt] = [Assign(ctx.tag(f"open{g}"), C(False))
                           for g, grp in enumerate(self.out.groups[:-1])
                           if ctx.storage[grp[-1]] == fld]
        if ctx.plan.row_count_depth() != d:
            return pre, []
        cnt, base = V(ctx.tag("cnt0")), V(ctx.tag("rowbase"))
        if not ctx.fill:
            pre.append(Assign(base.name, cnt))
        # count: entries of the first sparse group under this dense output position; fill:
        # where they end (measured 10% faster on a sparse add than storing the difference;
        # the host reads it in a single pass)
        post = [Store("cntpd", st.od, cnt if ctx.fill else Bin(BinOp.SUB, cnt, base))]
        return pre, post

    def emit(self, st: State, val: Expr | None, coords: dict[str, Expr] | None = None,
             step: Expr | None = None) -> list[Stmt]:
        """Append one entry: open ancestor groups top-down, then write the leaf group's
        coordinates (and value in the fill phase); ``step`` entries at once (count). With
        the plan's ``drop_fill`` the fill phase appends only a value unequal to the result
        fill (``compile.planning.stored_fill``); the count phase counts every entry (a bound)."""
        ctx = self.ctx
        coords = coords or st.coords
        groups = self.out.groups
        last = len(groups) - 1
        out: list[Stmt] = []
        test = ctx.plan.drop_fill if ctx.fill else None
        if ctx.fill:
            val = finish(ctx.info, val, coords)  # type: ignore[arg-type]
            if test is not None:  # the value once, tested against the fill
                out.append(Assign("oval", val))
                val = V("oval")
        for g, grp in enumerate(groups):
            cnt = V(ctx.tag(f"cnt{g}"))
            inc = step if (step is not None and g == last) else C(1)
            write: list[Stmt] = []
            if g == 0 and self.out.dense_prefix and ctx.plan.row_count_depth() is None:
                write.append(Store("cntpd", st.od, add(Load("cntpd", st.od), inc)))
            if ctx.fill:
                write.append(Assign(f"pos{g}", cnt))
                write += [Store(f"o_idx{m}", cnt, coords[ctx.storage[m]]) for m in grp]
                if g == last:
                    write.append(Store("o_vals", cnt, val))  # type: ignore[arg-type]
            write.append(Assign(cnt.name, add(cnt, inc)))
            if g < last:
                write.append(Assign(ctx.tag(f"open{g}"), C(True)))
                out.append(If(Not(V(ctx.tag(f"open{g}"))), tuple(write)))
            else:
                out += write
        if ctx.fill:
            for g in range(last):
                nxt = groups[g + 1][0]
                out.append(Store(f"o_ptr{nxt}", add(V(f"pos{g}"), C(1)), V(f"cnt{g + 1}")))
        if test is None:
            return out
        keep = keep_expr(test, V("oval"))
        if last == 0:
            # one group: write in any case, advance only past a value that is kept
            # (branchless; the slot is inside the chunk's counted region either way)
            step1: Expr = Cast("int64", keep)
            return [out[0], *(self._advance(x, step1) for x in out[1:])]
        # an entry equal to the fill is not stored, nor are its parents opened
        return [out[0], If(keep, tuple(out[1:]))]

    def _advance(self, s: Stmt, step: Expr) -> Stmt:
        """``s`` with its count increments (``cnt0``, ``cntpd[od]``) by ``step``."""
        cnt = self.ctx.tag("cnt0")
        if isinstance(s, Assign) and s.var == cnt:
            return Assign(cnt, add(V(cnt), step))
        if isinstance(s, Store) and s.array == "cntpd":
            return Store("cntpd", s.index, add(Load("cntpd", s.index), step))
        return s

    def chunk_start(self) -> list[Stmt]:
        ctx = self.ctx
        out: list[Stmt] = []
        for g in range(len(self.out.groups)):
            start = Load(f"off{g}", V("t")) if ctx.fill else C(0)
            out.append(Assign(ctx.tag(f"cnt{g}"), start))
            if g < len(self.out.groups) - 1:
                out.append(Assign(ctx.tag(f"open{g}"), C(False)))
                if ctx.fill:
                    out.append(Assign(f"pos{g}", C(0)))
        return out

    def chunk_end(self) -> list[Stmt]:
        return [Store(f"cc{g}", V("t"), V(self.ctx.tag(f"cnt{g}")))
                for g in range(len(self.out.groups))]

    def params(self) -> tuple[str, ...]:
        ng = len(self.out.groups)
        if not self.ctx.fill:
            return ("t", "nch", *[f"cc{g}" for g in range(ng)], "cntpd")
        outs: list[str] = [f"off{g}" for g in range(ng)] + [f"cc{g}" for g in range(ng)]
        outs.append("cntpd")
        for grp in self.out.groups:
            outs.append(f"o_ptr{grp[0]}")
            outs += [f"o_idx{m}" for m in grp]
        return ("t", "nch", *outs, "o_vals")


__all__ = ["AppendOutput", "DenseOutput", "OutputLowering", "SharedOutput"]
