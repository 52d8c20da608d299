"""Run a :class:`CudaProgram`'s host steps over an array module (CuPy on a GPU; NumPy in
tests), handing each kernel launch to a launcher callback.

Index arithmetic is done in Python ints; values are NumPy scalars of the parameter's dtype,
which is what ``cupy.RawKernel`` expects for scalar arguments.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from lazysparse.kernels.backends.cuda.codegen_cuda import (
    CudaProgram,
    HostAlloc,
    HostAssign,
    HostReturn,
    HostScan,
    HostStore,
    Launch,
)
from lazysparse.kernels.backends.cuda.strategies import LaunchMode
from lazysparse.kernels.compile.ir.loop_ir import Bin, Cast, Const, Expr, Load, Not, Select, Var

POOL_BYTES = 512 * 2**20  # device memory for per-worker workspaces of one launch
BLOCK = 128  # threads per block (nonzero-split uses NZ_BLOCK)
NZ_BLOCK = 512
MAX_WORKERS = 1 << 20  # grid-stride loops cover the rest


def to_scalar(v: Any, dtype: Any) -> Any:
    """A NumPy scalar of ``dtype`` (complex to real keeps the real part)."""
    d = np.dtype(dtype)
    arr = np.asarray(v)
    if arr.dtype.kind == "c" and d.kind != "c":
        arr = arr.real
    with np.errstate(all="ignore"):
        return arr.astype(d)[()]


def host_eval(e: Expr, env: dict[str, Any]) -> Any:
    """Evaluate a host-step expression (ints stay Python ints)."""
    match e:
        case Var(name):
            return env[name]
        case Const(value, dtype):
            return to_scalar(value, dtype) if dtype else value
        case Load(array, index):
            v = env[array][int(host_eval(index, env))]
            return v.item() if hasattr(v, "item") else v
        case Bin(op, a, b):
            return op.evaluate(host_eval(a, env), host_eval(b, env))
        case Not(a):
            return not host_eval(a, env)
        case Select(c, a, b):
            return host_eval(a, env) if host_eval(c, env) else host_eval(b, env)
        case Cast(dtype, a):
            v = host_eval(a, env)
            if np.dtype(dtype) == np.int64 and isinstance(v, int | np.integer):
                return int(v)
            return to_scalar(v, dtype)
    raise ValueError(f"expression {e!r} cannot be evaluated on the host")


@dataclass(frozen=True)
class Grid:
    """A launch configuration: blocks, threads per block, and the workers (threads, or warps
    for warp kernels) it launches; pools hold one slice per worker."""

    blocks: int
    threads: int
    workers: int


def grid_for(launch: Launch, count: int, env: dict[str, Any]) -> Grid:
    """Blocks and threads for ``count`` work items (pools bound the number of workers)."""
    count = max(int(count), 0)
    mode = launch.mode
    if mode is LaunchMode.SERIAL:
        return Grid(1, 1, 1)
    workers = min(max(count, 1), MAX_WORKERS)
    per = sum(int(host_eval(p.size, env)) * np.dtype(p.dtype).itemsize for p in launch.pools)
    if per:
        workers = max(1, min(workers, POOL_BYTES // per))
    lanes = mode.lanes
    block = NZ_BLOCK if mode is LaunchMode.NZSPLIT else BLOCK
    blocks = max(1, math.ceil(workers * lanes / block))
    # every launched thread (warp) is a worker with its own pool slice, the last block's too
    return Grid(blocks, block, blocks * block // lanes)


Launcher = Callable[[Launch, Grid, list[Any]], None]


def run_steps(prog: CudaProgram, env: dict[str, Any], xp: Any,
              launcher: Launcher) -> tuple[Any, ...]:
    """Execute the host schedule; ``env`` holds the kernel's named arguments."""
    env = dict(env)
    for st in prog.steps:
        match st:
            case HostAssign(var, value):
                env[var] = host_eval(value, env)
            case HostAlloc(var, size, dtype, fill):
                n = int(host_eval(size, env))
                if fill is None:
                    env[var] = xp.empty(n, dtype=dtype)
                else:
                    env[var] = xp.full(n, to_scalar(host_eval(fill, env), dtype), dtype=dtype)
            case HostStore(array, index, value):
                arr = env[array]
                arr[int(host_eval(index, env))] = to_scalar(host_eval(value, env), arr.dtype)
            case HostScan(dst, src, n):
                k = int(host_eval(n, env))
                d = env[dst]
                if k:
                    d[1:k + 1] = d[0] + xp.cumsum(env[src][:k], dtype=d.dtype)
            case Launch() as ln:
                count = int(host_eval(ln.count, env))
                if count <= 0:
                    continue
                grid = grid_for(ln, count, env)
                for p in ln.pools:
                    size = int(host_eval(p.size, env)) * grid.workers
                    if p.fill is None:
                        env[f"{p.var}__pool"] = xp.empty(size, dtype=p.dtype)
                    else:
                        env[f"{p.var}__pool"] = xp.full(
                            size, to_scalar(host_eval(p.fill, env), p.dtype), dtype=p.dtype)
                args = [env[a] if not d else to_scalar(env[a], d)
                        for a, d in zip(ln.args, ln.arg_dtypes, strict=True)]
                launcher(ln, grid, args)
            case HostReturn(values):
                return tuple(env[v] for v in values)
    raise ValueError("CUDA program has no return step")
