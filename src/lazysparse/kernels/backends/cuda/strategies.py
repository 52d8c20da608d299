"""How a kernel's parallel loop maps onto the GPU, and the loop-IR rewrites that do it.

- ``thread``: one thread per chunk of the outer loop (the runtime makes each chunk one row).
- ``warp``: one warp per row; the loop that accumulates into the row's scalar ``acc`` is
  split across the 32 lanes and the partial results meet in a shuffle tree (reduction ops
  that are associative, commutative and have an identity).
- ``nzsplit``: the nonzeros of the driving compressed level are cut into equal pieces of
  ``nz_per_item`` (Senanayake et al., position-space split); each work item binary-searches
  its first row, rows it holds whole are stored directly, rows cut by a piece boundary are
  combined atomically (a segmented reduction).

:func:`choose` picks from row-length statistics: long rows -> warp, skewed rows -> nzsplit,
else thread.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

import numpy as np

from lazysparse.kernels.backends.cuda.prelude import atomic_helper
from lazysparse.kernels.backends.cuda.render import (
    AtomicCombine,
    LaneFor,
    LaneZero,
    VarType,
    WarpReduce,
    expr_c,
)
from lazysparse.kernels.backends.cuda.workspaces import WorkspaceKind, hash_rewrite
from lazysparse.kernels.compile.ir.loop_ir import (
    Apply,
    Assign,
    Bin,
    BinOp,
    Cast,
    Const,
    Expr,
    For,
    If,
    Load,
    Select,
    Stmt,
    Store,
    Var,
    While,
    transform_block,
    walk,
)

WARP_MEAN_ROW = 24.0  # mean row length from which a warp per row beats a thread per row
SKEW_RATIO = 8.0  # max/mean row length above which rows are split by nonzeros
SKEW_MIN_MAX = 256  # ...provided the longest row is at least this long
NZ_PER_ITEM = 16  # nonzeros per nonzero-split work item (the paper's 16 per thread)
# outputs from which a reduction over the outer loop accumulates atomically into one output
# (a thread per row) instead of into per-chunk partial outputs (few chunks, few threads)
ATOMIC_MIN_OUTPUTS = 1 << 16


class LaunchMode(StrEnum):
    """How a kernel's work items map onto GPU threads (the value names it in comments)."""

    THREAD = "thread"  # one thread per work item (a chunk of the parallel loop)
    WARP = "warp"  # one warp per row, its accumulation loop split across the lanes
    NZSPLIT = "nzsplit"  # equal pieces of the driving level's nonzeros per work item
    SERIAL = "serial"  # one thread runs every item in order

    @property
    def lanes(self) -> int:
        """Threads that make up one worker."""
        return 32 if self is LaunchMode.WARP else 1


@dataclass(frozen=True)
class Strategy:
    """A GPU mapping: ``kind`` plus the reduction it may need (op, accumulator dtype) and,
    for ``nzsplit``, the driving operand's pointer array and row-count argument names."""

    kind: LaunchMode
    reduce_op: Any = None
    acc_dtype: str | None = None
    nz_ptr: str | None = None
    nz_rows: str | None = None
    nz_per_item: int = NZ_PER_ITEM
    workspace: WorkspaceKind = WorkspaceKind.DENSE  # row workspaces: the loop IR's, or hash
    atomic_partials: bool = False  # per-chunk partial outputs replaced by atomic updates


def choose(eligible: set[str], mean_row: float, max_row: int) -> LaunchMode:
    """The strategy for these row-length statistics among the eligible ones."""
    if (LaunchMode.NZSPLIT in eligible and max_row >= SKEW_MIN_MAX
            and max_row > SKEW_RATIO * max(mean_row, 1.0)):
        return LaunchMode.NZSPLIT
    if LaunchMode.WARP in eligible and mean_row >= WARP_MEAN_ROW:
        return LaunchMode.WARP
    return LaunchMode.THREAD


def row_stats(ptr: Any, xp: Any = np) -> tuple[float, int]:
    """Mean and max row length of a compressed level's pointer array (on its device)."""
    if ptr.shape[0] < 2:
        return 0.0, 0
    lengths = xp.diff(ptr)
    return float(lengths.mean()), int(lengths.max())


# ---------------------------------------------------------------- reduction helpers


