"""Loading a cached kernel in a new process (issue 35 item 3): the module's code object is
read from disk instead of compiled, and only when it is exactly this source's; Numba's index
key is its own, with the codegen's description asked of LLVM once; cached machine code loads
without Numba's target refresh only when every symbol it declares already resolves."""

from __future__ import annotations

import importlib.util
import json
import marshal
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import llvmlite.binding as ll
import numpy as np
import pytest
from helpers import spmv_plan, tensor
from numba.core.caching import FunctionCache
from numba.core.dispatcher import Dispatcher
from numba.core.registry import cpu_target
from numba.core.runtime import rtsys

from lazysparse.formats import numba_load
from lazysparse.kernels.backends import execute_plan
from lazysparse.kernels.backends.numba import cache
from lazysparse.kernels.backends.numba.cache_store import KernelFunctionCache, source_stamp

SOURCE = "def f(x):\n    return x + 1\n"


def _code(path: Path, source: str = SOURCE) -> object:
    return cache._module_code(source, source_stamp(source), path)  # noqa: SLF001


def _run(code: object) -> int:
    ns: dict[str, object] = {}
    exec(code, ns)  # noqa: S102 - the test's own source
    return ns["f"](41)


def test_the_code_object_is_written_then_read_back(tmp_path: Path) -> None:
    path = tmp_path / "lsk_test.py"
    first = _code(path)
    cached = cache._code_file(path)  # noqa: SLF001
    assert cached.is_file()
    blob = cached.read_bytes()
    assert blob.startswith(importlib.util.MAGIC_NUMBER + source_stamp(SOURCE))
    again = _code(path)
    assert again.co_code == first.co_code and again.co_filename == str(path)
    assert _run(again) == 42


OTHER = "def f(x):\n    return x - 1\n"


