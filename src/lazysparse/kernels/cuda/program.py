"""From a normal-form query to a :class:`CudaProgram`: the same analysis and lowering as
the CPU backend (``kernels.analysis``, ``kernels.lower``), then CUDA code generation.

Nothing here needs CuPy or a GPU, so the generated source can be inspected and compiled
offline (``kernels.cuda.nvcc``). Tensors may hold NumPy or CuPy storage arrays.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from lazysparse.kernels.analysis import KernelInfo, QueryData, analyze_query
from lazysparse.kernels.cuda import strategies
from lazysparse.kernels.cuda.codegen_cuda import CudaProgram, arg_types_of, generate
from lazysparse.kernels.cuda.render import CudaCodegenError
from lazysparse.kernels.execute import kernel_args, structure_key
from lazysparse.kernels.loop_ir import format_function
from lazysparse.kernels.lower import Lowered, lower
from lazysparse.logic.nodes import Alias, Query


@dataclass(frozen=True)
class LoweredKernel:
    """The loop IR of one query (what ``kernels.execute.kernel_args`` reads) and its hash."""

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
    eligible: frozenset[str]
    stats_ptr: str | None


def plan_query(query: Query, env: dict[Alias, Any]) -> GpuKernelPlan:
    """Analyze and lower a compute query exactly as the CPU backend does."""
    info, data = analyze_query(query, env)
    lw = lower(info, tuple(t.fill_value for t in data.tensors), data.out_fill)
    text = format_function(lw.function)
    kernel = LoweredKernel(info, lw, hashlib.sha256(text.encode()).hexdigest()[:24])
    rop = info.reduce_op
    ad = str(info.acc_dtype) if rop is not None else None
    nz_ptr = nz_rows = None
    eligible = {"thread"}
    if strategies.warp_capable(rop, ad) and lw.output.mode in ("dense", "shared"):
        eligible.add("warp")
    if len(info.loop_order) >= 2 and lw.plans[1].kind == "driver" and len(lw.plans[1].drivers) == 1:
        s = lw.plans[1].drivers[0]
        op = info.operands[s]
        if (len(op.levels) >= 2 and op.levels[0].located
                and op.levels[0].field == info.loop_order[0]
                and not op.levels[1].located and not op.levels[1].chained):
            nz_ptr = f"a{s}_ptr1"
            nz_rows = next(p for p in lw.function.params if p.startswith("n_"))
            if ("warp" in eligible and lw.output.mode == "dense"
                    and lw.output.acc_depth == 1 and lw.parallel):
                eligible.add("nzsplit")
    base = strategies.Strategy("thread", rop, ad, nz_ptr, nz_rows)
    return GpuKernelPlan(kernel, info, data, base, frozenset(eligible), nz_ptr)


def gpu_args(plan: GpuKernelPlan, nworkers: int) -> list[Any]:
    """Kernel arguments in ``Lowerer.params`` order, with the chunk count set for the GPU
    (the loop IR makes ``nthreads * 4`` chunks, or ``nthreads`` for per-chunk partials)."""
    args = kernel_args(plan.kernel, plan.data)  # type: ignore[arg-type]
    params = plan.kernel.lowered.function.params
    if "nthreads" not in params:
        raise ValueError("internal: the lowered kernel has no nthreads parameter")
    args[params.index("nthreads")] = np.int64(max(1, nworkers))
    return args


def program_for(plan: GpuKernelPlan, kind: str = "thread", *,
                args: list[Any] | None = None) -> CudaProgram:
    """The CUDA program of a planned query under strategy ``kind`` (falls back to thread
    where the kernel's shape does not allow ``kind``)."""
    if kind not in ("thread", "warp", "nzsplit"):
        raise ValueError(f"unknown CUDA strategy {kind!r}; expected thread, warp or nzsplit")
    fn = plan.kernel.lowered.function
    args = args if args is not None else gpu_args(plan, 1)
    types = arg_types_of(fn.params, args)
    st = strategies.Strategy(kind, plan.base.reduce_op, plan.base.acc_dtype, plan.base.nz_ptr,
                             plan.base.nz_rows)
    sig = "|".join(f"{p}:{types[p].c}" for p in fn.params)
    digest = hashlib.sha256(f"{plan.kernel.key}|{sig}|{kind}".encode()).hexdigest()[:16]
    try:
        return generate(fn, types, prefix=f"lsk_{digest}", strategy=st)
    except CudaCodegenError as e:
        raise ValueError(f"this kernel cannot run on the CUDA backend: {e}") from e


def cache_key(plan: GpuKernelPlan, args: list[Any], kind: str) -> tuple[Any, ...]:
    """The compiled-module cache key: the structural key, argument dtypes and strategy."""
    fn = plan.kernel.lowered.function
    types = arg_types_of(fn.params, args)
    return (structure_key(plan.info, plan.data), tuple(types[p] for p in fn.params), kind)


def cuda_source(query: Query, env: dict[Alias, Any], kind: str = "thread", *,
                cupy_headers: bool = True) -> str:
    """The complete CUDA translation unit of one compute query (for ``xp.explain`` and
    offline compile checks)."""
    plan = plan_query(query, env)
    return program_for(plan, kind).translation_unit(cupy_headers=cupy_headers)
