"""Native solvers (``xp.sparse_linalg``) against scipy.sparse.linalg's, in the same run.

Each solver runs a fixed number of iterations (``rtol=0`` and a cap, so neither stops
early) on the same problem: a 2-D Laplacian (cg, minres; 320 x 320 grid: n = 102,400),
a convection–diffusion matrix (bicgstab, gmres with restart 20), the tall ``[L; I]``
(lsqr, 204,800 x 102,400) and the 4 largest eigenpairs of the Laplacian (lobpcg). Reported
per iteration: the best of ``--repeat`` runs after a warm-up run (compiles, caches) of
each, scipy and lazysparse alternating so both share the machine's load; the ratio is
lazysparse / scipy (< 1: lazysparse faster). "computes/it" counts ``xp.compute`` calls
and replayed steps (``api.array.replay``) per iteration and "backends/it" generated-kernel
runs (a profiled extra run): each compute pays a per-call overhead, each kernel a pass over
its operands and a fresh output.
Single thread unless ``--threads``.

Usage: ``python benchmarks/bench_solvers.py [--side 320] [--iters 50] [--repeat 3]
[--only cg,gmres] [--threads 1] [--no-breakdown]``; the per-piece breakdown (one SpMV,
axpy, dot as a compute each, against NumPy/scipy) follows the table.
"""

from __future__ import annotations

import os
import sys

from bench_threads import pin_threads  # noqa: E402 - before NumPy/Numba

pin_threads()

import argparse  # noqa: E402
import cProfile  # noqa: E402
import pstats  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
import scipy.sparse.linalg as spla  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
import lazysparse as xp  # noqa: E402

sl = xp.sparse_linalg


def laplacian_2d(side: int) -> sp.csr_array:
    """The 5-point Laplacian on a ``side`` x ``side`` grid (SPD, n = side**2)."""
    t = sp.diags_array([-np.ones(side - 1), 4 * np.ones(side), -np.ones(side - 1)],
                       offsets=[-1, 0, 1])
    off = sp.diags_array([-np.ones(side - 1), -np.ones(side - 1)], offsets=[-1, 1])
    return (sp.kron(sp.eye_array(side), t) + sp.kron(off, sp.eye_array(side))).tocsr()


def convection_diffusion(side: int) -> sp.csr_array:
    n = side * side
    conv = sp.diags_array([0.4 * np.ones(n), -0.4 * np.ones(n - 1)], offsets=[0, -1])
    return (laplacian_2d(side) + conv).tocsr()


@dataclass(frozen=True)
class Case:
    """One solver: how to run ours and scipy's for ``iters`` iterations, and how many
    iterations one call makes."""

    name: str
    ours: Callable[[int], Any]
    theirs: Callable[[int], Any]
    per_call: Callable[[int], int]
    size: str


