"""Conversion benchmark: lazysparse next to scipy.sparse on the same matrix, in one run.

A 1M x 1M matrix with 10M stored entries (float64, int32 indices). Prints one table row per
case with the median time of each library and the ratio lazysparse / scipy (lower is better;
the target is <= 1.5). Not a test: run ``python benchmarks/bench_conversions.py [--n N --nnz M]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from lazysparse.formats import Tensor, convert


def _seconds(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def paired_times(
    ours: Callable[[], object], theirs: Callable[[], object], repeat: int
) -> tuple[float, float, float]:
    """Median times of both, and the median per-pair ratio; runs alternate to share the noise."""
    ours(), theirs()  # warm-up (JIT compilation, page faults)
    a, b = [], []
    for i in range(repeat):
        if i % 2:
            b.append(_seconds(theirs))
            a.append(_seconds(ours))
        else:
            a.append(_seconds(ours))
            b.append(_seconds(theirs))
    ratio = statistics.median(x / y for x, y in zip(a, b, strict=True))
    return statistics.median(a), statistics.median(b), ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1_000_000, help="rows (= columns)")
    parser.add_argument("--nnz", type=int, default=10_000_000, help="stored entries")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    n, nnz = args.n, args.nnz
    rows = rng.integers(0, n, nnz).astype(np.int32)
    cols = rng.integers(0, n, nnz).astype(np.int32)
    vals = rng.random(nnz)
    unsorted = sp.coo_array((vals, (rows, cols)), shape=(n, n))
    csr = unsorted.tocsr()  # canonical: duplicates summed, sorted
    coo = csr.tocoo()  # canonical row-major COO
    coo.has_canonical_format = True
    csc = csr.tocsc()

    t_csr = Tensor.from_scipy(csr)
    t_csc = Tensor.from_scipy(csc)
    t_coo = Tensor.from_scipy(coo)

    def fresh_unsorted() -> sp.coo_array:
        m = sp.coo_array((vals, (rows, cols)), shape=(n, n))
        m.has_canonical_format = False
        return m

    # correctness on the benchmark data, outside the timed region
    for got, want in [
        (convert(t_csr, "csc"), csc),
        (convert(t_csc, "csr"), csr),
        (convert(t_coo, "csr"), csr),
        (convert(t_coo, "csc"), csc),
        (Tensor.from_coords((rows, cols), vals, (n, n), format="csr", sum_duplicates=True), csr),
    ]:
        m = got.to_scipy()
        assert np.array_equal(m.indptr, want.indptr) and np.array_equal(m.indices, want.indices)
        assert np.allclose(m.data, want.data)

    cases: list[tuple[str, Callable[[], object], Callable[[], object]]] = [
        ("CSR -> CSC", lambda: convert(t_csr, "csc"), lambda: csr.tocsc()),
        ("CSC -> CSR", lambda: convert(t_csc, "csr"), lambda: csc.tocsr()),
        ("COO -> CSR (canonical COO)", lambda: convert(t_coo, "csr"), lambda: coo.tocsr()),
        ("COO -> CSC (canonical COO)", lambda: convert(t_coo, "csc"), lambda: coo.tocsc()),
        (
            "unsorted coords -> CSR (sort + sum dups)",
            lambda: Tensor.from_coords(
                (rows, cols), vals, (n, n), format="csr", sum_duplicates=True
            ),
            lambda: fresh_unsorted().tocsr(),
        ),
    ]
    print(f"matrix: {n} x {n}, nnz={csr.nnz}, float64, int32 indices; median of {args.repeat}")
    print("ratio = median over alternating pairs of lazysparse time / scipy time")
    print(f"{'case':<42} {'lazysparse ms':>14} {'scipy ms':>10} {'ratio':>7}")
    for name, ours, theirs in cases:
        a, b, ratio = paired_times(ours, theirs, args.repeat)
        print(f"{name:<42} {a * 1e3:>14.1f} {b * 1e3:>10.1f} {ratio:>7.2f}")


if __name__ == "__main__":
    main()
