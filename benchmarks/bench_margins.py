"""Kernel margins: elementwise merges and reductions, lazysparse vs scipy vs a hand-written
Numba loop, on the same data (not a test).

Usage: ``python benchmarks/bench_margins.py [--n N] [--reps R] [--threads T]`` (one thread by
default: ``NUMBA_NUM_THREADS`` is set before Numba is imported). Each lazysparse case is
written as a user would (``xp.compute(A * B)``, ``xp.sum(A, axis=1)``) and timed best-of-R
after warm-up. Its time is split into the cached recipe's own run (``kernel``: the chunk
functions and the host's allocation, passes and result assembly, as ``bench_overhead``
calls it) and the rest (``plan``: building the expression, the plan-cache lookup, recipe
binding, wrapping the result). Ratios are lazysparse / peer time (< 1: lazysparse faster).

The hand-written loops are what a user would write with ``@njit`` over the CSR arrays: one
pass, output bounded by the operands' row lengths (``A * B``: the shorter row; ``A + B``:
the sum), then trimmed. They show what a compiled kernel can reach.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from bench_threads import pin_threads  # noqa: E402 - before NumPy/Numba

pin_threads()
os.environ.setdefault("LAZYSPARSE_CACHE_DIR", tempfile.mkdtemp(prefix="lsk-bench-margins-"))

import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from numba import njit  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from bench_data import rand_csr  # noqa: E402
from bench_overhead import kernel_only  # noqa: E402

import lazysparse as xp  # noqa: E402

# ------------------------------------------------------------------ hand-written loops


@njit(cache=True, nogil=True)
def nb_buffers(n: int, cap: int, dtype: Any) -> tuple[Any, Any, Any]:
    """A CSR result's row pointers (``n + 1``, first 0) and ``cap`` index/value slots."""
    op = np.empty(n + 1, np.int64)
    op[0] = 0
    return op, np.empty(cap, np.int32), np.empty(cap, dtype)


@njit(cache=True, nogil=True)
def nb_mul_rows(ap: Any, ai: Any, av: Any, bp: Any, bi: Any, bv: Any, n: int,
                cap: int) -> tuple[Any, Any, Any]:
    """CSR ``A * B``: per row a two-pointer intersection into buffers of ``cap`` entries."""
    op, oi, ov = nb_buffers(n, cap, av.dtype)
    k = 0
    for r in range(n):
        p, pe = np.int64(ap[r]), np.int64(ap[r + 1])
        q, qe = np.int64(bp[r]), np.int64(bp[r + 1])
        while p < pe and q < qe:
            cj, dj = np.int64(ai[p]), np.int64(bi[q])
            if cj == dj:
                v = av[p] * bv[q]
                oi[k] = cj
                ov[k] = v
                k += np.int64(v != 0)
                p += 1
                q += 1
            elif cj < dj:
                p += 1
            else:
                q += 1
        op[r + 1] = k
    return op, oi[:k], ov[:k]


@njit(cache=True, nogil=True)
def nb_add_rows(ap: Any, ai: Any, av: Any, bp: Any, bi: Any, bv: Any, n: int,
                cap: int) -> tuple[Any, Any, Any]:
    """CSR ``A + B``: per row a two-pointer union into buffers of ``cap`` entries."""
    op, oi, ov = nb_buffers(n, cap, av.dtype)
    k = 0
    for r in range(n):
        p, pe = np.int64(ap[r]), np.int64(ap[r + 1])
        q, qe = np.int64(bp[r]), np.int64(bp[r + 1])
        while p < pe and q < qe:
            cj, dj = np.int64(ai[p]), np.int64(bi[q])
            if cj == dj:
                v = av[p] + bv[q]
                p += 1
                q += 1
            elif cj < dj:
                v = av[p]
                p += 1
            else:
                cj = dj
                v = bv[q]
                q += 1
            oi[k] = cj
            ov[k] = v
            k += np.int64(v != 0)
        for u in range(p, pe):
            oi[k] = ai[u]
            ov[k] = av[u]
            k += np.int64(av[u] != 0)
        for u in range(q, qe):
            oi[k] = bi[u]
            ov[k] = bv[u]
            k += np.int64(bv[u] != 0)
        op[r + 1] = k
    return op, oi[:k], ov[:k]


@njit(cache=True, nogil=True)
def nb_row_sum(ap: Any, av: Any, n: int) -> Any:
    """CSR row sums."""
    out = np.empty(n, av.dtype)
    for r in range(n):
        s = 0.0
        for p in range(ap[r], ap[r + 1]):
            s += av[p]
        out[r] = s
    return out


@njit(cache=True, nogil=True)
def nb_sum3(ap: Any, ai: Any, av: Any, bp: Any, bi: Any, bv: Any, cp: Any, ci: Any,
            cv: Any, n: int) -> float:
    """``sum(A * B * C)`` of three CSR matrices: per row a three-way intersection."""
    s = 0.0
    for r in range(n):
        p, pe, q, qe, u, ue = ap[r], ap[r + 1], bp[r], bp[r + 1], cp[r], cp[r + 1]
        while p < pe and q < qe and u < ue:
            a, b, c = ai[p], bi[q], ci[u]
            m = max(a, b, c)
            if a == m and b == m and c == m:
                s += av[p] * bv[q] * cv[u]
                p += 1
                q += 1
                u += 1
            else:
                p += a < m
                q += b < m
                u += c < m
    return s


