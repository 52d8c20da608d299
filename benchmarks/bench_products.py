"""Transposed and sliced sparse products written as users write them, next to scipy.

Cases (issue 23 item 3), on the workflow corpus's term counts (``tests/workflows/corpus.py``,
200k x 100k, 5 stored entries per row, at ``--size bench``) and a 10k x 25k TF matrix:

- ``B.T @ B`` of binarized counts (``xp.astype(X > 0, xp.int64)``): co-occurrence;
- ``B.T @ B`` of the float counts (the same path for every dtype);
- ``X[:6] @ X.T`` and ``Tn[:500] @ Tn.T``: similarity of a few rows against all.

``--skewed`` (issue 36): zipf text (20k docs x 30k terms, 400k draws; ``Tn`` row-normalized)
and a Chung–Lu power-law graph (20k vertices, mean degree 10): the cosine block
``Tn[:200] @ Tn.T``, ``D @ D.T`` (3k docs), ``X.T @ X``, ``D.T @ v``, ``A[:200] @ A``,
``A.T @ v``, 2-hop ``A @ A``, triangles ``sum(A * (A @ A))``, row normalization. Each row adds
the stored entries of both results and ``xp.explain``'s estimate of the product kernel's
work and output entries next to the actual (work: ``sum_t deg(t) deg'(t)`` from scipy).

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

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.optimizer.skewed_data import chung_lu, row_normalized, zipf_terms  # noqa: E402
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


# (name, lazysparse call, scipy call, the lazy expression explained, actual product work)
SkewedCase = tuple[str, Callable[[], Any], Callable[[], Any], Callable[[], Any], float | None]


def _work(a: sp.csr_array, b: sp.csr_array) -> float:
    """Products of ``a @ b``: ``sum_t colnnz_a(t) * rownnz_b(t)``."""
    return float((np.diff(a.tocsc().indptr) * np.diff(sp.csr_array(b).indptr)).sum())


def skewed_cases(small: bool) -> list[SkewedCase]:
    docs, terms, draws, n = (2_000, 3_000, 40_000, 3_000) if small else (
        20_000, 30_000, 400_000, 20_000)
    d = zipf_terms(docs, terms, draws, seed=0)
    tn, d3 = row_normalized(d), sp.csr_array(d[: docs // 7])
    g = chung_lu(n, 10, seed=0)
    lt, ld, ld3, lg = xp.asarray(tn), xp.asarray(d), xp.asarray(d3), xp.asarray(g)
    v_doc, v_vert = np.random.default_rng(1).random(docs), np.random.default_rng(2).random(n)
    lv_doc, lv_vert = xp.asarray(v_doc), xp.asarray(v_vert)

    def norm() -> Any:
        return ld / xp.sqrt(xp.sum(ld * ld, axis=1))[:, None]

    return [
        ("cosine block Tn[:200] @ Tn.T", lambda: xp.compute(lt[:200] @ lt.T),
         lambda: tn[:200] @ tn.T, lambda: lt[:200] @ lt.T, _work(tn[:200], tn.T)),
        (f"D @ D.T ({d3.shape[0]} docs)", lambda: xp.compute(ld3 @ ld3.T),
         lambda: d3 @ d3.T, lambda: ld3 @ ld3.T, _work(d3, d3.T)),
        ("co-occurrence X.T @ X", lambda: xp.compute(ld.T @ ld), lambda: d.T @ d,
         lambda: ld.T @ ld, _work(d.T, d)),
        ("D.T @ v", lambda: xp.compute(ld.T @ lv_doc), lambda: d.T @ v_doc,
         lambda: ld.T @ lv_doc, None),
        ("graph A[:200] @ A", lambda: xp.compute(lg[:200] @ lg), lambda: g[:200] @ g,
         lambda: lg[:200] @ lg, _work(g[:200], g)),
        ("graph A.T @ v", lambda: xp.compute(lg.T @ lv_vert), lambda: g.T @ v_vert,
         lambda: lg.T @ lv_vert, None),
        ("graph 2-hop A @ A", lambda: xp.compute(lg @ lg), lambda: g @ g,
         lambda: lg @ lg, _work(g, g)),
        ("graph triangles sum(A * (A @ A))", lambda: xp.compute(xp.sum(lg * (lg @ lg))),
         lambda: (g * (g @ g)).sum(), lambda: xp.sum(lg * (lg @ lg)), None),
        ("row normalization D / |D|", lambda: xp.compute(norm()),
         lambda: row_normalized(d), norm, None),
    ]


def _stored(r: Any) -> str:
    return str(getattr(r, "nnz", "-"))


def _estimate(expr: Any) -> str:
    """The last kernel's estimate (work, output entries) as ``work/entries``."""
    est = getattr(xp.explain(expr()).kernels[-1], "estimate", None)  # None: before issue 36
    return "-" if est is None else f"{est.work:.3g} / {est.entries:.3g}"


def run_skewed(small: bool, repeat: int) -> None:
    print("\n# skewed corpus (issue 36)")
    print("| case | scipy ms | lazysparse ms | ls/scipy | stored ls / scipy | "
          "estimated work / entries | actual work / entries |")
    print("|---|---|---|---|---|---|---|")
    for name, ours, theirs, expr, work in skewed_cases(small):
        _, ls, sc = best_times(ours, theirs, repeat)
        r, s = ours(), theirs()
        nonzeros = np.count_nonzero(s.data if sp.issparse(s) else s)  # the true result's
        actual = f"{work:.3g} / {nonzeros:.3g}" if work is not None else f"- / {nonzeros:.3g}"
        print(f"| {name} | {sc * 1e3:.1f} | {ls * 1e3:.1f} | {ls / sc:.2f} | "
              f"{getattr(r, 'format', '-')} {_stored(r)} / {_stored(s)} | {_estimate(expr)} "
              f"| {actual} |", flush=True)


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
