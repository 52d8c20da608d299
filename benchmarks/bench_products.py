"""Transposed and sliced sparse products written as users write them, next to scipy.

Cases (issue 23 item 3), on the workflow corpus's term counts (``tests/workflows/corpus.py``,
200k x 100k, 5 stored entries per row, at ``--size bench``) and a 10k x 25k TF matrix:

- ``B.T @ B`` of binarized counts (``xp.astype(X > 0, xp.int64)``): co-occurrence;
- ``B.T @ B`` of the float counts (the same path for every dtype);
- ``X[:6] @ X.T`` and ``Tn[:500] @ Tn.T``: similarity of a few rows against all.

``--skewed`` (issue 36): zipf text (20k docs x 30k terms, 400k draws; ``Tn`` row-normalized)
and a Chung–Lu power-law graph (20k vertices, mean degree 10): the cosine block
``Tn[:200] @ Tn.T``, ``D @ D.T`` (3k docs), a block of zipf documents in three
communities against all ``C[:300] @ C.T`` (each community its own vocabulary: 33 % dense,
estimated 60 %, an exact count decides), ``X.T @ X``, ``D.T @ v``, ``A[:200] @ A``,
``A.T @ v`` (also on a 10x larger graph), 2-hop ``A @ A``, triangles ``sum(A * (A @ A))``,
row normalization. Each row adds the stored entries of both results; a second table gives,
for every kernel, ``xp.explain(..., run=True)``'s estimate of its work and output entries
next to the actual ones (work from scipy: ``sum_t deg(t) deg'(t)`` for a product, the
stored entries a copy or a pass reads, the stored triples of a triangle count), and how
many times the estimate is off. A per-call floor (the same call on a 100-vertex graph)
gives the fixed cost of a call for scale.

Each row: scipy's and lazysparse's best time (``xp.compute`` included; runs alternate so
both share the machine's load), their ratio (< 1: lazysparse faster) and lazysparse's
first call (planning and kernel compilation or the on-disk cache). One thread unless
``NUMBA_NUM_THREADS`` says otherwise. Not a test: nothing is asserted.

Usage: ``NUMBA_NUM_THREADS=1 python benchmarks/bench_products.py [--repeat R] [--small]
[--skewed]``.
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
# hot timings are the compiled tier's, which a loop reaches once its kernels are compiled;
# in the default (background) mode the first rounds would time the eager tier while the
# worker compiles on the same cores (D.T @ v 19x scipy, loaded). First calls:
# bench_first_call.py
os.environ.setdefault("LAZYSPARSE_COMPILE", "sync")

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.optimizer.skewed_data import (  # noqa: E402
    chung_lu,
    community_terms,
    row_normalized,
    zipf_terms,
)
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


# (name, lazysparse call, scipy call, the lazy expression explained, each kernel's actual
# work in the order ``xp.explain`` lists them, from scipy)
SkewedCase = tuple[str, Callable[[], Any], Callable[[], Any], Callable[[], Any],
                   tuple[float, ...]]
# a kernel's estimate within this factor of the actual counts (issue 36's target)
ESTIMATE_FACTOR = 10.0


def _work(a: sp.csr_array, b: sp.csr_array) -> float:
    """Products of ``a @ b``: ``sum_t colnnz_a(t) * rownnz_b(t)``."""
    return float((np.diff(a.tocsc().indptr) * np.diff(sp.csr_array(b).indptr)).sum())


def _triples(g: sp.csr_array) -> float:
    """(i, j, k) with ``A[i,j] A[i,k] A[k,j]`` all stored: the triangle kernel's work."""
    b = (g != 0).astype(np.float64)
    return float((b * (b @ b)).sum())