# --------------------------------------------------------------------------- timing


def best(fn: Callable[[], Any], reps: int) -> float:
    """Best-of-``reps`` seconds after two warm-up calls (the machine is shared)."""
    fn()
    fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return min(ts)


def csr_args(m: sp.csr_array) -> tuple[Any, Any, Any]:
    return m.indptr, m.indices, m.data


def overlapping(n: int, per_row: int, seed: int, base: sp.csr_array,
                share: float) -> sp.csr_array:
    """A random CSR matrix plus ``share`` times ``base`` (so it shares ``base``'s pattern)."""
    m = (rand_csr(n, n, per_row, seed) + base.multiply(share)).tocsr()
    m.sort_indices()
    return m


def cases(n: int) -> list[tuple[str, str, Callable[[], Any], Callable[[], Any],
                               Callable[[], Any], Callable[[Any], bool]]]:
    """(name, data, lazysparse expression builder, scipy call, Numba call, check)."""
    A = rand_csr(n, n, 10, 1)
    B = overlapping(n, 10, 2, A, 0.5)   # half of B's entries on A's pattern
    Bd = rand_csr(n, n, 10, 3)         # independent pattern: a near-empty intersection
    C = overlapping(n, 10, 4, A, 0.25)
    XA, XB, XBd, XC = (xp.asarray(m) for m in (A, B, Bd, C))
    out: list[Any] = []

    def sparse_check(ref: sp.csr_array) -> Callable[[Any], bool]:
        def check(r: Any) -> bool:
            t = r.tensor()
            return t.values.shape[0] == ref.count_nonzero() and np.allclose(
                np.sort(t.values), np.sort(ref.data[ref.data != 0]))
        return check

    for name, X, Y, P, Q in (("A * B (overlap)", XA, XB, A, B),
                             ("A * B (independent)", XA, XBd, A, Bd)):
        cap = min(P.nnz, Q.nnz)
        out.append((name, f"n={n}, nnz {P.nnz}+{Q.nnz}",
                    lambda X=X, Y=Y: X * Y, lambda P=P, Q=Q: P.multiply(Q),
                    lambda P=P, Q=Q, cap=cap: nb_mul_rows(*csr_args(P), *csr_args(Q), n, cap),
                    sparse_check(A.multiply(Q))))
    out.append(("A + B", f"n={n}, nnz {A.nnz}+{B.nnz}", lambda: XA + XB, lambda: A + B,
                lambda: nb_add_rows(*csr_args(A), *csr_args(B), n, A.nnz + B.nnz),
                sparse_check(A + B)))
    rs = np.asarray(A.sum(axis=1)).ravel()
    out.append(("sum(A, axis=1)", f"n={n}, nnz {A.nnz}", lambda: xp.sum(XA, axis=1),
                lambda: A.sum(axis=1), lambda: nb_row_sum(A.indptr, A.data, n),
                lambda r: np.allclose(xp.to_numpy(r), rs)))
    s3 = float(A.multiply(B).multiply(C).sum())
    out.append(("sum(A * B * C)", f"n={n}, nnz {A.nnz}+{B.nnz}+{C.nnz}",
                lambda: xp.sum(XA * XB * XC), lambda: A.multiply(B).multiply(C).sum(),
                lambda: nb_sum3(*csr_args(A), *csr_args(B), *csr_args(C), n),
                lambda r: np.isclose(float(r), s3)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--threads", default="1")
    ap.add_argument("--only", default=None, help="comma-separated name prefixes")
    args = ap.parse_args()
    print(f"# kernel margins, n={args.n}, NUMBA_NUM_THREADS={os.environ['NUMBA_NUM_THREADS']}, "
          f"best of {args.reps} (ms)")
    print("| case | data | lazysparse | kernel | plan | scipy | Numba loop "
          "| ls/scipy | ls/Numba | kernel/Numba |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, data, build, scipy_fn, nb_fn, check in cases(args.n):
        if args.only and not any(name.startswith(o) for o in args.only.split(",")):
            continue
        res = xp.compute(build())
        ok = check(res)
        t_ls = best(lambda b=build: xp.compute(b()), args.reps)
        t_k = best(kernel_only(build()), args.reps)
        t_sp = best(scipy_fn, args.reps)
        t_nb = best(nb_fn, args.reps)
        flag = "" if ok else " WRONG"
        print(f"| {name}{flag} | {data} | {t_ls * 1e3:.2f} | {t_k * 1e3:.2f} | "
              f"{(t_ls - t_k) * 1e3:.2f} | {t_sp * 1e3:.2f} | {t_nb * 1e3:.2f} | "
              f"{t_ls / t_sp:.2f} | {t_ls / t_nb:.2f} | {t_k / t_nb:.2f} |", flush=True)


if __name__ == "__main__":
    main()
