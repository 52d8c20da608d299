"""Compile CUDA programs with ``cupy.RawModule`` and run normal-form plans on the GPU.

Modules are cached in memory by (structural key, argument dtypes, strategy); CuPy keeps the
compiled binaries on disk itself (``~/.cupy/kernel_cache``), so a second process does not
run NVRTC again. CuPy is imported inside functions only.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from lazysparse.formats.levels import Compressed, Dense, Singleton
from lazysparse.kernels.cuda import strategies
from lazysparse.kernels.cuda.codegen_cuda import CudaProgram, Launch
from lazysparse.kernels.cuda.device import DeviceTensor, _cupy, device_of
from lazysparse.kernels.cuda.host import Grid, run_steps, to_scalar
from lazysparse.kernels.cuda.program import (
    GpuKernelPlan,
    cache_key,
    gpu_args,
    plan_query,
    program_for,
)
from lazysparse.logic.nodes import Alias, Immediate, Plan, Produces, Query, Table

NVRTC_OPTIONS = ("-std=c++17",)
PARTIAL_CHUNKS = 4096  # chunks of a full reduction (one partial result each)
STATS: dict[str, int] = {"compiled": 0, "memory_hits": 0, "launches": 0}
_MODULES: dict[Any, tuple[CudaProgram, Any]] = {}
_LOCK = threading.Lock()


def compile_program(prog: CudaProgram) -> Any:
    """A ``cupy.RawModule`` of the program's translation unit (compiled lazily by CuPy)."""
    cp = _cupy()
    return cp.RawModule(code=prog.translation_unit(cupy_headers=True), options=NVRTC_OPTIONS)


def choose_strategy(plan: GpuKernelPlan, args: list[Any], params: tuple[str, ...]) -> str:
    """Strategy from the driving level's row lengths (``thread`` when there is none)."""
    if plan.stats_ptr is None or len(plan.eligible) == 1:
        return "thread"
    ptr = args[params.index(plan.stats_ptr)]
    mean, mx = strategies.row_stats(ptr, _cupy())
    return strategies.choose(set(plan.eligible), mean, mx)


def nthreads_arg(plan: GpuKernelPlan) -> int:
    """The ``nthreads`` argument: the loop IR makes ``4 * nthreads`` chunks clamped to the
    outer extent (one row per chunk), or ``nthreads`` per-chunk partials."""
    notes = plan.kernel.lowered.function.notes
    if any("per-chunk partials" in n for n in notes):
        return PARTIAL_CHUNKS
    return 1 << 40  # the loop IR clamps the chunk count to the outer extent: one row each


def run_query_cuda(query: Query, env: dict[Alias, Any], *, strategy: str | None = None
                   ) -> DeviceTensor:
    """Evaluate one compute query on the GPU (operands are :class:`DeviceTensor`)."""
    for a, t in env.items():
        if device_of(t) != "cuda":
            raise ValueError(f"operand {a.name} is on the cpu; the CUDA backend needs every "
                             "operand on device 'cuda' (use x.to_device('cuda'))")
    plan = plan_query(query, env)
    args = gpu_args(plan, nthreads_arg(plan))
    params = plan.kernel.lowered.function.params
    kind = strategy or choose_strategy(plan, args, params)
    key = cache_key(plan, args, kind)
    with _LOCK:
        hit = _MODULES.get(key)
    if hit is None:
        prog = program_for(plan, kind, args=args)
        hit = (prog, compile_program(prog))
        with _LOCK:
            _MODULES[key] = hit
        STATS["compiled"] += 1
    else:
        STATS["memory_hits"] += 1
    prog, module = hit

    def launch(ln: Launch, grid: Grid, kargs: list[Any]) -> None:
        STATS["launches"] += 1
        module.get_function(ln.name)((grid.blocks,), (grid.threads,), tuple(kargs))

    return run_program(plan, prog, args, _cupy(), launch)


def run_program(plan: GpuKernelPlan, prog: CudaProgram, args: list[Any], xp: Any,
                launcher: Any) -> DeviceTensor:
    """Run a program's host steps over array module ``xp`` (launches go to ``launcher``)
    and wrap the result; shared by the CuPy path and the CPU emulation used in tests."""
    params = plan.kernel.lowered.function.params
    res = run_steps(prog, dict(zip(params, args, strict=True)), xp, launcher)
    return assemble_device(plan, res)


def assemble_device(plan: GpuKernelPlan, res: tuple[Any, ...]) -> DeviceTensor:
    """Wrap the result arrays as a device tensor (mirrors ``kernels.execute.assemble``)."""
    info, data, out = plan.info, plan.data, plan.kernel.lowered.output
    spec = info.out_spec
    shape = data.out_shape
    sizes = [shape[m] for m in spec.mode_order]
    fillv = to_scalar(data.out_fill, info.out_dtype)
    if out.mode == "dense":
        return DeviceTensor(shape, [Dense(n) for n in sizes], spec.mode_order, res[0], fillv,
                            spec)
    if out.mode == "shared":
        src = data.tensors[out.shared_slot]  # type: ignore[index]
        return DeviceTensor(shape, list(src.levels), spec.mode_order, res[0], fillv, spec)
    vals = res[-1]
    big = max([int(vals.shape[0]) + 1, *shape], default=0)
    idt = np.dtype(np.int32) if big < 2**31 - 1 else np.dtype(np.int64)
    levels: list[Any] = [Dense(n) for n in sizes[:out.dense_prefix]]
    it = iter(res[:-1])
    for grp in out.groups:
        ptr = next(it).astype(idt, copy=False)
        for j, m in enumerate(grp):
            idx = next(it).astype(idt, copy=False)
            if j == 0:
                levels.append(Compressed(sizes[m], ptr, idx,
                                         unique=spec.level_kinds[m] == "compressed"))
            else:
                levels.append(Singleton(sizes[m], idx))
    return DeviceTensor(shape, levels, spec.mode_order, vals, fillv, spec)


def execute_plan_cuda(plan: Plan, *, strategy: str | None = None) -> tuple[DeviceTensor, ...]:
    """Run a normal-form plan on the GPU; inputs must be device tensors."""
    if not isinstance(plan, Plan):
        raise TypeError(f"execute_plan_cuda expects a Plan, got {type(plan).__name__}")
    env: dict[Alias, Any] = {}
    for body in plan.bodies:
        match body:
            case Query(lhs=lhs, rhs=Table(tns=Immediate(val=t))):
                if not isinstance(t, DeviceTensor):
                    raise ValueError(f"input {lhs.name} is not on device 'cuda' (got "
                                     f"{type(t).__name__}); mixing devices is not allowed")
                env[lhs] = t
            case Query(lhs=lhs):
                env[lhs] = run_query_cuda(body, env, strategy=strategy)
            case Produces(args=args):
                return tuple(env[a] for a in args)
            case _:
                raise ValueError(f"not a normal-form plan statement: {body!r}")
    raise ValueError("plan has no Produces statement")


def clear_cache() -> None:
    """Forget compiled modules (CuPy's own disk cache stays)."""
    with _LOCK:
        _MODULES.clear()


__all__ = ["STATS", "assemble_device", "choose_strategy", "clear_cache", "compile_program",
           "execute_plan_cuda", "nthreads_arg", "run_program", "run_query_cuda"]
