"""Iterative algorithms written as a notebook user would: lazysparse vs scipy.sparse + NumPy.

PageRank, conjugate gradient on a 2-D Laplacian, BFS levels, label-propagation connected
components and power iteration. Each lazysparse loop rebinds its variables in plain Python
and observes once per iteration (``x = xp.compute(x)``, ``float(xp.vecdot(r, r))``, a
convergence test); the scipy loop is the same algorithm in scipy/NumPy idiom, run in the
same process on the same data. Reported per iteration: the median over the iterations after
the first (warm-up) one, best of ``--repeat`` runs of each loop (scipy and lazysparse
alternate, so a load swing on a shared machine hits both), and the first iteration of the
first run apart (it pays planning, code generation and compilation; the kernel cache
starts empty). Ratio = scipy time / lazysparse time
(> 1: lazysparse faster). Final results are compared and "wrong" printed when they differ.

Every (algorithm, n) case runs in its own child process with a wall-clock limit
(``--timeout``), so a case that cannot finish is reported as such and the run goes on;
lazysparse also stops iterating after ``--budget`` seconds (then scipy is re-run to the
same iteration count for the check). Single thread unless ``--threads``.

Usage: ``python benchmarks/bench_iterative.py [--quick] [--threads N] [--only a,b]
[--sizes 10000,1000000] [--max-iter K] [--budget S] [--timeout S] [--repeat R]``.
"""

from __future__ import annotations

import os
import sys
import tempfile

from bench_threads import pin_threads  # noqa: E402 - before NumPy/Numba

pin_threads()
os.environ.setdefault("LAZYSPARSE_CACHE_DIR", tempfile.mkdtemp(prefix="lsk-bench-iter-"))

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
import lazysparse as xp  # noqa: E402

SEED = 0
PER_ROW = 10
ALPHA = 0.85  # PageRank damping


# ------------------------------------------------------------------------------ timing

class Clock:
    """Times each iteration of a loop written ``for it in clock.laps(): ... clock.stop()``.

    ``laps`` yields at most ``max_iter`` iteration numbers and stops early once ``budget``
    seconds have gone (``stopped`` then says "budget"); ``stop()`` after the loop records
    the iteration a ``break`` left."""

    def __init__(self, max_iter: int, budget: float = math.inf) -> None:
        self.max_iter, self.budget = max_iter, budget
        self.times: list[float] = []
        self.stopped = "cap"
        self._start: float | None = None

    def _lap(self) -> None:
        if self._start is not None:
            self.times.append(time.perf_counter() - self._start)
            self._start = None

    def laps(self) -> Iterator[int]:
        """Iteration numbers 0, 1, ...; each one's time is what runs until the next."""
        for it in range(self.max_iter):
            if sum(self.times) > self.budget:
                self.stopped = "budget"
                return
            self._start = time.perf_counter()
            yield it
            self._lap()

    def stop(self, converged: bool = True) -> None:
        """Record the iteration a ``break`` ended (``converged`` says why it broke)."""
        if self._start is not None:
            self._lap()
            self.stopped = "converged" if converged else self.stopped


# ------------------------------------------------------------------------------ data

def random_graph(n: int, symmetric: bool, unit: bool) -> sp.csr_array:
    """About ``PER_ROW`` stored entries per row (fixed seed); symmetrized for undirected
    algorithms (then about twice as many); unit weights for the graph searches."""
    a = sp.random_array((n, n), density=min(1.0, PER_ROW / n), format="csr",
                        rng=np.random.default_rng(SEED))
    if symmetric:
        a = (a + a.T).tocsr()
    if unit:
        a.data[:] = 1.0
    a.sort_indices()
    return a


def laplacian_2d(side: int) -> sp.csr_array:
    """The 5-point Laplacian on a ``side`` x ``side`` grid (n = side**2, SPD)."""
    t = sp.diags_array([-np.ones(side - 1), 4 * np.ones(side), -np.ones(side - 1)],
                       offsets=[-1, 0, 1])
    off = sp.diags_array([-np.ones(side - 1), -np.ones(side - 1)], offsets=[-1, 1])
    eye = sp.eye_array(side)
    return (sp.kron(eye, t) + sp.kron(off, eye)).tocsr()


def transition(a: sp.csr_array) -> tuple[sp.csr_array, np.ndarray]:
    """Row-stochastic ``P = D^-1 A`` and the 0/1 vector of dangling (no out-edge) nodes."""
    deg = np.asarray(a.sum(axis=1)).ravel()
    inv = np.divide(1.0, deg, out=np.zeros_like(deg), where=deg != 0)
    return sp.csr_array(sp.diags_array(inv) @ a), (deg == 0).astype(np.float64)


# ------------------------------------------------------------------------------ PageRank

