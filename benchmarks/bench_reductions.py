"""Reductions whose unstored entries do not vanish, lazysparse vs scipy (not a test).

Usage: ``NUMBA_NUM_THREADS=1 python benchmarks/bench_reductions.py [n]``. An n x n CSR
matrix with 10 stored entries per row and fill 0: ``max``/``count_nonzero`` along each
axis and in full, ``sum`` of a NaN-filled copy. Prints best-of-3 times (after a warm-up
call that compiles) for lazysparse (through the public API) and scipy.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import lazysparse as xp  # noqa: E402


def best(fn: Any, reps: int = 3) -> float:
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    rng = np.random.default_rng(0)
    rows = np.repeat(np.arange(n), 10)
    cols = rng.integers(0, n, rows.size)
    S = sp.csr_matrix((rng.standard_normal(rows.size), (rows, cols)), shape=(n, n))
    S.sum_duplicates()
    A = xp.asarray(S)
    cases = {
        "max axis=0": (lambda: xp.compute(xp.max(A, axis=0)), lambda: S.max(axis=0)),
        "max axis=1": (lambda: xp.compute(xp.max(A, axis=1)), lambda: S.max(axis=1)),
        "max full": (lambda: xp.compute(xp.max(A)), lambda: S.max()),
        "count_nonzero axis=0": (lambda: xp.compute(xp.count_nonzero(A, axis=0)),
                                 lambda: S.count_nonzero(axis=0)),
        "argmax axis=1": (lambda: xp.compute(xp.argmax(A, axis=1)), lambda: S.argmax(axis=1)),
    }
    for name, (ls, sc) in cases.items():
        t_sc = best(sc)
        t_ls = best(ls, reps=1 if name.startswith("argmax") else 3)
        print(f"{name:24s} scipy {t_sc * 1e3:9.1f} ms   lazysparse {t_ls * 1e3:9.1f} ms",
              flush=True)


if __name__ == "__main__":
    main()
