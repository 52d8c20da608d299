"""Workflows written as NumPy/scipy users write them: lazysparse vs scipy.sparse + NumPy.

Times every workflow of the test corpus (``tests/workflows/corpus.py``: TF-IDF,
normalizations, cosine top-k, graph normalizations and Laplacians, PageRank, label
propagation, kNN symmetrization, logistic/linear regression, scaling, thresholding,
co-occurrence, mini-batches, Jacobi, CG, 2-D Laplacian assembly, ...) in its scipy/NumPy
version and its lazysparse version, in the same process on the same data. The loops
(PageRank, label propagation, power iteration, logistic regression, CG) appear twice: the
natural loop (``*_natural``: no ``xp.compute`` in the loop, only ``float()`` observations)
and the computed one (``*_computed``: ``x = xp.compute(...)`` each iteration).

The lazysparse time is the lazy version plus ``xp.compute`` of the arrays it returns (its
``float()`` observations run inside). Its first call (planning, code generation, kernel
compilation or loading from the on-disk kernel cache) is reported apart; then the two
versions alternate ``--repeat`` times (a load swing on a shared machine hits both) and the
best time of each counts. The first call's results are checked against scipy's with the
corpus's own checks ("ok", else the first line of the mismatch). Ratio = lazysparse time /
scipy time (< 1: lazysparse faster). Nothing is asserted.

Threads: ``NUMBA_NUM_THREADS`` (also used for OpenMP/BLAS; ``--threads N`` sets it), 1 if
unset. Run it both ways::

    NUMBA_NUM_THREADS=1 python benchmarks/bench_workflows.py
    NUMBA_NUM_THREADS=2 python benchmarks/bench_workflows.py

One table for both (a child process per count)::

    python benchmarks/bench_workflows.py --threads 1,2

Usage: ``python benchmarks/bench_workflows.py [--threads N|1,2] [--only a,b | --family text]
[--size bench|large|small] [--quick] [--repeat R] [--fresh-cache]``. The kernel cache is
the default one (``LAZYSPARSE_CACHE_DIR`` or lazysparse's default) unless ``--fresh-cache``
(a new temporary directory: first calls then include compilation).
"""

from __future__ import annotations

import os
import sys
import tempfile

from bench_threads import pin_threads  # noqa: E402 - before NumPy/Numba

pin_threads(os.environ.get("NUMBA_NUM_THREADS", "1"))
if "--fresh-cache" in sys.argv:
    os.environ["LAZYSPARSE_CACHE_DIR"] = tempfile.mkdtemp(prefix="lsk-bench-workflows-")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]
from tests.workflows.corpus import (  # noqa: E402
    GRAPH,
    GRID,
    ML,
    SYSTEM,
    TEXT,
    WORKFLOWS,
    Workflow,
    compare,
    lazy_outputs,
)

import lazysparse as xp  # noqa: E402

FAMILIES = {"text": TEXT, "graph": GRAPH, "ml": ML, "grid": GRID, "system": SYSTEM}


def run_lazy(w: Workflow, d: dict[str, Any]) -> dict[str, Any]:
    """The lazysparse version and the compute of every array it returns."""
    got = w.lazy_version(d)
    arrays = lazy_outputs(got)
    if arrays:
        xp.compute(*arrays)
    return got


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


@dataclass
class Row:
    name: str
    size: str
    scipy: float | None = None
    lazy: float | None = None
    first: float | None = None
    check: str = ""


def measure(w: Workflow, which: str, repeat: int) -> Row:
    size = getattr(w, which)
    row = Row(w.name, str(size))
    try:
        d = w.data(size)
        t_ref, want = timed(lambda: w.scipy_version(d))
        row.first, got = timed(lambda: run_lazy(w, d))
        try:
            compare(w.name, got, want, w.nnz_factor, w.rtol, w.dense_past)
            row.check = "ok"
        except AssertionError as e:
            row.check = "wrong: " + (str(e).strip().splitlines() or [""])[0][:90]
        del got, want
        best_ref, best_ls = t_ref, row.first
        for _ in range(repeat):
            best_ref = min(best_ref, timed(lambda: w.scipy_version(d))[0])
            best_ls = min(best_ls, timed(lambda: run_lazy(w, d))[0])
        row.scipy, row.lazy = best_ref, best_ls
    except Exception as e:  # noqa: BLE001 - reported in the table, the run goes on
        text = (str(e).strip().splitlines() or [""])[0]
        row.check = f"error: {type(e).__name__}: {text[:90]}"
    return row


