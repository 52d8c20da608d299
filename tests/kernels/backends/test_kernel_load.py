"""Loading a cached kernel in a new process (issue 35 item 3): the module's code object is
read from disk instead of compiled, and only when it is exactly this source's; Numba's index
key is its own, with the codegen's description asked of LLVM once."""

from __future__ import annotations

import importlib.util
import marshal
from pathlib import Path

import numpy as np
import pytest
from helpers import spmv_plan, tensor
from numba.core.caching import FunctionCache
from numba.core.dispatcher import Dispatcher
from numba.core.registry import cpu_target

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
