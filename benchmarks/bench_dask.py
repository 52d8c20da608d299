"""Dask with lazysparse chunks vs scipy.sparse chunks vs pydata/sparse chunks.

SpMV, a row sum and the fused ``sum(A * B * C, axis=1)`` on an n × n matrix with 10
entries per row (n = 2,000,000; ``--quick``: 200,000) split into row blocks (``--chunks``,
default 8), through Dask's threaded scheduler (2 threads) and a ``LocalCluster`` of 2
worker processes (1 thread each), in one run on the same data. Each kernel runs on one
thread (``NUMBA_NUM_THREADS=1`` etc., set before imports): the parallelism is Dask's.

Each library is spelled as its chunks allow. lazysparse and pydata chunks run the Dask
expression itself (``dA @ dv``, ``dA.sum(axis=1)``, ``(dA * dB * dC).sum(axis=1)``);
scipy.sparse chunks cannot (``np.matmul`` of a sparse matrix and ``sum(keepdims=)`` fail),
so they run the same elementwise expression and ``map_blocks`` with scipy's own
``b @ x`` / ``b.sum(axis=1)`` per block (scipy's best). On the cluster the matrices are
persisted on the workers first: the timings are of the computations, not of shipping the
inputs. Every result is checked against scipy on the whole matrix. Medians of
``--repeat`` runs after one warm-up run (which compiles lazysparse's kernels, or loads them
from the disk cache in the worker processes); libraries alternate within each round.
Ratios are peer time / lazysparse time (> 1: lazysparse faster).

Usage: ``python benchmarks/bench_dask.py [--quick] [--chunks 8] [--repeat 5]
[--only spmv,rowsum,fused] [--schedulers threads,cluster]``.
"""

from __future__ import annotations

import os

for _v in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import dask  # noqa: E402
import dask.array as da  # noqa: E402
from bench_data import rand_csr  # noqa: E402
from dask.highlevelgraph import HighLevelGraph  # noqa: E402

import lazysparse as xp  # noqa: E402
import lazysparse.dask as lsd  # noqa: E402

try:
    import sparse as pydata  # noqa: E402
except ImportError:  # pragma: no cover - the column reads "n/a"
    pydata = None

LIBS = ("lazysparse", "scipy", "pydata")


def data(n: int) -> dict[str, Any]:
    """A (10/row), B and C (overlapping A's pattern so that A*B*C is not empty), v."""
    a = rand_csr(n, n, 10, 7)
    b = (rand_csr(n, n, 5, 8) + a.multiply(0.5)).tocsr()
    c = (rand_csr(n, n, 5, 9) + a.multiply(0.25)).tocsr()
    for m in (b, c):
        m.sort_indices()
    v = np.random.default_rng(1).random(n)
    return {"A": a, "B": b, "C": c, "v": v}


def blocked(blocks: list[Any], meta: Any, ncols: int, name: str) -> Any:
    """A Dask array whose row blocks are ``blocks`` (each already in its chunk type)."""
    key = f"{name}-{dask.base.tokenize(name, [id(b) for b in blocks])}"
    dsk = {(key, i, 0): b for i, b in enumerate(blocks)}
    chunks = (tuple(b.shape[0] for b in blocks), (ncols,))
    return da.Array(HighLevelGraph.from_collections(key, dsk, ()), key, chunks, meta=meta)


def row_blocks(m: sp.csr_array, nchunks: int) -> list[sp.csr_array]:
    ends = np.linspace(0, m.shape[0], nchunks + 1).astype(int)
    return [m[s:e] for s, e in zip(ends[:-1], ends[1:], strict=True)]


