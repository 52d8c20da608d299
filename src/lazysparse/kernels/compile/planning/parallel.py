"""Which loop of a kernel runs in parallel, and into how many chunks a call splits it.

Two decisions, one static and one per call:

- :func:`choose_parallel` (at lowering, from the kernel's structure only): the outermost
  loop is the parallel one. Its chunks write disjoint outputs when its field is an output
  field (rows of a dense result, rows of a sparse result appended per chunk, the entries of
  a shared pattern), or per-chunk *partials* combined afterwards when the field is reduced
  into a dense output (Aᵀx scatters into the whole output from every row; a full
  reduction into a scalar): each chunk reduces into its own copy, preset to the
  reduction's identity, and ``combine`` folds ``init ⊕ partial_0 ⊕ … ⊕ partial_{nch-1}``.
- :func:`chunk_count` (per call, from the data's sizes): one chunk unless the loop is big
  enough to pay for the threads; partials only while the work is several times the
  partials' size (each costs a fill and a read in ``combine``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from lazysparse.kernels.compile.ir.build import C, V, add, cast
from lazysparse.kernels.compile.ir.loop_ir import (
    Assign,
    Bin,
    BinOp,
    Const,
    Expr,
    For,
    Function,
    Load,
    Stmt,
    Store,
)
from lazysparse.kernels.compile.planning.analysis import QueryData
from lazysparse.kernels.compile.planning.coiterate import LoopKind
from lazysparse.kernels.compile.planning.output_plan import OutputMode

# per-call thresholds (see chunk_count)
PARALLEL_MIN_WORK = 1 << 15  # stored entries visited: below, the thread hand-off dominates
CHUNKS_PER_THREAD = 4  # disjoint chunks: workers take the next one (uneven rows balance)
PARTIALS_WORK_PER_OUTPUT = 2  # work per partial entry (per chunk) that pays for its copy
SMALL_PARTIALS = 1 << 16  # partial entries in all that stay cheap (more chunks, balanced)
COMBINE_MIN_OUTPUT = 1 << 15  # output entries from which combine itself runs in chunks

class ParallelMode(StrEnum):
    """How the outermost loop's chunks share the work."""

    SEQUENTIAL = "sequential"  # one chunk, in order
    DISJOINT = "disjoint"  # each chunk writes its own outputs
    PARTIALS = "partials"  # each chunk reduces into its own copy of a dense output

    def note(self, why: str) -> str:
        """The kernel-notes line for this mode, decided by ``why``."""
        head = {ParallelMode.SEQUENTIAL: "sequential",
                ParallelMode.DISJOINT: "chunks run in parallel",
                ParallelMode.PARTIALS: "chunks run in parallel into per-chunk partials"}
        return f"{head[self]} ({why})"


@dataclass(frozen=True)
class ParallelChoice:
    """How the outermost loop is split among threads (see :class:`ParallelMode`); ``why``
    says which structure decided it (shown in the kernel's notes)."""

    mode: ParallelMode
    why: str

    @property
    def parallel(self) -> bool:
        """Whether the outermost loop may run as several chunks at once."""
        return self.mode is not ParallelMode.SEQUENTIAL

    @property
    def partials(self) -> bool:
        """Whether chunks reduce into per-chunk partials combined afterwards."""
        return self.mode is ParallelMode.PARTIALS

    def note(self) -> str:
        """The line the loop IR and ``xp.explain`` show."""
        return self.mode.note(self.why)


@dataclass(frozen=True)
class FieldExtent:
    """The outermost loop ranges over field ``field``; ``expr`` is its extent argument."""

    field: str
    expr: Expr

    def count(self, data: QueryData) -> int:
        """Iterations on ``data``."""
        return int(data.extents[self.field])


@dataclass(frozen=True)
class PositionsExtent:
    """The outermost loop visits operand ``slot``'s level-0 positions; ``expr`` counts them
    over the kernel arguments."""

    slot: int
    expr: Expr

    def count(self, data: QueryData) -> int:
        """Iterations on ``data``."""
        ptr = data.tensors[self.slot].levels[0].ptr
        return int(ptr[1]) - int(ptr[0])


@dataclass(frozen=True)
class UnitExtent:
    """A kernel without loops: one iteration."""

    expr: Expr = Const(1)

    def count(self, data: QueryData) -> int:
        """Iterations on ``data``."""
        return 1


OuterExtent = FieldExtent | PositionsExtent | UnitExtent


