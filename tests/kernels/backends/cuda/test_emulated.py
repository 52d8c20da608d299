"""Differential tests of the generated CUDA, executed on the CPU through the host-C++
emulation shim (tests/kernels/backends/cuda/emulator.py) against the reference interpreter.

Runs everywhere a host C++ compiler exists; no GPU, no CuPy. The very source CuPy would
compile is executed (only the CUDA built-ins are shimmed), through the same host schedule
(``backends.cuda.host.run_steps``) the GPU path uses, with NumPy in place of CuPy.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lazysparse.formats.device import DeviceTensor
from lazysparse.kernels.backends.cuda.codegen_cuda import HostAlloc
from lazysparse.kernels.backends.cuda.program import plan_query, program_for
from lazysparse.kernels.backends.cuda.runtime import launch_args, run_program
from lazysparse.logic import interpret
from tests.conftest import examples
from tests.kernels.backends.cuda.cases import (
    CASES,
    HASH_CASES,
    STRATEGIES,
    Case,
    all_built,
    assert_same,
    build,
    dense_result,
    random_spmv,
    spgemm,
)
from tests.kernels.backends.cuda.emulator import CXX, EmulatedModule

pytestmark = pytest.mark.skipif(CXX is None, reason="no host C++ compiler")

_MOD: list[EmulatedModule] = []


def module() -> EmulatedModule:
    """All programs of all cases, compiled once."""
    if not _MOD:
        _MOD.append(EmulatedModule([b.program for b in all_built()]))
    return _MOD[0]


@pytest.mark.parametrize("kind", STRATEGIES)
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_generated_cuda_matches_interpreter(case: Case, kind: str) -> None:
    b = next(x for x in all_built() if x.case is case and x.kind == kind
             and x.program.workspace == "dense" and not x.atomic)
    got = run_program(b.gpu, b.program, b.args, np, module().launcher(workers=3))
    assert_same(dense_result(got), np.asarray(interpret(b.plan)[0].to_numpy()))


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize("name", HASH_CASES)
def test_hash_workspace_matches_interpreter(name: str, workers: int) -> None:
    b = next(x for x in all_built() if x.case.name == name and x.program.workspace == "hash")
    assert "ls_hash_probe" in b.program.source and "ws_mark" not in b.program.source
    got = run_program(b.gpu, b.program, b.args, np, module().launcher(workers=workers),
                      hash_capacity=b.hash_capacity)
    assert_same(dense_result(got), np.asarray(interpret(b.plan)[0].to_numpy()))


@pytest.mark.parametrize("name", ["rowmax_f64", "rowprod_i16", "rowsum_nan_fill",
                                  "rowmax_keepdims"])
def test_unfolded_gpu_kernels_match_folding_cpu_backend(name: str) -> None:
    """Reductions whose skipped entries the CPU backend folds in on the host (max over fill
    0, sum over NaN fill, a keepdims axis of extent 1) run unfolded on the GPU: every
    strategy still agrees with the CPU backend and with NumPy on the dense operand."""
    from lazysparse.kernels.backends.execute import run_query
    from lazysparse.kernels.backends.numba.kernel import structure_key
    from lazysparse.kernels.compile.planning.analysis import analyze_query

    case = next(c for c in CASES if c.name == name)
    p, q, env = case.split()
    info, data = analyze_query(q, env)
    assert structure_key(info, data)[2], "the CPU backend folds this reduction"
    cpu = np.asarray(run_query(q, env, allow_numpy=False).to_numpy())
    (a,) = [t.to_numpy() for t in env.values()]
    op = {"rowmax_f64": np.max, "rowprod_i16": np.prod, "rowsum_nan_fill": np.sum,
          "rowmax_keepdims": np.max}[name]
    want = op(a, axis=1, keepdims=name == "rowmax_keepdims").astype(cpu.dtype)
    assert_same(cpu, want)
    for kind in STRATEGIES:
        b = next(x for x in all_built() if x.case is case and x.kind == kind
                 and x.program.workspace == "dense")
        assert b.gpu.kernel.lowered.fold is None and "ocnt" not in b.program.source
        got = run_program(b.gpu, b.program, b.args, np, module().launcher(workers=3))
        assert_same(dense_result(got), want)


@pytest.mark.parametrize("n,density", [(12, 0.3), (400, 0.4)])
def test_sort_touched_short_and_long_rows(n: int, density: float) -> None:
    """``ls_sort_touched`` orders a row's touched list by insertion sort up to 32 entries and
    by heapsort beyond: output rows below and above that length come out sorted and equal
    to the interpreter's."""
    b = build(Case("spgemm_rows", spgemm(np.float64, 9, 15, n, density, 5)), "thread")
    mod = module()
    assert _has(mod, b)
    got = run_program(b.gpu, b.program, b.args, np, mod.launcher(workers=2))
    want = np.asarray(interpret(b.plan)[0].to_numpy())
    longest = int((want != 0).sum(axis=1).max())
    assert (longest > 32) == (n > 32), longest
    rows = got.levels[1]  # CSR: the column level
    ptr, idx = np.asarray(rows.ptr), np.asarray(rows.idx).astype(np.int64)
    for r in range(len(ptr) - 1):
        assert np.all(np.diff(idx[ptr[r]:ptr[r + 1]]) > 0), f"row {r} not strictly sorted"
    assert_same(dense_result(got), want)