def pagerank_scipy(P: Any, dangling: np.ndarray, tol: float, clock: Clock) -> np.ndarray:
    n = P.shape[0]
    x = np.full(n, 1.0 / n)
    for _ in clock.laps():
        x_old = x
        x = ALPHA * (P.T @ x) + (ALPHA * (dangling @ x) + (1 - ALPHA)) / n
        if np.abs(x - x_old).sum() < n * tol:
            break
    clock.stop()
    return x


def pagerank_lazy(P: Any, dangling: np.ndarray, tol: float, clock: Clock) -> np.ndarray:
    n = P.shape[0]
    P, dangling = xp.asarray(P), xp.asarray(dangling)
    x = xp.full(n, 1.0 / n)
    for _ in clock.laps():
        x_old = x
        x = ALPHA * (P.T @ x) + (ALPHA * xp.vecdot(dangling, x) + (1 - ALPHA)) / n
        x = xp.compute(x)
        if float(xp.sum(xp.abs(x - x_old))) < n * tol:
            break
    clock.stop()
    return np.asarray(x)


# ------------------------------------------------------------------------------ CG

def cg_scipy(A: Any, b: np.ndarray, tol: float, clock: Clock) -> np.ndarray:
    x = np.zeros(A.shape[0])
    r = b - A @ x
    p = r.copy()
    rr, bnorm = float(r @ r), float(np.linalg.norm(b))
    for _ in clock.laps():
        Ap = A @ p
        alpha = rr / float(p @ Ap)
        x = x + alpha * p
        r = r - alpha * Ap
        rr_new = float(r @ r)
        if math.sqrt(rr_new) < tol * bnorm:
            break
        p = r + (rr_new / rr) * p
        rr = rr_new
    clock.stop()
    return x


def cg_lazy(A: Any, b: np.ndarray, tol: float, clock: Clock) -> np.ndarray:
    A, b = xp.asarray(A), xp.asarray(b)
    x = xp.zeros(A.shape[0])
    r = b - A @ x
    p = r
    r, p = xp.compute(r, p)
    rr, bnorm = float(xp.vecdot(r, r)), float(xp.linalg.vector_norm(b))
    for _ in clock.laps():
        Ap = xp.compute(A @ p)  # used twice below
        alpha = rr / float(xp.vecdot(p, Ap))
        x = x + alpha * p
        r = r - alpha * Ap
        rr_new = float(xp.vecdot(r, r))
        if math.sqrt(rr_new) < tol * bnorm:
            break
        p = r + (rr_new / rr) * p
        x, r, p = xp.compute(x, r, p)
        rr = rr_new
    clock.stop()
    return np.asarray(x)


# ------------------------------------------------------------------------------ BFS

def bfs_scipy(A: Any, source: int, clock: Clock) -> np.ndarray:
    n = A.shape[0]
    frontier = np.zeros(n)
    frontier[source] = 1.0
    visited = frontier > 0
    levels = np.where(visited, 0, -1)
    for depth in clock.laps():
        new = ((A @ frontier) > 0) & ~visited
        frontier = new.astype(np.float64)
        visited |= new
        levels[new] = depth + 1
        if not new.any():
            break
    clock.stop()
    return levels


def bfs_lazy(A: Any, source: int, clock: Clock) -> np.ndarray:
    n = A.shape[0]
    A = xp.asarray(A)
    frontier = xp.asarray(np.arange(n) == source, dtype=xp.float64)
    visited = frontier > 0
    levels = xp.where(visited, 0, -1)
    for depth in clock.laps():
        new = ((A @ frontier) > 0) & ~visited
        frontier = xp.astype(new, xp.float64)
        visited = visited | new
        levels = xp.where(new, depth + 1, levels)
        frontier, visited, levels = xp.compute(frontier, visited, levels)
        if float(xp.sum(frontier)) == 0:
            break
    clock.stop()
    return np.asarray(levels)


# ------------------------------------------------------------------------------ components

def components_scipy(A: Any, clock: Clock) -> np.ndarray:
    n = A.shape[0]
    starts = A.indptr[:-1][np.diff(A.indptr) > 0]
    nonempty = np.diff(A.indptr) > 0
    lab = np.arange(n)
    for _ in clock.laps():
        nb = np.full(n, n)
        nb[nonempty] = np.minimum.reduceat(lab[A.indices], starts)
        new = np.minimum(lab, nb)
        if np.array_equal(new, lab):
            break
        lab = new
    clock.stop()
    return lab


def components_lazy(A: Any, clock: Clock) -> np.ndarray:
    n = A.shape[0]
    A = xp.asarray(A)
    lab = xp.arange(n)
    for _ in clock.laps():
        new = xp.minimum(lab, xp.min(xp.where(A != 0, lab[None, :], n), axis=1))
        new = xp.compute(new)
        if not bool(xp.any(new != lab)):
            break
        lab = new
    clock.stop()
    return np.asarray(lab)


