"""Same computation, same speed: every spelling of SDDMM, SpMV, Aᵀx, MTTKRP and triangle
counting, side by side in one run.

Each spelling is written as a user would (an ``xp`` expression, then ``xp.compute``) and is
checked against scipy/NumPy. Per spelling the table gives the steady-state median with one
thread (spellings timed in interleaved rounds, so a shared machine's drift falls on all
alike), its ratio to the best spelling of that computation (target: ≤ 1.5), the number of
kernels and the result format from ``xp.explain``, and the speed-up of two threads over one
(``numba.set_num_threads`` in the same process; target ≥ 1.6 on the compute-bound kernels,
≥ 1.3 on Aᵀx). scipy's time is given for scale. Not a test.

``--skewed`` (issue 36): only Aᵀx and triangle counting, on a Chung–Lu power-law graph
(``tests/optimizer/skewed_data.py``) instead of uniformly random entries.

Usage: ``python benchmarks/bench_forms.py [--quick] [--only sddmm,spmv] [--budget S]
[--skewed]``.
"""

from __future__ import annotations

import os
import sys
import tempfile

os.environ.setdefault("NUMBA_NUM_THREADS", "2")
for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"
os.environ.setdefault("LAZYSPARSE_CACHE_DIR", tempfile.mkdtemp(prefix="lsk-bench-forms-"))
os.environ.setdefault("LAZYSPARSE_COMPILE", "sync")  # hot timings: the compiled tier's

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
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_data import rand_coo3, rand_csr, symmetric_pattern  # noqa: E402
from tests.optimizer.skewed_data import chung_lu  # noqa: E402

import lazysparse as xp  # noqa: E402

Thunk = Callable[[], Any]
SKEWED_LABEL = ", Chung–Lu power law"


@dataclass
class Computation:
    """One computation: its spellings (name -> lazy expression builder), the reference
    result, and scipy's own spelling for scale."""

    name: str
    data: str
    ref: np.ndarray | float
    scipy: Thunk
    forms: dict[str, Thunk] = field(default_factory=dict)
    compute_bound: bool = True


def sddmm(n: int, per_row: int, k: int) -> Computation:
    S = rand_csr(n, n, per_row, 5)
    rng = np.random.default_rng(0)
    U, V = rng.random((n, k)), rng.random((n, k))
    rows = np.repeat(np.arange(n), np.diff(S.indptr))
    ref = sp.csr_array((S.data * np.einsum("ij,ij->i", U[rows], V[S.indices]), S.indices,
                        S.indptr), shape=S.shape).toarray()
    c = Computation("SDDMM", f"n={n}, {per_row}/row, k={k}", ref,
                    lambda: S.data * np.einsum("ij,ij->i", U[rows], V[S.indices]))
    s, u, v = xp.asarray(S), xp.asarray(U), xp.asarray(V)
    ed = xp.expand_dims
    c.forms = {
        "S * (U @ V.T)": lambda: s * (u @ v.T),
        "(U @ V.T) * S": lambda: (u @ v.T) * s,
        "einsum('ij,ik,jk->ij')": lambda: xp.einsum("ij,ik,jk->ij", s, u, v),
        "S * tensordot(U, V, ([1],[1]))": lambda: s * xp.tensordot(u, v, axes=([1], [1])),
        "sum(S[:,:,None]*U[:,None,:]*V[None,:,:], 2)":
            lambda: xp.sum(s[:, :, None] * u[:, None, :] * v[None, :, :], axis=2),
        "sum(expand_dims ..., 2)":
            lambda: xp.sum(ed(s, axis=2) * ed(u, axis=1) * ed(v, axis=0), axis=2),
        "where(S != 0, U @ V.T, 0) * S": lambda: xp.where(s != 0, u @ v.T, 0.0) * s,
        "(S.T * (V @ U.T)).T": lambda: (s.T * (v @ u.T)).T,
    }
    return c


def spmv(n: int, per_row: int) -> Computation:
    A = rand_csr(n, n, per_row, 1)
    x = np.random.default_rng(2).random(n)
    c = Computation("SpMV", f"n={n}, {per_row}/row", A @ x, lambda: A @ x,
                    compute_bound=False)
    a, v = xp.asarray(A), xp.asarray(x)
    c.forms = {
        "A @ x": lambda: a @ v,
        "matmul(A, x)": lambda: xp.matmul(a, v),
        "einsum('ij,j->i')": lambda: xp.einsum("ij,j->i", a, v),
        "tensordot(A, x, 1)": lambda: xp.tensordot(a, v, axes=1),
        "sum(A * x[None, :], 1)": lambda: xp.sum(a * v[None, :], axis=1),
        "sum(A * expand_dims(x, 0), 1)": lambda: xp.sum(a * xp.expand_dims(v, axis=0), axis=1),
        "vecdot(A, x)": lambda: xp.vecdot(a, v),
        "x @ A.T": lambda: v @ a.T,
    }
    return c


