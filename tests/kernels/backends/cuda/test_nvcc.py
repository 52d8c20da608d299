"""The generated CUDA compiles with the toolkit's nvcc (sm_90, PTX), with the same preamble
CuPy's RawModule uses (Thrust's complex standing in for CuPy's header). Skipped without
nvcc. One translation unit holds every case under every strategy, so nvcc runs once."""

from __future__ import annotations

import pytest

from lazysparse.kernels.backends.cuda.nvcc import CompileResult, compile_source, find_nvcc
from lazysparse.kernels.backends.cuda.prelude import preamble
from tests.kernels.backends.cuda.cases import all_built

pytestmark = pytest.mark.skipif(find_nvcc() is None, reason="nvcc not installed")

_RESULT: list[CompileResult] = []


def compiled() -> CompileResult:
    if not _RESULT:
        programs = {b.program.prefix: b.program for b in all_built()}
        src = preamble(cupy_headers=False) + "\n".join(p.source for p in programs.values())
        _RESULT.append(compile_source(src, arch="sm_90", mode="ptx"))
    return _RESULT[0]


def test_every_generated_kernel_compiles() -> None:
    res = compiled()
    assert res.ok, res.log[-6000:]
    want = {n for b in all_built() for n in b.program.kernel_names}
    assert want <= set(res.entries())


@pytest.mark.parametrize("name", ["spmv_f64", "spgemm_f64", "sddmm", "add_f64",
                                  "rowsum_f64", "fullsum_f64", "spmv_c128", "spmv_skew"])
def test_named_workloads_are_in_the_ptx(name: str) -> None:
    """SpMV, SpGEMM, SDDMM, sparse add and reductions each have entry points in the PTX."""
    res = compiled()
    assert res.ok, res.log[-6000:]
    names = [n for b in all_built() if b.case.name == name for n in b.program.kernel_names]
    assert names and set(names) <= set(res.entries())


def test_compile_errors_are_reported() -> None:
    """The checker fails on broken source (it is not vacuous)."""
    res = compile_source(preamble(cupy_headers=False) +
                         'extern "C" __global__ void k(double* o) { o[0] = undefined_name; }')
    assert not res.ok
    assert "undefined_name" in res.log
