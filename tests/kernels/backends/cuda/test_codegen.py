"""CUDA code generation from the loop IR: determinism, readable structure, host schedule,
types, and clear errors for what the backend cannot express. No GPU, no nvcc needed."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from lazysparse.kernels.backends.cuda.codegen_cuda import (
    HostAlloc,
    HostAssign,
    HostReturn,
    Launch,
    generate,
)
from lazysparse.kernels.backends.cuda.program import (
    CudaUnsupported,
    cuda_source,
    plan_query,
    program_for,
)
from lazysparse.kernels.backends.cuda.render import (
    CudaCodegenError,
    VarType,
    cast_src,
    infer_types,
    literal,
)
from lazysparse.kernels.backends.cuda.strategies import LaunchMode
from lazysparse.kernels.compile.ir.loop_ir import (
    ArgSortRange,
    Assign,
    Bin,
    Const,
    Load,
    Var,
)
from lazysparse.kernels.compile.planning.output_plan import OutputMode
from lazysparse.logic.nodes import Reorder
from tests.kernels.backends.cuda.cases import CASES, T, all_built, build, rand_sparse
from tests.kernels.backends.helpers import F, acc, agg, compute, mj, plan


def _case(name: str):  # type: ignore[no-untyped-def]
    return next(c for c in CASES if c.name == name)


def test_source_is_deterministic() -> None:
    for name in ("spmv_f64", "spgemm_f64", "sddmm", "add_f64"):
        a = build(_case(name), "thread").program
        b = build(_case(name), "thread").program
        assert a.source == b.source and a.steps == b.steps and a.prefix == b.prefix


def test_same_structure_same_program_different_data() -> None:
    """The program depends on structure and dtypes, never on the values."""
    a = build(_case("spmv_f64"), "warp").program
    b = build(_case("spmv_skew"), "warp").program  # other data, same structure
    assert a.prefix == b.prefix and a.source == b.source


def test_prefix_depends_on_strategy_and_dtype() -> None:
    progs = {build(_case(n), k).program.prefix for n in ("spmv_f64", "spmv_f32")
             for k in ("thread", "warp")}
    assert len(progs) == 4


def test_source_is_readable() -> None:
    src = build(_case("spgemm_f64"), "thread").program.source
    assert "// loop order ('i', 'k', 'j')" in src
    assert "// output csr via rowws" in src
    assert src.count('extern "C" __global__') == 2  # count phase, fill phase
    # ordered drain of the row workspace; the loop IR's sort_touched now takes the row's
    # extent (CPU radix sort bound) instead of a bitmap, so the CUDA call mirrors that
    assert "ls_sort_touched(ws_list, nw, n_i_j);" in src
    for b in all_built():
        assert max(len(line) for line in b.program.source.splitlines()) < 200


def test_spgemm_schedule_is_count_scan_fill() -> None:
    steps = build(_case("spgemm_f64"), "thread").program.steps
    kinds = [type(s).__name__ for s in steps]
    first, second = [i for i, k in enumerate(kinds) if k == "Launch"]
    assert any(k == "HostScan" for k in kinds[first:second])
    launches = [s for s in steps if isinstance(s, Launch)]
    assert {p.var for p in launches[0].pools} == {"ws_mark_c", "ws_list_c"}
    assert {p.var for p in launches[1].pools} >= {"ws_mark", "ws_list", "ws_val"}
    assert isinstance(steps[-1], HostReturn)
    assert steps[-1].values == ("o_ptr1", "o_idx1", "o_vals")


def test_dense_output_schedule() -> None:
    steps = build(_case("spmv_f64"), "thread").program.steps
    assert [type(s) for s in steps if not type(s).__name__ == "HostAssign"] == [
        HostAlloc, Launch, HostReturn]


def test_warp_kernel_shape() -> None:
    src = build(_case("spmv_f64"), "warp").program.source
    assert "ls_lane = threadIdx.x & 31" in src
    assert "+= 32)" in src and "ls_shfl_down(acc" in src and "if (ls_lane == 0)" in src


def test_nzsplit_kernel_shape() -> None:
    prog = build(_case("spmv_skew"), "nzsplit").program
    assert prog.strategy == "nzsplit"
    assert "ls_atomic_add_float64" in prog.source and "atomicCAS" in prog.source
    assert any(isinstance(s, Launch) and s.mode is LaunchMode.NZSPLIT for s in prog.steps)


def test_fallback_to_thread_where_strategy_does_not_apply() -> None:
    assert build(_case("spgemm_f64"), "warp").program.strategy == "thread"
    assert build(_case("add_f64"), "nzsplit").program.strategy == "thread"
    assert build(_case("spmv_c128"), "nzsplit").program.strategy == "thread"  # no 16B CAS


def test_unknown_strategy_rejected() -> None:
    b = build(_case("spmv_f64"), "thread")
    with pytest.raises(ValueError, match="unknown CUDA strategy"):
        program_for(b.gpu, "blocks")
    with pytest.raises(ValueError, match="unknown workspace"):
        program_for(b.gpu, "thread", workspace="sorted")
    with pytest.raises(ValueError, match="SpGEMM kernels only"):
        program_for(b.gpu, "thread", workspace="hash")


def test_hash_workspace_shape() -> None:
    prog = build(_case("spgemm_f64"), "thread", workspace="hash").program
    assert prog.workspace == "hash" and prog.extra_args == ("ls_max_chunks", "ls_hcap")
    assert "ws_mark" not in prog.source and "ws_bits" not in prog.source
    assert prog.source.count("ls_hash_probe(ws_hkeys") == 3  # count insert, fill insert, drain
    assert "ws_hkeys[ws_hslots[u]] = -1LL;" in prog.source  # slots emptied after each row


def test_every_case_generates() -> None:
    for b in all_built():
        assert b.program.kernel_names
        assert all(n.startswith(b.program.prefix) for n in b.program.kernel_names)


def test_cuda_source_is_a_full_translation_unit() -> None:
    p, q, env = _case("spmv_f64").split()
    src = cuda_source(q, env)
    assert src.startswith("#include <cupy/complex.cuh>")
    assert "ls_maximum" in src  # the operator registry's prelude
    off = cuda_source(q, env, cupy_headers=False)
    assert "thrust/complex.h" in off and "cupy/complex.cuh" not in off


def test_ism_workspace_is_a_clear_error() -> None:
    """An outer-product SpGEMM scatters 2-d writes (insert-sort-merge workspace, growable
    arrays): not supported on CUDA, and said so."""
    A = T(rand_sparse(6, 5, 0.4, 1), "csc")
    B = T(rand_sparse(5, 4, 0.4, 2), "csr")
    body = agg("add", 0, Reorder(mj("multiply", acc("A", "i", "k"), acc("B", "k", "j")),
                                 F("k", "i", "j")), "k")
    p = plan({"A": A, "B": B}, compute("out", "csr", 2, body))
    env = {b.lhs: b.rhs.tns.val for b in p.bodies[:2]}
    gp = plan_query(p.bodies[2], env)
    assert gp.kernel.lowered.output.mode is OutputMode.ISM
    with pytest.raises(CudaUnsupported, match="cannot run on the CUDA backend"):
        program_for(gp, "thread")


def test_unsupported_kernels_fall_back_to_the_host() -> None:
    """``run_on_host`` (what run_query_cuda does for CudaUnsupported kernels) copies the
    operands down, runs the CPU backend and copies the result up (NumPy-backed device
    tensors stand in for CuPy ones here)."""
    from lazysparse.formats.device import DeviceTensor
    from lazysparse.formats.tensor import Tensor
    from lazysparse.kernels.backends.cuda.runtime import run_on_host
    from lazysparse.logic import interpret

    def up(t: Tensor) -> DeviceTensor:
        return DeviceTensor(t.shape, t.levels, t.mode_order, t.values, t.fill_value, t.spec)

    def down(d: DeviceTensor) -> Tensor:
        return Tensor(d.shape, d.levels, d.mode_order, d.values, d.fill_value,
                      format=d.spec.name)

    A = T(rand_sparse(6, 5, 0.4, 1), "csc")
    B = T(rand_sparse(5, 4, 0.4, 2), "csr")
    body = agg("add", 0, Reorder(mj("multiply", acc("A", "i", "k"), acc("B", "k", "j")),
                                 F("k", "i", "j")), "k")
    p = plan({"A": A, "B": B}, compute("out", "csr", 2, body))
    env = {b.lhs: up(b.rhs.tns.val) for b in p.bodies[:2]}
    got = run_on_host(p.bodies[2], env, to_host=down, to_device=up)
    assert isinstance(got, DeviceTensor)
    np.testing.assert_allclose(down(got).to_numpy(), interpret(p)[0].to_numpy())


# ---------------------------------------------------------------- rendering units


def test_literals() -> None:
    assert literal(np.nan, np.dtype(np.float64)) == (
        "double(__longlong_as_double(0x7ff8000000000000LL))")
    assert "0x7f800000" in literal(np.inf, np.dtype(np.float32))
    assert literal(True, np.dtype(bool)) == "true"
    assert literal(-(2**63), np.dtype(np.int64)) == "(-9223372036854775807LL - 1)"
    assert literal(2**64 - 1, np.dtype(np.uint64)) == "18446744073709551615ULL"
    assert literal(1 + 2j, np.dtype(np.complex64)) == "complex<float>(1.0f, 2.0f)"


def test_casts_follow_numpy() -> None:
    c128, f64, b = np.dtype(np.complex128), np.dtype(np.float64), np.dtype(bool)
    assert cast_src("z", c128, f64) == "static_cast<double>((z).real())"
    assert cast_src("x", f64, b) == "ls_nonzero(x)"
    assert cast_src("x", f64, c128) == "complex<double>(static_cast<double>(x))"
    assert cast_src("x", f64, f64) == "x"


def test_type_inference_first_typed_assignment_wins() -> None:
    body = (Assign("n", Const(0)), Assign("n", Load("p", Const(0))),
            Assign("flag", Bin("<", Var("n"), Const(3))))
    t = infer_types(body, {"p": VarType(np.dtype(np.int32), True)})
    assert t["n"].dtype == np.int32 and t["flag"].dtype == bool


def test_type_inference_rejects_assigning_inputs() -> None:
    with pytest.raises(CudaCodegenError, match="one of its inputs"):
        infer_types((Assign("x", Const(1)),), {"x": VarType(np.dtype(np.int64))})


def test_argsort_is_rejected() -> None:
    with pytest.raises(CudaCodegenError, match="not supported by the CUDA backend"):
        infer_types((ArgSortRange("perm", "k", Const(0), Const(3)),),
                    {"k": VarType(np.dtype(np.int64), True)})


def test_generate_needs_all_argument_types() -> None:
    b = build(_case("spmv_f64"), "thread")
    with pytest.raises(ValueError, match="types of kernel arguments"):
        generate(b.gpu.kernel.lowered, {}, prefix="x", out_dtype="float64")


def test_combine_runs_one_thread_per_output() -> None:
    prog = build(_case("colsum"), "thread").program
    (comb,) = [s for s in prog.steps if isinstance(s, Launch) and s.name.endswith("combine")]
    assert comb.mode is LaunchMode.THREAD and "osize" in str(comb.count)


def test_importing_the_backend_does_not_import_cupy() -> None:
    code = ("import sys, lazysparse, lazysparse.kernels.backends.cuda as c; "
            "from lazysparse.kernels.backends.cuda import runtime, nvcc; "
            "from lazysparse.formats import device; "
            "assert 'cupy' not in sys.modules; print(c.cuda_available())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr


def test_one_chunk_per_row() -> None:
    from lazysparse.kernels.backends.cuda.host import host_eval
    from lazysparse.kernels.backends.cuda.runtime import max_chunks

    b = build(_case("spgemm_f64"), "thread")
    params = b.gpu.kernel.lowered.params
    env = dict(zip(params, b.args, strict=True))
    env["ls_max_chunks"] = max_chunks(b.gpu, b.args)
    first = b.program.steps[0]
    assert isinstance(first, HostAssign) and first.var == "nch"
    assert host_eval(first.value, env) == 40  # rows of A


def test_full_reductions_use_bounded_partials() -> None:
    from lazysparse.kernels.backends.cuda.runtime import PARTIAL_BYTES, PARTIAL_CHUNKS, max_chunks

    full = build(_case("fullsum_f64"), "thread")
    assert full.gpu.partials and max_chunks(full.gpu, full.args) == PARTIAL_CHUNKS
    assert "_combine(" in full.program.source
    assert not build(_case("spmv_f64"), "thread").gpu.partials
    col = build(_case("colsum"), "thread")  # partial rows of 33 columns each
    assert col.gpu.partials
    args = list(col.args)
    params = col.gpu.kernel.lowered.params
    args[params.index("osize")] = np.int64(10**7)  # a wide output: fewer partials
    assert max_chunks(col.gpu, args) == PARTIAL_BYTES // (8 * 10**7)


def test_source_is_identical_across_processes() -> None:
    """Kernel names and text do not depend on hash seeds or process state (disk caches)."""
    import hashlib
    import os

    names = ["spmv_f64", "spgemm_f64", "sddmm", "add_c64", "fullsum_i64"]
    code = ("import hashlib; from tests.kernels.backends.cuda.cases import CASES, build; "
            f"print(' '.join(hashlib.sha256(build(c, k).program.source.encode()).hexdigest() "
            f"for c in CASES if c.name in {names!r} for k in ('thread', 'warp')))")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    here = " ".join(hashlib.sha256(build(c, k).program.source.encode()).hexdigest()
                    for c in CASES if c.name in names for k in ("thread", "warp"))
    assert out.stdout.split() == here.split()