def atx(n: int, per_row: int, skewed: bool = False) -> Computation:
    A = chung_lu(n, per_row, seed=3) if skewed else rand_csr(n, n, per_row, 3)
    x = np.random.default_rng(4).random(n)
    c = Computation("Aᵀx", f"n={n}, {per_row}/row{SKEWED_LABEL if skewed else ''}",
                    A.T @ x, lambda: A.T @ x, compute_bound=False)
    a, v = xp.asarray(A), xp.asarray(x)
    c.forms = {
        "A.T @ x": lambda: a.T @ v,
        "x @ A": lambda: v @ a,
        "matrix_transpose(A) @ x": lambda: xp.matrix_transpose(a) @ v,
        "einsum('ij,i->j')": lambda: xp.einsum("ij,i->j", a, v),
        "tensordot(x, A, 1)": lambda: xp.tensordot(v, a, axes=1),
        "sum(A * x[:, None], 0)": lambda: xp.sum(a * v[:, None], axis=0),
        "sum(A * expand_dims(x, 1), 0)": lambda: xp.sum(a * xp.expand_dims(v, axis=1), axis=0),
    }
    return c


def mttkrp(n: int, nnz: int, rank: int) -> Computation:
    (ii, jj, kk), vals = rand_coo3(n, nnz, 3)
    rng = np.random.default_rng(4)
    C, D = rng.random((n, rank)), rng.random((n, rank))
    seg = sp.csr_array((np.ones(vals.size), (ii, np.arange(vals.size))), shape=(n, vals.size))
    ref = seg @ (vals[:, None] * C[jj] * D[kk])
    c = Computation("MTTKRP", f"{n}^3, {vals.size} nnz, rank {rank}", ref,
                    lambda: seg @ (vals[:, None] * C[jj] * D[kk]))
    b = xp.asarray(sp.coo_array((vals, (ii, jj * n + kk)), shape=(n, n * n)))
    b = xp.reshape(b, (n, n, n))
    cc, dd = xp.asarray(C), xp.asarray(D)
    ed = xp.expand_dims
    c.forms = {
        "einsum('ijk,jr,kr->ir')": lambda: xp.einsum("ijk,jr,kr->ir", b, cc, dd),
        "sum(B[...,None]*C[None,:,None]*D[None,None], (1,2))":
            lambda: xp.sum(b[:, :, :, None] * cc[None, :, None, :] * dd[None, None, :, :],
                           axis=(1, 2)),
        "sum(expand_dims ..., (1,2))":
            lambda: xp.sum(ed(b, axis=3) * ed(ed(cc, axis=0), axis=2)
                           * ed(ed(dd, axis=0), axis=0), axis=(1, 2)),
        "sum(sum(B[...,None]*D[None,None], 2)[:,:,:]*C[None], 1)":
            lambda: xp.sum(xp.sum(b[:, :, :, None] * dd[None, None, :, :], axis=2)
                           * cc[None, :, :], axis=1),
    }
    return c


def triangles(n: int, per_row: int, skewed: bool = False) -> Computation:
    T = chung_lu(n, per_row, seed=6) if skewed else symmetric_pattern(n, per_row, 6)
    ref = float((T * (T @ T)).sum())
    c = Computation("triangles", f"n={n}, {T.nnz / n:.1f}/row{SKEWED_LABEL if skewed else ''}",
                    np.float64(ref), lambda: (T * (T @ T)).sum())
    a = xp.asarray(T)
    c.forms = {
        "sum(A * (A @ A))": lambda: xp.sum(a * (a @ a)),
        "sum((A @ A) * A)": lambda: xp.sum((a @ a) * a),
        "einsum('ij,ik,kj->')": lambda: xp.einsum("ij,ik,kj->", a, a, a),
        "sum(A * tensordot(A, A, 1))": lambda: xp.sum(a * xp.tensordot(a, a, axes=1)),
        "sum(A[:,:,None]*A[None,:,:]*A[:,None,:])":
            lambda: xp.sum(a[:, :, None] * a[None, :, :] * a[:, None, :]),
        "einsum('ij,jk,ki->') (A symmetric)": lambda: xp.einsum("ij,jk,ki->", a, a, a),
        "sum(where(A != 0, A @ A, 0) * A)": lambda: xp.sum(xp.where(a != 0, a @ a, 0.0) * a),
        "vecdot(A, A @ A) summed": lambda: xp.sum(xp.vecdot(a, a @ a)),
    }
    return c


