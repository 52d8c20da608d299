"""Kernel cache: structure keys, on-disk reuse by a second process, clearing, concurrency."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from helpers import F, acc, compute, dense, mj, plan, spmv_plan, tensor

import lazysparse.kernels.backends as K
from lazysparse.kernels.backends.numba import cache
from lazysparse.logic.nodes import Alias, Reorder

SRC = str(Path(__file__).resolve().parents[3] / "src")
HERE = str(Path(__file__).resolve().parent)

SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    sys.path[:0] = [{src!r}, {here!r}]
    from helpers import F, acc, compute, mj, plan, spmv_plan, tensor
    from lazysparse.kernels.backends import STATS, execute_plan
    from lazysparse.logic.nodes import Reorder
    rng = np.random.default_rng(0)
    A = np.where(rng.random((40, 30)) < 0.2, rng.random((40, 30)), 0.0)
    x = rng.random(30)
    y = execute_plan(spmv_plan(tensor(A, "csr"), tensor(x)))[0]
    body = Reorder(mj("add", acc("A", "i", "j"), acc("B", "i", "j")), F("i", "j"))
    s = execute_plan(plan({{"A": tensor(A, "csr"), "B": tensor(A, "coo")}},
                          compute("out", "csr", 2, body)))[0]
    ok = bool(np.allclose(y.to_numpy(), A @ x) and np.allclose(s.to_numpy(), 2 * A))
    print(json.dumps({{"ok": ok, **STATS}}))
""").format(src=SRC, here=HERE)


def _run_child(cache_dir: Path) -> dict:
    env = dict(os.environ, LAZYSPARSE_CACHE_DIR=str(cache_dir), PYTHONWARNINGS="ignore")
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    import json

    return json.loads(out.stdout.strip().splitlines()[-1])


def test_second_process_compiles_nothing(tmp_path):
    first = _run_child(tmp_path)
    assert first["ok"] and first["compiled"] > 0
    files = sorted(p.name for p in tmp_path.glob("lsk_*.py"))
    assert files, "generated modules are kept in the cache directory"
    second = _run_child(tmp_path)
    assert second["ok"]
    assert second["compiled"] == 0
    assert second["disk_loaded"] == first["compiled"]
    assert sorted(p.name for p in tmp_path.glob("lsk_*.py")) == files


@pytest.mark.slow  # two fresh interpreters: the full suite
def test_two_processes_compiling_at_once(tmp_path):
    env = dict(os.environ, LAZYSPARSE_CACHE_DIR=str(tmp_path), PYTHONWARNINGS="ignore")
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-3000:]
        assert '"ok": true' in out
    assert not list(tmp_path.glob("*.tmp"))


def test_cache_dir_env_and_clear(tmp_path, monkeypatch):
    monkeypatch.setenv("LAZYSPARSE_CACHE_DIR", str(tmp_path / "kc"))
    assert K.cache_dir() == tmp_path / "kc"
    K.clear_cache()  # a kernel an earlier test left in memory would write no file here
    A = np.eye(5)
    out = K.execute_plan(spmv_plan(tensor(A, "csr"), tensor(np.arange(5.0))))[0]
    np.testing.assert_allclose(dense(out), np.arange(5.0))
    assert list((tmp_path / "kc").glob("lsk_*.py"))
    K.clear_cache()
    assert not list((tmp_path / "kc").glob("lsk_*.py"))
    out = K.execute_plan(spmv_plan(tensor(A, "csr"), tensor(np.arange(5.0))))[0]
    np.testing.assert_allclose(dense(out), np.arange(5.0))


def test_kernel_attributes_and_readable_source():
    A = tensor(np.eye(4), "csr")
    B = tensor(np.eye(4), "csr")
    body = Reorder(mj("add", acc("A", "i", "j"), acc("B", "i", "j")), F("i", "j"))
    q = compute("out", "csr", 2, body)
    k = K.compile_query(q, {Alias("A"): A, Alias("B"): B})
    assert k.loop_order == ("i", "j")
    assert k.output_format.name == "csr"
    assert k.inputs == ("A", "B")
    # the comments name operands by slot, as the parameters (a0_vals) do; inputs map them
    assert "def fill(" in k.source and "# loop j: merge drivers a0,a1" in k.source
    assert "merge drivers a0,a1" in k.loop_ir
    assert k.key in k.source
    assert K.compile_query(q, {Alias("A"): A, Alias("B"): B}) is k


def test_operand_names_do_not_make_a_second_module():
    """The same loop nest over operands named otherwise prints the same source: one
    module, one digest, so it compiles (or loads from disk) once, whatever the plan's
    aliases; values as NumPy's."""
    rng = np.random.default_rng(1)
    a = np.where(rng.random((6, 5)) < 0.4, rng.random((6, 5)), 0.0)
    b = np.where(rng.random((6, 5)) < 0.4, rng.random((6, 5)), 0.0)
    kernels = []
    for x, y in (("A", "B"), ("P7", "Q12")):
        body = Reorder(mj("add", acc(x, "i", "j"), acc(y, "i", "j")), F("i", "j"))
        q = compute("out", "csr", 2, body)
        ops = {Alias(x): tensor(a, "csr"), Alias(y): tensor(b, "csr")}
        kernels.append(K.compile_query(q, ops))
        out = K.execute_plan(plan({x: ops[Alias(x)], y: ops[Alias(y)]}, q))[0]
        np.testing.assert_allclose(dense(out), a + b)
    first, second = kernels
    assert first.inputs == ("A", "B") and second.inputs == ("P7", "Q12")
    assert first.source == second.source and first.key == second.key


def test_numpy_executor_for_small_dense():
    before = cache.STATS["numpy"]
    a, x = np.arange(12.0).reshape(3, 4), np.arange(4.0)
    out = K.execute_plan(spmv_plan(tensor(a), tensor(x)))[0]
    np.testing.assert_allclose(dense(out), a @ x)
    assert cache.STATS["numpy"] == before + 1


def test_bad_queries_raise_clear_errors():
    A = tensor(np.eye(3), "csr")
    x = tensor(np.ones(4))
    with pytest.raises(ValueError, match="extent"):
        K.execute_plan(spmv_plan(A, x))
    body = Reorder(mj("add", acc("A", "i", "j"), acc("A", "i", "j")), F("j", "i"))
    with pytest.raises(ValueError, match="concordant"):
        K.execute_plan(plan({"A": A}, compute("out", "csr", 2, body)))
    with pytest.raises(TypeError):
        K.execute_plan("not a plan")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="lazysparse Tensor"):
        K.compile_query(compute("out", "csr", 2, Reorder(acc("A", "i", "j"), F("i", "j"))),
                        {Alias("A"): np.eye(3)})
    with pytest.raises(ValueError, match="normal form"):
        K.compile_query(compute("out", "csr", 2, acc("A", "i", "j")), {Alias("A"): A})
