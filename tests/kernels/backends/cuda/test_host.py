"""The host side of CUDA programs: expression evaluation, launch geometry, and the step
runner (with NumPy standing in for CuPy and a recording launcher)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from lazysparse.kernels.backends.cuda import host
from lazysparse.kernels.backends.cuda.codegen_cuda import (
    CudaProgram,
    HostAlloc,
    HostAssign,
    HostReturn,
    HostScan,
    HostStore,
    Launch,
    Pool,
)
from lazysparse.kernels.backends.cuda.host import Grid, grid_for, host_eval, run_steps, to_scalar
from lazysparse.kernels.backends.cuda.strategies import LaunchMode
from lazysparse.kernels.compile.ir.loop_ir import Bin, Cast, Const, Load, Not, Select, Var


def test_host_eval_index_arithmetic() -> None:
    env = {"n": 10, "a": np.array([3, 5, 9], dtype=np.int32)}
    e = Bin("max", Const(1), Bin("min", Bin("*", Var("n"), Const(4)), Const(7)))
    assert host_eval(e, env) == 7
    assert host_eval(Bin("//", Var("n"), Const(3)), env) == 3
    v = host_eval(Cast("int64", Load("a", Const(2))), env)
    assert v == 9 and isinstance(v, int)
    assert host_eval(Select(Not(Bin("<", Var("n"), Const(3))), Const(1), Const(2)), env) == 1


def test_host_eval_value_casts() -> None:
    v = host_eval(Cast("float32", Var("x")), {"x": 1.5})
    assert v.dtype == np.float32 and v == 1.5
    assert to_scalar(2 + 3j, "float64") == 2.0
    assert to_scalar(300, "uint8") == np.uint8(44)


def test_grid_geometry() -> None:
    ln = Launch("k", LaunchMode.THREAD, Const(0), (), ())
    g = grid_for(ln, 1000, {})
    assert g.workers == g.blocks * g.threads and 1000 <= g.workers < 1000 + host.BLOCK
    warp = grid_for(Launch("k", LaunchMode.WARP, Const(0), (), ()), 10, {})
    assert warp.threads * warp.blocks >= 320 and warp.workers * 32 == warp.threads * warp.blocks
    assert grid_for(Launch("k", LaunchMode.SERIAL, Const(0), (), ()), 10, {}) == Grid(1, 1, 1)
    nz = grid_for(Launch("k", LaunchMode.NZSPLIT, Const(0), (), ()), 5000, {})
    assert nz.threads == host.NZ_BLOCK


def test_pools_bound_the_workers() -> None:
    pool = Pool("ws", Var("n"), "float64", None)
    ln = Launch("k", LaunchMode.THREAD, Const(0), (), (pool,))
    n = 10_000_000  # 80 MB per worker
    g = grid_for(ln, 1000, {"n": n})
    budget = host.POOL_BYTES // (n * 8)
    assert budget <= g.workers == g.blocks * g.threads < budget + host.BLOCK


def test_run_steps_executes_the_schedule() -> None:
    calls: list[tuple[str, Grid, list[Any]]] = []

    def launcher(ln: Launch, grid: Grid, args: list[Any]) -> None:
        calls.append((ln.name, grid, args))
        args[0][:] = np.arange(args[0].shape[0])  # "kernel": cnt[t] = t

    prog = CudaProgram("p", "", (
        HostAssign("m", Bin("+", Var("n"), Const(1))),
        HostAlloc("cnt", Var("n"), "int64", Const(0)),
        Launch("p_k0", LaunchMode.THREAD, Var("n"), ("cnt", "scale", "ws__pool"),
               (Pool("ws", Const(4), "bool", Const(False)),), ("", "float32", "")),
        HostAlloc("ptr", Var("m"), "int64", Const(0)),
        HostScan("ptr", "cnt", Var("n")),
        HostAssign("tot", Load("ptr", Var("n"))),
        HostAlloc("vals", Var("tot"), "float64", None),
        HostStore("ptr", Const(0), Const(0)),
        HostReturn(("ptr", "vals")),
    ), ("p_k0",), LaunchMode.THREAD)
    ptr, vals = run_steps(prog, {"n": 5, "scale": 2.0}, np, launcher)
    np.testing.assert_array_equal(ptr, [0, 0, 1, 3, 6, 10])
    assert vals.shape == (10,)
    (name, grid, args), = calls
    assert name == "p_k0" and grid.workers == host.BLOCK  # one block: every thread a worker
    assert args[1].dtype == np.float32  # scalar arguments typed as the kernel declares
    assert args[2].shape == (4 * grid.workers,) and not args[2].any()  # the pool


def test_empty_launches_are_skipped() -> None:
    prog = CudaProgram("p", "", (Launch("k", LaunchMode.THREAD, Var("n"), (), ()),
                                 HostReturn(("n",))), ("k",), LaunchMode.THREAD)
    assert run_steps(prog, {"n": 0}, np, lambda *a: pytest.fail("launched")) == (0,)


def test_program_without_return_is_an_error() -> None:
    with pytest.raises(ValueError, match="no return"):
        run_steps(CudaProgram("p", "", (), (), LaunchMode.THREAD), {}, np, lambda *a: None)
