"""Structured levels (issue 16): SpMV on stencils stored as DIA and on block-structured
matrices stored as BSR, lazysparse beside scipy in one run on the same data (not a test).

Each case is written the way a user writes it: a scipy ``dia_array``/``bsr_array`` handed to
``xp.asarray`` (no copy: the DIA/BSR levels wrap scipy's arrays), ``y = A @ x`` and
``xp.compute(y)``. Peers: scipy's own DIA/BSR kernel on the same object and scipy CSR of the
same matrix (``tocsr()`` outside the timing). Results are compared before timing; then one
warm-up call each (lazysparse's compiles: "first"), then ``--reps`` interleaved rounds.
The table gives best and median wall times and the ratio peer / lazysparse on the best
times (> 1: lazysparse faster). The run-length image case is in ``bench_run_length.py``.

Cases:

- ``dia-5pt``: 2-D 5-point Laplacian on a 1024 × 1024 grid (1 048 576 rows, 5 diagonals);
- ``dia-7pt``: 3-D 7-point Laplacian on a 102³ grid (1 061 208 rows, 7 diagonals);
- ``bsr-3x3`` / ``bsr-4x4``: an FEM-style system on a 708 × 708 grid (501 264 block rows),
  3 / 4 unknowns per node: dense 3×3 / 4×4 blocks coupling each node with itself and its
  four grid neighbours (5 blocks per interior block row).

Usage::

    NUMBA_NUM_THREADS=1 python benchmarks/bench_structured.py [--only dia-5pt] [--reps 7]

Threads: lazysparse uses NUMBA_NUM_THREADS; scipy is single-threaded.
"""

from __future__ import annotations

import os
import sys
import tempfile

os.environ.setdefault("LAZYSPARSE_CACHE_DIR", tempfile.mkdtemp(prefix="lsk-bench-struct-"))
for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numba  # noqa: E402
import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
import lazysparse as xp  # noqa: E402


@dataclass
class Runner:
    """One way to compute the case: a name and a zero-argument call."""

    name: str
    fn: Callable[[], Any]
    times: list[float] = field(default_factory=list)
    first: float = 0.0


@dataclass
class Case:
    """A matrix, its format's description, and the runners computing ``A @ x``."""

    name: str
    data: str
    runners: list[Runner]
    check: Callable[[], str]


def laplacian_dia(dims: tuple[int, ...]) -> sp.dia_array:
    """The ``2·len(dims)+1``-point Laplacian on a grid of ``dims`` as a scipy DIA."""
    n = int(np.prod(dims))
    offsets, diags = [0], [np.full(n, 2.0 * len(dims))]
    stride = 1
    for d in reversed(dims):
        for sign in (-1, 1):
            v = np.full(n, -1.0)
            # no coupling across the grid's boundary along this axis
            pos = np.arange(n)
            cut = ((pos // stride) % d == (d - 1 if sign == 1 else 0))
            v[cut] = 0.0
            offsets.append(sign * stride)
            diags.append(np.roll(v, stride) if sign == 1 else v)
        stride *= d
    order = np.argsort(offsets)
    return sp.dia_array((np.array([diags[k] for k in order]), np.array(offsets)[order]),
                        shape=(n, n))


def block_matrix(nx: int, r: int, seed: int) -> sp.bsr_array:
    """A 2-D ``nx × nx`` grid with ``r`` unknowns per node (an FEM-style system): block row
    ``i`` couples node ``i`` with its grid neighbours ``i ± 1``, ``i ± nx`` through dense
    ``r × r`` blocks (5 blocks per interior block row), random values."""
    nb = nx * nx
    rng = np.random.default_rng(seed)
    node = np.arange(nb)
    x, y = node % nx, node // nx
    cols = np.stack([np.where(y > 0, node - nx, -1), np.where(x > 0, node - 1, -1), node,
                     np.where(x < nx - 1, node + 1, -1), np.where(y < nx - 1, node + nx, -1)],
                    axis=1)
    keep = cols >= 0
    indptr = np.zeros(nb + 1, dtype=np.int32)
    np.cumsum(keep.sum(axis=1), out=indptr[1:])
    indices = cols[keep].astype(np.int32)
    data = rng.standard_normal((indices.size, r, r))
    return sp.bsr_array((data, indices, indptr), shape=(nb * r, nb * r))


def spmv_case(name: str, m: Any, data: str) -> Case:
    """``A @ x`` by lazysparse (from the scipy object), scipy on it, scipy CSR."""
    csr = m.tocsr()
    x = np.random.default_rng(1).standard_normal(m.shape[1])
    a, xv = xp.asarray(m), xp.asarray(x)
    fmt = m.format

    def ours() -> Any:
        return xp.compute(a @ xv)

    runners = [Runner("lazysparse", ours), Runner(f"scipy {fmt}", lambda: m @ x),
               Runner("scipy csr", lambda: csr @ x)]

    def check() -> str:
        got, want = np.asarray(ours()), csr @ x
        ok = np.allclose(got, want, rtol=1e-10, atol=1e-10) and np.allclose(m @ x, want)
        kept = a.format == fmt
        return "ok" if ok and kept else f"MISMATCH (format kept: {kept})"

    return Case(name, data, runners, check)


CASES: dict[str, Callable[[], Case]] = {
    "dia-5pt": lambda: spmv_case("dia-5pt", laplacian_dia((1024, 1024)),
                                 "5-point Laplacian, 1 048 576 rows, DIA"),
    "dia-7pt": lambda: spmv_case("dia-7pt", laplacian_dia((102, 102, 102)),
                                 "7-point Laplacian, 1 061 208 rows, DIA"),
    "bsr-3x3": lambda: spmv_case("bsr-3x3", block_matrix(708, 3, 0),
                                 "708² = 501 264 block rows, 3x3 blocks, grid stencil, BSR"),
    "bsr-4x4": lambda: spmv_case("bsr-4x4", block_matrix(708, 4, 0),
                                 "708² = 501 264 block rows, 4x4 blocks, grid stencil, BSR"),
}


def run(case: Case, reps: int) -> None:
    """Check, warm up, then ``reps`` interleaved rounds."""
    verdict = case.check()
    for r in case.runners:
        t = time.perf_counter()
        r.fn()
        r.first = time.perf_counter() - t
    for _ in range(reps):
        for r in case.runners:
            t = time.perf_counter()
            r.fn()
            r.times.append(time.perf_counter() - t)
    ours = min(case.runners[0].times)
    print(f"\n{case.name}: {case.data} [{verdict}]")
    print(f"  {'runner':<14} {'first ms':>9} {'best ms':>9} {'median ms':>10} {'ratio':>7}")
    for r in case.runners:
        best, med = min(r.times), statistics.median(r.times)
        ratio = "" if r is case.runners[0] else f"{best / ours:6.2f}x"
        print(f"  {r.name:<14} {1e3 * r.first:9.2f} {1e3 * best:9.2f} {1e3 * med:10.2f} "
              f"{ratio:>7}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default=",".join(CASES), help="comma-separated case names")
    p.add_argument("--reps", type=int, default=7)
    args = p.parse_args()
    print(f"NUMBA_NUM_THREADS={numba.config.NUMBA_NUM_THREADS}; ratios: peer best / "
          "lazysparse best (> 1: lazysparse faster)")
    for name in args.only.split(","):
        t0 = time.perf_counter()
        case = CASES[name]()
        run(case, args.reps)
        print(f"  ({name}: {time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