def combine_expr(op: Any, acc_dtype: str, a: str, b: str) -> Expr:
    """``op(a, b)`` for two accumulators of ``acc_dtype``, cast back to it."""
    ad = np.dtype(acc_dtype)
    ods = tuple(np.dtype(d) for d in op.operand_dtypes(ad, ad))
    args = tuple(Var(n) if np.dtype(d) == ad else Cast(str(d), Var(n))
                 for n, d in zip((a, b), ods, strict=True))
    return Cast(str(ad), Apply(op, args, tuple(str(d) for d in ods)))


def warp_capable(op: Any, acc_dtype: str | None) -> bool:
    """Reductions that may be regrouped across lanes or pieces."""
    return (op is not None and acc_dtype is not None and op.associative and op.commutative
            and op.identity_for(np.dtype(acc_dtype)) is not None)


def atomic_capable(op: Any, acc_dtype: str | None) -> bool:
    """Reductions a compare-and-swap loop can apply: regroupable, 4- or 8-byte real."""
    if not warp_capable(op, acc_dtype):
        return False
    ad = np.dtype(acc_dtype)
    return ad.kind in "iuf" and ad.itemsize in (4, 8)


def atomic_helper_name(st: Strategy, atomics: dict[str, str]) -> str:
    """The CAS helper applying ``st``'s reduction to its accumulator dtype (added once)."""
    ad = np.dtype(st.acc_dtype)
    helper = f"ls_atomic_{st.reduce_op.name}_{ad.name}"
    if helper not in atomics:
        types = {"a": VarType(ad), "b": VarType(ad)}
        atomics[helper] = atomic_helper(helper, VarType(ad).c, expr_c(
            combine_expr(st.reduce_op, str(ad), "a", "b"), types))
    return helper


# ---------------------------------------------------------------- warp per row


def _warp_block(block: tuple[Stmt, ...], st: Strategy) -> tuple[Stmt, ...] | None:
    for i, s in enumerate(block):
        if isinstance(s, Assign) and s.var == "acc":
            j = next((j for j in range(i + 1, len(block))
                      if isinstance(block[j], For | While)), None)
            if j is None or not isinstance(block[j], For):
                return None
            loop = block[j]
            assert isinstance(loop, For)
            lane0 = Bin(BinOp.EQ, Var("ls_lane"), Const(0))
            init = Assign("acc", Select(lane0, s.value, Cast(str(st.acc_dtype), Var("red_id"))))
            return (*block[:i], init, *block[i + 1:j],
                    LaneFor(loop.var, loop.start, loop.stop, loop.body),
                    WarpReduce("acc", "acc_lane",
                               combine_expr(st.reduce_op, str(st.acc_dtype), "acc", "acc_lane")),
                    LaneZero(tuple(block[j + 1:])))
    for i, s in enumerate(block):
        sub: tuple[Stmt, ...] | None = None
        if isinstance(s, For):
            inner = _warp_block(s.body, st)
            sub = None if inner is None else (replace(s, body=inner),)
        if sub is not None:
            return (*block[:i], *sub, *block[i + 1:])
    return None


def warp_rewrite(body: tuple[Stmt, ...], st: Strategy) -> tuple[Stmt, ...] | None:
    """The chunk body with its scalar-accumulation loop split across a warp, or None."""
    if not warp_capable(st.reduce_op, st.acc_dtype):
        return None
    return _warp_block(body, st)


# ---------------------------------------------------------------- nonzero split


def _search(name: str, ptr: str, lo: Expr, hi: Expr, key: Expr, strict: bool) -> list[Stmt]:
    """``name`` = first r in [lo, hi) with ptr[r + 1] > key (strict) / ptr[r] >= key."""
    a, b = f"{name}_lo", f"{name}_hi"
    mid = Var(f"{name}_mid")
    probe = (Bin(BinOp.GT, Load(ptr, Bin(BinOp.ADD, mid, Const(1))), key) if strict
             else Bin(BinOp.GE, Load(ptr, mid), key))
    return [Assign(a, lo), Assign(b, hi),
            While(Bin(BinOp.LT, Var(a), Var(b)), (
                Assign(mid.name, Bin(BinOp.FLOORDIV, Bin(BinOp.ADD, Var(a), Var(b)), Const(2))),
                If(probe, (Assign(b, mid),), (Assign(a, Bin(BinOp.ADD, mid, Const(1))),)))),
            Assign(name, Var(a))]


@dataclass(frozen=True)
class _RowReduction:
    """The shape nonzero split rewrites: the chunk's single row loop ``row`` whose body
    ``blk`` starts ``acc`` (at ``acc_i``), binds the driver's range ``lo``/``hi`` (at
    ``lo_i`` < ``hi_i``), runs one position loop over it (at ``loop_i``) and ends with the
    store of ``acc``."""

    row: For
    blk: tuple[Stmt, ...]
    acc_i: int
    hi_i: int
    loop_i: int
    lo: str
    hi: str


