"""From a normal-form query to a :class:`CudaProgram`: the same analysis and lowering as
the CPU backend (``compile.planning.analysis``, ``compile.lowering.kernel``), then CUDA
code generation.

Nothing here needs CuPy or a GPU, so the generated source can be inspected and compiled
offline (``backends.cuda.nvcc``). Tensors may hold NumPy or CuPy storage arrays.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Any

from lazysparse.kernels.backends.cuda import strategies
from lazysparse.kernels.backends.cuda.codegen_cuda import CudaProgram, arg_types_of, generate
from lazysparse.kernels.backends.cuda.render import CudaCodegenError
from lazysparse.kernels.backends.cuda.strategies import LaunchMode
from lazysparse.kernels.backends.cuda.workspaces import WorkspaceKind
from lazysparse.kernels.backends.numba.kernel import kernel_args, structure_key
from lazysparse.kernels.compile.ir.loop_ir import format_function
from lazysparse.kernels.compile.lowering.kernel import Lowered, lower_plan
from lazysparse.kernels.compile.planning.analysis import KernelInfo, QueryData
from lazysparse.kernels.compile.planning.coiterate import LoopKind
from lazysparse.kernels.compile.planning.decisions import QueryDecisions
from lazysparse.kernels.compile.planning.ordering import decide_order
from lazysparse.kernels.compile.planning.output_plan import OutputMode
from lazysparse.kernels.compile.planning.params import Role
from lazysparse.kernels.compile.planning.runners import Runner
from lazysparse.logic.nodes import Alias, Query


class CudaUnsupported(ValueError):
    """The query's kernel uses something the CUDA backend cannot express."""


@dataclass(frozen=True)
class LoweredKernel:
    """The loop IR of one query (what ``backends.execute.kernel_args`` reads) and its hash."""

    info: KernelInfo
    lowered: Lowered
    key: str


@dataclass(frozen=True)
class GpuKernelPlan:
    """What a GPU launch of one query needs: the CPU kernel description it shares (loop IR,
    parameters), the eligible strategies, and where the row statistics come from."""

    kernel: LoweredKernel
    info: KernelInfo
    data: QueryData
    base: strategies.Strategy
    eligible: frozenset[LaunchMode]
    stats_ptr: str | None
    # argument positions of A's ptr and idx, B's ptr and the row width (a SpGEMM)
    hash_operands: tuple[int, int, int, int] | None = None
    partials: bool = False  # a full reduction combining per-chunk partial results
    stats_arg: int | None = None  # the argument position of ``stats_ptr``
    # the query's decisions (``compile.planning.decisions``): its operands sorted where the kernel
    # needs order, the plan lowered here, the runner (a compiled kernel on the GPU)
    decisions: QueryDecisions | None = None


def plan_query(query: Query, env: dict[Alias, Any]) -> GpuKernelPlan:
    """Analyze and lower a compute query exactly as the CPU backend does."""
    d = decide_order(query, env).with_runner(Runner.COMPILED)
    info, data = d.info, d.data
    if info.epilogue is not None:  # optimize(plan, device="cuda") keeps maps separate
        raise CudaUnsupported("a map after a reduction (epilogue) runs on the CPU only")
    # fold=False: the GPU kernel visits every entry a reduction needs instead of counting
    # visits for a host-side fold (docs/kernels.md, "Folding skipped reduction entries");
    # the warp and nonzero-split strategies have no per-lane visit counter to combine
    lw = lower_plan(d.kernel_plan(fold=False))
    if lw.fold is not None:
        raise CudaUnsupported("internal: a folded reduction reached the CUDA backend")
    text = "\n".join(format_function(f) for f in lw.functions)
    kernel = LoweredKernel(info, lw, hashlib.sha256(text.encode()).hexdigest()[:24])
    rop = info.reduce_op
    ad = str(info.acc_dtype) if rop is not None else None
    nz_ptr = nz_rows = None
    eligible = {LaunchMode.THREAD}
    if strategies.warp_capable(rop, ad) and not lw.output.mode.sparse:
        eligible.add(LaunchMode.WARP)
    if (len(info.loop_order) >= 2 and lw.plans[1].kind is LoopKind.DRIVER
            and len(lw.plans[1].drivers) == 1):
        s = lw.plans[1].drivers[0]
        op = info.operands[s]
        if (len(op.levels) >= 2 and op.levels[0].located
                and op.levels[0].field == info.loop_order[0]
                and not op.levels[1].located and not op.levels[1].chained):
            nz_ptr = lw.signature.named(Role.LEVEL_PTR, s, 1)
            nz_rows = lw.signature.named(Role.EXTENT, field=info.loop_order[0])
            if (LaunchMode.WARP in eligible and lw.output.mode is OutputMode.DENSE
                    and lw.output.acc_depth == 1 and lw.parallel):
                eligible.add(LaunchMode.NZSPLIT)
    base = strategies.Strategy(LaunchMode.THREAD, rop, ad, nz_ptr, nz_rows)
    stats_arg = None if nz_ptr is None else lw.signature.position(Role.LEVEL_PTR, s, 1)
    return GpuKernelPlan(kernel, info, data, base, frozenset(eligible), nz_ptr,
                         _hash_operands(info, lw), bool(lw.partials), stats_arg, d)