def fmt_ms(t: float | None) -> str:
    if t is None:
        return "—"
    return f"{t * 1e3:.2f}" if t < 0.1 else f"{t * 1e3:.0f}"


def table_row(r: Row) -> str:
    ratio = f"{r.lazy / r.scipy:.3g}" if r.lazy and r.scipy else "—"
    return (f"| {r.name} | {r.size} | {fmt_ms(r.scipy)} | {fmt_ms(r.lazy)} | {ratio} | "
            f"{fmt_ms(r.first)} | {r.check} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=None, help="comma-separated workflow names")
    ap.add_argument("--family", default=None, help="comma-separated: " + ",".join(FAMILIES))
    ap.add_argument("--size", choices=["bench", "large", "small"], default="bench",
                    help="which of each workflow's sizes (default bench)")
    ap.add_argument("--quick", action="store_true", help="the small sizes (same as --size "
                    "small)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs of each version after "
                    "the first, alternating; the best counts")
    ap.add_argument("--threads", default=None,
                    help="threads for every library (default: $NUMBA_NUM_THREADS or 1); a "
                    "list such as 1,2 runs each count in a child process, one table")
    ap.add_argument("--json", default=None, help="also write the rows to this file")
    ap.add_argument("--fresh-cache", action="store_true",
                    help="a new, empty kernel cache (first calls include compilation)")
    opts = ap.parse_args()
    names = opts.only.split(",") if opts.only else list(WORKFLOWS)
    unknown = [n for n in names if n not in WORKFLOWS]
    if unknown:
        ap.error(f"unknown workflow(s) {unknown}; choose from {list(WORKFLOWS)}")
    if opts.family:
        fams = [FAMILIES[f] for f in opts.family.split(",")]
        names = [n for n in names if any(WORKFLOWS[n].family is f for f in fams)]
    which = "small" if opts.quick else opts.size
    if opts.threads and "," in opts.threads:
        compare_threads(opts.threads.split(","))
        return
    warnings.simplefilter("ignore")
    import numba
    import scipy

    print(f"# workflows: threads={os.environ['NUMBA_NUM_THREADS']} (numba "
          f"{numba.get_num_threads()}), numpy {np.__version__}, scipy {scipy.__version__}, "
          f"sizes: {which}, best of {opts.repeat + 1}")
    t0 = time.perf_counter()
    rows = []
    for name in names:
        rows.append(measure(WORKFLOWS[name], which, opts.repeat))
        print("  " + table_row(rows[-1]), file=sys.stderr, flush=True)
    print("\n| workflow | size | scipy ms | lazysparse ms | ls/scipy | lazysparse 1st call ms "
          "| check |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(table_row(r))
    if opts.json:
        Path(opts.json).write_text(json.dumps([dataclasses.asdict(r) for r in rows]))
    print(f"\nbest of {opts.repeat + 1} runs each (the first lazysparse call included); "
          f"ls/scipy < 1: lazysparse faster. total wall time "
          f"{time.perf_counter() - t0:.0f} s")


def compare_threads(counts: list[str]) -> None:
    """Run this benchmark once per thread count (a child process each: thread pools are
    fixed at import) and print one table with the ratio at each count."""
    args = [a for i, a in enumerate(sys.argv[1:])
            if not a.startswith("--threads") and sys.argv[i] != "--threads"
            and not a.startswith("--json") and sys.argv[i] != "--json"]
    runs: dict[str, list[dict[str, Any]]] = {}
    for n in counts:
        out = Path(tempfile.mkdtemp(prefix="bench-workflows-")) / f"t{n}.json"
        subprocess.run([sys.executable, __file__, *args, "--threads", n, "--json", str(out)],
                       check=True, stdout=subprocess.DEVNULL)
        runs[n] = json.loads(out.read_text())
    head = " | ".join(f"scipy ms {n}t | lazysparse ms {n}t | ls/scipy {n}t" for n in counts)
    print(f"| workflow | size | {head} | check |")
    print("|---|---|" + "---|" * (3 * len(counts)) + "---|")
    first = runs[counts[0]]
    for i, r in enumerate(first):
        cells = []
        for n in counts:
            row = Row(**runs[n][i])
            ratio = f"{row.lazy / row.scipy:.3g}" if row.lazy and row.scipy else "—"
            cells.append(f"{fmt_ms(row.scipy)} | {fmt_ms(row.lazy)} | {ratio}")
        checks = {runs[n][i]["check"] for n in counts}
        print(f"| {r['name']} | {r['size']} | {' | '.join(cells)} | {', '.join(sorted(checks))} |")


if __name__ == "__main__":
    main()