def computations(quick: bool, skewed: bool = False) -> list[Callable[[], Computation]]:
    if skewed:  # the power-law graph's Aᵀx and triangle count (issue 36)
        n, m = (100_000, 4000) if quick else (1_000_000, 20_000)
        return [lambda: atx(n, 10, skewed=True), lambda: triangles(m, 10, skewed=True)]
    if quick:
        return [lambda: sddmm(2000, 20, 64), lambda: spmv(100_000, 10),
                lambda: atx(100_000, 10), lambda: mttkrp(200, 100_000, 16),
                lambda: triangles(4000, 10)]
    return [lambda: sddmm(10_000, 20, 64), lambda: spmv(1_000_000, 10),
            lambda: atx(1_000_000, 10), lambda: mttkrp(1000, 1_000_000, 32),
            lambda: triangles(20_000, 10)]


def dense_of(r: Any) -> np.ndarray:
    return np.asarray(xp.to_numpy(r) if hasattr(r, "__array_namespace__") else r,
                      dtype=np.float64)


def median_time(fn: Thunk, budget: float) -> float:
    ts: list[float] = []
    t0 = time.perf_counter()
    while len(ts) < 3 or (time.perf_counter() - t0 < budget and len(ts) < 200):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
        if ts[-1] > budget:
            break
    return statistics.median(ts)


@dataclass
class Row:
    form: str
    build: Thunk
    t1: list[float] = field(default_factory=list)
    t2: list[float] = field(default_factory=list)
    kernels: int = 0
    fmt: str = ""
    status: str = ""


def check_form(row: Row, ref: Any) -> None:
    """Explain, compute once (compiling) and compare with the reference."""
    try:
        row.kernels = len(xp.explain(row.build()).kernels)
        r = xp.compute(row.build())
        row.fmt = str(r.format)
        if not np.allclose(dense_of(r), np.asarray(ref, dtype=np.float64), rtol=1e-7):
            row.status = "wrong"
    except Exception as e:  # noqa: BLE001 - a failing spelling is a table cell
        row.status = f"error: {type(e).__name__}: {str(e).splitlines()[0][:50]}"


def time_rounds(rows: list[Row], budget: float) -> None:
    """Interleaved timing: each round times every spelling once with one thread and once
    with two, so drift of a shared machine falls on all spellings alike (medians taken)."""
    threads = numba.config.NUMBA_NUM_THREADS
    live = [r for r in rows if not r.status]
    t0 = time.perf_counter()
    rounds = 0
    while live and (rounds < 5 or (time.perf_counter() - t0 < budget * len(live)
                                   and rounds < 200)):
        for nt, attr in ((1, "t1"), (2, "t2")):
            if nt > threads:
                continue
            numba.set_num_threads(nt)
            for r in live:
                t = time.perf_counter()
                xp.compute(r.build())
                getattr(r, attr).append(time.perf_counter() - t)
        rounds += 1
    numba.set_num_threads(threads)


def med(ts: list[float]) -> float | None:
    return statistics.median(ts) if ts else None


def ms(t: float | None) -> str:
    return "—" if t is None else f"{t * 1e3:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes")
    ap.add_argument("--only", default=None, help="comma-separated computation names")
    ap.add_argument("--budget", type=float, default=1.0, help="seconds per timing")
    ap.add_argument("--skewed", action="store_true",
                    help="Aᵀx and triangles on a Chung–Lu power-law graph (issue 36)")
    args = ap.parse_args()
    only = {s.strip().lower() for s in args.only.split(",")} if args.only else None
    print(f"threads available: {numba.config.NUMBA_NUM_THREADS}; times are medians (ms)")
    print("| computation | spelling | 1 thread | / best | kernels | result | 2 threads "
          "| speed-up | scipy |")
    print("|---|---|---|---|---|---|---|---|---|")
    for make in computations(args.quick, args.skewed):
        c = make()
        if only and c.name.lower().replace("ᵀ", "t") not in only and c.name.lower() not in only:
            continue
        t_scipy = median_time(c.scipy, args.budget)
        rows = [Row(name, build) for name, build in c.forms.items()]
        for row in rows:
            check_form(row, c.ref)
        time_rounds(rows, args.budget)
        best = min((med(r.t1) for r in rows if r.t1), default=None)
        for r in rows:
            t1, t2 = med(r.t1), med(r.t2)
            rel = f"{t1 / best:.2f}" if t1 and best else r.status or "—"
            sp_up = f"{t1 / t2:.2f}×" if t1 and t2 else "—"
            print(f"| {c.name} ({c.data}) | `{r.form}` | {ms(t1)} | {rel} | {r.kernels} "
                  f"| {r.fmt} | {ms(t2)} | {sp_up} | {ms(t_scipy)} |", flush=True)


if __name__ == "__main__":
    main()
