"""The package's compiled helpers cache under lazysparse's cache directory or nowhere:
a read-only install (package folder and ``$HOME`` unwritable) imports and runs (issue 24,
item 7). Each case runs in a child process on a copy of the package, then looks for Numba
cache files everywhere but the cache directory."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import lazysparse

CHILD = """
import numpy as np, scipy.sparse as sp, lazysparse as xp
from lazysparse.formats.compiled import checknumpy
from lazysparse.formats.compiled import sortnumpy
# small inputs take the helpers' NumPy twins (issue 35): here the compiled ones, as on large
checknumpy.CHECK_NUMPY_MAX = sortnumpy.SORT_NUMPY_MAX = 0
m = sp.random_array((40, 30), density=0.2, format="coo", rng=0)
x = xp.asarray(m)                      # validation and sorting helpers
got = np.asarray(xp.sum(x.T @ x, axis=0))
np.testing.assert_allclose(got, (m.T @ m).toarray().sum(axis=0))
print("ok")
"""


def _numba_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.suffix in (".nbi", ".nbc")]


@pytest.fixture(scope="module")
def package_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh copy of the package source (no caches), as an install would have it."""
    root = tmp_path_factory.mktemp("install")
    shutil.copytree(Path(lazysparse.__file__).parent, root / "lazysparse",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _run(package_copy: Path, home: Path, cache_dir: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(package_copy), "HOME": str(home),
           "LAZYSPARSE_CACHE_DIR": cache_dir, "XDG_CACHE_HOME": str(home / "xdg")}
    env.pop("NUMBA_CACHE_DIR", None)
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("ok")


@pytest.mark.slow  # a fresh interpreter: the full suite
def test_helpers_cache_under_the_cache_dir(package_copy: Path, tmp_path: Path) -> None:
    home, cache = tmp_path / "home", tmp_path / "cache"
    home.mkdir()
    _run(package_copy, home, str(cache))
    assert _numba_files(cache / "helpers"), "the helpers wrote no cache"
    assert not _numba_files(package_copy), "a helper cached beside the package"
    assert not _numba_files(home), "a helper cached under $HOME"


@pytest.mark.slow
def test_unusable_cache_dir_still_imports_and_runs(package_copy: Path,
                                                   tmp_path: Path) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    home = tmp_path / "home"
    home.mkdir()
    _run(package_copy, home, str(blocker / "cache"))  # cannot be created, even by root
    assert not _numba_files(package_copy)
    assert not _numba_files(home)


def test_no_package_helper_uses_numbas_own_cache() -> None:
    """``numba.njit(cache=True)`` in the package would write beside it (or fail to import
    read-only): helpers use ``formats.compiled.jit.helper_jit``; only generated kernels (whose
    cache ``kernels/backends/numba/cache_store.py`` places) say ``cache=True``, in generated
    source."""
    root = Path(lazysparse.__file__).parent
    offenders = [str(p.relative_to(root)) for p in root.rglob("*.py")
                 if p.relative_to(root).as_posix() != "kernels/backends/numba/codegen.py"
                 and any("jit(" in line and re.search(r"cache=(?!False)", line)
                         for line in p.read_text().splitlines()
                         if not line.lstrip().startswith(("#", "functions with", "from its")))]
    assert offenders == []