@pytest.mark.parametrize("damage", ["garbage", "truncated", "another-source", "another-file"])
def test_a_code_file_not_of_this_source_is_never_run(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "lsk_test.py"
    _code(path)
    cached = cache._code_file(path)  # noqa: SLF001
    head = importlib.util.MAGIC_NUMBER + source_stamp(SOURCE)
    if damage == "garbage":
        cached.write_bytes(head + b"\x00garbage")
    elif damage == "truncated":
        cached.write_bytes(cached.read_bytes()[: len(head) + 5])
    elif damage == "another-source":  # another module's code file, under its own stamp
        other = importlib.util.MAGIC_NUMBER + source_stamp(OTHER)
        cached.write_bytes(other + marshal.dumps(compile(OTHER, str(path), "exec")))
    else:  # this source compiled under another file name
        cached.write_bytes(head + marshal.dumps(compile(SOURCE, "elsewhere.py", "exec")))
    assert _run(_code(path)) == 42
    assert cached.read_bytes().startswith(head)  # written anew
    assert _run(_code(path)) == 42


def test_a_second_load_reads_the_code_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAZYSPARSE_CACHE_DIR", str(tmp_path))
    cache.clear_cache()
    rng = np.random.default_rng(3)
    a = np.where(rng.random((20, 15)) < 0.3, rng.random((20, 15)), 0.0)
    x = rng.random(15)
    (y,) = execute_plan(spmv_plan(tensor(a, "csr"), tensor(x)))
    np.testing.assert_allclose(y.to_numpy(), a @ x)
    codes = sorted((tmp_path / "__pycache__").glob(f"lsk_*{cache.CODE_SUFFIX}"))
    assert codes and all(c.stat().st_size > 40 for c in codes)
    cache.clear_cache()
    assert not list((tmp_path / "__pycache__").glob(f"lsk_*{cache.CODE_SUFFIX}"))


def test_the_index_key_is_numbas_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Caches written with Numba's own key stay valid: the memoized key equals it."""
    monkeypatch.setenv("LAZYSPARSE_CACHE_DIR", str(tmp_path))
    cache.clear_cache()
    rng = np.random.default_rng(4)
    a = np.where(rng.random((9, 7)) < 0.4, rng.random((9, 7)), 0.0)
    execute_plan(spmv_plan(tensor(a, "csr"), tensor(rng.random(7))))
    disps = [v for m in list(cache._MODULES.values()) for v in vars(m).values()  # noqa: SLF001
             if isinstance(v, Dispatcher) and isinstance(v._cache, KernelFunctionCache)]  # noqa: SLF001
    assert disps
    codegen = cpu_target.target_context.codegen()
    for d in disps:
        for sig in d.overloads:
            assert d._cache._index_key(sig, codegen) == \
                FunctionCache._index_key(d._cache, sig, codegen)  # noqa: SLF001
    cache.clear_cache()


# a fresh process on a cache: an SpMV and a CSR + COO sum against NumPy, then whether Numba's
# target refresh ran (its registry modules imported) and how each kernel was loaded
CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    sys.path[:0] = [{src!r}, {here!r}]
    from helpers import F, acc, compute, mj, plan, spmv_plan, tensor
    from lazysparse.kernels.backends import STATS, execute_plan
    from lazysparse.logic.nodes import Reorder
    rng = np.random.default_rng(5)
    a = np.where(rng.random((30, 20)) < 0.2, rng.random((30, 20)), 0.0)
    x = rng.random(20)
    y = execute_plan(spmv_plan(tensor(a, "csr"), tensor(x)))[0]
    body = Reorder(mj("add", acc("A", "i", "j"), acc("B", "i", "j")), F("i", "j"))
    s = execute_plan(plan({{"A": tensor(a, "csr"), "B": tensor(a, "coo")}},
                          compute("out", "csr", 2, body)))[0]
    ok = bool(np.allclose(y.to_numpy(), a @ x) and np.allclose(s.to_numpy(), 2 * a))
    from lazysparse.formats import numba_load
    print(json.dumps({{"ok": ok, "refresh_ran": "numba.np.arraymath" in sys.modules,
                      **STATS, **numba_load.STATS}}))
""").format(src=str(Path(__file__).resolve().parents[3] / "src"),
            here=str(Path(__file__).resolve().parent))


def _child(cache_dir: Path) -> dict:
    env = dict(os.environ, LAZYSPARSE_CACHE_DIR=str(cache_dir), PYTHONWARNINGS="ignore")
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                         env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_new_process_loads_cached_kernels_without_numbas_refresh(tmp_path: Path) -> None:
    first = _child(tmp_path)
    assert first["ok"] and first["compiled"] > 0 and first["refresh_ran"]
    second = _child(tmp_path)
    assert second["ok"] and second["compiled"] == 0
    assert second["disk_loaded"] == first["compiled"]
    assert second["without_refresh"] >= second["disk_loaded"] and second["refreshed"] == 0
    assert not second["refresh_ran"]


def _libdata(ir: str) -> tuple[str, str, tuple[bytes, bytes]]:
    """A serialized library as Numba caches it, its bitcode from ``ir`` (never finalized:
    LLVM aborts finalizing an unresolved symbol)."""
    return ("lsk_test", "object", (b"", ll.parse_assembly(ir).as_bitcode()))


def test_a_library_declaring_an_unresolved_symbol_refreshes_first() -> None:
    """The check reads the library's declarations: one the process cannot resolve sends the
    load through Numba's refresh; resolved ones (NRT, C helpers, libm, intrinsics) do not."""
    ctx = cpu_target.target_context
    rtsys.initialize(ctx)
    missing = ("declare double @lsk_no_such_symbol(double)\n"
               "define double @f(double %x) {\n"
               "  %y = call double @lsk_no_such_symbol(double %x)\n  ret double %y\n}\n")
    assert not numba_load.links_now(_libdata(missing), ctx)
    known = ("declare double @llvm.sqrt.f64(double)\n"
             "declare double @exp(double)\n"
             "declare void @NRT_decref(i8*)\n"
             "define double @g(double %x) {\n"
             "  %y = call double @llvm.sqrt.f64(double %x)\n"
             "  %z = call double @exp(double %y)\n  ret double %z\n}\n")
    assert numba_load.links_now(_libdata(known), ctx)
    assert not numba_load.links_now(("lsk_test", "bitcode", b""), ctx)


def test_the_object_codes_undefined_symbols_are_read_from_its_elf_table(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the check reads of a compiled kernel: its object code's undefined symbols (those
    the JIT linker resolves: the C API, the NRT), all resolvable in this process."""
    monkeypatch.setenv("LAZYSPARSE_CACHE_DIR", str(tmp_path))
    cache.clear_cache()
    rng = np.random.default_rng(6)
    a = np.where(rng.random((9, 7)) < 0.4, rng.random((9, 7)), 0.0)
    execute_plan(spmv_plan(tensor(a, "csr"), tensor(rng.random(7))))
    disps = [v for m in list(cache._MODULES.values()) for v in vars(m).values()  # noqa: SLF001
             if isinstance(v, Dispatcher) and v.overloads]
    cres = next(iter(disps[0].overloads.values()))
    libdata = cres.library.serialize_using_object_code()
    names = numba_load.elf_undefined(libdata[2][0])
    if names is None:
        pytest.skip("not an ELF platform")
    assert "NRT_adapt_ndarray_from_python" in names and "PyArg_UnpackTuple" in names
    assert numba_load.links_now(libdata, cpu_target.target_context)
    assert numba_load.elf_undefined(b"\x7fELF\x02\x01" + bytes(10)) is None  # truncated
    assert numba_load.elf_undefined(b"\xcf\xfa\xed\xfe" + bytes(60)) is None  # Mach-O
    cache.clear_cache()
