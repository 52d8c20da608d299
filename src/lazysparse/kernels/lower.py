"""Lower a normal-form query (as a :class:`KernelInfo`) to a loop-IR :class:`Function`.

Per loop: located operands are addressed ``p * size + c``; iterated operands either drive
the loop (one operand: a position loop; several: a multi-way merge whose condition is the
region formula), or follow it with a forward-seeking cursor. Non-unique levels hand their
children a position *range* (iterator chaining), which branchless levels continue. Outputs
follow :mod:`kernels.workspace`. The outermost loop is split into chunks run in parallel
when chunks write disjoint outputs, or into per-chunk partials for a reduction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from lazysparse.kernels.analysis import KernelInfo, PAccess, PApply, PConst, PField, PNode
from lazysparse.kernels.coiterate import LevelPlan, plan_level
from lazysparse.kernels.coiterate import is_conjunction as is_conj
from lazysparse.kernels.loop_ir import (
    Alloc,
    Apply,
    ArgSortRange,
    Assign,
    Bin,
    Call,
    CallExpr,
    Cast,
    Comment,
    Const,
    Expr,
    For,
    Function,
    If,
    Load,
    Not,
    Return,
    Select,
    Stmt,
    Store,
    Var,
    While,
)
from lazysparse.kernels.workspace import OutputPlan, plan_output

CHUNKS_PER_THREAD = 4
I64 = "int64"


def V(name: str) -> Var:
    """Shorthand for a variable reference."""
    return Var(name)


def C(v: Any) -> Const:
    """Shorthand for an index/bool constant."""
    return Const(v)


def add(a: Expr, b: Expr) -> Expr:
    """``a + b`` with trivial zeros folded."""
    if isinstance(b, Const) and b.value == 0:
        return a
    if isinstance(a, Const) and a.value == 0:
        return b
    if isinstance(a, Bin) and a.op == "*" and isinstance(a.a, Const) and a.a.value == 0:
        return b
    return Bin("+", a, b)


def cast(dtype: Any, e: Expr, src: Any) -> Expr:
    """``Cast`` unless the value already has that dtype."""
    return e if np.dtype(dtype) == np.dtype(src) else Cast(str(np.dtype(dtype)), e)


def _native(dt: Any) -> bool:
    """Dtypes whose arithmetic Numba already performs at that width."""
    d = np.dtype(dt)
    return d.kind in "fc" or d in (np.dtype(np.int64), np.dtype(np.uint64))


def land(a: Expr | None, b: Expr | None) -> Expr | None:
    """Conjunction where None means statically true (constants folded)."""
    if a is None or (isinstance(a, Const) and a.value is True):
        return b
    if b is None or (isinstance(b, Const) and b.value is True):
        return a
    if isinstance(a, Const) or isinstance(b, Const):
        return C(False)
    return Bin("and", a, b)


def sel(c: Expr | None, a: Expr, b: Expr) -> Expr:
    """``a if c else b`` with constant conditions folded (None: statically true)."""
    if c is None or (isinstance(c, Const) and c.value is True):
        return a
    if isinstance(c, Const):
        return b
    return Select(c, a, b)


def fold(region: tuple[Any, ...], atom: Any) -> Expr:
    """A region formula over atoms (each an Expr, possibly Const) with constants folded."""
    if region[0] == "atom":
        return atom(region[1])
    parts = [fold(r, atom) for r in region[1]]
    if region[0] == "and":
        if any(isinstance(p, Const) and p.value is False for p in parts):
            return C(False)
        parts = [p for p in parts if not isinstance(p, Const)]
        ident: Expr = C(True)
    else:
        if any(isinstance(p, Const) and p.value is True for p in parts):
            return C(True)
        parts = [p for p in parts if not isinstance(p, Const)]
        ident = C(False)
    if not parts:
        return ident
    acc = parts[0]
    for p in parts[1:]:
        acc = Bin(region[0], acc, p)
    return acc


@dataclass
class OpState:
    """Where one operand stands: its position (or chained range) and whether it is present."""

    level: int = 0
    pos: Expr | None = field(default_factory=lambda: C(0))
    rng: tuple[Expr, Expr] | None = None
    present: Expr | None = None


@dataclass
class State:
    """Everything in scope at one point of the loop nest."""

    ops: dict[int, OpState]
    coords: dict[str, Expr]
    od: Expr = field(default_factory=lambda: C(0))  # dense output position so far


@dataclass(frozen=True)
class Lowered:
    """The loop IR of one kernel with the decisions that shaped it."""

    functions: tuple[Function, ...]
    plans: tuple[LevelPlan, ...]
    output: OutputPlan
    parallel: bool
    partials: bool
    params: tuple[str, ...]
    extent0: tuple[str, Any]  # how the host computes the outermost loop's iterations
    bounds: tuple[tuple[tuple[int, int], ...], ...] | None  # see Lowerer.append_bounds


def _ident(name: str, d: int) -> str:
    return name if re.fullmatch(r"[A-Za-z][A-Za-z0-9]{0,8}", name) else f"f{d}"


class Lowerer:
    """Builds the loop IR of one kernel (one instance per kernel)."""

    def __init__(self, info: KernelInfo, fills: tuple[Any, ...], out_fill: Any) -> None:
        self.info = info
        self.K = len(info.loop_order)
        self.plans = tuple(plan_level(info, d, fills, out_fill) for d in range(self.K))
        self.out = plan_output(info, self.plans)
        self.cvar = {f: f"i_{_ident(f, d)}" for d, f in enumerate(info.loop_order)}
        self.phase = "fill"
        self.storage = info.out_storage_fields
        self.depth_of = {f: d for d, f in enumerate(info.loop_order)}
        self.parallel, self.partials = self._parallel_choice()

    # ------------------------------------------------------------------ decisions
    def _parallel_choice(self) -> tuple[bool, bool]:
        if self.K == 0 or self.plans[0].kind == "merge":
            return False, False
        f0 = self.info.loop_order[0]
        if f0 in self.info.out_fields:
            if self.out.mode in ("rowws", "ism") and self.out.ws_depth == 0:
                return False, False
            return True, False
        rop = self.info.reduce_op
        if (self.out.mode == "dense" and rop is not None
                and rop.identity_for(self.info.acc_dtype) is not None):
            return True, True
        return False, False

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
                return app if _native(rd) else Cast(str(rd), app)
        raise TypeError(f"unknown pointwise node {node!r}")

    def reduce(self, acc: Expr, val: Expr) -> Expr:
        rop = self.info.reduce_op
        assert rop is not None
        ad = self.info.acc_dtype
        ods = tuple(np.dtype(d) for d in rop.operand_dtypes(ad, self.info.expr.dtype))
        app = Apply(rop, (cast(ods[0], acc, ad), cast(ods[1], val, self.info.expr.dtype)),
                    tuple(str(d) for d in ods))
        return app if _native(ad) and ods[0] == ad else Cast(str(ad), app)

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
                q, (lo, hi) = V(f"q{s}_{k}"), ranges[s]
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
            if row:
                body.append(Assign(self.tag("rowbase"), V(self.tag("cnt0"))))
            body += self.nest(d + 1, inner)
            if row:  # entries of the first sparse group under this dense output position
                body.append(Store("cntpd", inner.od,
                                  Bin("-", V(self.tag("cnt0")), V(self.tag("rowbase")))))
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

        if len(drivers) > 2:
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

    def generic_merge(self, lp: LevelPlan, st: State, ranges: dict[int, tuple[Expr, Expr]],
                      c: Var, body_for: Any) -> Stmt:
        """One merge loop over three or more drivers (bounded code size): the coordinate is
        the least among drivers still in range; the region formula guards the body."""
        drivers = lp.drivers

        def qv(s: int) -> Var:
            return V(f"q{s}_{st.ops[s].level}")

        def inrange(s: int) -> Expr:
            return Bin("<", qv(s), ranges[s][1])

        def has(s: int) -> Var:
            return V(f"has{s}_{st.ops[s].level}")

        inner: list[Stmt] = [Assign(c.name, V(f"n_{self.cvar[lp.field]}"))]
        for s in drivers:
            inner.append(If(inrange(s), (Assign(c.name, Bin("min", c, self.crd(
                s, st.ops[s].level, qv(s)))),)))
        cstate: dict[int, OpState] = {}
        for s in drivers:
            k = st.ops[s].level
            inner.append(Assign(has(s).name, Bin("and", inrange(s), Bin(
                "==", self.crd(s, k, qv(s)), c))))
            if not self.info.operands[s].levels[k].props.unique:
                inner.append(If(has(s), tuple(self.seg_end(s, k, qv(s), ranges[s][1], c))))
            pres = st.ops[s].present if s in lp.required else land(st.ops[s].present, has(s))
            cstate[s] = self.child(s, st, qv(s), pres)
        inner.append(If(fold(lp.region, has), tuple(body_for(cstate))))
        for s in drivers:
            k = st.ops[s].level
            nxt = (add(qv(s), C(1)) if self.info.operands[s].levels[k].props.unique
                   else V(f"e{s}_{k}"))
            inner.append(If(has(s), (Assign(qv(s).name, nxt),)))
        return While(fold(lp.region, inrange), tuple(inner))

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
            return out
        if o.mode == "dense":
            pos = self.dense_index(st)
            if self.info.reduce_op is not None:
                return [Store("out", pos, self.reduce(Load("out", pos), val))]  # type: ignore
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
            return [Store("out", self.dense_index(st), V("acc"))]
        if o.mode == "shared":
            return [Store("out", self.shared_pos(st), V("acc"))]
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
                    write.append(Store("o_vals", cnt, Cast(str(self.info.out_dtype), val)))  # type: ignore[arg-type]
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
                first.append(Call("bit_set", (V("ws_bits"), w)))
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
            out: list[Stmt] = [Alloc(self.tag("ws_mark"), n, "bool", C(False)),
                               Alloc(self.tag("ws_list"), n, I64, None)]
            if self.phase == "fill":
                out.append(Alloc("ws_val", n, str(self.info.acc_dtype), None))
                out.append(Alloc("ws_bits", add(Bin("//", n, C(64)), C(1)), "uint64", C(0)))
                out.append(Assign("ws_ctz", CallExpr("ctz_table", ())))
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
            return [Call("sort_touched", (V(touched), nw, V("ws_bits"), V("ws_ctz"))),
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

    def phase_params(self, phase: str) -> tuple[str, ...]:
        """Parameters of a phase function after the common ones."""
        o = self.out
        ng = len(o.groups)
        if phase == "chunk":
            return ("t", "nch", "out")
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
                 ("chunks run in parallel" + (" into per-chunk partials" if self.partials
                                              else "")) if self.parallel else "sequential")
        if self.out.mode in ("dense", "shared"):
            fns = [Function("chunk", common + self.phase_params("chunk"),
                            tuple(self.phase_body("fill")), self.parallel, notes)]
            if self.partials:
                od = str(self.info.out_dtype)
                comb: list[Stmt] = [Assign("acc", cast(od, V("init"), self.info.acc_dtype))]
                comb.append(For("t", C(0), V("nch"), (Assign("acc", self.reduce(
                    V("acc"), Load("out", add(Bin("*", V("t"), V("osize")), V("o"))))),)))
                comb.append(Store("res", V("o"), V("acc")))
                fns.append(Function("combine", ("out", "res", "nch", "osize", "init"),
                                    (For("o", C(0), V("osize"), tuple(comb)),), False,
                                    ("res[o] = init (+) partials of every chunk",)))
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


def lower(info: KernelInfo, fills: tuple[Any, ...], out_fill: Any) -> Lowered:
    """The loop IR of a kernel plus the co-iteration and output decisions behind it."""
    lw = Lowerer(info, fills, out_fill)
    fns = lw.functions()
    if lw.K == 0:
        ext: tuple[str, Any] = ("one", None)
    elif lw.plans[0].kind == "range":
        ext = ("field", lw.info.loop_order[0])
    else:
        ext = ("positions", lw.plans[0].drivers[0])
    return Lowered(fns, lw.plans, lw.out, lw.parallel, lw.partials, tuple(lw.params()), ext,
                   lw.append_bounds())


__all__ = ["Lowered", "Lowerer", "lower", "replace"]
