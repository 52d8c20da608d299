"""lazysparse's generated CUDA kernels next to cuSPARSE (through cupyx.scipy.sparse).

Run on a machine with a CUDA GPU and CuPy:

    PYTHONPATH=src python benchmarks/bench_gpu.py            # all workloads
    PYTHONPATH=src python benchmarks/bench_gpu.py --n 200000 --nnz-per-row 16 --only spmv

Workloads: SpMV (CSR x dense vector; regular and skewed rows), SpGEMM (CSR x CSR -> CSR),
sparse add (CSR + CSR -> CSR), SDDMM (CSR .* (X @ Y.T) -> CSR). Each lazysparse kernel is
compiled once (warm-up, reported separately) and then timed with CUDA events; the peer is
cupyx.scipy.sparse (cuSPARSE SpMV/SpGEMM/csrgeam); cupyx exposes no SDDMM, so that peer is
a CuPy gather-and-reduce. Every lazysparse result is checked against the peer's before
timing. Prints medians and the ratio lazysparse / peer (below 1: lazysparse is faster).
Exits with status 2 and a message when no GPU is available.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from lazysparse.formats.specs import format_spec
from lazysparse.kernels.cuda.device import (
    cuda_available,
    dense_array,
    from_cupyx,
    to_cuda,
    to_cupyx,
)
from lazysparse.kernels.cuda.runtime import run_query_cuda
from lazysparse.logic.nodes import (
    Aggregate,
    Alias,
    Field,
    Immediate,
    MapJoin,
    Query,
    Reformat,
    Relabel,
    Reorder,
)
from lazysparse.logic.operators import get_operator


def _f(*names: str) -> tuple[Field, ...]:
    return tuple(Field(n) for n in names)


def _acc(name: str, *idx: str) -> Relabel:
    return Relabel(Alias(name), _f(*idx))


def _mul(*args: Any) -> MapJoin:
    return MapJoin(Immediate(get_operator("multiply")), tuple(args))


def _sum(arg: Any, *idx: str) -> Aggregate:
    return Aggregate(Immediate(get_operator("add")), Immediate(np.float64(0)), arg, _f(*idx))


def _query(fmt: str, ndim: int, body: Any) -> Query:
    return Query(Alias("out"), Reformat(Immediate(format_spec(fmt, ndim)), body))


QUERIES = {
    "spmv": _query("dense", 1, _sum(Reorder(_mul(_acc("A", "i", "j"), _acc("x", "j")),
                                            _f("i", "j")), "j")),
    "spgemm": _query("csr", 2, _sum(Reorder(_mul(_acc("A", "i", "k"), _acc("B", "k", "j")),
                                            _f("i", "k", "j")), "k")),
    "add": _query("csr", 2, Reorder(MapJoin(Immediate(get_operator("add")),
                                            (_acc("A", "i", "j"), _acc("B", "i", "j"))),
                                    _f("i", "j"))),
    "sddmm": _query("csr", 2, _sum(Reorder(_mul(_acc("A", "i", "j"), _mul(
        _acc("X", "i", "k"), _acc("Y", "j", "k"))), _f("i", "j", "k")), "k")),
}


def cuda_time(fn: Callable[[], Any], repeat: int) -> float:
    """Median seconds of ``fn`` measured with CUDA events."""
    import cupy as cp

    times = []
    for _ in range(repeat):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    return statistics.median(times)


def random_csr(n: int, m: int, per_row: int, seed: int, skew: bool = False) -> Any:
    """A cupyx CSR matrix with about ``per_row`` entries per row (``skew``: 1% of rows hold
    half of all entries)."""
    import cupy as cp
    import cupyx.scipy.sparse as cps

    rng = np.random.default_rng(seed)
    if skew:
        lengths = rng.poisson(per_row / 2, n)
        heavy = rng.choice(n, max(1, n // 100), replace=False)
        lengths[heavy] += min(m, per_row * 50)
    else:
        lengths = rng.poisson(per_row, n)
    lengths = np.minimum(lengths, m)
    rows = np.repeat(np.arange(n), lengths)
    cols = rng.integers(0, m, rows.size)
    vals = rng.random(rows.size)
    mat = cps.coo_matrix((cp.asarray(vals), (cp.asarray(rows), cp.asarray(cols))),
                         shape=(n, m)).tocsr()
    mat.sum_duplicates()
    return mat


def bench(name: str, env: dict[str, Any], peer: Callable[[], Any], check: Callable[[Any], None],
          repeat: int, strategy: str | None) -> dict[str, Any]:
    """Warm up (compile), check, time lazysparse and its peer."""
    q = QUERIES[name.split(":")[0]]
    denv = {Alias(k): v for k, v in env.items()}
    t0 = time.perf_counter()
    res = run_query_cuda(q, denv, strategy=strategy)
    import cupy as cp

    cp.cuda.Device().synchronize()
    first = time.perf_counter() - t0
    check(res)
    ours = cuda_time(lambda: run_query_cuda(q, denv, strategy=strategy), repeat)
    theirs = cuda_time(peer, repeat)
    return {"case": name, "first_call_s": first, "lazysparse_ms": ours * 1e3,
            "peer_ms": theirs * 1e3, "ratio": ours / theirs}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100_000, help="rows (SpGEMM uses n // 5)")
    ap.add_argument("--nnz-per-row", type=int, default=10)
    ap.add_argument("--k", type=int, default=32, help="SDDMM inner dimension")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--strategy", choices=["thread", "warp", "nzsplit"], default=None,
                    help="force a strategy (default: chosen from row lengths)")
    ap.add_argument("--only", default=None, help="spmv, spmv_skew, spgemm, add or sddmm")
    args = ap.parse_args(argv)
    if not cuda_available():
        print("bench_gpu: needs CuPy and a CUDA device (none found); nothing measured.")
        return 2
    import cupy as cp

    n, per = args.n, args.nnz_per_row
    rows: list[dict[str, Any]] = []

    def want(c: str) -> bool:
        return args.only is None or args.only == c

    def close(expected: Any) -> Callable[[Any], None]:
        def check(res: Any) -> None:
            if res.format == "dense":
                cp.testing.assert_allclose(dense_array(res), expected, rtol=1e-9, atol=1e-9)
                return
            err = abs(to_cupyx(res) - expected).max()
            scale = abs(expected).max()
            assert float(err) <= 1e-9 * max(float(scale), 1.0), f"max error {err}"
        return check

    for label, skew in (("spmv", False), ("spmv_skew", True)):
        if want(label):
            A = random_csr(n, n, per, 1, skew)
            x = cp.asarray(np.random.default_rng(2).random(n))
            from lazysparse.formats.tensor import Tensor

            xt = to_cuda(Tensor.from_numpy(cp.asnumpy(x), "dense"))
            rows.append(bench(f"spmv:{label}", {"A": from_cupyx(A), "x": xt},
                              lambda A=A, x=x: A @ x, close(A @ x), args.repeat, args.strategy))
    if want("spgemm"):
        m = max(1, n // 5)
        A, B = random_csr(m, m, per, 3), random_csr(m, m, per, 4)
        rows.append(bench("spgemm", {"A": from_cupyx(A), "B": from_cupyx(B)},
                          lambda: A @ B, close(A @ B), args.repeat, args.strategy))
    if want("add"):
        A, B = random_csr(n, n, per, 5), random_csr(n, n, per, 6)
        rows.append(bench("add", {"A": from_cupyx(A), "B": from_cupyx(B)}, lambda: A + B,
                          close(A + B), args.repeat, args.strategy))
    if want("sddmm"):
        from lazysparse.formats.tensor import Tensor

        A = random_csr(n, n, per, 7)
        rng = np.random.default_rng(8)
        X, Y = rng.random((n, args.k)), rng.random((n, args.k))
        Xd, Yd = cp.asarray(X), cp.asarray(Y)
        rows_of = cp.searchsorted(A.indptr, cp.arange(A.nnz), side="right") - 1

        def peer() -> Any:
            return (Xd[rows_of] * Yd[A.indices]).sum(axis=1) * A.data

        env = {"A": from_cupyx(A), "X": to_cuda(Tensor.from_numpy(X, "dense")),
               "Y": to_cuda(Tensor.from_numpy(Y, "dense"))}

        def check(res: Any) -> None:
            cp.testing.assert_allclose(res.values, peer(), rtol=1e-9)

        rows.append(bench("sddmm", env, peer, check, args.repeat, args.strategy))
    print(f"{'case':<16}{'first call s':>14}{'lazysparse ms':>16}{'peer ms':>12}{'ratio':>8}")
    for r in rows:
        print(f"{r['case']:<16}{r['first_call_s']:>14.2f}{r['lazysparse_ms']:>16.3f}"
              f"{r['peer_ms']:>12.3f}{r['ratio']:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
