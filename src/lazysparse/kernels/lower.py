"""Lower a normal-form query (as a :class:`KernelInfo`) to a loop-IR :class:`Function`.

Per loop: located operands are addressed ``p * size + c``; iterated operands either drive
the loop (one operand: a position loop; several: a multi-way merge whose condition is the
region formula), or follow it with a forward-seeking cursor. Non-unique levels hand their
children a position *range* (iterator chaining), which branchless levels continue. Outputs
follow :mod:`kernels.workspace`. The outermost loop is split into chunks run in parallel
when chunks write disjoint outputs, or into per-chunk partials for a reduction
(:mod:`kernels.parallel` decides).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from lazysparse.kernels.analysis import KernelInfo, PAccess, PApply, PConst, PField, PNode
from lazysparse.kernels.coiterate import LevelPlan, fold_levels, plan_level
from lazysparse.kernels.coiterate import is_conjunction as is_conj
from lazysparse.kernels.ir_build import (
    I64,
    C,
    OpState,
    State,
    V,
    add,
    cast,
    fold,
    land,
    native,
    sel,
)
from lazysparse.kernels.loop_ir import (
    Apply,
    Assign,
    Bin,
    Cast,
    Comment,
    Const,
    Expr,
    For,
    Function,
    If,
    Load,
    Stmt,
    Store,
    Var,
    While,
)
from lazysparse.kernels.lower_epilogue import EpilogueLowering
from lazysparse.kernels.lower_merges import MergeLowering
from lazysparse.kernels.lower_outputs import OutputLowering
from lazysparse.kernels.parallel import ParallelChoice, choose_parallel, combine_functions
from lazysparse.kernels.workspace import OutputPlan, plan_output


@dataclass(frozen=True)
class Lowered:
    """The loop IR of one kernel with the decisions that shaped it."""

    functions: tuple[Function, ...]
    plans: tuple[LevelPlan, ...]
    output: OutputPlan
    choice: ParallelChoice  # which loop runs in parallel, and how (kernels.parallel)
    params: tuple[str, ...]
    extent0: tuple[str, Any]  # how the host computes the outermost loop's iterations
    bounds: tuple[tuple[tuple[int, int], ...], ...] | None  # see Lowerer.append_bounds
    # loops that skip entries whose value the host folds in afterwards (from per-output
    # visit counts, ``ocnt``); None when the kernel visits everything it must
    fold: tuple[int, ...] | None = None
    # a row workspace's bound on its entries (see Lowerer.workspace_bound): (a, la, b)
    ws_bound: tuple[int, int, int] | None = None
    # the fill phase stores each dense output position's end in the first sparse group
    # (``cntpd[od] = cnt0``) rather than its entry count (see Lowerer.loop)
    row_ends: bool = False
    # where the epilogue runs (``lower_epilogue.EpilogueLowering.epilogue_mode``)
    epilogue: str | None = None

    @property
    def parallel(self) -> bool:
        """Whether the outermost loop may run as several chunks at once."""
        return self.choice.parallel

    @property
    def partials(self) -> bool:
        """Whether chunks reduce into per-chunk partials that ``combine`` folds."""
        return self.choice.partials


def _ident(name: str, d: int) -> str:
    return name if re.fullmatch(r"[A-Za-z][A-Za-z0-9]{0,8}", name) else f"f{d}"


class Lowerer(OutputLowering, MergeLowering, EpilogueLowering):
    """Builds the loop IR of one kernel (one instance per kernel)."""

    def __init__(self, info: KernelInfo, fills: tuple[Any, ...], out_fill: Any,
                 fold: bool = False) -> None:
        self.info = info
        self.K = len(info.loop_order)
        self.fold = fold_levels(info, fills, out_fill) if fold else None
        self.plans = tuple(plan_level(info, d, fills, out_fill, self.fold)
                           for d in range(self.K))
        self.out = plan_output(info, self.plans)
        if self.fold is not None and self.out.mode != "dense":
            self.fold = None
            self.plans = tuple(plan_level(info, d, fills, out_fill) for d in range(self.K))
            self.out = plan_output(info, self.plans)
        self.cvar = {f: f"i_{_ident(f, d)}" for d, f in enumerate(info.loop_order)}
        self.phase = "fill"
        self.storage = info.out_storage_fields
        self.depth_of = {f: d for d, f in enumerate(info.loop_order)}
        self.choice = choose_parallel(info, self.plans, self.out)
        self.parallel, self.partials = self.choice.parallel, self.choice.partials

    # ------------------------------------------------------------------ names
    def arr(self, s: int, what: str, k: int | None = None) -> str:
        return f"a{s}_{what}" if k is None else f"a{s}_{what}{k}"

    def tag(self, name: str) -> str:
        """Phase-local variable name (count and fill loops keep separate locals)."""
        return f"{name}_c" if self.phase == "count" else name

    # ------------------------------------------------------------------ values
    def value(self, node: PNode, st: State) -> Expr:
        match node:
            case PAccess(slot=s):
                o = st.ops[s]
                if o.level != len(self.info.operands[s].levels) or o.pos is None:
                    raise ValueError("internal: access value read before its last level")
                if isinstance(o.present, Const) and o.present.value is False:
                    return V(f"a{s}_fill")
                return sel(o.present, Load(self.arr(s, "vals"), o.pos), V(f"a{s}_fill"))
            case PConst(slot=k):
                return V(f"k{k}")
            case PField(name=name):
                return st.coords[name]
            case PApply(op=op, args=args, operand_dtypes=opds, dtype=rd):
                vals = tuple(cast(d, self.value(a, st), a.dtype) for a, d in  # type: ignore
                             zip(args, opds, strict=True))
                app = Apply(op, vals, tuple(str(d) for d in opds))
                return app if native(rd) else Cast(str(rd), app)
        raise TypeError(f"unknown pointwise node {node!r}")

    def reduce(self, acc: Expr, val: Expr) -> Expr:
        rop = self.info.reduce_op
        assert rop is not None
        ad = self.info.acc_dtype
        ods = tuple(np.dtype(d) for d in rop.operand_dtypes(ad, self.info.expr.dtype))
        app = Apply(rop, (cast(ods[0], acc, ad), cast(ods[1], val, self.info.expr.dtype)),
                    tuple(str(d) for d in ods))
        return app if native(ad) and ods[0] == ad else Cast(str(ad), app)

    # ------------------------------------------------------------------ level entry
    def level_range(self, s: int, st: State) -> tuple[list[Stmt], Expr, Expr]:
        """Statements and bounds of operand ``s``'s positions at its next (iterated) level."""
        o = st.ops[s]
        k = o.level
        lv = self.info.operands[s].levels[k]
        lo_n, hi_n = f"lo{s}_{k}", f"hi{s}_{k}"
        if lv.chained:
            if o.rng is not None:
                lo, hi = o.rng
            else:
                assert o.pos is not None
                lo, hi = o.pos, add(o.pos, C(1))
            hi = sel(o.present, hi, lo)
        else:
            if o.pos is None:
                raise ValueError(f"operand {self.info.operands[s].alias}: a compressed level "
                                 "below a non-unique level is not supported")
            ptr = self.arr(s, "ptr", k)
            lo, hi = Cast(I64, Load(ptr, o.pos)), Cast(I64, Load(ptr, add(o.pos, C(1))))
            if isinstance(o.present, Const) and o.present.value is False:
                lo, hi = C(0), C(0)
            else:
                lo, hi = sel(o.present, lo, C(0)), sel(o.present, hi, C(0))
        return [Assign(lo_n, lo), Assign(hi_n, hi)], V(lo_n), V(hi_n)

    def crd(self, s: int, k: int, q: Expr) -> Expr:
        return Cast(I64, Load(self.arr(s, "idx", k), q))

    def seg_end(self, s: int, k: int, q: Expr, hi: Expr, c: Expr) -> list[Stmt]:
        """``e = end of the run of coordinate c starting at q`` for a non-unique level."""
        e = f"e{s}_{k}"
        return [Assign(e, add(q, C(1))),
                While(Bin("and", Bin("<", V(e), hi), Bin("==", self.crd(s, k, V(e)), c)),
                      (Assign(e, add(V(e), C(1))),))]

    def child(self, s: int, st: State, q: Expr, present: Expr | None) -> OpState:
        """Operand ``s``'s state after stepping to position ``q`` of its current level."""
        o = st.ops[s]
        k = o.level
        lv = self.info.operands[s].levels[k]
        if lv.props.unique:
            return OpState(k + 1, q, None, present)
        return OpState(k + 1, None, (q, V(f"e{s}_{k}")), present)

    def locate(self, s: int, st: State, c: Expr) -> OpState:
        o = st.ops[s]
        k = o.level
        if o.pos is None:
            raise ValueError(f"operand {self.info.operands[s].alias}: a dense level below a "
                             "non-unique level is not supported")
        p = add(Bin("*", o.pos, V(self.arr(s, "n", k))), c)
        name = f"p{s}_{k}"
        return OpState(k + 1, V(name), None, o.present), Assign(name, p)  # type: ignore[return-value]

    # ------------------------------------------------------------------ the nest
    def nest(self, d: int, st: State, bounds: tuple[Expr, Expr] | None = None) -> list[Stmt]:
        """Statements for loops ``d..K-1`` (with the output hooks around them)."""
        out: list[Stmt] = []
        pre, post = self.hooks_around(d, st)
        out += pre
        if d == self.K:
            out += self.innermost(st)
        else:
            out += self.loop(d, st, bounds)
        out += post
        return out

    def loop(self, d: int, st: State, bounds: tuple[Expr, Expr] | None) -> list[Stmt]:
        lp = self.plans[d]
        fld = lp.field
        c = V(self.cvar[fld])
        out: list[Stmt] = [Comment(f"loop {fld}: {lp.kind} {self._describe(lp)}")]
        ranges: dict[int, tuple[Expr, Expr]] = {}
        for s in (*lp.drivers, *lp.followers):
            stm, lo, hi = self.level_range(s, st)
            out += stm
            ranges[s] = (lo, hi)
        # followers: forward-seeking cursors
        for s in lp.followers:
            out.append(Assign(f"q{s}_{st.ops[s].level}", ranges[s][0]))

        def body_for(coord_state: dict[int, OpState]) -> list[Stmt]:
            body: list[Stmt] = []
            ops = dict(st.ops)
            ops.update(coord_state)
            for s in lp.followers:
                k = st.ops[s].level
                q, hi = V(f"q{s}_{k}"), ranges[s][1]
                body.append(While(Bin("and", Bin("<", q, hi), Bin("<", self.crd(s, k, q), c)),
                                  (Assign(q.name, add(q, C(1))),)))
                has = f"has{s}_{k}"
                body.append(Assign(has, Bin("and", Bin("<", q, hi),
                                            Bin("==", self.crd(s, k, q), c))))
                if not self.info.operands[s].levels[k].props.unique:
                    body += self.seg_end(s, k, q, hi, c)
                ops[s] = self.child(s, st, q, land(st.ops[s].present, V(has)))
            for s in lp.located:
                ostate, asg = self.locate(s, st, c)  # type: ignore[misc]
                body.append(asg)
                ops[s] = ostate
            coords = dict(st.coords)
            coords[fld] = c
            inner = State(ops, coords, self.out_pos(fld, c, st.od))
            if inner.od is not st.od and not isinstance(inner.od, Const):
                body.append(Assign(f"od{d}", inner.od))
                inner.od = V(f"od{d}")
            body += self.hooks_coord(d, inner)
            row = self.row_count_depth() == d
            count = self.phase == "count"
            if row and count:
                body.append(Assign(self.tag("rowbase"), V(self.tag("cnt0"))))
            body += self.nest(d + 1, inner)
            if row:  # count: entries of the first sparse group under this dense output
                # position; fill: where they end (measured 10% faster on a sparse add
                # than storing the difference; the host reads it in a single pass)
                body.append(Store("cntpd", inner.od,
                                  Bin("-", V(self.tag("cnt0")), V(self.tag("rowbase")))
                                  if count else V("cnt0")))
            return body

        if lp.kind == "range":
            lo, hi = bounds if bounds is not None else (C(0), V(f"n_{self.cvar[fld]}"))
            out.append(For(c.name, lo, hi, tuple(body_for({})), parallel=False))
            return out
        if lp.kind == "driver":
            s = lp.drivers[0]
            k = st.ops[s].level
            lo, hi = bounds if bounds is not None else ranges[s]
            q = V(f"q{s}_{k}")
            present = st.ops[s].present
            head: list[Stmt] = [Assign(c.name, self.crd(s, k, q))]
            if self.info.operands[s].levels[k].props.unique:
                inner = head + body_for({s: self.child(s, st, q, present)})
                out.append(For(q.name, lo, hi, tuple(inner)))
            else:
                e = V(f"e{s}_{k}")
                inner = head + self.seg_end(s, k, q, hi, c)
                inner += body_for({s: self.child(s, st, q, present)})
                inner.append(Assign(q.name, e))
                out += [Assign(q.name, lo), While(Bin("<", q, hi), tuple(inner))]
            return out
        # multi-way merge: one loop per lattice point (subset of drivers still in range),
        # largest first; drivers outside the subset are exhausted, hence absent (TACO)
        drivers = lp.drivers
        for s in drivers:
            out.append(Assign(f"q{s}_{st.ops[s].level}", ranges[s][0]))
        from itertools import combinations

        def qv(s: int) -> Var:
            return V(f"q{s}_{st.ops[s].level}")

        def crd_at(s: int) -> Expr:
            return self.crd(s, st.ops[s].level, qv(s))

        def unique(s: int) -> bool:
            return self.info.operands[s].levels[st.ops[s].level].props.unique

        if len(drivers) > 2 or d < self.K - 1:
            # one guarded loop: the lattice's loops would each copy the loops below, growing
            # the code as 3^depth (a 4-d CSF union compiled for 10 s)
            out.append(self.generic_merge(lp, st, ranges, c, body_for))
            return out
        for size in range(len(drivers), 0, -1):
            for sub in combinations(drivers, size):
                live = set(sub)
                if isinstance(fold(lp.region, lambda a, live=live: C(a in live)), Const) and \
                        fold(lp.region, lambda a, live=live: C(a in live)).value is False:
                    continue
                cstate: dict[int, OpState] = {}
                for s in drivers:
                    if s not in live:
                        cstate[s] = OpState(st.ops[s].level + 1, C(0), None, C(False))
                if size == 1:
                    (s,) = sub
                    k = st.ops[s].level
                    cstate[s] = self.child(s, st, qv(s), st.ops[s].present)
                    head: list[Stmt] = [Assign(c.name, crd_at(s))]
                    if unique(s):
                        out.append(For(qv(s).name, qv(s), ranges[s][1],
                                       tuple(head + body_for(cstate))))
                    else:
                        inner = head + self.seg_end(s, k, qv(s), ranges[s][1], c)
                        inner += body_for(cstate) + [Assign(qv(s).name, V(f"e{s}_{k}"))]
                        out.append(While(Bin("<", qv(s), ranges[s][1]), tuple(inner)))
                    continue
                if size == 2 and all(unique(s) for s in sub):
                    out.append(self.two_way_merge(lp, st, sub, ranges, c, body_for))
                    continue
                inner = [Assign(c.name, crd_at(sub[0]))]
                for s in sub[1:]:
                    inner.append(Assign(c.name, Bin("min", c, crd_at(s))))
                for s in sub:
                    k = st.ops[s].level
                    inner.append(Assign(f"has{s}_{k}", Bin("==", crd_at(s), c)))
                    if not unique(s):
                        inner.append(If(V(f"has{s}_{k}"), tuple(self.seg_end(
                            s, k, qv(s), ranges[s][1], c))))
                conj = is_conj(lp.region)
                for s in sub:
                    k = st.ops[s].level
                    pres = st.ops[s].present if conj else land(st.ops[s].present,
                                                              V(f"has{s}_{k}"))
                    cstate[s] = self.child(s, st, qv(s), pres)
                cond = fold(lp.region, lambda a, live=live: V(
                    f"has{a}_{st.ops[a].level}") if a in live else C(False))
                if lp.region[0] == "or" and all(r[0] == "atom" for r in lp.region[1]):
                    inner += body_for(cstate)  # a union: the least coordinate is present
                else:
                    inner.append(If(cond, tuple(body_for(cstate))))
                for s in sub:
                    k = st.ops[s].level
                    nxt = add(qv(s), C(1)) if unique(s) else V(f"e{s}_{k}")
                    inner.append(If(V(f"has{s}_{k}"), (Assign(qv(s).name, nxt),)))
                alive: Expr = Bin("<", qv(sub[0]), ranges[sub[0]][1])
                for s in sub[1:]:
                    alive = Bin("and", alive, Bin("<", qv(s), ranges[s][1]))
                out.append(While(alive, tuple(inner)))
        return out

    def formula(self, region: tuple[Any, ...], atom: Any) -> Expr:
        if region[0] == "atom":
            return atom(region[1])
        parts = [self.formula(r, atom) for r in region[1]]
        acc = parts[0]
        for p in parts[1:]:
            acc = Bin(region[0], acc, p)
        return acc

    def _describe(self, lp: LevelPlan) -> str:
        names = {o.slot: o.alias for o in self.info.operands}
        txt = []
        if lp.drivers:
            txt.append("drivers " + ",".join(names[s] for s in lp.drivers))
        if lp.followers:
            txt.append("follow " + ",".join(names[s] for s in lp.followers))
        if lp.located:
            txt.append("locate " + ",".join(names[s] for s in lp.located))
        return "; ".join(txt)

    # ------------------------------------------------------------------ the kernel
    def top_bounds(self) -> tuple[list[Stmt], tuple[Expr, Expr] | None, Expr]:
        """Chunk bounds of the outermost loop for chunk ``t`` (and its extent)."""
        if self.K == 0:
            return [], None, C(1)
        lp = self.plans[0]
        root = State({o.slot: OpState() for o in self.info.operands}, {})
        if lp.kind == "range":
            return [], None, V(f"n_{self.cvar[lp.field]}")
        if lp.kind == "driver":
            s = lp.drivers[0]
            stm, lo, hi = self.level_range(s, root)
            return stm, (lo, hi), Bin("-", hi, lo)
        return [], None, C(1)

    def extent0(self) -> Expr:
        """Iterations of the outermost loop, as an expression over the kernel arguments."""
        lp = self.plans[0]
        if lp.kind == "range":
            return V(f"n_{self.cvar[lp.field]}")
        s = lp.drivers[0]
        ptr = self.arr(s, "ptr", 0)
        return Bin("-", Cast(I64, Load(ptr, C(1))), Cast(I64, Load(ptr, C(0))))

    def chunk_bounds(self) -> tuple[list[Stmt], tuple[Expr, Expr] | None]:
        if self.K == 0:
            return [], None
        lp = self.plans[0]
        pre, rng, _ = self.top_bounds()
        if not self.parallel or lp.kind == "merge":
            return pre, rng
        if lp.kind == "range":
            lo0, hi0 = C(0), V(f"n_{self.cvar[lp.field]}")
        else:
            assert rng is not None
            lo0, hi0 = rng
        span = Bin("-", hi0, lo0)
        stm: list[Stmt] = list(pre)

        def at(t: Expr, name: str) -> list[Stmt]:
            res: list[Stmt] = [Assign(name, add(lo0, Bin("//", Bin("*", t, span), V("nch"))))]
            if lp.kind == "driver":
                s = lp.drivers[0]
                if not self.info.operands[s].levels[0].props.unique:
                    cur = V(name)
                    res.append(While(
                        Bin("and", Bin("and", Bin(">", cur, lo0), Bin("<", cur, hi0)),
                            Bin("==", self.crd(s, 0, cur), self.crd(s, 0, Bin("-", cur,
                                                                           C(1))))),
                        (Assign(name, add(cur, C(1))),)))
            return res

        stm += at(V("t"), "clo") + at(add(V("t"), C(1)), "chi")
        return stm, (V("clo"), V("chi"))

    def phase_body(self, phase: str) -> list[Stmt]:
        """The body run for one chunk ``t`` of ``nch`` in one phase (count or fill)."""
        self.phase = phase
        root = State({o.slot: OpState() for o in self.info.operands}, {})
        bstm, bounds = self.chunk_bounds()
        body: list[Stmt] = list(bstm)
        o = self.out
        if o.mode in ("append", "rowws", "ism"):
            for g in range(len(o.groups)):
                start = C(0) if phase == "count" else Load(f"off{g}", V("t"))
                body.append(Assign(self.tag(f"cnt{g}"), start))
                if g < len(o.groups) - 1:
                    body.append(Assign(self.tag(f"open{g}"), C(False)))
                    if phase == "fill":
                        body.append(Assign(f"pos{g}", C(0)))
            body += self.ws_alloc()
        if self.partials:
            body.append(Assign("obase", Bin("*", V("t"), V("osize"))))
        body += self.nest(0, root, bounds)
        if o.mode in ("append", "rowws", "ism"):
            for g in range(len(o.groups)):
                body.append(Store(f"cc{g}", V("t"), V(self.tag(f"cnt{g}"))))
        return body

    def append_bounds(self) -> tuple[tuple[tuple[int, int], ...], ...] | None:
        """Per output group, the (operand, level) whose position counts sum to a bound on
        its entries; None unless every group's loop is driven by operands that carry all
        enclosing output fields (then one fill pass can run without counting first)."""
        if self.out.mode != "append":
            return None
        bounds = []
        for grp in self.out.groups:
            fld = self.storage[grp[-1]]
            d = self.depth_of[fld]
            lp = self.plans[d]
            if lp.kind == "range":
                return None
            outer = [f for f in self.info.loop_order[:d] if f in self.info.out_fields]
            atoms = []
            for s in lp.drivers:
                op = self.info.operands[s]
                if any(op.level_of(f) is None for f in outer):
                    return None
                atoms.append((s, op.level_of(fld)))
            bounds.append(tuple(atoms))
        return tuple(bounds)

    def workspace_bound(self) -> tuple[int, int, int] | None:
        """``(a, la, b)`` when a row workspace's entries are bounded by the multiplications
        of a Gustavson SpGEMM: loop 1 driven by operand ``a``'s level ``la`` alone (``a``
        also stores loop 0's field, so each of its positions is visited once), loop 2 by
        operand ``b``'s level 1 alone, under ``b``'s level 0 located by loop 1's field.
        The host sums ``b``'s row lengths at ``a``'s coordinates; None otherwise."""
        o = self.out
        if (o.mode != "rowws" or o.ws_depth != 1 or self.K != 3 or len(o.groups) != 1
                or o.dense_prefix != 1 or self.storage[0] != self.info.loop_order[0]):
            return None
        f0, f1, f2 = self.info.loop_order
        p1, p2 = self.plans[1], self.plans[2]
        if p1.kind != "driver" or p2.kind != "driver" or len(p1.drivers) != 1 \
                or len(p2.drivers) != 1:
            return None
        (a,), (b,) = p1.drivers, p2.drivers
        oa, ob = self.info.operands[a], self.info.operands[b]
        la = oa.level_of(f1)
        if la is None or oa.level_of(f0) is None or oa.levels[la].chained:
            return None
        if (len(ob.levels) != 2 or ob.levels[0].field != f1 or not ob.levels[0].located
                or ob.levels[1].field != f2 or ob.levels[1].chained):
            return None
        return a, la, b

    def phase_params(self, phase: str) -> tuple[str, ...]:
        """Parameters of a phase function after the common ones."""
        o = self.out
        ng = len(o.groups)
        if phase == "chunk":
            return ("t", "nch", "out", "ocnt") if self.fold is not None else ("t", "nch", "out")
        if phase == "count":
            return ("t", "nch", *[f"cc{g}" for g in range(ng)], "cntpd")
        outs: list[str] = [f"off{g}" for g in range(ng)] + [f"cc{g}" for g in range(ng)]
        outs.append("cntpd")
        for grp in o.groups:
            outs.append(f"o_ptr{grp[0]}")
            outs += [f"o_idx{m}" for m in grp]
        return ("t", "nch", *outs, "o_vals")

    def functions(self) -> tuple[Function, ...]:
        """The kernel's chunk functions: ``chunk`` (dense/shared outputs, plus ``combine``
        for per-chunk partials) or ``count`` then ``fill`` (sparse outputs). The host runs
        each over chunks ``t = 0..nch-1``, in parallel threads when ``parallel``."""
        common = tuple(self.params())
        notes = (f"loop order {self.info.loop_order}",
                 f"output {self.info.out_spec.name} via {self.out.mode}"
                 + (f" (workspace at loop {self.out.ws_depth})"
                    if self.out.ws_depth is not None else ""),
                 self.choice.note())
        if self.out.mode in ("dense", "shared"):
            fns = [Function("chunk", common + self.phase_params("chunk"),
                            tuple(self.phase_body("fill")), self.parallel, notes)]
            if self.partials:
                fns += combine_functions(self.reduce, self.info.acc_dtype)
            if self.epilogue_mode() == "finalize":
                fns.append(self.epilogue_function(common))
            return tuple(fns)
        return (Function("count", common + self.phase_params("count"),
                         tuple(self.phase_body("count")), self.parallel, notes),
                Function("fill", common + self.phase_params("fill"),
                         tuple(self.phase_body("fill")), self.parallel, notes))

    def params(self) -> list[str]:
        out: list[str] = []
        for op in self.info.operands:
            s = op.slot
            for k, lv in enumerate(op.levels):
                if lv.located:
                    out.append(self.arr(s, "n", k))
                else:
                    if not lv.chained:
                        out.append(self.arr(s, "ptr", k))
                    out.append(self.arr(s, "idx", k))
            out += [self.arr(s, "vals"), f"a{s}_fill"]
        out += [f"n_{self.cvar[f]}" for f in self.info.loop_order]
        out += [f"k{i}" for i in range(len(self.info.const_dtypes))]
        out += ["init", "ofill", "red_id"]
        nout = self.out.dense_prefix if self.out.mode != "dense" else len(self.storage)
        out += [f"os{m}" for m in range(nout)]
        out += ["osize", "dsize"]
        return out


def lower(info: KernelInfo, fills: tuple[Any, ...], out_fill: Any,
          fold: bool = False) -> Lowered:
    """The loop IR of a kernel plus the co-iteration and output decisions behind it.

    ``fold``: let reductions skip entries whose value is a non-identity constant and count
    visits instead (the host folds the skipped ones in; see ``coiterate.fold_levels``)."""
    lw = Lowerer(info, fills, out_fill, fold)
    fns = lw.functions()
    if lw.K == 0:
        ext: tuple[str, Any] = ("one", None)
    elif lw.plans[0].kind == "range":
        ext = ("field", lw.info.loop_order[0])
    else:
        ext = ("positions", lw.plans[0].drivers[0])
    return Lowered(fns, lw.plans, lw.out, lw.choice, tuple(lw.params()), ext,
                   lw.append_bounds(), lw.fold, lw.workspace_bound(),
                   lw.row_count_depth() is not None, lw.epilogue_mode())


__all__ = ["Lowered", "Lowerer", "lower", "replace"]