# ------------------------------------------------------------------------------ power

def power_scipy(A: Any, tol: float, clock: Clock) -> np.ndarray:
    n = A.shape[0]
    v, lam = np.full(n, 1 / math.sqrt(n)), 0.0
    for _ in clock.laps():
        w = A @ v
        norm = float(np.linalg.norm(w))
        v = w / norm
        if abs(norm - lam) < tol * norm:
            break
        lam = norm
    clock.stop()
    return np.append(v, norm)


def power_lazy(A: Any, tol: float, clock: Clock) -> np.ndarray:
    n = A.shape[0]
    A = xp.asarray(A)
    v, lam = xp.full(n, 1 / math.sqrt(n)), 0.0
    for _ in clock.laps():
        w = xp.compute(A @ v)  # used twice below
        norm = float(xp.linalg.vector_norm(w))
        v = xp.compute(w / norm)
        if abs(norm - lam) < tol * norm:
            break
        lam = norm
    clock.stop()
    return np.append(np.asarray(v), norm)


# ------------------------------------------------------------------------------ cases

def rel_close(tol: float) -> Callable[[np.ndarray, np.ndarray], bool]:
    """Agreement as ``||a - b|| <= tol * ||b||``."""
    return lambda a, b: bool(np.linalg.norm(a - b) <= tol * np.linalg.norm(b))


def same(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.array_equal(a, b))


@dataclass(frozen=True)
class Algorithm:
    """One benchmark row: data maker (n -> arguments, actual n) and the two loops, each
    ``loop(*args, clock) -> final result as NumPy``."""

    name: str
    make: Callable[[int], tuple[tuple[Any, ...], int]]
    scipy_loop: Callable[..., np.ndarray]
    lazy_loop: Callable[..., np.ndarray]
    agree: Callable[[np.ndarray, np.ndarray], bool]
    max_iter: int


def _cg_data(n: int) -> tuple[tuple[Any, ...], int]:
    side = math.isqrt(n)
    rhs = np.random.default_rng(SEED).random(side * side)
    return (laplacian_2d(side), rhs, 1e-8), side * side


ALGORITHMS = {a.name: a for a in (
    Algorithm("pagerank", lambda n: ((*transition(random_graph(n, False, False)), 1e-10), n),
              pagerank_scipy, pagerank_lazy, rel_close(1e-6), 60),
    Algorithm("cg", _cg_data, cg_scipy, cg_lazy, rel_close(1e-6), 100),
    Algorithm("bfs", lambda n: ((random_graph(n, True, True), 0), n), bfs_scipy, bfs_lazy,
              same, 100),
    Algorithm("components", lambda n: ((random_graph(n, True, True),), n), components_scipy,
              components_lazy, same, 50),
    Algorithm("power", lambda n: ((random_graph(n, True, False), 1e-10), n), power_scipy,
              power_lazy, rel_close(1e-6), 50),
)}


# ------------------------------------------------------------------------------ one case

@dataclass
class Tally:
    """One library's measurements over the repetitions of a case (child side)."""

    lib: str
    n: int
    first: float | None = None  # the first iteration of the first repetition
    medians: list[float] = field(default_factory=list)
    iters: int = 0
    stopped: str = ""
    ok: bool | None = None

    def add(self, clock: Clock, ok: bool | None = None) -> None:
        """Record one run of the loop and print the summary so far as a JSON line (the
        parent keeps the last line, so a case killed later still reports this one)."""
        if self.first is None and clock.times:
            self.first = clock.times[0]
        if len(clock.times) > 1:
            self.medians.append(statistics.median(clock.times[1:]))
        self.iters, self.stopped = len(clock.times), clock.stopped
        if ok is not None:
            self.ok = ok and self.ok is not False
        print("RESULT " + json.dumps({
            "lib": self.lib, "n": self.n, "first": self.first, "iters": self.iters,
            "steady": min(self.medians) if self.medians else None,
            "stopped": self.stopped, "ok": self.ok}), flush=True)


def run_case(name: str, n: int, max_iter: int | None, budget: float, repeat: int) -> None:
    """Child side: build the data, then ``repeat`` times run scipy then lazysparse."""
    alg = ALGORITHMS[name]
    cap = max_iter or alg.max_iter
    args, n_actual = alg.make(n)
    sc, ls = Tally("scipy", n_actual), Tally("lazysparse", n_actual)
    for _ in range(repeat):
        ref_clock = Clock(cap)
        ref = alg.scipy_loop(*args, ref_clock)
        sc.add(ref_clock)
        clock = Clock(cap, budget)
        got = alg.lazy_loop(*args, clock)
        if len(clock.times) != len(ref_clock.times):  # compare after as many iterations
            ref = alg.scipy_loop(*args, Clock(len(clock.times)))
        ls.add(clock, alg.agree(got, ref))


