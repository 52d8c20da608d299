"""Workspace outputs of lowering: writes that scatter (a reduced loop above an output loop,
or a loop order that departs from the output's level order) go to a per-chunk workspace
that drains in storage order through the append of :class:`AppendOutput`.

- :class:`RowWorkspaceOutput` (one workspace field, Gustavson): a dense row of values with
  a mark per column and a touched list, sorted when the row drains.
- :class:`HashWorkspaceOutput` (one workspace field, large and sparsely touched): an
  open-addressing table that grows with the entries, drained in insertion order.
- :class:`SortMergeOutput` (several fields): an insert-sort-merge buffer of keys and values,
  argsorted when it drains, duplicates merged with the reduction.
"""

from __future__ import annotations

from lazysparse.kernels.compile.ir.build import I64, C, State, V, add, land
from lazysparse.kernels.compile.ir.loop_ir import (
    Alloc,
    ArgSortRange,
    Assign,
    Bin,
    BinOp,
    Call,
    CallExpr,
    Cast,
    Expr,
    For,
    If,
    Intrinsic,
    Load,
    Not,
    Stmt,
    Store,
    While,
)
from lazysparse.kernels.compile.lowering.outputs import AppendOutput

# a hash workspace's first table size (slots, 384 KiB with values and the slot list: a
# per-chunk allocation); it doubles when half full. Starting at 1024 spent half of a
# 0.1 % BFS step (8k entries) re-inserting through four doublings
HASH_WS_START = 1 << 14

# ``list`` length that lets a backend's ``sort_touched`` work without allocating:
# 2 * extent + SCRATCH_EXTRA (the tail past ``extent`` is its scratch space)
SCRATCH_EXTRA = 257


class WorkspaceOutput(AppendOutput):
    """A workspace from loop ``ws_depth`` on: inserts at the innermost point, drained (in
    storage order, through the append) after the workspace's loops."""

    def hooks_around(self, d: int, st: State) -> tuple[list[Stmt], list[Stmt]]:
        if d != self.out.ws_depth:
            return [], []
        return [Assign(self.ctx.tag("nw"), C(0))], self.drain(st)

    def innermost(self, st: State) -> list[Stmt]:
        ctx = self.ctx
        val = ctx.value(ctx.info.expr, st) if ctx.fill else None
        return self.where_reached(st, self.ws_insert(st, val))

    def chunk_start(self) -> list[Stmt]:
        return super().chunk_start() + self.ws_alloc()

    def ws_insert(self, st: State, val: Expr | None) -> list[Stmt]:
        """Put ``val`` (None: count) in the workspace at the current coordinates."""
        raise NotImplementedError

    def ws_alloc(self) -> list[Stmt]:
        """Per-chunk workspace storage."""
        raise NotImplementedError

    def drain(self, st: State) -> list[Stmt]:
        """Move the workspace's entries to the output in storage order, then clear it."""
        raise NotImplementedError

    def update(self, vals: str, at: Expr, val: Expr | None) -> list[Stmt]:
        """Reduce ``val`` into the workspace value ``vals[at]`` (a plain write without a
        reduction; nothing in the count phase)."""
        ctx = self.ctx
        if not ctx.fill:
            return []
        new = (ctx.reduce(Load(vals, at), val) if ctx.info.reduce_op  # type: ignore[arg-type]
               else Cast(str(ctx.info.acc_dtype), val))  # type: ignore[arg-type]
        return [Store(vals, at, new)]

    def drain_entries(self, st: State, visit: list[Stmt], value: Expr) -> list[Stmt]:
        """The drain loop of a one-field workspace's ``nw`` entries: ``visit`` sets the
        field's coordinate of entry ``u`` (and frees its place), then the entry goes to the
        output with ``value``; the count phase counts the whole row at once."""
        ctx = self.ctx
        nw = V(ctx.tag("nw"))
        f = self.out.ws_fields[0]
        coords = dict(st.coords)
        coords[f] = V(ctx.cvar[f])
        if not ctx.fill:
            return [For("u", C(0), nw, tuple(visit)),
                    If(Bin(BinOp.GT, nw, C(0)), tuple(self.emit(st, None, coords, step=nw)))]
        return [For("u", C(0), nw, (*visit, *self.emit(st, value, coords)))]