def _row_loop(body: tuple[Stmt, ...]) -> For | None:
    """The chunk body's row loop over ``clo..chi``, when it is its last statement and
    only chunk bounds are computed before it."""
    rows = [k for k, s in enumerate(body) if isinstance(s, For)]
    if len(rows) != 1 or not all(isinstance(s, Assign) and s.var in ("clo", "chi")
                                 or not isinstance(s, Assign | Store | While | If)
                                 for s in body[:rows[0]]):
        return None
    row = body[rows[0]]
    assert isinstance(row, For)
    if row.start != Var("clo") or row.stop != Var("chi") or rows[0] != len(body) - 1:
        return None
    return row


def _match_row_reduction(body: tuple[Stmt, ...], nz_ptr: str) -> _RowReduction | None:
    """The row reduction in a chunk body (see :class:`_RowReduction`), or None."""
    row = _row_loop(body)
    if row is None:
        return None
    blk = row.body

    def assigned(name: str) -> int | None:
        return next((k for k, s in enumerate(blk) if isinstance(s, Assign) and s.var == name),
                    None)

    acc_i = assigned("acc")
    loop_i = next((k for k, s in enumerate(blk) if isinstance(s, For | While)), None)
    if acc_i is None or loop_i is None or not isinstance(blk[loop_i], For):
        return None
    loop = blk[loop_i]
    assert isinstance(loop, For)
    if not (isinstance(loop.start, Var) and isinstance(loop.stop, Var)):
        return None
    lo_n, hi_n = loop.start.name, loop.stop.name
    lo_i, hi_i = assigned(lo_n), assigned(hi_n)
    tail = blk[loop_i + 1:]
    if (lo_i is None or hi_i is None or not acc_i < lo_i < hi_i < loop_i or len(tail) != 1
            or not isinstance(tail[0], Store) or tail[0].value != Var("acc")):
        return None
    lo_s = blk[lo_i]
    assert isinstance(lo_s, Assign)
    aliases = {row.var} | {s.var for s in blk[:lo_i]
                           if isinstance(s, Assign) and s.value == Var(row.var)}
    if not any(lo_s.value == Cast("int64", Load(nz_ptr, Var(a))) for a in aliases):
        return None  # the driver's positions must be indexed by the row itself
    return _RowReduction(row, blk, acc_i, hi_i, loop_i, lo_n, hi_n)


def nzsplit_rewrite(body: tuple[Stmt, ...], st: Strategy,
                    atomics: dict[str, str]) -> tuple[tuple[Stmt, ...], list[Assign], Expr] | None:
    """The chunk body of a row-reduction kernel re-cut by nonzeros: (body, host assigns,
    new work-item count), or None where the kernel does not have that shape."""
    if not warp_capable(st.reduce_op, st.acc_dtype) or st.nz_ptr is None:
        return None
    ad = np.dtype(st.acc_dtype)
    if ad.kind not in "iuf" or ad.itemsize not in (4, 8):
        return None
    m = _match_row_reduction(body, st.nz_ptr)
    if m is None:
        return None
    blk, store, acc_s = m.blk, m.blk[-1], m.blk[m.acc_i]
    assert isinstance(store, Store) and isinstance(acc_s, Assign)
    helper = atomic_helper_name(st, atomics)
    qa, qb, full = Var("ls_qa"), Var("ls_qb"), Var("ls_full")
    lo, hi = Var(m.lo), Var(m.hi)
    new_row_body: list[Stmt] = [
        *blk[:m.acc_i], *blk[m.acc_i + 1:m.hi_i + 1],
        Assign(full.name, Bin(BinOp.AND, Bin(BinOp.GE, lo, qa), Bin(BinOp.LE, hi, qb))),
        Assign(m.lo, Bin(BinOp.MAX, lo, qa)), Assign(m.hi, Bin(BinOp.MIN, hi, qb)),
        Assign("acc", Select(full, acc_s.value, Cast(str(ad), Var("red_id")))),
        *blk[m.hi_i + 1:m.loop_i + 1],
        If(full, (store,), (AtomicCombine(helper, store.array, store.index, Var("acc")),))]
    ptr, n, per = st.nz_ptr, Var(str(st.nz_rows)), Const(st.nz_per_item)
    base, end = Cast("int64", Load(ptr, Const(0))), Cast("int64", Load(ptr, n))
    head: list[Stmt] = [Assign("ls_qa", Bin(BinOp.ADD, base, Bin(BinOp.MUL, Var("t"), per))),
                        Assign("ls_qb", Bin(BinOp.MIN, Bin(BinOp.ADD, qa, per), end))]
    head += _search("clo", ptr, Const(0), n, qa, strict=True)
    head += _search("ls_last", ptr, Var("clo"), n, qb, strict=False)
    head.append(Assign("chi", Var("ls_last")))
    new_body = (*head, For(m.row.var, Var("clo"), Var("chi"), tuple(new_row_body)))
    host: list[Assign] = [
        Assign("ls_nnz", Bin(BinOp.SUB, end, base)),
        Assign("ls_items", Bin(BinOp.FLOORDIV,
                               Bin(BinOp.ADD, Var("ls_nnz"), Const(st.nz_per_item - 1)), per))]
    return new_body, host, Var("ls_items")


