"""Reads proportional to what is read (issue 23 item 2): lazysparse selections vs scipy.

Cases, each timed best-of-N in the same process on the same data, with the peak memory
the call allocates (``tracemalloc``: NumPy's allocations are traced):

- ``x[i]`` of a 1M x 1M CSR (~5 stored per row) vs scipy's ``m[[i]]``;
- ``x[a:b]`` (10k rows) and ``x[a:b:7]`` of the same matrix vs scipy's slices;
- 100 mini-batches ``X[idx] @ w`` (256 random rows of a 100k x 10k CSR) vs scipy;
- ``X[:, keep]`` (a column index array, sorted, as min_df filtering keeps) vs scipy;
- ``x[i]`` of a hypersparse 10^9 x 10^9 dcsr matrix (scipy cannot hold its row pointers).

Ratio = lazysparse / scipy (< 1: lazysparse faster or smaller). Nothing is asserted.
Usage: ``PYTHONPATH=src NUMBA_NUM_THREADS=1 python benchmarks/bench_selection.py [--repeat R]``.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

import lazysparse as xp
from lazysparse import formats


def random_csr(n: int, m: int, per_row: int, seed: int) -> sp.csr_array:
    """An ``n x m`` CSR with about ``per_row`` stored entries per row (sorted, unique)."""
    rng = np.random.default_rng(seed)
    nnz = n * per_row
    rows = np.sort(rng.integers(0, n, nnz))
    cols = rng.integers(0, m, nnz)
    a = sp.csr_array((rng.random(nnz), (rows, cols)), shape=(n, m))
    a.sum_duplicates()
    return a


def best(fn: Callable[[], Any], repeat: int) -> float:
    """Best wall time of ``repeat`` calls (after one warm-up call)."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def peak(fn: Callable[[], Any]) -> int:
    """Peak bytes traced while ``fn`` runs (its result kept alive until the end)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    out = fn()
    _, top = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del out
    return top


def row(name: str, ls: Callable[[], Any], ref: Callable[[], Any] | None, repeat: int) -> None:
    """Print one table row: times, ratio, peak memory of both."""
    t_ls, m_ls = best(ls, repeat), peak(ls)
    if ref is None:
        print(f"| {name} | {t_ls * 1e3:.3f} | - | - | {m_ls / 1e6:.3f} | - | - |")
        return
    t_ref, m_ref = best(ref, repeat), peak(ref)
    print(f"| {name} | {t_ls * 1e3:.3f} | {t_ref * 1e3:.3f} | {t_ls / t_ref:.2f} | "
          f"{m_ls / 1e6:.3f} | {m_ref / 1e6:.3f} | {m_ls / max(m_ref, 1):.2f} |")


def minibatches(X: Any, w: Any, batches: list[np.ndarray]) -> list[Any]:
    """``X[idx] @ w`` for each batch (lazysparse results computed)."""
    return [X[idx] @ w for idx in batches]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    r = args.repeat
    print("| case | lazysparse ms | scipy ms | time ratio | lazysparse MB | scipy MB | "
          "memory ratio |")
    print("|---|---|---|---|---|---|---|")

    m = random_csr(1_000_000, 1_000_000, 5, 0)
    x = xp.asarray(m)
    i = 123_457
    row("x[i], 1M x 1M CSR", lambda: xp.compute(x[i]), lambda: m[[i]], r)
    row("x[a:b] (10k rows)", lambda: xp.compute(x[500_000:510_000]),
        lambda: m[500_000:510_000], r)
    row("x[a:b:7] (10k rows)", lambda: xp.compute(x[500_000:570_000:7]),
        lambda: m[500_000:570_000:7], r)

    X = random_csr(100_000, 10_000, 20, 1)
    Xl = xp.asarray(X)
    w = np.random.default_rng(2).random(X.shape[1])
    rng = np.random.default_rng(3)
    batches = [rng.choice(X.shape[0], 256, replace=False) for _ in range(100)]
    row("100 mini-batches X[idx] @ w", lambda: [np.asarray(v) for v in
                                               minibatches(Xl, w, batches)],
        lambda: minibatches(X, w, batches), r)
    row("X[idx] (256 rows)", lambda: xp.compute(Xl[batches[0]]), lambda: X[batches[0]], r)

    df = np.diff(X.tocsc().indptr)
    keep = np.flatnonzero(df >= np.median(df))
    row("X[:, keep] (half the columns)", lambda: xp.compute(Xl[:, keep]),
        lambda: X[:, keep], r)

    n = 10**9
    rng = np.random.default_rng(4)
    coords = [np.sort(rng.choice(n, 100_000, replace=False)), rng.integers(0, n, 100_000)]
    h = xp.asarray(formats.Tensor.from_coords(coords, rng.random(100_000), (n, n),
                                              format="dcsr"))
    hit = int(coords[0][777])
    row("x[i], 1e9 x 1e9 dcsr (stored row)", lambda: xp.compute(h[hit]), None, r)
    row("x[idx], 1e9 x 1e9 dcsr (256 rows)",
        lambda: xp.compute(h[coords[0][:256][::-1]]), None, r)


if __name__ == "__main__":
    main()
