"""``run_query_cuda`` / ``execute_plan_cuda`` end to end without a GPU: CuPy replaced by
NumPy and ``cupy.RawModule`` by the CPU emulation of the generated kernels. Exercises the
strategy and workspace choice, the module cache, launches and the host fallback."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import lazysparse.kernels.backends.cuda.runtime as rt
from lazysparse.formats.device import DeviceTensor
from lazysparse.logic import interpret
from lazysparse.logic.nodes import Immediate, Plan, Query, Reorder, Table
from tests.conftest import slow_except
from tests.kernels.backends.cuda.cases import CASES, T, assert_same, dense_result, rand_sparse
from tests.kernels.backends.cuda.emulator import CXX, EMULATION
from tests.kernels.backends.helpers import F, acc, compute, plan

pytestmark = pytest.mark.skipif(CXX is None, reason="no host C++ compiler")


@pytest.fixture
def fake_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    for mod, name, value in EMULATION:
        monkeypatch.setattr(mod, name, value)
    rt.clear_cache()
    yield
    rt.clear_cache()


def _up(t: Any) -> DeviceTensor:
    return DeviceTensor(t.shape, t.levels, t.mode_order, t.values, t.fill_value, t.spec)


def _device_plan(p: Plan) -> Plan:
    return Plan(tuple(Query(b.lhs, Table(Immediate(_up(b.rhs.tns.val)), b.rhs.idxs))
                      if isinstance(b, Query) and isinstance(b.rhs, Table) else b
                      for b in p.bodies))


@pytest.mark.parametrize(("name", "kind"), [
    ("spmv_skew", "nzsplit"), ("spmv_long_rows", "warp"), ("spmv_f64", "thread"),
    ("spgemm_f64", "thread"), ("sddmm", "thread"), ("add_f64", "thread"),
    ("fullsum_f64", "thread"), ("colsum_csc", "thread")])
def test_execute_plan_cuda(fake_cuda: None, name: str, kind: str) -> None:
    p = next(c for c in CASES if c.name == name).build()
    before = dict(rt.STATS)
    (out,) = rt.execute_plan_cuda(_device_plan(p))
    assert isinstance(out, DeviceTensor)
    assert_same(dense_result(out), np.asarray(interpret(p)[0].to_numpy()))
    assert rt.STATS["compiled"] == before["compiled"] + 1
    ((prog, _),) = rt._MODULES.values()  # noqa: SLF001
    assert prog.strategy == kind  # chosen from the row-length statistics
    rt.execute_plan_cuda(_device_plan(p))  # same structure: served from the cache
    assert rt.STATS["compiled"] == before["compiled"] + 1
    assert rt.STATS["memory_hits"] == before["memory_hits"] + 1


def test_forced_hash_workspace(fake_cuda: None) -> None:
    case = next(c for c in CASES if c.name == "spgemm_wide")
    p, q, env = case.split()
    out = rt.run_query_cuda(q, {a: _up(t) for a, t in env.items()}, workspace="hash")
    assert_same(dense_result(out), np.asarray(interpret(p)[0].to_numpy()))


def test_host_fallback(fake_cuda: None) -> None:
    A = T(rand_sparse(30, 20, 0.2, 1), "csr")
    p = plan({"A": A}, compute("out", "csc", 2, Reorder(acc("A", "i", "j"), F("i", "j"))))
    before = rt.STATS["host_fallback"]
    (out,) = rt.execute_plan_cuda(_device_plan(p))
    assert rt.STATS["host_fallback"] == before + 1
    assert isinstance(out, DeviceTensor) and out.format == "csc"
    assert_same(dense_result(out), np.asarray(interpret(p)[0].to_numpy()))
    with pytest.raises(ValueError, match="cannot run on the CUDA backend"):
        rt.execute_plan_cuda(_device_plan(p), host_fallback=False)


def test_recording_says_where_each_query_ran(fake_cuda: None) -> None:
    """``recording`` lists every query with its placement: a device kernel (strategy,
    compile time on the first run only) and a host fallback with its reason."""
    spmv = next(c for c in CASES if c.name == "spmv_f64").build()
    A = T(rand_sparse(30, 20, 0.2, 1), "csr")
    transpose = plan({"A": A}, compute("out", "csc", 2, Reorder(acc("A", "i", "j"),
                                                                F("i", "j"))))
    with rt.recording() as log:
        rt.execute_plan_cuda(_device_plan(spmv))
        rt.execute_plan_cuda(_device_plan(spmv))
        rt.execute_plan_cuda(_device_plan(transpose))
    assert [p.device for p in log] == ["cuda", "cuda", "host"]
    first, again, host = log
    assert first.compile_s > 0 and again.compile_s == 0.0  # the second run hits the cache
    assert first.describe().startswith("cuda: strategy thread")
    assert "cannot run on the CUDA backend" in host.reason
    assert host.describe().startswith("host: ")
    with rt.recording() as log2:
        out = rt.run_prepared(first)  # a prepared query runs again as is
    assert log2 == [first]
    assert_same(dense_result(out), np.asarray(interpret(spmv)[0].to_numpy()))


@pytest.mark.parametrize("dtype", slow_except([np.float64, np.float32, np.int64, np.int32],
                                               [np.float64, np.int32]))
def test_wide_outer_reductions_run_atomically(fake_cuda: None, dtype: Any) -> None:
    """``A.T @ x`` and column sums of a CSR matrix with >= ATOMIC_MIN_OUTPUTS columns reduce
    over the outer loop: a thread per row updates one output atomically (not a few dozen
    per-chunk partial outputs); a narrow one keeps the partials."""
    import scipy.sparse as sp

    import lazysparse as xp
    from lazysparse.kernels.backends.cuda.strategies import ATOMIC_MIN_OUTPUTS

    for cols, atomic in ((ATOMIC_MIN_OUTPUTS + 5, True), (300, False)):
        a = sp.random(7, cols, density=0.5, format="csr", random_state=3)  # dense result
        a.data = (a.data * 10 + 1).astype(dtype)
        x = (np.arange(7) + 1).astype(dtype)
        g, gx = xp.asarray(a, device="cuda"), xp.asarray(x, device="cuda")
        with rt.recording() as log:
            got_t = np.asarray((g.T @ gx).to_device("cpu"))
            got_s = np.asarray(xp.sum(g, axis=0).to_device("cpu"))
        assert all(("atomic partials" in p.describe()) == atomic for p in log), \
            [p.describe() for p in log]
        tol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got_t, a.T @ x, rtol=tol)
        np.testing.assert_allclose(got_s, np.asarray(a.sum(axis=0)).ravel(), rtol=tol)