def test_hash_capacity_is_checked() -> None:
    b = next(x for x in all_built() if x.program.workspace == "hash")
    with pytest.raises(ValueError, match="power of two"):
        run_program(b.gpu, b.program, b.args, np, module().launcher(), hash_capacity=12)


def test_strategies_really_differ() -> None:
    """The cases exercise every strategy (fallbacks are not silently everything)."""
    applied = {(b.case.name, b.program.strategy) for b in all_built()}
    assert ("spmv_f64", "warp") in applied
    assert ("spmv_skew", "nzsplit") in applied
    assert ("sddmm", "warp") in applied
    assert ("spgemm_f64", "thread") in applied


@pytest.mark.parametrize("chunks", [1, 4, 11])
@pytest.mark.parametrize("workers", [1, 4])
@pytest.mark.parametrize("name", ["spgemm_f64", "add_f64", "rowsum_f64", "fullsum_f64",
                                  "colsum"])
def test_multi_row_chunks_and_worker_counts(name: str, chunks: int, workers: int) -> None:
    """Chunks of several rows, and fewer workers than chunks (grid-stride loops reusing
    one worker's workspace across rows and chunks)."""
    case = next(c for c in CASES if c.name == name)
    b = build(case, "thread", chunks=chunks)
    mod = module()
    emu = mod if _has(mod, b) else EmulatedModule([b.program])
    got = run_program(b.gpu, b.program, b.args, np, emu.launcher(workers=workers),
                      chunks=b.chunks)
    assert_same(dense_result(got), np.asarray(interpret(b.plan)[0].to_numpy()))


def _has(mod: EmulatedModule, b: object) -> bool:
    return all(hasattr(mod.lib, n) for n in b.program.kernel_names)  # type: ignore[attr-defined]


@settings(max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.integers(1, 40), n=st.integers(1, 60), density=st.floats(0.0, 0.6),
       seed=st.integers(0, 2**16), kind=st.sampled_from(STRATEGIES), skew=st.booleans())
def test_random_spmv(m: int, n: int, density: float, seed: int, kind: str,
                     skew: bool) -> None:
    b = build(Case("random_spmv", random_spmv(m, n, density, seed, skew and m > 2)), kind)
    mod = module()
    assert _has(mod, b), "same structure as spmv_f64: the kernel is already compiled"
    got = run_program(b.gpu, b.program, b.args, np, mod.launcher(workers=3))
    assert_same(dense_result(got), np.asarray(interpret(b.plan)[0].to_numpy()))


@settings(max_examples=examples(10), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.integers(1, 25), k=st.integers(1, 25), n=st.integers(1, 25),
       density=st.floats(0.0, 0.5), seed=st.integers(0, 2**16))
def test_random_spgemm(m: int, k: int, n: int, density: float, seed: int) -> None:
    for ws in ("dense", "hash"):
        b = build(Case("random_spgemm", spgemm(np.float64, m, k, n, density, seed)), "thread",
                  workspace=ws)
        mod = module()
        assert _has(mod, b)
        got = run_program(b.gpu, b.program, b.args, np, mod.launcher(workers=2),
                          hash_capacity=b.hash_capacity)
        assert_same(dense_result(got), np.asarray(interpret(b.plan)[0].to_numpy()))


@pytest.mark.parametrize("name", ["spgemm_f64", "sddmm", "add_c64", "rowmax_f64"])
def test_device_tensors_flow_through_analysis(name: str) -> None:
    """Operands as DeviceTensor (NumPy-backed here) go through the same analysis, lowering
    and argument packing as on a GPU, and results come back as DeviceTensor."""
    case = next(c for c in CASES if c.name == name)
    p, q, env = case.split()
    denv = {a: DeviceTensor(t.shape, t.levels, t.mode_order, t.values, t.fill_value, t.spec)
            for a, t in env.items()}
    gp = plan_query(q, denv)
    args = launch_args(gp)
    prog = program_for(gp, "thread", args=args)
    mod = module()
    assert all(hasattr(mod.lib, n) for n in prog.kernel_names)
    got = run_program(gp, prog, args, np, mod.launcher(workers=2))
    assert isinstance(got, DeviceTensor)
    assert_same(dense_result(got), np.asarray(interpret(p)[0].to_numpy()))


ATOMIC_CASES = sorted({b.case.name for b in all_built() if b.atomic})


def test_atomic_partials_cover_the_outer_reductions() -> None:
    """Column sums of a CSR matrix (each row updates many outputs) get atomic partials; a
    full sum (each chunk stores its one partial plainly) keeps per-chunk partials."""
    applied = {b.case.name: b.program.atomic_partials for b in all_built() if b.atomic}
    assert applied == {"colsum": True, "fullsum_f64": False, "fullsum_i64": False}
    for b in all_built():
        if b.atomic and b.program.atomic_partials:
            assert "ls_atomic_" in b.program.source and "obase = 0LL;" in b.program.source
            assert not any(isinstance(s, HostAlloc) and s.var == "out"
                           and "nch" in repr(s.size) for s in b.program.steps)


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize("name", ATOMIC_CASES)
def test_atomic_partials_match_interpreter(name: str, workers: int) -> None:
    """One output updated atomically by a thread per row equals the interpreter."""
    b = next(x for x in all_built() if x.case.name == name and x.atomic)
    got = run_program(b.gpu, b.program, b.args, np, module().launcher(workers=workers))
    assert_same(dense_result(got), np.asarray(interpret(b.plan)[0].to_numpy()))