class RowWorkspaceOutput(WorkspaceOutput):
    """A dense row workspace with a mark per column and a touched list (Gustavson)."""

    def ws_insert(self, st: State, val: Expr | None) -> list[Stmt]:
        ctx = self.ctx
        acc = str(ctx.info.acc_dtype)
        nw = V(ctx.tag("nw"))
        w = st.coords[self.out.ws_fields[0]]
        mark, touched = ctx.tag("ws_mark"), ctx.tag("ws_list")
        first: list[Stmt] = [Store(mark, w, C(True)), Store(touched, nw, w),
                             Assign(nw.name, add(nw, C(1)))]
        if ctx.fill:
            first.append(Store("ws_val", w, Cast(acc, V("init"))))
        return [If(Not(Load(mark, w)), tuple(first)), *self.update("ws_val", w, val)]

    @property
    def sorted_drain(self) -> bool:
        """Whether the output level wants the touched list in order (an unordered level
        takes it as it came)."""
        return self.ctx.info.out_spec.level_properties()[-1].ordered

    def ws_alloc(self) -> list[Stmt]:
        ctx = self.ctx
        n = ctx.extent(self.out.ws_fields[0])
        # the fill phase's list has room for sort_touched's scratch (no per-row alloc)
        nl = add(Bin(BinOp.MUL, n, C(2)), C(SCRATCH_EXTRA)) if ctx.fill and self.sorted_drain else n
        out: list[Stmt] = [Alloc(ctx.tag("ws_mark"), n, "bool", C(False)),
                           Alloc(ctx.tag("ws_list"), nl, I64, None)]
        if ctx.fill:
            out.append(Alloc("ws_val", n, str(ctx.info.acc_dtype), None))
        return out

    def drain(self, st: State) -> list[Stmt]:
        ctx = self.ctx
        f = self.out.ws_fields[0]
        w = V(ctx.cvar[f])
        mark, touched = ctx.tag("ws_mark"), ctx.tag("ws_list")
        visit: list[Stmt] = [Assign(w.name, Load(touched, V("u"))), Store(mark, w, C(False))]
        drain = self.drain_entries(st, visit, Load("ws_val", w))
        if ctx.fill and self.sorted_drain:
            nw = V(ctx.tag("nw"))
            drain.insert(0, Call(Intrinsic.SORT_TOUCHED, (V(touched), nw, ctx.extent(f))))
        return drain


