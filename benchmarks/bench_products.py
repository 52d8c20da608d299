"""Transposed and sliced sparse products written as users write them, next to scipy.

Cases (issue 23 item 3), on the workflow corpus's term counts (``tests/workflows/corpus.py``,
200k x 100k, 5 stored entries per row, at ``--size bench``) and a 10k x 25k TF matrix:

- ``B.T @ B`` of binarized counts (``xp.astype(X > 0, xp.int64)``): co-occurrence;
- ``B.T @ B`` of the float counts (the same path for every dtype);
- ``X[:6] @ X.T`` and ``Tn[:500] @ Tn.T``: similarity of a few rows against all.

Each row: scipy's and lazysparse's best time (``xp.compute`` included; runs alternate so
both share the machine's load), their ratio (< 1: lazysparse faster) and lazysparse's
first call (planning and kernel compilation or the on-disk cache). One thread unless
``NUMBA_NUM_THREADS`` says otherwise. Not a test: nothing is asserted.

Usage: ``NUMBA_NUM_THREADS=1 python benchmarks/bench_products.py [--repeat R] [--small]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.workflows.corpus import TEXT, Size, term_counts  # noqa: E402

import lazysparse as xp  # noqa: E402

Case = tuple[str, Callable[[], Any], Callable[[], Any]]


def _normalized(c: sp.csr_array) -> sp.csr_array:
    norms = np.sqrt(np.asarray(c.multiply(c).sum(axis=1)).ravel())
    return sp.csr_array(c.multiply(1.0 / np.where(norms > 0, norms, 1.0)[:, None]))


def cases(small: bool) -> list[Case]:
    counts = term_counts(Size(2_000, 800, 5) if small else TEXT.bench, 1)
    tf = term_counts(Size(1_000, 2_500, 20) if small else Size(10_000, 25_000, 20), 2)
    tn = _normalized(tf)
    binar = (counts > 0).astype(np.int64)
    x, lt = xp.asarray(counts), xp.asarray(tn)
    lb = xp.astype(x > 0, xp.int64)
    return [
        ("B.T @ B, B = astype(X > 0, int64)", lambda: xp.compute(lb.T @ lb),
         lambda: (binar.T @ binar).tocsr()),
        ("X.T @ X, float counts", lambda: xp.compute(x.T @ x), lambda: (counts.T @ counts).tocsr()),
        ("X[:6] @ X.T", lambda: xp.compute(x[:6] @ x.T), lambda: (counts[:6] @ counts.T).tocsr()),
        ("Tn[:500] @ Tn.T (10k x 25k)", lambda: xp.compute(lt[:500] @ lt.T),
         lambda: (tn[:500] @ tn.T).tocsr()),
    ]


def best_times(ours: Callable[[], Any], theirs: Callable[[], Any], repeat: int
               ) -> tuple[float, float, float]:
    """(first call of ours, best of ours, best of theirs); runs alternate."""
    t = time.perf_counter()
    ours()
    first = time.perf_counter() - t
    a, b = [], []
    for _ in range(repeat):
        for fn, acc in ((ours, a), (theirs, b)):
            t = time.perf_counter()
            fn()
            acc.append(time.perf_counter() - t)
    return first, min(a), min(b)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--small", action="store_true", help="small sizes (a smoke run)")
    args = ap.parse_args()
    print(f"# products, NUMBA_NUM_THREADS={os.environ['NUMBA_NUM_THREADS']}, "
          f"best of {args.repeat}")
    print("| case | scipy ms | lazysparse ms | ls/scipy | lazysparse 1st call ms |")
    print("|---|---|---|---|---|")
    for name, ours, theirs in cases(args.small):
        first, ls, sc = best_times(ours, theirs, args.repeat)
        print(f"| {name} | {sc * 1e3:.1f} | {ls * 1e3:.1f} | {ls / sc:.2f} | "
              f"{first * 1e3:.0f} |", flush=True)


if __name__ == "__main__":
    main()