def dask_arrays(lib: str, d: dict[str, Any], nchunks: int) -> dict[str, Any]:
    """A, B, C as Dask arrays of ``lib`` chunks."""
    out = {}
    rows = -(-d["A"].shape[0] // nchunks)
    for k in "ABC":
        m = d[k]
        if lib == "lazysparse":
            out[k] = lsd.from_sparse(m, chunks=rows)
            continue
        blocks = row_blocks(m, nchunks)
        if lib == "pydata":
            blocks = [pydata.COO.from_scipy_sparse(b) for b in blocks]
        out[k] = blocked(blocks, blocks[0][:0], m.shape[1], f"{lib}-{k}")
    return out


def _scipy_matvec(b: Any, x: np.ndarray) -> np.ndarray:
    return b @ x


def _scipy_rowsum(b: Any) -> np.ndarray:
    return np.asarray(b.sum(axis=1)).ravel()


def expressions(lib: str, arrs: dict[str, Any], dv: Any) -> dict[str, Callable[[], Any]]:
    """The Dask expression of each case for ``lib``'s chunks."""
    A, B, C = arrs["A"], arrs["B"], arrs["C"]
    if lib == "scipy":
        f64 = np.dtype(np.float64)
        return {
            "spmv": lambda: A.map_blocks(_scipy_matvec, dv, drop_axis=1, dtype=f64),
            "rowsum": lambda: A.map_blocks(_scipy_rowsum, drop_axis=1, dtype=f64),
            "fused": lambda: (A * B * C).map_blocks(_scipy_rowsum, drop_axis=1, dtype=f64),
        }
    return {"spmv": lambda: A @ dv, "rowsum": lambda: A.sum(axis=1),
            "fused": lambda: (A * B * C).sum(axis=1)}


def dense_1d(r: Any) -> np.ndarray:
    if hasattr(r, "todense"):
        r = r.todense()
    return np.asarray(r).ravel()


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    n = 200_000 if args.quick else 2_000_000
    t0 = time.perf_counter()
    d = data(n)
    print(f"data: n={n}, nnz A/B/C = {d['A'].nnz}/{d['B'].nnz}/{d['C'].nnz} "
          f"({time.perf_counter() - t0:.1f} s)", flush=True)
    refs = {"spmv": d["A"] @ d["v"], "rowsum": _scipy_rowsum(d["A"]),
            "fused": _scipy_rowsum(d["A"].multiply(d["B"]).multiply(d["C"]))}
    libs = [lib for lib in LIBS if lib != "pydata" or pydata is not None]
    cases = args.only.split(",")
    rows: list[dict[str, Any]] = []
    for sched in args.schedulers.split(","):
        client = cluster = None
        if sched == "cluster":
            from distributed import Client, LocalCluster

            cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                   memory_limit=0, dashboard_address=None)
            client = Client(cluster)
        ctx = dask.config.set(scheduler="threads", num_workers=2) if sched == "threads" \
            else dask.config.set({})
        with ctx:
            arrays = {}
            for lib in libs:
                t0 = time.perf_counter()
                arrs = dask_arrays(lib, d, args.chunks)
                # the vector as one chunk of the library's dense type (lazysparse: a dense
                # lazysparse array, so Dask's v[:, None] stays a view of it in the plan)
                v = xp.asarray(d["v"]) if lib == "lazysparse" else d["v"]
                dv = da.from_array(v, chunks=-1)
                if client is not None:
                    from distributed import wait

                    *persisted, dv = client.persist([*arrs.values(), dv])
                    arrs = dict(zip(arrs, persisted, strict=True))
                    wait([*persisted, dv])
                arrays[lib] = (arrs, dv)
                print(f"[{sched}] {lib}: {args.chunks} row blocks ready "
                      f"({time.perf_counter() - t0:.1f} s)", flush=True)
            for case in cases:
                times: dict[str, list[float]] = {lib: [] for lib in libs}
                first: dict[str, float] = {}
                for rnd in range(args.repeat + 1):
                    for lib in libs:
                        if rnd > 1 and sum(times[lib]) > args.budget:
                            continue  # slow peer: enough runs for a median
                        arrs, dv = arrays[lib]
                        expr = expressions(lib, arrs, dv)[case]()
                        t0 = time.perf_counter()
                        r = expr.compute()
                        dt = time.perf_counter() - t0
                        if rnd == 0:
                            first[lib] = dt
                            if not np.allclose(dense_1d(r), refs[case]):
                                raise AssertionError(f"{lib} {case} [{sched}]: wrong result")
                        else:
                            times[lib].append(dt)
                row = {"case": case, "scheduler": sched, "n": n, "chunks": args.chunks}
                for lib in libs:
                    row[lib] = statistics.median(times[lib])
                    row[f"{lib} first"] = first[lib]
                rows.append(row)
                print("  " + fmt_row(row, libs), flush=True)
            del arrays
        if client is not None:
            client.close()
            cluster.close()
    return rows


def ms(t: float) -> str:
    return f"{t * 1e3:.1f} ms" if t < 1 else f"{t:.2f} s"


CASE_NAMES = {"spmv": "SpMV `A @ v`", "rowsum": "row sum `A.sum(axis=1)`",
              "fused": "fused `(A * B * C).sum(axis=1)`"}


def fmt_row(row: dict[str, Any], libs: list[str]) -> str:
    cells = [CASE_NAMES[row["case"]], row["scheduler"]]
    cells += [ms(row[lib]) for lib in libs] + [ms(row["lazysparse first"])]
    cells += [f"{row[lib] / row['lazysparse']:.2f}×" for lib in libs if lib != "lazysparse"]
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="n = 200,000 instead of 2,000,000")
    p.add_argument("--chunks", type=int, default=8, help="row blocks (default 8)")
    p.add_argument("--repeat", type=int, default=5, help="timed runs per case (default 5)")
    p.add_argument("--only", default="spmv,rowsum,fused")
    p.add_argument("--schedulers", default="threads,cluster")
    p.add_argument("--budget", type=float, default=30.0,
                   help="seconds of timed runs after which a slow library stops repeating")
    args = p.parse_args()
    rows = run(args)
    libs = [lib for lib in LIBS if lib != "pydata" or pydata is not None]
    print()
    print(f"n = {rows[0]['n']}, 10 nnz/row, {args.chunks} row blocks; medians; ratios = peer "
          "time / lazysparse time")
    head = ["case", "scheduler", *libs, "lazysparse first run",
            *(f"{lib}/lazysparse" for lib in libs if lib != "lazysparse")]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in rows:
        print(fmt_row(row, libs))


if __name__ == "__main__":
    main()