class HashWorkspaceOutput(WorkspaceOutput):
    """A hash workspace (Zhang et al. §5: a workspace whose size follows the entries, not
    the extent): open addressing over the one scattered coordinate, keys ``-1`` when free,
    a value per slot and the touched slots in insertion order. Doubles when half full;
    drains in insertion order into an unordered level, freeing each slot it drains. Chosen
    when a dense row would be large and sparsely touched (``compile.planning.hash_workspace``)."""

    def ws_insert(self, st: State, val: Expr | None) -> list[Stmt]:
        ctx = self.ctx
        acc = str(ctx.info.acc_dtype)
        nw, cap = V(ctx.tag("nw")), V(ctx.tag("hcap"))
        keys, slots = ctx.tag("hkeys"), ctx.tag("hslots")
        c = st.coords[self.out.ws_fields[0]]
        s = V(ctx.tag("hs"))
        full = Bin(BinOp.GT, Bin(BinOp.MUL, add(nw, C(1)), C(2)), cap)
        out: list[Stmt] = [If(full, tuple(self._grow())),
                           Assign(s.name, CallExpr(Intrinsic.WS_PROBE, (V(keys), c)))]
        new: list[Stmt] = [Store(keys, s, c), Store(slots, nw, s), Assign(nw.name, add(nw, C(1)))]
        if ctx.fill:
            new.append(Store("hvals", s, Cast(acc, V("init"))))
        out.append(If(Bin(BinOp.LT, Load(keys, s), C(0)), tuple(new)))
        return out + self.update("hvals", s, val)

    def _grow(self) -> list[Stmt]:
        """Double the table and re-insert the touched keys (their slots move)."""
        ctx = self.ctx
        acc = str(ctx.info.acc_dtype)
        nw, cap = V(ctx.tag("nw")), V(ctx.tag("hcap"))
        keys, slots = ctx.tag("hkeys"), ctx.tag("hslots")
        k2, sl2 = ctx.tag("hkeys2"), ctx.tag("hslots2")
        u, old, new = V("u"), V(ctx.tag("hso")), V(ctx.tag("hsn"))
        probe = CallExpr(Intrinsic.WS_PROBE, (V(k2), Load(keys, old)))
        move: list[Stmt] = [Assign(old.name, Load(slots, u)), Assign(new.name, probe),
                            Store(k2, new, Load(keys, old)), Store(sl2, u, new)]
        out: list[Stmt] = [Assign(cap.name, Bin(BinOp.MUL, cap, C(2))),
                           Alloc(k2, cap, I64, C(-1)),
                           Alloc(sl2, Bin(BinOp.FLOORDIV, cap, C(2)), I64)]
        if ctx.fill:
            out.append(Alloc("hvals2", cap, acc))
            move.append(Store("hvals2", new, Load("hvals", old)))
        out += [For("u", C(0), nw, tuple(move)), Assign(keys, V(k2)), Assign(slots, V(sl2))]
        if ctx.fill:
            out.append(Assign("hvals", V("hvals2")))
        return out

    def ws_alloc(self) -> list[Stmt]:
        ctx = self.ctx
        cap = ctx.tag("hcap")
        out: list[Stmt] = [Assign(cap, C(HASH_WS_START)),
                           Alloc(ctx.tag("hkeys"), V(cap), I64, C(-1)),
                           Alloc(ctx.tag("hslots"), Bin(BinOp.FLOORDIV, V(cap), C(2)), I64)]
        if ctx.fill:
            out.append(Alloc("hvals", V(cap), str(ctx.info.acc_dtype)))
        return out

    def drain(self, st: State) -> list[Stmt]:
        ctx = self.ctx
        w = V(ctx.cvar[self.out.ws_fields[0]])
        keys, slots = ctx.tag("hkeys"), ctx.tag("hslots")
        s = V(ctx.tag("hs"))
        visit: list[Stmt] = [Assign(s.name, Load(slots, V("u"))), Assign(w.name, Load(keys, s)),
                             Store(keys, s, C(-1))]
        return self.drain_entries(st, visit, Load("hvals", s))