def _hash_operands(info: KernelInfo, lw: Lowered) -> tuple[int, int, int, int] | None:
    """Gustavson SpGEMM shape (loop i,k,j; A drives k from row i, B drives j from row k,
    row workspace over j): the positions of the arguments that bound a row's distinct
    columns (A's ptr and idx, B's ptr, the extent of j)."""
    if (lw.output.mode is not OutputMode.ROWWS or len(info.loop_order) != 3
            or lw.output.ws_depth != 1):
        return None
    p1, p2 = lw.plans[1], lw.plans[2]
    if (p1.kind is not LoopKind.DRIVER or p2.kind is not LoopKind.DRIVER
            or len(p1.drivers) != 1 or len(p2.drivers) != 1):
        return None
    a, b = info.operands[p1.drivers[0]], info.operands[p2.drivers[0]]
    i, k, j = info.loop_order
    ok = (len(a.levels) == 2 and a.levels[0].located and a.levels[0].field == i
          and a.levels[1].field == k and not a.levels[1].located and not a.levels[1].chained
          and len(b.levels) == 2 and b.levels[0].located and b.levels[0].field == k
          and b.levels[1].field == j and not b.levels[1].located and not b.levels[1].chained)
    if not ok:
        return None
    sig = lw.signature
    return (sig.position(Role.LEVEL_PTR, a.slot, 1), sig.position(Role.LEVEL_IDX, a.slot, 1),
            sig.position(Role.LEVEL_PTR, b.slot, 1), sig.position(Role.EXTENT, field=j))


def gpu_args(plan: GpuKernelPlan) -> list[Any]:
    """The kernel's common arguments, in ``Lowered.params`` order (storage arrays stay on
    their device)."""
    return kernel_args(plan.kernel, plan.data)  # type: ignore[arg-type]


def index_dtype_of(plan: GpuKernelPlan) -> str:
    """The result's index dtype (int32 unless a dimension needs int64), as on the CPU."""
    return "int64" if max(plan.data.out_shape, default=0) >= 2**31 - 1 else "int32"


def program_for(plan: GpuKernelPlan, kind: str = LaunchMode.THREAD, *,
                workspace: str = WorkspaceKind.DENSE,
                args: list[Any] | None = None, atomic: bool = False) -> CudaProgram:
    """The CUDA program of a planned query under strategy ``kind`` (falls back to thread
    where the kernel's shape does not allow ``kind``); ``workspace="hash"`` replaces a
    SpGEMM's dense-row workspace by a hash table (``ls_hcap`` slots, a host argument);
    ``atomic`` replaces per-chunk partial outputs by atomic updates of one output."""
    mode, ws = _launch_mode(kind), _workspace_kind(workspace)
    if ws is WorkspaceKind.HASH and plan.hash_operands is None:
        raise ValueError("hash workspaces apply to row-workspace SpGEMM kernels only")
    lw = plan.kernel.lowered
    args = args if args is not None else gpu_args(plan)
    types = arg_types_of(lw.params, args)
    st = replace(plan.base, kind=mode, workspace=ws, atomic_partials=atomic)
    idt = index_dtype_of(plan)
    sig = "|".join(f"{p}:{types[p].c}" for p in lw.params)
    digest = hashlib.sha256(f"{plan.kernel.key}|{sig}|{idt}|{mode}|{ws}|{atomic}".encode()
                            ).hexdigest()[:16]
    try:
        return generate(lw, types, prefix=f"lsk_{digest}", out_dtype=str(plan.info.out_dtype),
                        strategy=st, index_dtype=idt)
    except CudaCodegenError as e:
        raise CudaUnsupported(f"this kernel cannot run on the CUDA backend: {e}") from e


def _launch_mode(kind: str) -> LaunchMode:
    """The strategy named ``kind`` (``serial`` is no strategy: only ``combine`` runs so)."""
    if kind not in (LaunchMode.THREAD, LaunchMode.WARP, LaunchMode.NZSPLIT):
        raise ValueError(f"unknown CUDA strategy {kind!r}; expected thread, warp or nzsplit")
    return LaunchMode(kind)


def _workspace_kind(workspace: str) -> WorkspaceKind:
    """The row workspace named ``workspace``."""
    try:
        return WorkspaceKind(workspace)
    except ValueError:
        raise ValueError(f"unknown workspace {workspace!r}; expected dense or hash") from None


def cache_key(plan: GpuKernelPlan, args: list[Any], kind: str,
              workspace: str = "dense", atomic: bool = False) -> tuple[Any, ...]:
    """The compiled-module cache key: the structural key, argument dtypes and strategy."""
    params = plan.kernel.lowered.params
    types = arg_types_of(params, args)
    return (structure_key(plan.info, plan.data), tuple(types[p] for p in params),
            index_dtype_of(plan), kind, workspace, atomic)


def hash_capacity_for(plan: GpuKernelPlan, args: list[Any], xp: Any) -> tuple[int, int]:
    """(table capacity, row width) of a SpGEMM's hash workspace for these arguments."""
    from lazysparse.kernels.backends.cuda.workspaces import hash_capacity, spgemm_row_bound

    if plan.hash_operands is None:
        raise ValueError("not a row-workspace SpGEMM kernel")
    a_ptr, a_idx, b_ptr, width = (args[i] for i in plan.hash_operands)
    bound = spgemm_row_bound(a_ptr, a_idx, b_ptr, xp)
    return hash_capacity(bound, int(width)), int(width)


def cuda_source(query: Query, env: dict[Alias, Any], kind: str = "thread", *,
                cupy_headers: bool = True) -> str:
    """The complete CUDA translation unit of one compute query (for ``xp.explain`` and
    offline compile checks)."""
    plan = plan_query(query, env)
    return program_for(plan, kind).translation_unit(cupy_headers=cupy_headers)
