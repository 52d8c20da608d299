"""Large sparse inputs stay sparse end to end: 1M x 1M CSR ``A + B``, ``A * B``, ``A @ B``
through ``xp`` in a fresh subprocess, whose peak RSS must stay under 2 GB (a densified
1M x 1M result or n x n workspace would need terabytes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
N = 1_000_000
PER_ROW = 5
LIMIT_BYTES = 2 * 1024**3

CHILD = textwrap.dedent(
    """
    import json, resource, sys
    import numpy as np
    import scipy.sparse as sp
    import lazysparse as xp

    n, per_row = int(sys.argv[1]), int(sys.argv[2])

    def rand_csr(seed):
        rng = np.random.default_rng(seed)
        rows = np.repeat(np.arange(n, dtype=np.int64), per_row)
        cols = rng.integers(0, n, n * per_row)
        a = sp.coo_array((rng.random(n * per_row), (rows, cols)), shape=(n, n)).tocsr()
        a.sum_duplicates()
        a.sort_indices()
        return a

    def peak():
        # this process's own high-water mark: ru_maxrss keeps the forking parent's peak
        # across exec on Linux (a long pytest run's RSS), VmHWM belongs to the new image
        try:
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux

    a, b = rand_csr(1), rand_csr(2)
    A, B = xp.asarray(a), xp.asarray(b)
    out = {"inputs": peak()}
    for name, lazy, ref in (("add", lambda: A + B, lambda: a + b),
                            ("multiply", lambda: A * B, lambda: a * b),
                            ("matmul", lambda: A @ B, lambda: a @ b)):
        r = xp.compute(lazy())
        got = xp.to_scipy(r).tocsr()
        out[name + "_peak"] = peak()
        want = ref().tocsr()
        want.eliminate_zeros()
        got.sum_duplicates()
        got.eliminate_zeros()
        diff = abs(got - want)
        out[name] = {"format": r.format, "nnz": int(got.nnz), "ref_nnz": int(want.nnz),
                     "max_abs_diff": float(diff.max()) if diff.nnz else 0.0}
        del r, got, want, diff
    out["peak"] = peak()
    print(json.dumps(out))
    """
)


@pytest.mark.slow
def test_large_sparse_ops_stay_sparse_in_memory() -> None:
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               NUMBA_NUM_THREADS=os.environ.get("NUMBA_NUM_THREADS", "1"))
    proc = subprocess.run([sys.executable, "-c", CHILD, str(N), str(PER_ROW)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    for name in ("add", "multiply", "matmul"):
        r = res[name]
        # stored sparse, with exactly scipy's pattern and values
        assert r["format"] != "dense", (name, r)
        assert r["nnz"] == r["ref_nnz"], (name, r)
        assert r["nnz"] <= 2 * PER_ROW * PER_ROW * N, (name, r)
        assert r["max_abs_diff"] <= 1e-9, (name, r)
        assert res[name + "_peak"] < LIMIT_BYTES, (name, res)
    assert res["peak"] < LIMIT_BYTES, res