def cases(side: int) -> list[Case]:
    lap, cd = laplacian_2d(side), convection_diffusion(side)
    n = lap.shape[0]
    b = np.random.default_rng(0).standard_normal(n)
    tall = sp.vstack([lap, sp.eye_array(n)]).tocsr()
    bt = np.random.default_rng(1).standard_normal(tall.shape[0])
    x0 = np.random.default_rng(2).standard_normal((n, 4))
    A, C, T = xp.asarray(lap), xp.asarray(cd), xp.asarray(tall)
    B, BT, X0 = xp.asarray(b), xp.asarray(bt), xp.asarray(x0)

    def result(x: Any) -> Any:  # observe the result (both sides materialize x)
        return np.asarray(x[0] if isinstance(x, tuple) else x)

    it = lambda k: k  # noqa: E731
    return [
        Case("cg", lambda k: result(sl.cg(A, B, rtol=0.0, maxiter=k)),
             lambda k: spla.cg(lap, b, rtol=0.0, maxiter=k), it, f"n={n:,}"),
        Case("minres", lambda k: result(sl.minres(A, B, rtol=0.0, maxiter=k)),
             lambda k: spla.minres(lap, b, rtol=0.0, maxiter=k), it, f"n={n:,}"),
        Case("bicgstab", lambda k: result(sl.bicgstab(C, B, rtol=0.0, maxiter=k)),
             lambda k: spla.bicgstab(cd, b, rtol=0.0, maxiter=k), it, f"n={n:,}"),
        Case("gmres", lambda k: result(sl.gmres(C, B, rtol=0.0, restart=20,
                                                maxiter=max(1, k // 20))),
             lambda k: spla.gmres(cd, b, rtol=0.0, restart=20, maxiter=max(1, k // 20)),
             lambda k: 20 * max(1, k // 20), f"n={n:,}, restart 20"),
        Case("lsqr", lambda k: result(sl.lsqr(T, BT, atol=0.0, btol=0.0, conlim=0.0,
                                              iter_lim=k)),
             lambda k: spla.lsqr(tall, bt, atol=0.0, btol=0.0, conlim=0.0, iter_lim=k), it,
             f"{tall.shape[0]:,} x {n:,}"),
        Case("lobpcg", lambda k: result(sl.lobpcg(A, X0, tol=1e-30, maxiter=k)),
             lambda k: spla.lobpcg(lap, x0, tol=1e-30, maxiter=k), it, f"n={n:,}, k=4"),
    ]


def best(fn: Callable[[], Any], repeat: int) -> float:
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def counts(case: Case, iters: int) -> tuple[float, float]:
    """``xp.compute`` calls and generated-kernel runs per iteration (a profiled run, not
    timed; a kernel run is a call of a generated module's ``chunk``)."""
    prof = cProfile.Profile()
    prof.runcall(case.ours, iters)
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    calls = sum(v[1] for k, v in stats.items()
                if k[2] == "compute" and k[0].endswith("api/chapters/compute.py")
                or k[2] == "__call__" and k[0].endswith("api/array/replay.py"))
    kernels = sum(v[1] for k, v in stats.items()
                  if k[2] == "chunk" and Path(k[0]).name.startswith("lsk_"))
    per = case.per_call(iters)
    return calls / per, kernels / per


def breakdown(side: int, repeat: int = 50) -> None:
    """The pieces of an iteration, each one compute against its NumPy/scipy call (best of
    ``repeat``, µs): where a solver's time per iteration goes."""
    lap = laplacian_2d(side)
    n = lap.shape[0]
    rng = np.random.default_rng(0)
    pn, qn = rng.standard_normal(n), rng.standard_normal(n)
    A, p, q = xp.asarray(lap), xp.asarray(pn), xp.asarray(qn)
    pieces = [
        ("SpMV `A @ p`", lambda: xp.compute(A @ p), lambda: lap @ pn),
        ("axpy `p + 0.5 * q`", lambda: xp.compute(p + 0.5 * q), lambda: pn + 0.5 * qn),
        ("two axpys, one compute", lambda: xp.compute(p + 0.5 * q, q - 0.5 * p),
         lambda: (pn + 0.5 * qn, qn - 0.5 * pn)),
        ("dot `float(p . q)`", lambda: float(xp.vecdot(p, q)), lambda: float(pn @ qn)),
        ("SpMV + dot `A @ p, p . A p`", lambda: xp.compute(A @ p, xp.vecdot(p, A @ p)),
         lambda: pn @ (lap @ pn)),
    ]
    print(f"\n| piece (n = {n:,}) | lazysparse µs | NumPy/scipy µs | ratio |")
    print("|---|---|---|---|")
    for name, ours, theirs in pieces:
        ours()
        ours()
        to = min(best(ours, 1) for _ in range(repeat))
        tt = min(best(theirs, 1) for _ in range(repeat))
        print(f"| {name} | {1e6 * to:.0f} | {1e6 * tt:.0f} | {to / tt:.1f} |", flush=True)


class Parts:
    """Accumulates wall time into named parts: ``lap(name)`` charges the time since the
    previous lap."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = {}
        self.last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.totals[name] = self.totals.get(name, 0.0) + now - self.last
        self.last = now


def cg_split(side: int, iters: int = 40) -> None:
    """One CG iteration as the native ``cg`` runs it, timed in parts (ms per iteration):
    building the lazy expressions, the two computes, reading the scalars."""
    lap = laplacian_2d(side)
    A = xp.asarray(lap)
    b = xp.asarray(np.random.default_rng(0).standard_normal(lap.shape[0]))
    for _ in range(2):  # the first run warms up
        x = xp.asformat(xp.zeros(lap.shape[0]), "dense")
        r, rr = xp.compute(b, xp.vecdot(b, b))
        rr, rho_old, p = float(rr), 1.0, r
        parts = Parts()
        for it in range(iters):
            parts.lap("other")
            p = r if it == 0 else r + (rr / rho_old) * p
            q = A @ p
            pq = xp.vecdot(p, q)
            parts.lap("build")
            p, q, pq = xp.compute(p, q, pq)
            parts.lap("compute")
            alpha = rr / float(pq)
            parts.lap("float")
            xn, rn = x + alpha * p, r - alpha * q
            dn = xp.vecdot(rn, rn)
            parts.lap("build")
            x, r, rrn = xp.compute(xn, rn, dn)
            parts.lap("compute")
            rho_old, rr = rr, float(rrn)
            parts.lap("float")
    print("\n| CG iteration part | ms/it |\n|---|---|")
    for name in ("build", "compute", "float"):
        print(f"| {name} | {1e3 * parts.totals[name] / iters:.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--side", type=int, default=320)
    ap.add_argument("--iters", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default="")
    ap.add_argument("--threads", default="1")
    ap.add_argument("--no-breakdown", action="store_true")
    args = ap.parse_args()
    only = {s for s in args.only.split(",") if s}
    print(f"threads={os.environ['NUMBA_NUM_THREADS']} side={args.side} "
          f"iters={args.iters} repeat={args.repeat}")
    print("| solver | problem | lazysparse ms/it | scipy ms/it | ratio ls/scipy "
          "| computes/it | backends/it | first call s |")
    print("|---|---|---|---|---|---|---|---|")
    for case in cases(args.side):
        if only and case.name not in only:
            continue
        t0 = time.perf_counter()
        case.ours(args.iters)  # warm-up: planning and compiling
        first = time.perf_counter() - t0
        case.theirs(args.iters)
        ours = theirs = float("inf")
        for _ in range(args.repeat):  # alternate, best of each
            ours = min(ours, best(lambda c=case: c.ours(args.iters), 1))
            theirs = min(theirs, best(lambda c=case: c.theirs(args.iters), 1))
        per = case.per_call(args.iters)
        ncomp, nker = counts(case, args.iters)
        print(f"| {case.name} | {case.size} | {1e3 * ours / per:.2f} | "
              f"{1e3 * theirs / per:.2f} | {ours / theirs:.2f} | {ncomp:.1f} | {nker:.1f} | "
              f"{first:.1f} |", flush=True)
    if not args.no_breakdown:
        breakdown(args.side)
        cg_split(args.side, args.iters)


if __name__ == "__main__":
    main()