def skewed_cases(small: bool) -> list[SkewedCase]:
    docs, terms, draws, n = (2_000, 3_000, 40_000, 3_000) if small else (
        20_000, 30_000, 400_000, 20_000)
    d = zipf_terms(docs, terms, draws, seed=0)
    tn, d3 = row_normalized(d), sp.csr_array(d[: docs // 7])
    c = community_terms(docs, terms, docs * 15, 3, seed=1)
    c3, lc = sp.csr_array(c[:300]), xp.asarray(c)
    g, big = chung_lu(n, 10, seed=0), chung_lu(10 * n, 10, seed=1)
    lt, ld, ld3, lg, lbig = (xp.asarray(m) for m in (tn, d, d3, g, big))
    v_doc, v_vert = np.random.default_rng(1).random(docs), np.random.default_rng(2).random(n)
    v_big = np.random.default_rng(3).random(10 * n)
    lv_doc, lv_vert, lv_big = xp.asarray(v_doc), xp.asarray(v_vert), xp.asarray(v_big)

    def norm() -> Any:
        return ld / xp.sqrt(xp.sum(ld * ld, axis=1))[:, None]

    return [
        ("cosine block Tn[:200] @ Tn.T", lambda: xp.compute(lt[:200] @ lt.T),
         lambda: tn[:200] @ tn.T, lambda: lt[:200] @ lt.T,
         (float(tn[:200].nnz), _work(tn[:200], tn.T))),
        (f"D @ D.T ({d3.shape[0]} docs)", lambda: xp.compute(ld3 @ ld3.T),
         lambda: d3 @ d3.T, lambda: ld3 @ ld3.T, (float(d3.nnz), _work(d3, d3.T))),
        ("community block C[:300] @ C.T (3 vocabularies)", lambda: xp.compute(lc[:300] @ lc.T),
         lambda: c3 @ c.T, lambda: lc[:300] @ lc.T, (float(c.nnz), _work(c3, c.T))),
        ("co-occurrence X.T @ X", lambda: xp.compute(ld.T @ ld), lambda: d.T @ d,
         lambda: ld.T @ ld, (float(d.nnz), _work(d.T, d))),
        ("D.T @ v", lambda: xp.compute(ld.T @ lv_doc), lambda: d.T @ v_doc,
         lambda: ld.T @ lv_doc, (float(d.nnz),)),
        ("graph A[:200] @ A", lambda: xp.compute(lg[:200] @ lg), lambda: g[:200] @ g,
         lambda: lg[:200] @ lg, (_work(g[:200], g),)),
        ("graph A.T @ v", lambda: xp.compute(lg.T @ lv_vert), lambda: g.T @ v_vert,
         lambda: lg.T @ lv_vert, (float(g.nnz),)),
        (f"graph A.T @ v ({10 * n} vertices)", lambda: xp.compute(lbig.T @ lv_big),
         lambda: big.T @ v_big, lambda: lbig.T @ lv_big, (float(big.nnz),)),
        ("graph 2-hop A @ A", lambda: xp.compute(lg @ lg), lambda: g @ g,
         lambda: lg @ lg, (_work(g, g),)),
        ("graph triangles sum(A * (A @ A))", lambda: xp.compute(xp.sum(lg * (lg @ lg))),
         lambda: (g * (g @ g)).sum(), lambda: xp.sum(lg * (lg @ lg)), (_triples(g),)),
        ("row normalization D / |D|", lambda: xp.compute(norm()),
         lambda: row_normalized(d), norm, (float(d.nnz), float(d.nnz))),
    ]


def _stored(r: Any) -> str:
    return str(getattr(r, "nnz", "-"))


def _off(est: float, actual: float | None) -> float | None:
    """How many times the estimate is off (>= 1), None without an actual count."""
    if actual is None:
        return None
    if est <= 0 or actual <= 0:
        return 1.0 if est == actual else float("inf")
    return max(est / actual, actual / est)


def _kernel_rows(name: str, expr: Any, works: tuple[float, ...]) -> list[str]:
    """One row per kernel of ``xp.explain(expr, run=True)``: estimated and actual work and
    output entries, and the larger of the two factors off (``!`` past ESTIMATE_FACTOR)."""
    rows = []
    for k, kernel in enumerate(xp.explain(expr, run=True).kernels):
        est = kernel.estimate
        work = works[k] if k < len(works) else None
        offs = [o for o in (_off(est.work, work), _off(est.entries, est.actual_entries))
                if o is not None]
        worst = max(offs) if offs else None
        flag = "" if worst is None or worst <= ESTIMATE_FACTOR else " !"
        rows.append(f"| {name} | {kernel.alias} ({', '.join(kernel.inputs)}) | "
                    f"{est.work:.3g} | {'-' if work is None else f'{work:.3g}'} | "
                    f"{est.entries:.3g} | {est.actual_entries} | "
                    f"{'-' if worst is None else f'{worst:.2f}'}{flag} |")
    return rows


def per_call_floor(repeat: int) -> float:
    """lazysparse's best time for ``A.T @ v`` on a 100-vertex graph: the fixed cost of a
    call (building the expression, the plan-cache lookup, the host), for scale."""
    g = chung_lu(100, 5, seed=4)
    lg, lv = xp.asarray(g), xp.asarray(np.ones(100))
    return best_times(lambda: xp.compute(lg.T @ lv), lambda: g.T @ np.ones(100),
                      max(repeat, 20))[1]


def run_skewed(small: bool, repeat: int) -> None:
    print(f"\n# skewed corpus (issue 36), NUMBA_NUM_THREADS={os.environ['NUMBA_NUM_THREADS']}, "
          f"best of {repeat}")
    print(f"per-call floor (A.T @ v, 100 vertices): {per_call_floor(repeat) * 1e3:.3f} ms")
    print("| case | scipy ms | lazysparse ms | ls/scipy | stored ls / scipy |")
    print("|---|---|---|---|---|")
    estimates = []
    for name, ours, theirs, expr, works in skewed_cases(small):
        _, ls, sc = best_times(ours, theirs, repeat)
        r, s = ours(), theirs()
        print(f"| {name} | {sc * 1e3:.2f} | {ls * 1e3:.2f} | {ls / sc:.2f} | "
              f"{getattr(r, 'format', '-')} {_stored(r)} / {_stored(s)} |", flush=True)
        estimates += _kernel_rows(name, expr(), works)
    print(f"\n# estimate vs actual per kernel (xp.explain(..., run=True); off: the larger "
          f"factor of work and entries, ! past {ESTIMATE_FACTOR:g}x)")
    print("| case | kernel | est. work | actual work | est. entries | actual entries | off |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(estimates))
    flagged = sum(row.endswith(" ! |") for row in estimates)
    print(f"\n{flagged} of {len(estimates)} kernels off by more than {ESTIMATE_FACTOR:g}x")


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
    ap.add_argument("--skewed", action="store_true", help="only the skewed corpus (issue 36)")
    args = ap.parse_args()
    if args.skewed:
        run_skewed(args.small, args.repeat)
        return
    print(f"# products, NUMBA_NUM_THREADS={os.environ['NUMBA_NUM_THREADS']}, "
          f"best of {args.repeat}")
    print("| case | scipy ms | lazysparse ms | ls/scipy | lazysparse 1st call ms |")
    print("|---|---|---|---|---|")
    for name, ours, theirs in cases(args.small):
        first, ls, sc = best_times(ours, theirs, args.repeat)
        print(f"| {name} | {sc * 1e3:.1f} | {ls * 1e3:.1f} | {ls / sc:.2f} | "
              f"{first * 1e3:.0f} |", flush=True)
    run_skewed(args.small, args.repeat)


if __name__ == "__main__":
    main()
