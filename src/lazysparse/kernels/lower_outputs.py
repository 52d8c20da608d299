"""Output side of lowering: dense inserts, shared patterns, ordered appends and the
workspaces (dense row with touched list; insert-sort-merge), as a mixin of ``Lowerer``."""

from __future__ import annotations

from typing import Any

from lazysparse.kernels.ir_build import I64, C, State, V, add, land
from lazysparse.kernels.loop_ir import (
    Alloc,
    ArgSortRange,
    Assign,
    Bin,
    Call,
    Cast,
    Expr,
    For,
    If,
    Load,
    Not,
    Stmt,
    Store,
    While,
)
from lazysparse.kernels.numba_support import SCRATCH_EXTRA


class OutputLowering:
    """Methods of :class:`lazysparse.kernels.lower.Lowerer` that write the result."""

    info: Any
    out: Any
    storage: tuple[str, ...]
    cvar: dict[str, str]
    depth_of: dict[str, int]
    phase: str
    partials: bool
    fold: tuple[int, ...] | None
    epilogue_mode: Any
    finish: Any

    # ------------------------------------------------------------------ outputs
    def out_pos(self, fld: str, c: Expr, od: Expr) -> Expr:
        """Dense output position after binding ``fld`` (dense levels only)."""
        if fld not in self.info.out_fields:
            return od
        m = self.storage.index(fld)
        if self.out.mode == "dense" or m < self.out.dense_prefix:
            return add(od, Bin("*", c, V(f"os{m}")))
        return od

    def hooks_around(self, d: int, st: State) -> tuple[list[Stmt], list[Stmt]]:
        """Statements before/after loops ``d..``: scalar accumulators and workspaces."""
        pre: list[Stmt] = []
        post: list[Stmt] = []
        o = self.out
        if o.mode in ("rowws", "ism") and d == o.ws_depth:
            pre.append(Assign(self.tag("nw"), C(0)))
            post += self.drain(st)
        if o.acc_depth is not None and d == o.acc_depth and o.mode not in ("rowws", "ism"):
            if self.phase == "fill":
                init = V("red_id") if self.partials else V("init")
                pre.append(Assign("acc", Cast(str(self.info.acc_dtype), init)))
                if self.fold is not None:
                    pre.append(Assign("nvis", C(0)))
            if o.mode not in ("dense", "shared"):
                pre.append(Assign(self.tag("touched"), C(False)))
            post += self.store_acc(st)
        return pre, post

    def row_count_depth(self) -> int | None:
        """Loop depth of the last dense output level above sparse ones (its positions get
        their entry counts, from which the first sparse group's ``ptr`` is summed)."""
        o = self.out
        if o.mode not in ("append", "rowws", "ism") or not o.dense_prefix:
            return None
        fld = self.storage[o.dense_prefix - 1]
        d = self.depth_of[fld]
        if o.ws_depth is not None and d >= o.ws_depth:
            return None
        return d

    def hooks_coord(self, d: int, st: State) -> list[Stmt]:
        """At each coordinate of loop ``d``: reset the open flags of groups ending here."""
        out: list[Stmt] = []
        if self.out.mode not in ("append", "rowws", "ism"):
            return out
        fld = self.info.loop_order[d]
        for g, grp in enumerate(self.out.groups[:-1]):
            if self.storage[grp[-1]] == fld:
                out.append(Assign(self.tag(f"open{g}"), C(False)))
        return out

    def innermost(self, st: State) -> list[Stmt]:
        o = self.out
        val = self.value(self.info.expr, st) if self.phase == "fill" else None
        if o.mode in ("rowws", "ism"):
            return self.ws_insert(st, val)
        if o.acc_depth is not None:
            out: list[Stmt] = ([] if o.mode in ("dense", "shared")
                               else [Assign(self.tag("touched"), C(True))])
            if self.phase == "fill":
                out.insert(0, Assign("acc", self.reduce(V("acc"), val)))  # type: ignore[arg-type]
                if self.fold is not None:
                    out.append(Assign("nvis", add(V("nvis"), C(1))))
            return out
        if o.mode == "dense":
            pos = self.dense_index(st)
            if self.info.reduce_op is not None:
                cnt: list[Stmt] = []
                if self.fold is not None:  # visits per output entry, for the host's fold
                    cnt.append(Store("ocnt", pos, add(Load("ocnt", pos), C(1))))
                return [Store("out", pos, self.reduce(Load("out", pos), val)), *cnt]  # type: ignore
            return [Store("out", pos, Cast(str(self.info.out_dtype), val))]  # type: ignore
        if o.mode == "shared":
            return [Store("out", self.shared_pos(st), Cast(str(self.info.out_dtype), val))]  # type: ignore
        return self.emit(st, val)

    def dense_index(self, st: State) -> Expr:
        return add(V("obase"), st.od) if self.partials else st.od

    def shared_pos(self, st: State) -> Expr:
        s = self.out.shared_slot
        assert s is not None
        pos = st.ops[s].pos
        assert pos is not None
        return pos

    def store_acc(self, st: State) -> list[Stmt]:
        o = self.out
        if self.phase == "count":
            return [If(V(self.tag("touched")), tuple(self.emit(st, None)))]
        if o.mode == "dense":
            if self.fold is not None:
                return [Store("out", self.dense_index(st), V("acc")),
                        Store("ocnt", self.dense_index(st), V("nvis"))]
            if self.epilogue_mode() == "entry":
                return [Store("out", self.dense_index(st), self.finish(V("acc"), st.coords))]
            return [Store("out", self.dense_index(st), V("acc"))]
        if o.mode == "shared":
            return [Store("out", self.shared_pos(st), self.finish(V("acc"), st.coords))]
        return [If(V("touched"), tuple(self.emit(st, V("acc"))))]

    def emit(self, st: State, val: Expr | None, coords: dict[str, Expr] | None = None,
             step: Expr | None = None) -> list[Stmt]:
        """Append one entry to the sparse output: open ancestor groups top-down, then write
        the leaf group's coordinates (and value in the fill phase)."""
        coords = coords or st.coords
        groups = self.out.groups
        last = len(groups) - 1
        fill = self.phase == "fill"
        out: list[Stmt] = []
        for g, grp in enumerate(groups):
            cnt = V(self.tag(f"cnt{g}"))
            write: list[Stmt] = []
            inc = step if (step is not None and g == last) else C(1)
            if g == 0 and self.out.dense_prefix and self.row_count_depth() is None:
                write.append(Store("cntpd", st.od, add(Load("cntpd", st.od), inc)))
            inc = step if (step is not None and g == last) else C(1)
            if fill:
                write.append(Assign(f"pos{g}", cnt))
                for m in grp:
                    write.append(Store(f"o_idx{m}", cnt, coords[self.storage[m]]))
                if g == last:
                    write.append(Store("o_vals", cnt, self.finish(val, coords)))  # type: ignore[arg-type]
            write.append(Assign(cnt.name, add(cnt, inc)))
            if g < last:
                write.append(Assign(self.tag(f"open{g}"), C(True)))
                out.append(If(Not(V(self.tag(f"open{g}"))), tuple(write)))
            else:
                out += write
        if fill:
            for g in range(last):
                nxt = groups[g + 1][0]
                out.append(Store(f"o_ptr{nxt}", add(V(f"pos{g}"), C(1)), V(f"cnt{g + 1}")))
        return out

    # ------------------------------------------------------------------ workspaces
    def ws_insert(self, st: State, val: Expr | None) -> list[Stmt]:
        o = self.out
        fill = self.phase == "fill"
        nw = V(self.tag("nw"))
        if o.mode == "rowws":
            w = st.coords[o.ws_fields[0]]
            mark, touched = self.tag("ws_mark"), self.tag("ws_list")
            first: list[Stmt] = [Store(mark, w, C(True)), Store(touched, nw, w),
                                 Assign(nw.name, add(nw, C(1)))]
            if fill:
                first.append(Store("ws_val", w, Cast(str(self.info.acc_dtype), V("init"))))
            out: list[Stmt] = [If(Not(Load(mark, w)), tuple(first))]
            if fill:
                new = (self.reduce(Load("ws_val", w), val) if self.info.reduce_op  # type: ignore
                       else Cast(str(self.info.acc_dtype), val))  # type: ignore[arg-type]
                out.append(Store("ws_val", w, new))
            return out
        key: Expr = C(0)
        for f in o.ws_fields:
            key = add(Bin("*", key, V(f"n_{self.cvar[f]}")), st.coords[f])
        keys, cap = self.tag("ws_keys"), self.tag("ws_cap")
        grow: list[Stmt] = [Assign(cap, Bin("*", V(cap), C(2))),
                            Alloc(self.tag("ws_keys2"), V(cap), I64, None),
                            For("u", C(0), nw, (Store(self.tag("ws_keys2"), V("u"),
                                                      Load(keys, V("u"))),)),
                            Assign(keys, V(self.tag("ws_keys2")))]
        if fill:
            grow += [Alloc("ws_vals2", V(cap), str(self.info.acc_dtype), None),
                     For("u", C(0), nw, (Store("ws_vals2", V("u"), Load("ws_vals", V("u"))),)),
                     Assign("ws_vals", V("ws_vals2"))]
        out = [If(Bin("==", nw, V(cap)), tuple(grow)), Store(keys, nw, key)]
        if fill:
            out.append(Store("ws_vals", nw, Cast(str(self.info.acc_dtype), val)))  # type: ignore
        out.append(Assign(nw.name, add(nw, C(1))))
        return out

    def ws_alloc(self) -> list[Stmt]:
        """Per-chunk workspace storage."""
        o = self.out
        if o.mode == "rowws":
            n = V(f"n_{self.cvar[o.ws_fields[0]]}")
            # the fill phase's list has room for sort_touched's scratch (no per-row alloc)
            nl = add(Bin("*", n, C(2)), C(SCRATCH_EXTRA)) if self.phase == "fill" else n
            out: list[Stmt] = [Alloc(self.tag("ws_mark"), n, "bool", C(False)),
                               Alloc(self.tag("ws_list"), nl, I64, None)]
            if self.phase == "fill":
                out.append(Alloc("ws_val", n, str(self.info.acc_dtype), None))
            return out
        if o.mode == "ism":
            out = [Assign(self.tag("ws_cap"), C(16)),
                   Alloc(self.tag("ws_keys"), V(self.tag("ws_cap")), I64, None)]
            if self.phase == "fill":
                out.append(Alloc("ws_vals", V(self.tag("ws_cap")), str(self.info.acc_dtype),
                                 None))
            return out
        return []

    def drain(self, st: State) -> list[Stmt]:
        """Move the workspace's entries to the output in storage order, then clear it."""
        o = self.out
        fill = self.phase == "fill"
        nw = V(self.tag("nw"))
        if o.mode == "rowws":
            f = o.ws_fields[0]
            w = V(self.cvar[f])
            mark, touched = self.tag("ws_mark"), self.tag("ws_list")
            coords = dict(st.coords)
            coords[f] = w
            body: list[Stmt] = [Assign(w.name, Load(touched, V("u"))),
                                Store(mark, w, C(False))]
            if not fill:
                # count phase: clear the marks, then count the whole row at once
                return [For("u", C(0), nw, tuple(body)),
                        If(Bin(">", nw, C(0)), tuple(self.emit(st, None, coords, step=nw)))]
            body += self.emit(st, Load("ws_val", w), coords)
            return [Call("sort_touched", (V(touched), nw, V(f"n_{self.cvar[f]}"))),
                    For("u", C(0), nw, tuple(body))]
        # insert-sort-merge: sort keys, merge duplicates with the reduction, emit in order
        keys = self.tag("ws_keys")
        perm = self.tag("ws_perm")
        u, e = V("u"), V("e")
        k = Load(keys, Load(perm, u))
        coords = dict(st.coords)
        decode: list[Stmt] = [Assign("key", k)]
        rest: Expr = V("key")
        for f in reversed(o.ws_fields):
            n = V(f"n_{self.cvar[f]}")
            decode.append(Assign(self.cvar[f], Bin("%", rest, n)))
            decode.append(Assign("key", Bin("//", rest, n)))
            rest = V("key")
            coords[f] = V(self.cvar[f])
        merge: list[Stmt] = [Assign("e", u)]
        ekey = Load(keys, Load(perm, e))
        step: list[Stmt] = [Assign("e", add(e, C(1)))]
        if fill:
            v = Load("ws_vals", Load(perm, e))
            if self.info.reduce_op is not None:
                merge.append(Assign("wv", Cast(str(self.info.acc_dtype), V("init"))))
                step.insert(0, Assign("wv", self.reduce(V("wv"), v)))
            else:
                step.insert(0, Assign("wv", v))
        merge.append(While(Bin("and", Bin("<", e, nw), Bin("==", ekey, k)), tuple(step)))
        # open flags of groups inside the workspace reset when their coordinates change
        reset: list[Stmt] = []
        for g, grp in enumerate(o.groups[:-1]):
            gf = [self.storage[m] for m in grp]
            if any(x in o.ws_fields for x in gf):
                prev_same: Expr | None = None
                for m in range(grp[-1] + 1):
                    x = self.storage[m]
                    if x in o.ws_fields:
                        prev_same = land(prev_same, Bin("==", V(f"prev_{self.cvar[x]}"),
                                                        V(self.cvar[x])))
                reset.append(If(Bin("or", Bin("==", u, C(0)), Not(prev_same)),  # type: ignore
                                (Assign(self.tag(f"open{g}"), C(False)),)))
        track = [Assign(f"prev_{self.cvar[f]}", V(self.cvar[f])) for f in o.ws_fields]
        od = st.od
        for m in range(o.dense_prefix):
            if self.storage[m] in o.ws_fields:
                od = add(od, Bin("*", coords[self.storage[m]], V(f"os{m}")))
        est = State(st.ops, coords, od)
        body = merge + decode + reset + self.emit(est, V("wv") if fill else None, coords)
        body += track + [Assign("u", e)]
        init_prev = [Assign(f"prev_{self.cvar[f]}", C(-1)) for f in o.ws_fields]
        return [ArgSortRange(perm, keys, C(0), nw), *init_prev, Assign("u", C(0)),
                While(Bin("<", u, nw), tuple(body))]
