"""GPU execution: generated kernels on device arrays against the reference interpreter,
CuPy interop, caching. Marked ``gpu``; skipped unless CuPy imports and sees a device, or run
on the CPU kernel emulator under ``LAZYSPARSE_GPU_TESTS=emulate`` (the ``gpu`` fixture,
tests/conftest.py; tests that need CuPy itself still skip there)."""

from __future__ import annotations

import numpy as np
import pytest

from lazysparse.formats.device import (
    dense_array,
    from_cupyx,
    to_cuda,
    to_cupyx,
    to_host,
)
from lazysparse.kernels.backends.cuda.runtime import STATS, execute_plan_cuda, run_query_cuda
from lazysparse.logic import interpret
from lazysparse.logic.nodes import Immediate, Plan, Query, Table
from tests.kernels.backends.cuda.cases import CASES, HASH_CASES, STRATEGIES, Case, T, assert_same

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("gpu")]


def _on_device(case: Case) -> tuple[Plan, Query, dict]:  # type: ignore[type-arg]
    p, q, env = case.split()
    return p, q, {a: to_cuda(t) for a, t in env.items()}


@pytest.mark.parametrize("kind", [*STRATEGIES, None])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_gpu_matches_interpreter(case: Case, kind: str | None) -> None:
    p, q, denv = _on_device(case)
    got = to_host(run_query_cuda(q, denv, strategy=kind))
    assert_same(np.asarray(got.to_numpy()), np.asarray(interpret(p)[0].to_numpy()))


@pytest.mark.parametrize("name", HASH_CASES)
def test_gpu_hash_workspace(name: str) -> None:
    p, q, denv = _on_device(next(c for c in CASES if c.name == name))
    got = to_host(run_query_cuda(q, denv, workspace="hash"))
    assert_same(np.asarray(got.to_numpy()), np.asarray(interpret(p)[0].to_numpy()))


def test_execute_plan_on_device_and_cache() -> None:
    case = next(c for c in CASES if c.name == "spgemm_f64")
    p = case.build()
    bodies = tuple(Query(b.lhs, Table(Immediate(to_cuda(b.rhs.tns.val)), b.rhs.idxs))
                   if isinstance(b, Query) and isinstance(b.rhs, Table) else b
                   for b in p.bodies)
    (out,) = execute_plan_cuda(Plan(bodies))
    want = np.asarray(interpret(p)[0].to_numpy())
    assert_same(np.asarray(to_host(out).to_numpy()), want)
    before = STATS["compiled"]
    execute_plan_cuda(Plan(bodies))
    assert STATS["compiled"] == before  # same structure: no new module


def test_unsupported_kernel_falls_back_to_host() -> None:
    """A transpose into CSC (insert-sort-merge workspace) runs on the CPU backend."""
    from lazysparse.logic.nodes import Reorder
    from tests.kernels.backends.cuda.cases import rand_sparse
    from tests.kernels.backends.helpers import F, acc, compute, plan

    A = T(rand_sparse(30, 20, 0.2, 1), "csr")
    p = plan({"A": A}, compute("out", "csc", 2, Reorder(acc("A", "i", "j"), F("i", "j"))))
    before = STATS["host_fallback"]
    (out,) = execute_plan_cuda(Plan(tuple(
        Query(b.lhs, Table(Immediate(to_cuda(b.rhs.tns.val)), b.rhs.idxs))
        if isinstance(b, Query) and isinstance(b.rhs, Table) else b for b in p.bodies)))
    assert_same(np.asarray(to_host(out).to_numpy()), np.asarray(interpret(p)[0].to_numpy()))
    assert STATS["host_fallback"] == before + 1  # the CSR -> CSC transpose ran on the host


def test_host_inputs_in_a_device_plan_are_rejected() -> None:
    p = next(c for c in CASES if c.name == "spmv_f64").build()
    with pytest.raises(ValueError, match="not on device 'cuda'"):
        execute_plan_cuda(p)


def test_cupyx_round_trip_and_dlpack(gpu: str) -> None:
    if gpu != "device":
        pytest.skip("needs CuPy itself (cupyx matrices, DLPack)")
    import cupy as cp
    import cupyx.scipy.sparse as cps

    m = cps.random(200, 150, density=0.05, format="csr", dtype=cp.float64, random_state=1)
    t = from_cupyx(m)
    back = to_cupyx(t)
    assert (abs(back - m)).max() == 0
    x = cp.arange(150, dtype=cp.float64)
    case = next(c for c in CASES if c.name == "spmv_f64")
    p, q, _ = case.split()
    env = {b.lhs: v for b, v in zip(p.bodies[:2], (t, to_cuda(_host_vector(x))),
                                    strict=True)}
    y = run_query_cuda(q, env)
    cp.testing.assert_allclose(cp.from_dlpack(dense_array(y)), m @ x, rtol=1e-12)


def _host_vector(x):  # type: ignore[no-untyped-def]
    return T(x.get(), "dense")
