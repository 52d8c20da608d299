"""The stage layers (``[tool.importlinter]`` in pyproject.toml): sparse_linalg > api >
engine > kernels > optimizer > logic > formats, each importing only the stages below it
(function-local imports included), and inside kernels/ backends > compile and compile's
rooms lowering > planning > ir. Checked with import-linter, and shown to fail on a
back-import added to a copy of the package."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("importlinter")

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "pyproject.toml"
BROKEN = "lazysparse.optimizer is not allowed to import lazysparse.api"
SOLVERS_BROKEN = "lazysparse.api is not allowed to import lazysparse.sparse_linalg"
KERNELS_BROKEN = "lazysparse.kernels.compile is not allowed to import lazysparse.kernels.backends"
ROOMS_BROKEN = ("lazysparse.kernels.compile.planning is not allowed to import "
                "lazysparse.kernels.compile.lowering")


def lint_imports(src: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` with the project's contracts over the ``lazysparse`` under ``src``
    (a fresh interpreter: the graph is of the files there, not of what is imported here)."""
    code = ("from importlinter.cli import lint_imports; raise SystemExit(lint_imports("
            f"config_filename={str(CONFIG)!r}, no_cache=True, no_logo=True))")
    env = {**os.environ, "PYTHONPATH": str(src), "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, text=True,
                           capture_output=True, timeout=300)


def test_stages_import_one_way(tmp_path: Path) -> None:
    res = lint_imports(ROOT / "src", tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "4 kept, 0 broken" in res.stdout


@pytest.mark.parametrize(("stage", "target", "message"), [
    ("optimizer", "from lazysparse.api.array.lazy_array import LazyArray", BROKEN),
    ("api", "from lazysparse.sparse_linalg import cg as LazyArray", SOLVERS_BROKEN),
    ("kernels.compile", "from lazysparse.kernels.backends import Kernel as LazyArray",
     KERNELS_BROKEN),
    ("kernels.compile.planning",
     "from lazysparse.kernels.compile.lowering.kernel import Lowered as LazyArray", ROOMS_BROKEN),
])
def test_a_back_import_breaks_the_contract(tmp_path: Path, stage: str, target: str,
                                           message: str) -> None:
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "lazysparse", src / "lazysparse",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (src / "lazysparse" / stage.replace(".", "/") / "back_import.py").write_text(
        "def hidden():\n"
        f"    {target}  # inside a function: counts\n"
        "\n"
        "    return LazyArray\n")
    res = lint_imports(src, tmp_path)
    assert res.returncode != 0, res.stdout
    assert message in res.stdout and f"lazysparse.{stage}.back_import" in res.stdout, \
        res.stdout
