"""``benchmarks/gpu_check.sh --dry-run`` end to end on tiny sizes: the device check of issue
25 must not fail on the lent GPU for a typo, a missing step or a broken summary. The dry
run replaces CuPy/NVRTC by NumPy and the kernel emulator (docs/gpu.md)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.kernels.backends.cuda.emulator import CXX

ROOT = Path(__file__).resolve().parents[4]
SCRIPT = ROOT / "benchmarks" / "gpu_check.sh"
CASES = {"spmv", "spmv_powerlaw", "spmv_T", "spgemm", "add", "sddmm", "mttkrp", "sum_abc"}

pytestmark = pytest.mark.skipif(CXX is None or shutil.which("bash") is None
                                or shutil.which("timeout") is None,
                                reason="needs bash, timeout and a host C++ compiler")


@pytest.mark.slow
def test_dry_run_on_tiny_sizes(tmp_path: Path) -> None:
    env = {**os.environ, "OUT": str(tmp_path / "out"), "PYTHON": sys.executable,
           "GPU_CHECK_SIZE": "tiny", "GPU_CHECK_REPEAT": "1", "GPU_CHECK_BUDGET": "240",
           "GPU_CHECK_TESTS_K": "spmv_f64 and thread",
           "LAZYSPARSE_GPU_RANDOM_EXAMPLES": "1"}
    env.pop("PYTHONPATH", None)  # the script puts this tree's src first itself
    if not list((ROOT / ".whl").glob("*.whl")):  # the wheels are git-ignored: absent in CI
        env["GPU_CHECK_SKIP"] = "wheels"
    proc = subprocess.run(["bash", str(SCRIPT), "--dry-run"], capture_output=True, text=True,
                          env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    out = tmp_path / "out"
    files = sorted(p.name for p in out.iterdir())
    assert files == ["bench_gpu.json", "logs.tar.gz", "summary.json"]  # <= 8, plain names
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+", f) for f in files)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["dry_run"] is True and summary["size"] == "tiny"
    steps = {s["step"]: s["rc"] for s in summary["steps"]}
    assert set(steps) == {"wheels", "versions", "tests_gpu", "bench", "tests_cpu"}
    assert all(rc in ("0", "skipped") for rc in steps.values()), steps
    gpu = summary["junit"]["junit_gpu"]
    assert gpu["tests"] >= 1 and gpu["failures"] == gpu["errors"] == 0
    bench = {c["case"]: c for c in summary["bench"]}
    assert set(bench) == CASES
    for c in bench.values():
        assert c["ok"] and c["host_fallbacks"] == 0, c
        assert c["placements"] and all(p.startswith("cuda: ") for p in c["placements"])
        assert c["kernel_ms"] > 0 and c["speedup"] > 0
    full = json.loads((out / "bench_gpu.json").read_text())
    assert full["info"]["backend"] == "emulated" and full["copy_gbps"] > 0
    with tarfile.open(out / "logs.tar.gz") as tar:
        names = {Path(n).name for n in tar.getnames()}
    assert {"versions.log", "tests_gpu.log", "bench.log", "junit_gpu.xml"} <= names
