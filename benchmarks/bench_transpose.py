"""Materialized transposes and row/column gathers: lazysparse next to scipy / NumPy, one run.

A 1M x 1M CSR with 5 stored entries per row (float64, int32 indices), and a 1000^3 tensor
with 5M stored entries for the 3-d permutations (baseline: NumPy ``lexsort`` of its COO
coordinates, then the gather of coordinates and values). Each row gives the median time of
both sides (runs alternate so they share the machine's noise), the median per-pair time
ratio, the extra peak memory of one call of each (tracemalloc: every array NumPy, scipy or
lazysparse allocates while the call runs) and its ratio. Target: both ratios <= 1.5.

Not a test: ``python benchmarks/bench_transpose.py [--n N --per-row K --repeat R]``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from bench_timing import extra_peak, paired_times

import lazysparse as xp
from lazysparse import formats

MiB = 2.0**20


@dataclass
class Case:
    """One comparison: our call, the baseline's, and a check that both agree."""

    name: str
    ours: Callable[[], object]
    theirs: Callable[[], object]
    check: Callable[[object, object], None]


def random_csr(n: int, per_row: int, seed: int) -> sp.csr_matrix:
    """``n x n`` CSR with ``per_row`` random sorted columns in every row (a handful of
    repeats merged away), float64 values and int32 indices."""
    rng = np.random.default_rng(seed)
    cols = np.sort(rng.integers(0, n, (n, per_row), dtype=np.int32), axis=1)
    ptr = np.arange(0, n * per_row + 1, per_row, dtype=np.int32)
    a = sp.csr_matrix((rng.random(n * per_row), cols.ravel(), ptr), shape=(n, n))
    a.sum_duplicates()
    return a


def random_3d(side: int, nnz: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique coordinates ``(3, m)`` and values of a ``side^3`` tensor."""
    rng = np.random.default_rng(seed)
    flat = np.unique(rng.integers(0, side**3, nnz))
    return np.array(np.unravel_index(flat, (side,) * 3)), rng.random(flat.size)


def same_scipy(got: object, want: object) -> None:
    """Equal scipy matrices: format, pointers, indices and values."""
    g = xp.to_scipy(got)
    w = want.asformat(g.format)  # type: ignore[attr-defined]
    assert g.shape == w.shape and g.nnz == w.nnz, (g.shape, w.shape, g.nnz, w.nnz)
    assert np.array_equal(g.indptr, w.indptr) and np.array_equal(g.indices, w.indices)
    assert np.array_equal(g.data, w.data)


def same_coords(got: object, want: object) -> None:
    """A permuted tensor equals the baseline's sorted coordinates and values."""
    t = formats.convert(got.tensor(), "coo", mode_order=(0, 1, 2))  # type: ignore[attr-defined]
    coords = np.array([np.asarray(level.idx) for level in t.levels])
    want_coords, want_values = want  # type: ignore[misc]
    assert np.array_equal(coords, want_coords) and np.array_equal(t.values, want_values)


def matrix_cases(n: int, per_row: int, n_rows: int, seed: int) -> list[Case]:
    """2-D transposes and gathers on the ``n x n`` CSR (and its CSC)."""
    a = random_csr(n, per_row, seed)
    c = a.tocsc()
    x, xc = xp.asarray(a), xp.asarray(c)
    rng = np.random.default_rng(seed + 1)
    rows = np.sort(rng.choice(n, n_rows, replace=False))
    return [
        Case("transpose csr -> csr  asformat(x.T,'csr') | A.T.tocsr()",
             lambda: xp.compute(xp.asformat(x.T, "csr")), lambda: a.T.tocsr(), same_scipy),
        Case("transpose csc -> csc  asformat(x.T,'csc') | C.T.tocsc()",
             lambda: xp.compute(xp.asformat(xc.T, "csc")), lambda: c.T.tocsc(), same_scipy),
        Case("transpose csc -> csr  asformat(x.T,'csr') | C.T.tocsr() (views)",
             lambda: xp.compute(xp.asformat(xc.T, "csr")), lambda: c.T.tocsr(), same_scipy),
        Case(f"rows csr  x[rows] ({n_rows} sorted) | A[rows]",
             lambda: x[rows], lambda: a[rows], same_scipy),
        Case(f"rows csr  take(x, rows, axis=0) ({n_rows}) | A[rows]",
             lambda: xp.take(x, rows, axis=0), lambda: a[rows], same_scipy),
        Case(f"cols csc  x[:, cols] ({n_rows} sorted) | C[:, cols]",
             lambda: xc[:, rows], lambda: c[:, rows], same_scipy),
    ]


def tensor_cases(side: int, nnz: int, seed: int) -> list[Case]:
    """3-d permutations of a CSF and a COO against a NumPy lexsort of the coordinates."""
    coords, vals = random_3d(side, nnz, seed)
    shape = (side,) * 3
    out = []
    for fmt in ("csf", "coo"):
        x = xp.asarray(formats.Tensor.from_coords(list(coords), vals, shape, format=fmt))
        for perm in ((2, 0, 1), (1, 0, 2)):
            def ours(x: xp.LazyArray = x, perm: tuple[int, ...] = perm, fmt: str = fmt
                     ) -> object:
                return xp.compute(xp.asformat(xp.permute_dims(x, perm), fmt))

            def theirs(perm: tuple[int, ...] = perm) -> tuple[np.ndarray, np.ndarray]:
                moved = coords[list(perm)]
                order = np.lexsort(moved[::-1])
                return moved[:, order], vals[order]

            out.append(Case(f"permute {fmt} {perm}  asformat(permute_dims) | np.lexsort",
                            ours, theirs, same_coords))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1_000_000, help="rows (= columns)")
    parser.add_argument("--per-row", type=int, default=5, help="stored entries per row")
    parser.add_argument("--rows", type=int, default=100_000, help="rows selected")
    parser.add_argument("--side", type=int, default=1000, help="3-d tensor side")
    parser.add_argument("--nnz3", type=int, default=5_000_000, help="3-d stored entries")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    cases = matrix_cases(args.n, args.per_row, args.rows, args.seed)
    cases += tensor_cases(args.side, args.nnz3, args.seed)
    print(f"{'case':60s} {'ours s':>8s} {'base s':>8s} {'time x':>7s} "
          f"{'ours MiB':>9s} {'base MiB':>9s} {'mem x':>6s}")
    for case in cases:
        case.check(case.ours(), case.theirs())  # also the warm-up (JIT, page faults)
        t_ours, t_base, ratio, _ = paired_times(case.ours, case.theirs, args.repeat)
        m_ours, m_base = extra_peak(case.ours), extra_peak(case.theirs)
        # a view allocates (almost) nothing on either side: no memory ratio to speak of
        mem = f"{m_ours / m_base:6.2f}" if m_base >= 0.1 * MiB else f"{'n/a':>6s}"
        print(f"{case.name:60s} {t_ours:8.4f} {t_base:8.4f} {ratio:7.2f} "
              f"{m_ours / MiB:9.1f} {m_base / MiB:9.1f} {mem}", flush=True)


if __name__ == "__main__":
    main()
