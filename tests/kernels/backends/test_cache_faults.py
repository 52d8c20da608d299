"""A damaged or unusable kernel cache never takes a process down (issue #13, item 1).

Each fault is made on disk, then a fresh process (``python -c`` with ``LAZYSPARSE_CACHE_DIR``)
computes two kernels and checks them against NumPy. One process populates a template cache;
the fault scenarios run on copies of it, a few processes at a time, so the module stays fast.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

# fresh processes that compile into damaged caches (~40 s): the full suite's, not the fast
# tier's (tests/kernels/backends/test_kernels_cache.py covers the cache there)
pytestmark = pytest.mark.slow

SRC = str(Path(__file__).resolve().parents[3] / "src")
HERE = str(Path(__file__).resolve().parent)

# two kernels (CSR SpMV; CSR + COO), checked against NumPy; prints the counters and warnings
SCRIPT = textwrap.dedent("""
    import json, sys, warnings
    import numpy as np
    sys.path[:0] = [{src!r}, {here!r}]
    from helpers import F, acc, compute, mj, plan, spmv_plan, tensor
    from lazysparse.kernels.backends import STATS, execute_plan
    from lazysparse.logic.nodes import Reorder
    rng = np.random.default_rng(0)
    A = np.where(rng.random((12, 9)) < 0.3, rng.random((12, 9)), 0.0)
    x = rng.random(9)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = execute_plan(spmv_plan(tensor(A, "csr"), tensor(x)))[0]
        body = Reorder(mj("add", acc("A", "i", "j"), acc("B", "i", "j")), F("i", "j"))
        s = execute_plan(plan({{"A": tensor(A, "csr"), "B": tensor(A, "coo")}},
                              compute("out", "csr", 2, body)))[0]
    ok = bool(np.allclose(y.to_numpy(), A @ x) and np.allclose(s.to_numpy(), 2 * A))
    cache_warnings = [str(w.message) for w in caught
                      if w.category.__name__ == "KernelCacheWarning"]
    print(json.dumps({{"ok": ok, "warnings": cache_warnings, **STATS}}))
""").format(src=SRC, here=HERE)

KERNELS = 2  # the script's kernels, one function each


def _readonly_prefix() -> list[str] | None:
    """A command prefix under which a read-only directory is read-only for the child (root
    ignores permission bits unless it drops CAP_DAC_OVERRIDE), or None if impossible."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search,-fowner"]


def _run(cache: Path, prefix: list[str]) -> dict:
    """Run the script in a fresh process on cache directory ``cache``; its JSON report."""
    env = dict(os.environ, LAZYSPARSE_CACHE_DIR=str(cache))
    out = subprocess.run([*prefix, sys.executable, "-c", SCRIPT], capture_output=True,
                         text=True, env=env, timeout=300)
    if out.returncode != 0:
        return {"returncode": out.returncode, "stderr": out.stderr[-3000:]}
    return {"returncode": 0, **json.loads(out.stdout.strip().splitlines()[-1])}


def _kernel_files(cache: Path, suffix: str) -> list[Path]:
    """The Numba files of kind ``suffix`` (``.nbi``/``.nbc``), one per kernel, by name."""
    files = sorted((cache / "__pycache__").glob(f"lsk_*{suffix}"))
    assert len(files) == KERNELS, files
    return files


def _set_writable(root: Path, writable: bool) -> None:
    """Add or remove write permission on ``root`` and everything under it."""
    paths = [root, *root.rglob("*")] if root.is_dir() else [root]
    for p in paths:
        mode = p.stat().st_mode
        bits = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH
        p.chmod(mode | stat.S_IWUSR if writable else mode & ~bits)


def _garbage(cache: Path) -> None:
    (a_nbi, _), (_, b_nbc) = _kernel_files(cache, ".nbi"), _kernel_files(cache, ".nbc")
    a_nbi.write_bytes(os.urandom(1500))
    b_nbc.write_bytes(b"\x80\x05garbage" + os.urandom(4000))


def _truncated(cache: Path) -> None:
    (_, b_nbi), (a_nbc, _) = _kernel_files(cache, ".nbi"), _kernel_files(cache, ".nbc")
    for p in (b_nbi, a_nbc):
        p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def _zero_length(cache: Path) -> None:
    (a_nbi, _), (_, b_nbc) = _kernel_files(cache, ".nbi"), _kernel_files(cache, ".nbc")
    a_nbi.write_bytes(b"")
    b_nbc.write_bytes(b"")