# ---------------------------------------------------------------- atomic partials


def _strip_cast(e: Expr) -> Expr:
    return e.a if isinstance(e, Cast) else e


def _atomic_store(s: Store, st: Strategy, helper: str) -> AtomicCombine | None:
    """``out[i] = op(out[i], v)`` (either argument order) as an atomic update by ``v``."""
    v = _strip_cast(s.value)
    if not (isinstance(v, Apply) and v.op is st.reduce_op and len(v.args) == 2):
        return None
    here = Load(s.array, s.index)
    a, b = v.args
    if _strip_cast(a) == here and here not in (b, _strip_cast(b)):
        return AtomicCombine(helper, s.array, s.index, b)
    if _strip_cast(b) == here and here not in (a, _strip_cast(a)):
        return AtomicCombine(helper, s.array, s.index, a)
    return None


def atomic_partials_rewrite(body: tuple[Stmt, ...], st: Strategy,
                            atomics: dict[str, str]) -> tuple[Stmt, ...] | None:
    """A partials chunk body (each chunk reduces its rows into its own slice ``obase`` of
    ``out``) updating one shared output atomically instead, so that every row can be its
    own chunk (a thread per row); None where a store or read of ``out`` has another shape."""
    if not atomic_capable(st.reduce_op, st.acc_dtype):
        return None
    helper = atomic_helper_name(st, atomics)
    # by identity: a store's children never change below, so ``transform`` keeps it
    updates = {id(s): _atomic_store(s, st, helper) for s in walk(body)
               if isinstance(s, Store) and s.array == "out"}
    if any(u is None for u in updates.values()):
        return None

    def atomic(n: Any) -> Any:
        if isinstance(n, Assign) and n.var == "obase":
            return Assign("obase", Const(0))  # one output, not a slice per chunk
        return updates.get(id(n)) or n

    new = transform_block(body, atomic)
    if any(isinstance(n, Load) and n.array == "out" for n in walk(new)):
        return None  # out read outside the updates
    return new


@dataclass(frozen=True)
class Rewritten:
    """A chunk body mapped onto the GPU: the body, its launch mode, host assigns to run
    before the launch, the work-item count replacing ``nch`` (or None), and whether a
    hash workspace replaced its row workspace."""

    body: tuple[Stmt, ...]
    mode: LaunchMode
    host: tuple[Assign, ...] = ()
    count: Expr | None = None
    hashed: bool = False
    atomic: bool = False  # partial outputs replaced by atomic updates of one output


def rewrite(body: tuple[Stmt, ...], st: Strategy, atomics: dict[str, str]) -> Rewritten:
    """Apply ``st`` to a parallel loop's body (falls back to ``thread`` where the body does
    not have the strategy's shape)."""
    hashed = False
    if st.workspace is WorkspaceKind.HASH:
        hashed_body = hash_rewrite(body)
        hashed = hashed_body is not None
        body = hashed_body or body
    if st.kind is LaunchMode.WARP:
        out = warp_rewrite(body, st)
        if out is not None:
            return Rewritten(out, LaunchMode.WARP, hashed=hashed)
    if st.kind is LaunchMode.NZSPLIT:
        res = nzsplit_rewrite(body, st, atomics)
        if res is not None:
            return Rewritten(res[0], LaunchMode.NZSPLIT, tuple(res[1]), res[2], hashed)
    if st.atomic_partials:
        at = atomic_partials_rewrite(body, st, atomics)
        if at is not None:
            return Rewritten(at, LaunchMode.THREAD, hashed=hashed, atomic=True)
    return Rewritten(body, LaunchMode.THREAD, hashed=hashed)