class SortMergeOutput(WorkspaceOutput):
    """An insert-sort-merge buffer: keys (the workspace fields' coordinates, row-major)
    and values appended, grown by doubling; sorted and merged when it drains."""

    def ws_insert(self, st: State, val: Expr | None) -> list[Stmt]:
        ctx = self.ctx
        acc = str(ctx.info.acc_dtype)
        nw = V(ctx.tag("nw"))
        key: Expr = C(0)
        for f in self.out.ws_fields:
            key = add(Bin(BinOp.MUL, key, ctx.extent(f)), st.coords[f])
        keys, cap, keys2 = ctx.tag("ws_keys"), ctx.tag("ws_cap"), ctx.tag("ws_keys2")
        grow: list[Stmt] = [Assign(cap, Bin(BinOp.MUL, V(cap), C(2))),
                            Alloc(keys2, V(cap), I64, None),
                            For("u", C(0), nw, (Store(keys2, V("u"), Load(keys, V("u"))),)),
                            Assign(keys, V(keys2))]
        if ctx.fill:
            grow += [Alloc("ws_vals2", V(cap), acc, None),
                     For("u", C(0), nw, (Store("ws_vals2", V("u"), Load("ws_vals", V("u"))),)),
                     Assign("ws_vals", V("ws_vals2"))]
        out: list[Stmt] = [If(Bin(BinOp.EQ, nw, V(cap)), tuple(grow)), Store(keys, nw, key)]
        if ctx.fill:
            out.append(Store("ws_vals", nw, Cast(acc, val)))  # type: ignore[arg-type]
        out.append(Assign(nw.name, add(nw, C(1))))
        return out

    def ws_alloc(self) -> list[Stmt]:
        ctx = self.ctx
        cap = ctx.tag("ws_cap")
        out: list[Stmt] = [Assign(cap, C(16)), Alloc(ctx.tag("ws_keys"), V(cap), I64, None)]
        if ctx.fill:
            out.append(Alloc("ws_vals", V(cap), str(ctx.info.acc_dtype), None))
        return out

    def drain(self, st: State) -> list[Stmt]:
        """Sort the keys, merge duplicates with the reduction, emit in order."""
        ctx = self.ctx
        o = self.out
        nw = V(ctx.tag("nw"))
        keys, perm = ctx.tag("ws_keys"), ctx.tag("ws_perm")
        u, e = V("u"), V("e")
        coords = dict(st.coords)
        decode: list[Stmt] = [Assign("key", Load(keys, Load(perm, u)))]
        for f in reversed(o.ws_fields):
            n = ctx.extent(f)
            decode.append(Assign(ctx.cvar[f], Bin(BinOp.MOD, V("key"), n)))
            decode.append(Assign("key", Bin(BinOp.FLOORDIV, V("key"), n)))
            coords[f] = V(ctx.cvar[f])
        od = st.od
        for m in range(o.dense_prefix):
            if ctx.storage[m] in o.ws_fields:
                od = add(od, Bin(BinOp.MUL, coords[ctx.storage[m]], V(f"os{m}")))
        est = State(st.ops, coords, od)
        body = self._merge(nw, keys, perm) + decode + self._resets()
        body += self.emit(est, V("wv") if ctx.fill else None, coords)
        body += [Assign(f"prev_{ctx.cvar[f]}", V(ctx.cvar[f])) for f in o.ws_fields]
        body.append(Assign("u", e))
        init_prev = [Assign(f"prev_{ctx.cvar[f]}", C(-1)) for f in o.ws_fields]
        return [ArgSortRange(perm, keys, C(0), nw), *init_prev, Assign("u", C(0)),
                While(Bin(BinOp.LT, u, nw), tuple(body))]

    def _merge(self, nw: Expr, keys: str, perm: str) -> list[Stmt]:
        """``e`` past the run of keys equal to key ``u``, their values reduced into ``wv``."""
        ctx = self.ctx
        u, e = V("u"), V("e")
        k = Load(keys, Load(perm, u))
        step: list[Stmt] = [Assign("e", add(e, C(1)))]
        merge: list[Stmt] = [Assign("e", u)]
        if ctx.fill:
            v = Load("ws_vals", Load(perm, e))
            if ctx.info.reduce_op is not None:
                merge.append(Assign("wv", Cast(str(ctx.info.acc_dtype), V("init"))))
                step.insert(0, Assign("wv", ctx.reduce(V("wv"), v)))
            else:
                step.insert(0, Assign("wv", v))
        ekey = Load(keys, Load(perm, e))
        same_key = Bin(BinOp.AND, Bin(BinOp.LT, e, nw), Bin(BinOp.EQ, ekey, k))
        merge.append(While(same_key, tuple(step)))
        return merge

    def _resets(self) -> list[Stmt]:
        """Open flags of groups inside the workspace reset when their coordinates change."""
        ctx = self.ctx
        o = self.out
        reset: list[Stmt] = []
        for g, grp in enumerate(o.groups[:-1]):
            if not any(ctx.storage[m] in o.ws_fields for m in grp):
                continue
            same: Expr | None = None
            for m in range(grp[-1] + 1):
                x = ctx.storage[m]
                if x in o.ws_fields:
                    cv = ctx.cvar[x]
                    same = land(same, Bin(BinOp.EQ, V(f"prev_{cv}"), V(cv)))
            reset.append(If(Bin(BinOp.OR, Bin(BinOp.EQ, V("u"), C(0)), Not(same)),  # type: ignore
                            (Assign(ctx.tag(f"open{g}"), C(False)),)))
        return reset


__all__ = ["HashWorkspaceOutput", "RowWorkspaceOutput", "SortMergeOutput", "WorkspaceOutput"]