def _flipped_byte(cache: Path) -> None:
    a_nbc = _kernel_files(cache, ".nbc")[0]  # a pickle that still loads, with bad machine code
    data = bytearray(a_nbc.read_bytes())
    data[len(data) // 2] ^= 0xFF
    a_nbc.write_bytes(bytes(data))


def _swap(suffix: str) -> Callable[[Path], None]:
    def swap(cache: Path) -> None:
        a, b = _kernel_files(cache, suffix)
        da, db = a.read_bytes(), b.read_bytes()
        a.write_bytes(db)
        b.write_bytes(da)
    return swap


def _readonly_empty(cache: Path) -> None:
    shutil.rmtree(cache)
    cache.mkdir()
    _set_writable(cache, False)


def _regular_file(cache: Path) -> None:
    shutil.rmtree(cache)
    cache.write_text("not a directory\n")


@dataclass(frozen=True)
class Scenario:
    """A fault made on a copy of the populated cache, then ``runs`` fresh processes."""

    make: Callable[[Path], None]
    damaged: int = 0  # kernels whose entry is damaged: one warning and one compile each
    runs: int = 1  # a second run checks the rebuilt entries load without compiling
    readonly: bool = False


SCENARIOS = {
    "garbage": Scenario(_garbage, damaged=2, runs=2),
    "truncated": Scenario(_truncated, damaged=2),
    "zero_length": Scenario(_zero_length, damaged=2),
    "flipped_byte": Scenario(_flipped_byte, damaged=1),
    "swapped_index": Scenario(_swap(".nbi"), damaged=2),
    "swapped_data": Scenario(_swap(".nbc"), damaged=2, runs=2),
    "readonly_empty": Scenario(_readonly_empty, readonly=True),
    "regular_file": Scenario(_regular_file),
    "readonly_populated": Scenario(lambda cache: _set_writable(cache, False), readonly=True),
}


def _play(name: str, root: Path, template: Path) -> list[dict] | str:
    """Make scenario ``name``'s fault on a copy of ``template``; the runs' reports (or why
    it cannot run here)."""
    sc = SCENARIOS[name]
    prefix = _readonly_prefix() if sc.readonly else []
    if prefix is None:
        return "root without setpriv cannot make a read-only directory"
    cache = root / name
    shutil.copytree(template, cache)
    sc.make(cache)
    return [_run(cache, prefix) for _ in range(sc.runs)]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Every scenario's reports, plus the populating run's (``"populate"``)."""
    root = tmp_path_factory.mktemp("kernel_cache_faults")
    template = root / "template"
    first = _run(template, [])
    results: dict = {"populate": [first], "template": template, "root": root}
    if first["returncode"] == 0:
        with ThreadPoolExecutor(max_workers=3) as pool:
            futs = {n: pool.submit(_play, n, root, template) for n in SCENARIOS}
            results.update({n: f.result() for n, f in futs.items()})
    yield results
    for p in root.iterdir():  # let pytest delete the read-only copies
        _set_writable(p, True)


def _reports(outcomes: dict, name: str) -> list[dict]:
    """A scenario's reports, each from a process that exited cleanly and computed right."""
    assert outcomes["populate"][0]["returncode"] == 0, outcomes["populate"][0]
    reports = outcomes[name]
    if isinstance(reports, str):
        pytest.skip(reports)
    for r in reports:
        assert r["returncode"] == 0, r["stderr"]
        assert r["ok"], r
    return reports


def test_populating_run_compiles_and_writes_every_kind_of_file(outcomes):
    first = outcomes["populate"][0]
    assert first["returncode"] == 0, first.get("stderr")
    assert first["ok"] and first["compiled"] == KERNELS and not first["warnings"]
    template = outcomes["template"]
    assert len(list(template.glob("lsk_*.py"))) == KERNELS
    _kernel_files(template, ".nbi")
    _kernel_files(template, ".nbc")


@pytest.mark.parametrize("name", ["garbage", "truncated", "zero_length", "flipped_byte",
                                  "swapped_index", "swapped_data"])
def test_damaged_entries_are_discarded_and_rebuilt(outcomes, name):
    reports = _reports(outcomes, name)
    first = reports[0]
    damaged = SCENARIOS[name].damaged
    assert first["compiled"] == damaged and first["disk_loaded"] == KERNELS - damaged
    assert len(first["warnings"]) == damaged, first["warnings"]  # one per damaged kernel
    assert all("discarded a damaged cache entry" in w for w in first["warnings"])
    for later in reports[1:]:  # the rebuilt entries load: nothing compiles, nothing warns
        assert later["compiled"] == 0 and later["disk_loaded"] == KERNELS
        assert not later["warnings"]


def test_readonly_empty_directory_falls_back_to_memory(outcomes):
    (report,) = _reports(outcomes, "readonly_empty")
    assert report["compiled"] == KERNELS
    (warning,) = report["warnings"]
    cache = outcomes["root"] / "readonly_empty"
    assert str(cache) in warning and "LAZYSPARSE_CACHE_DIR" in warning
    assert "memory only" in warning
    assert not list(cache.iterdir())


def test_cache_path_that_is_a_file_falls_back_to_memory(outcomes):
    (report,) = _reports(outcomes, "regular_file")
    assert report["compiled"] == KERNELS
    (warning,) = report["warnings"]
    cache = outcomes["root"] / "regular_file"
    assert str(cache) in warning and "LAZYSPARSE_CACHE_DIR" in warning
    assert cache.read_text() == "not a directory\n"


def test_readonly_populated_cache_compiles_nothing(outcomes):
    (report,) = _reports(outcomes, "readonly_populated")
    assert report["compiled"] == 0 and report["disk_loaded"] == KERNELS
    assert not report["warnings"]
    cache, template = outcomes["root"] / "readonly_populated", outcomes["template"]
    names = sorted(p.relative_to(cache) for p in cache.rglob("*"))
    assert names == sorted(p.relative_to(template) for p in template.rglob("*"))
