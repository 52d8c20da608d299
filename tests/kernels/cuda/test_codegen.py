"""CUDA code generation from the loop IR: determinism, readable structure, host schedule,
types, and clear errors for what the backend cannot express. No GPU, no nvcc needed."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from tests.kernels.cuda.cases import CASES, T, all_built, build, rand_sparse
from tests.kernels.helpers import F, acc, agg, compute, mj, plan

from lazysparse.kernels.cuda.codegen_cuda import (
    HostAlloc,
    HostReturn,
    HostScan,
    Launch,
    generate,
    is_scan,
)
from lazysparse.kernels.cuda.program import cuda_source, plan_query, program_for
from lazysparse.kernels.cuda.render import (
    CudaCodegenError,
    VarType,
    cast_src,
    infer_types,
    literal,
)
from lazysparse.kernels.loop_ir import (
    Alloc,
    ArgSortRange,
    Assign,
    Bin,
    Const,
    For,
    Function,
    Load,
    Return,
    Store,
    Var,
)
from lazysparse.logic.nodes import Reorder


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
    assert "ls_sort_touched(ws_list, nw, ws_bits" in src  # ordered drain of the row workspace
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
    assert any(isinstance(s, Launch) and s.mode == "nzsplit" for s in prog.steps)


def test_fallback_to_thread_where_strategy_does_not_apply() -> None:
    assert build(_case("spgemm_f64"), "warp").program.strategy == "thread"
    assert build(_case("add_f64"), "nzsplit").program.strategy == "thread"
    assert build(_case("spmv_c128"), "nzsplit").program.strategy == "thread"  # no 16B CAS


def test_unknown_strategy_rejected() -> None:
    b = build(_case("spmv_f64"), "thread")
    with pytest.raises(ValueError, match="unknown CUDA strategy"):
        program_for(b.gpu, "blocks")


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
    assert gp.kernel.lowered.output.mode == "ism"
    with pytest.raises(ValueError, match="cannot run on the CUDA backend"):
        program_for(gp, "thread")


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


def test_scan_pattern_detection() -> None:
    u = Var("u")
    scan = For("u", Const(0), Var("n"), (Store("X", Bin("+", u, Const(1)), Bin(
        "+", Load("X", u), Load("Y", u))),))
    assert is_scan(scan) == ("X", "Y")
    assert is_scan(For("u", Const(0), Var("n"), scan.body, parallel=True)) is None
    other = For("u", Const(0), Var("n"), (Store("X", u, Load("Y", u)),))
    assert is_scan(other) is None


def test_generate_needs_all_argument_types() -> None:
    fn = Function("kernel", ("a", "n"), (Return(("a",)),))
    with pytest.raises(ValueError, match="types of kernel arguments"):
        generate(fn, {"a": VarType(np.dtype(np.float64), True)}, prefix="x")


def test_host_scan_and_serial_launches() -> None:
    fn = Function("kernel", ("n", "y"), (
        Alloc("x", Bin("+", Var("n"), Const(1)), "int64", Const(0)),
        For("u", Const(0), Var("n"), (Store("x", Bin("+", Var("u"), Const(1)), Bin(
            "+", Load("x", Var("u")), Load("y", Var("u")))),)),
        For("u", Const(0), Var("n"), (Store("y", Var("u"), Const(7)),)),
        Return(("x",))))
    prog = generate(fn, {"n": VarType(np.dtype(np.int64)),
                         "y": VarType(np.dtype(np.int64), True)}, prefix="t")
    kinds = [type(s) for s in prog.steps]
    assert kinds == [HostAlloc, HostScan, Launch, HostReturn]
    assert prog.steps[2].mode == "serial"  # type: ignore[union-attr]
    assert "if (ls_gid != 0) return;" in prog.source


def test_importing_the_backend_does_not_import_cupy() -> None:
    code = ("import sys, lazysparse, lazysparse.kernels.cuda as c; "
            "from lazysparse.kernels.cuda import runtime, device, nvcc; "
            "assert 'cupy' not in sys.modules; print(c.cuda_available())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr


def test_gpu_arguments_make_one_chunk_per_row() -> None:
    b = build(_case("spgemm_f64"), "thread")
    params = b.gpu.kernel.lowered.function.params
    assert int(b.args[params.index("nthreads")]) == 1 << 40
    assert b.args[params.index("iproto")].dtype == np.int32  # output index dtype prototype
    from lazysparse.kernels.cuda.host import host_eval

    env = dict(zip(params, b.args, strict=True))
    for s in b.program.steps:
        if type(s).__name__ != "HostAssign":
            break
        env[s.var] = host_eval(s.value, env)  # type: ignore[union-attr]
    assert env["nch"] == 40  # rows of A
