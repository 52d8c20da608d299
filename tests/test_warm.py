"""``python -m lazysparse warm`` fills the disk cache: a later process loads, never compiles
(issue 35, item 4)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lazysparse import warm

ROOT = Path(__file__).resolve().parents[1]
ONLY = ("SpMV A @ x", "add")


def _warm(cache: Path, *extra: str) -> tuple[int, int]:
    """Run the warm command in a fresh process on ``cache``; its compiled and loaded totals."""
    # a user's default mode: warm compiles in process all the same (no eager tier)
    env = dict(os.environ, LAZYSPARSE_CACHE_DIR=str(cache), LAZYSPARSE_COMPILE="background")
    cmd = [sys.executable, "-m", "lazysparse", "warm", "--dtype", "float64", "--layout", "csr"]
    for name in ONLY:
        cmd += ["--only", name]
    proc = subprocess.run([*cmd, *extra], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    total = re.search(r"(\d+) kernels compiled, (\d+) loaded from disk", proc.stdout)
    assert total is not None, proc.stdout
    assert all(name in proc.stdout for name in ONLY)
    return int(total[1]), int(total[2])


@pytest.mark.slow
def test_warm_compiles_once_and_a_new_process_loads(tmp_path: Path) -> None:
    compiled, loaded = _warm(tmp_path)
    assert compiled >= len(ONLY) and loaded == 0
    again = _warm(tmp_path)
    assert again == (0, compiled)


def test_warm_checks_values_and_names_every_operation() -> None:
    names = warm.operation_names()
    assert len(set(names)) == len(names) and "SpGEMM A @ B" in names and "dot" in names
    done = list(warm.warm((warm.Layout.DENSE,), ("int64",), frozenset({"A + B", "divide"})))
    assert [(w.name, w.layout, w.dtype) for w in done] == [("A + B", warm.Layout.DENSE,
                                                            "int64")]  # divide: floats only


def test_warm_rejects_an_unknown_operation(tmp_path: Path) -> None:
    env = dict(os.environ, LAZYSPARSE_CACHE_DIR=str(tmp_path))
    proc = subprocess.run([sys.executable, "-m", "lazysparse", "warm", "--only", "nope"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 2 and "invalid choice" in proc.stderr