def choose_parallel(info: Any, plans: tuple[Any, ...], out: Any) -> ParallelChoice:
    """The parallel loop of a kernel (``info``: its ``KernelInfo``; ``plans``: the
    co-iteration plan per loop; ``out``: its ``OutputPlan``). Only the outermost loop is
    split: inner loops are short (a row's entries) and would pay the hand-off per row."""
    seq = ParallelMode.SEQUENTIAL
    if not plans:
        return ParallelChoice(seq, "no loops")
    if plans[0].kind is LoopKind.MERGE:
        return ParallelChoice(seq, "the outer loop merges several operands")
    f0 = info.loop_order[0]
    if f0 in info.out_fields:
        if out.mode.workspace and out.ws_depth == 0:
            return ParallelChoice(seq, "one workspace spans the outer loop")
        return ParallelChoice(ParallelMode.DISJOINT, f"chunks of {f0} write disjoint outputs")
    rop = info.reduce_op
    if out.mode is not OutputMode.DENSE:
        return ParallelChoice(seq, f"{f0} is reduced into a sparse output")
    if rop is None or rop.identity_for(info.acc_dtype) is None:
        return ParallelChoice(seq, f"{f0} is reduced by an operator with no identity to "
                                   "preset partials with")
    return ParallelChoice(ParallelMode.PARTIALS, f"{f0} is reduced")


def combine_functions(reduce: Callable[[Expr, Expr], Expr], acc_dtype: np.dtype
                      ) -> tuple[Function, Function]:
    """``res[o] = init ⊕ partial_0[o] ⊕ … ⊕ partial_{nch-1}[o]`` (partial ``t`` at
    ``out[t * osize:]``) as ``combine`` over every ``o`` (one call; the GPU runs one thread
    per entry) and ``combine_range`` over chunk ``t`` of ``nct`` of the entries (the CPU
    host runs those on its threads: for Aᵀx, folding the partials reads as much memory as
    the kernel writes). ``reduce(acc, value)`` is the kernel's reduction."""
    od = str(acc_dtype)
    body: list[Stmt] = [Assign("acc", cast(od, V("init"), acc_dtype))]
    body.append(For("t", C(0), V("nch"), (Assign("acc", reduce(
        V("acc"), Load("out", add(Bin(BinOp.MUL, V("t"), V("osize")), V("o"))))),)))
    body.append(Store("res", V("o"), V("acc")))
    params = ("out", "res", "nch", "osize", "init")
    note = "res[o] = init (+) partials of every chunk"
    whole = Function("combine", params, (For("o", C(0), V("osize"), tuple(body)),), False,
                     (note,))

    def split(k: Expr) -> Expr:
        return Bin(BinOp.FLOORDIV, Bin(BinOp.MUL, k, V("osize")), V("nct"))

    rng = Function("combine_range", (*params, "u", "nct"),
                   (Assign("olo", split(V("u"))), Assign("ohi", split(add(V("u"), C(1)))),
                    For("o", V("olo"), V("ohi"), tuple(body))), False,
                   (note + ", for o in chunk u of nct",))
    return whole, rng


def outer_extent(lw: Any, data: QueryData) -> int:
    """Iterations of the outermost loop (``lw``: the kernel's ``Lowered``)."""
    return lw.extent0.count(data)


def stored_work(data: QueryData) -> int:
    """A lower bound on the entries a call visits: the largest operand's stored values
    (a driver visits each of its positions; a dense operand is visited in full)."""
    return max((int(t.values.shape[0]) for t in data.tensors), default=0)


def chunk_count(lw: Any, data: QueryData, osize: int, nthreads: int,
                min_iterations: int) -> int:
    """How many chunks one call splits the outermost loop into (1: it runs in order).

    Parallel when the loop has ``min_iterations`` iterations, or at least two and
    ``PARALLEL_MIN_WORK`` stored entries below it. Disjoint chunks: ``CHUNKS_PER_THREAD``
    per thread. Partials: one per thread (``CHUNKS_PER_THREAD`` when all partials together
    stay under ``SMALL_PARTIALS`` entries), and only as many as leave each partial entry
    ``PARTIALS_WORK_PER_OUTPUT`` entries of work: Aᵀx with 5 stored entries per row and
    column splits in two, a row sum into a scalar in eight, a column sum of a short wide
    matrix (as many outputs as entries) not at all."""
    if not lw.parallel or nthreads <= 1:
        return 1
    ext = outer_extent(lw, data)
    work = max(ext, stored_work(data))
    if ext < 2 or (ext < min_iterations and work < PARALLEL_MIN_WORK):
        return 1
    if not lw.partials:
        return max(1, min(nthreads * CHUNKS_PER_THREAD, ext))
    per = CHUNKS_PER_THREAD if osize * nthreads * CHUNKS_PER_THREAD <= SMALL_PARTIALS else 1
    nch = min(nthreads * per, ext, work // max(1, PARTIALS_WORK_PER_OUTPUT * osize))
    return nch if nch > 1 else 1


def combine_count(osize: int, nthreads: int) -> int:
    """Chunks of the output range that ``combine`` splits into (each folds the partials of
    its own output entries): one per thread for a large output, else one."""
    return max(1, min(nthreads, osize // COMBINE_MIN_OUTPUT))


__all__ = ["FieldExtent", "OuterExtent", "ParallelChoice", "ParallelMode", "PositionsExtent",
           "UnitExtent", "choose_parallel", "chunk_count", "combine_count",
           "outer_extent", "stored_work"]