# ------------------------------------------------------------------------------ parent

@dataclass
class Row:
    """A table row: per library the child's last summary line, and the case's status."""

    name: str
    n: int
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)
    status: str = ""


def spawn_case(name: str, n: int, opts: argparse.Namespace) -> Row:
    """Run one case in a child process under ``opts.timeout`` seconds."""
    cmd = [sys.executable, __file__, "--case", f"{name}:{n}", "--threads", str(opts.threads),
           "--budget", str(opts.budget), "--repeat", str(opts.repeat)]
    if opts.max_iter:
        cmd += ["--max-iter", str(opts.max_iter)]
    row = Row(name, n)
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=opts.timeout)
        out, err, rc = done.stdout, done.stderr, done.returncode
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err, rc = "", None
        row.status = f"timeout (>{opts.timeout:.0f} s)"
    for line in out.splitlines():
        if line.startswith("RESULT "):
            rec = json.loads(line[len("RESULT "):])
            row.n = rec["n"]
            row.runs[rec["lib"]] = rec
    if rc not in (0, None):
        last = (err.strip().splitlines() or ["?"])[-1]
        row.status = f"error: {last[:80]}"
        print(err[-2000:], file=sys.stderr)
    return row


def fmt_ms(t: float | None) -> str:
    if t is None:
        return "—"
    return f"{t * 1e3:.2f}" if t < 0.1 else f"{t * 1e3:.0f}"


def table_row(r: Row) -> str:
    ls, sc = r.runs.get("lazysparse", {}), r.runs.get("scipy", {})
    t_ls, t_sc = ls.get("steady"), sc.get("steady")
    ratio = f"{t_sc / t_ls:.3g}" if t_ls and t_sc else "—"
    iters = "/".join(f"{x['iters']}" + (" (budget)" if x["stopped"] == "budget" else "")
                     for x in (ls, sc) if x)
    check = r.status or ("ok" if ls.get("ok") else "wrong" if ls else "—")
    return (f"| {r.name} | {r.n:,} | {fmt_ms(t_ls)} | {fmt_ms(t_sc)} | {ratio} | {iters} | "
            f"{fmt_ms(ls.get('first'))} | {fmt_ms(sc.get('first'))} | {check} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one small size (n = 2,500)")
    ap.add_argument("--sizes", default=None, help="comma-separated n (default 10000,1000000)")
    ap.add_argument("--only", default=None, help="comma-separated algorithm names")
    ap.add_argument("--threads", type=int, default=1, help="threads for every library")
    ap.add_argument("--max-iter", type=int, default=None, help="iteration cap (per algorithm "
                    "default: " + ", ".join(f"{a.name} {a.max_iter}" for a in
                                            ALGORITHMS.values()) + ")")
    ap.add_argument("--budget", type=float, default=30.0,
                    help="seconds of lazysparse iterations per case before it stops early")
    ap.add_argument("--timeout", type=float, default=150.0, help="seconds per case (child)")
    ap.add_argument("--repeat", type=int, default=2, help="runs of each loop, alternating "
                    "scipy and lazysparse; the best median counts (against load swings)")
    ap.add_argument("--case", default=None, help=argparse.SUPPRESS)  # child: name:n
    opts = ap.parse_args()
    if opts.case:
        name, n = opts.case.split(":")
        run_case(name, int(n), opts.max_iter, opts.budget, opts.repeat)
        return
    names = opts.only.split(",") if opts.only else list(ALGORITHMS)
    unknown = [m for m in names if m not in ALGORITHMS]
    if unknown:
        ap.error(f"unknown algorithm(s) {unknown}; choose from {list(ALGORITHMS)}")
    sizes = ([int(s) for s in opts.sizes.split(",")] if opts.sizes
             else [2_500] if opts.quick else [10_000, 1_000_000])
    import numba
    import scipy

    print(f"# iterative algorithms: threads={os.environ['NUMBA_NUM_THREADS']} "
          f"(numba {numba.get_num_threads()}), numpy {np.__version__}, "
          f"scipy {scipy.__version__}, {PER_ROW} nnz/row (graphs), seed {SEED}")
    t0 = time.perf_counter()
    rows = []
    for n in sizes:
        for name in names:
            rows.append(spawn_case(name, n, opts))
            print("  " + table_row(rows[-1]), file=sys.stderr, flush=True)
    print("\n| algorithm | n | lazysparse ms/iter | scipy ms/iter | scipy/ls | iterations "
          "(ls/scipy) | lazysparse 1st iter ms | scipy 1st iter ms | check |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(table_row(r))
    print(f"\nms/iter: median over the iterations after the first, best of {opts.repeat} "
          f"run(s); 1st iter: the first run's. total wall time {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
