"""Lower a normal-form query (as a :class:`KernelInfo`) to loop-IR :class:`Function` s.

The kernel plan (:mod:`compile.planning.kernel_plan`) decides how each loop iterates and
how the result is written; this module assembles the chunk functions from it: per phase, a
:class:`LowerContext`, the output strategy of the plan's ``OutputMode``
(:mod:`compile.lowering.outputs`, :mod:`compile.lowering.workspaces`) and the loop nest
(:mod:`compile.lowering.loop_nest`). The outermost loop is split into chunks run in
parallel when chunks write disjoint outputs, or into per-chunk partials for a reduction
(:mod:`compile.planning.parallel` decides).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from lazysparse.kernels.compile.ir.build import I64, C, OpState, State, V, add
from lazysparse.kernels.compile.ir.loop_ir import (
    Assign,
    Bin,
    BinOp,
    Cast,
    Expr,
    Function,
    Load,
    Stmt,
    While,
)
from lazysparse.kernels.compile.lowering.context import LowerContext
from lazysparse.kernels.compile.lowering.epilogue import epilogue_function
from lazysparse.kernels.compile.lowering.loop_nest import LoopNest
from lazysparse.kernels.compile.lowering.outputs import (
    AppendOutput,
    DenseOutput,
    OutputLowering,
    SharedOutput,
)
from lazysparse.kernels.compile.lowering.workspaces import (
    HashWorkspaceOutput,
    RowWorkspaceOutput,
    SortMergeOutput,
)
from lazysparse.kernels.compile.planning.analysis import KernelInfo
from lazysparse.kernels.compile.planning.coiterate import LevelPlan, LoopKind
from lazysparse.kernels.compile.planning.kernel_plan import (
    EntryBound,
    EpiloguePlace,
    KernelPlan,
    append_bounds,
    plan_kernel,
    workspace_bound,
)
from lazysparse.kernels.compile.planning.output_plan import OutputMode, OutputPlan
from lazysparse.kernels.compile.planning.parallel import (
    FieldExtent,
    OuterExtent,
    ParallelChoice,
    PositionsExtent,
    UnitExtent,
    combine_functions,
)
from lazysparse.kernels.compile.planning.params import KernelParams, kernel_params
from lazysparse.kernels.compile.planning.stored_fill import FillTest

# the output strategy of each output mode
OUTPUTS: dict[OutputMode, type[OutputLowering]] = {
    OutputMode.DENSE: DenseOutput,
    OutputMode.SHARED: SharedOutput,
    OutputMode.APPEND: AppendOutput,
    OutputMode.ROWWS: RowWorkspaceOutput,
    OutputMode.HASHWS: HashWorkspaceOutput,
    OutputMode.ISM: SortMergeOutput,
}


@dataclass(frozen=True)
class Lowered:
    """The loop IR of one kernel with the decisions that shaped it."""

    functions: tuple[Function, ...]
    plans: tuple[LevelPlan, ...]
    output: OutputPlan
    choice: ParallelChoice  # which loop runs in parallel, and how (compile.planning.parallel)
    signature: KernelParams  # the leading parameters of every chunk function, with roles
    extent0: OuterExtent  # how the host computes the outermost loop's iterations
    bounds: tuple[EntryBound, ...] | None  # see plan.append_bounds
    # loops that skip entries whose value the host folds in afterwards (from per-output
    # visit counts, ``ocnt``); None when the kernel visits everything it must
    fold: tuple[int, ...] | None = None
    # a row workspace's bound on its entries (see plan.workspace_bound): (a, la, b)
    ws_bound: tuple[int, int, int] | None = None
    # the fill phase stores each dense output position's end in the first sparse group
    # (``cntpd[od] = cnt0``) rather than its entry count (see AppendOutput.around_coord)
    row_ends: bool = False
    # where the epilogue runs
    epilogue: EpiloguePlace | None = None
    # entries equal to the result fill are not stored (``compile.planning.stored_fill``): the fill
    # phase tests each one; a shared pattern is checked by the host
    drop_fill: FillTest | None = None

    @property
    def params(self) -> tuple[str, ...]:
        """The leading parameters' names (the loop IR's variables), in order."""
        return self.signature.names

    @property
    def parallel(self) -> bool:
        """Whether the outermost loop may run as several chunks at once."""
        return self.choice.parallel

    @property
    def partials(self) -> bool:
        """Whether chunks reduce into per-chunk partials that ``combine`` folds."""
        return self.choice.partials


# ---------------------------------------------------------------------- chunk bounds


def _root(info: KernelInfo) -> State:
    return State({o.slot: OpState() for o in info.operands}, {})


def _outer_range(ctx: LowerContext) -> tuple[list[Stmt], tuple[Expr, Expr] | None]:
    """The outermost loop's whole range when a driver's positions give it."""
    lp = ctx.plans[0]
    if lp.kind is not LoopKind.DRIVER:
        return [], None
    stm, lo, hi = ctx.level_range(lp.drivers[0], _root(ctx.info))
    return stm, (lo, hi)


def chunk_bounds(ctx: LowerContext) -> tuple[list[Stmt], tuple[Expr, Expr] | None]:
    """Statements and bounds of chunk ``t`` of ``nch`` of the outermost loop (a driver's
    chunks start past runs of an equal coordinate); None: the loop's own range."""
    if ctx.K == 0:
        return [], None
    lp = ctx.plans[0]
    pre, rng = _outer_range(ctx)
    if not ctx.plan.choice.parallel or lp.kind is LoopKind.MERGE:
        return pre, rng
    lo0, hi0 = rng if rng is not None else (C(0), ctx.extent(lp.field))
    span = Bin(BinOp.SUB, hi0, lo0)
    seek = lp.kind is LoopKind.DRIVER and not ctx.unique(lp.drivers[0], 0)

    def at(t: Expr, name: str) -> list[Stmt]:
        share = Bin(BinOp.FLOORDIV, Bin(BinOp.MUL, t, span), V("nch"))
        res: list[Stmt] = [Assign(name, add(lo0, share))]
        if seek:
            s, cur = lp.drivers[0], V(name)
            same = Bin(BinOp.EQ, ctx.crd(s, 0, cur), ctx.crd(s, 0, Bin(BinOp.SUB, cur, C(1))))
            inside = Bin(BinOp.AND, Bin(BinOp.GT, cur, lo0), Bin(BinOp.LT, cur, hi0))
            res.append(While(Bin(BinOp.AND, inside, same), (Assign(name, add(cur, C(1))),)))
        return res

    stm = pre + at(V("t"), "clo") + at(add(V("t"), C(1)), "chi")
    return stm, (V("clo"), V("chi"))


def extent0(ctx: LowerContext) -> OuterExtent:
    """Iterations of the outermost loop: how the host counts them and their expression
    over the kernel arguments."""
    if ctx.K == 0:
        return UnitExtent()
    lp = ctx.plans[0]
    if lp.kind is LoopKind.RANGE:
        return FieldExtent(lp.field, ctx.extent(lp.field))
    s = lp.drivers[0]
    ptr = ctx.arr(s, "ptr", 0)
    return PositionsExtent(s, Bin(BinOp.SUB, Cast(I64, Load(ptr, C(1))),
                                  Cast(I64, Load(ptr, C(0)))))


# ---------------------------------------------------------------------- functions


def phase_body(ctx: LowerContext, output: OutputLowering) -> list[Stmt]:
    """The body run for one chunk ``t`` of ``nch`` in ``ctx``'s phase."""
    bstm, bounds = chunk_bounds(ctx)
    body: list[Stmt] = [*bstm, *output.chunk_start()]
    if ctx.plan.partials:
        body.append(Assign("obase", Bin(BinOp.MUL, V("t"), V("osize"))))
    body += LoopNest(ctx, output).nest(0, _root(ctx.info), bounds)
    return body + output.chunk_end()


def _notes(plan: KernelPlan) -> tuple[str, ...]:
    out = plan.output
    ws = f" (workspace at loop {out.ws_depth})" if out.ws_depth is not None else ""
    return (f"loop order {plan.info.loop_order}",
            f"output {plan.info.out_spec.name} via {out.mode}{ws}", plan.choice.note())


def kernel_functions(ctx: LowerContext, signature: KernelParams) -> tuple[Function, ...]:
    """The kernel's chunk functions: ``chunk`` (in-place outputs, plus ``combine`` for
    per-chunk partials and ``finalize`` for an epilogue after them) or ``count`` then
    ``fill`` (sparse outputs). The host runs each over chunks ``t = 0..nch-1``, in parallel
    threads when the plan's choice is parallel (``signature``: the leading parameters)."""
    plan = ctx.plan
    common = signature.names
    fns: list[Function] = []
    for name, phase in OUTPUTS[plan.output.mode].functions:
        pctx = ctx.with_phase(phase)
        output = OUTPUTS[plan.output.mode](pctx)
        fns.append(Function(name, common + output.params(), tuple(phase_body(pctx, output)),
                            plan.choice.parallel, _notes(plan)))
    if plan.partials:
        fns += combine_functions(ctx.reduce, plan.info.acc_dtype)
    if plan.epilogue is EpiloguePlace.FINALIZE:
        fns.append(epilogue_function(plan.info, ctx.cvar, common))
    return tuple(fns)


def lower(info: KernelInfo, fills: tuple[Any, ...], out_fill: Any,
          fold: bool = False, hash_ws: bool = False, drop_fill: bool = False) -> Lowered:
    """The loop IR of a kernel plus the co-iteration and output decisions behind it.

    ``fold``: let reductions skip entries whose value is a non-identity constant and count
    visits instead (the host folds the skipped ones in; see ``coiterate.fold_levels``).
    ``drop_fill``: computed entries equal to the result fill are not stored (the fill phase
    tests them; its host compacts; see ``compile.planning.stored_fill``)."""
    return lower_plan(plan_kernel(info, fills, out_fill, fold, hash_ws, drop_fill))


def lower_plan(plan: KernelPlan) -> Lowered:
    """The loop IR of the kernel ``plan`` decides (``compile.planning.decisions``: made once)."""
    ctx = LowerContext.of(plan)
    sig = kernel_params(plan.info, plan.output, ctx.cvar)
    return Lowered(kernel_functions(ctx, sig), plan.levels, plan.output, plan.choice, sig,
                   extent0(ctx), append_bounds(plan), plan.fold, workspace_bound(plan),
                   plan.row_count_depth() is not None, plan.epilogue, plan.drop_fill)


__all__ = ["OUTPUTS", "Lowered", "kernel_functions", "lower", "lower_plan", "replace"]
