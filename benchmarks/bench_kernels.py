"""lazysparse kernels vs scipy.sparse, one run on the same data (not a test).

Usage: ``NUMBA_NUM_THREADS=1 python benchmarks/bench_kernels.py`` (and 2). Prints, per case,
scipy's best time, lazysparse's best time, their ratio (>1: lazysparse faster; SpGEMM writes the
unordered CSR the optimizer picks, as scipy returns its product unsorted), the
first call in a fresh kernel cache (code generation + Numba compile), and the first call of
a new process that finds the kernel in the disk cache. Kernels are called through
``execute_plan`` on hand-built normal-form plans (what the optimizer will emit).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from bench_data import rand_csr  # noqa: E402

from lazysparse.formats.levels import Compressed, Dense, Singleton  # noqa: E402
from lazysparse.formats.specs import FormatSpec, format_spec  # noqa: E402
from lazysparse.formats.tensor import Tensor  # noqa: E402
from lazysparse.logic.nodes import (  # noqa: E402
    Aggregate,
    Alias,
    Field,
    Immediate,
    MapJoin,
    Plan,
    Produces,
    Query,
    Reformat,
    Relabel,
    Reorder,
    Table,
)
from lazysparse.logic.operators import get_operator  # noqa: E402


def F(*n: str) -> tuple[Field, ...]:
    return tuple(Field(x) for x in n)


def acc(name: str, *idx: str) -> Relabel:
    return Relabel(Alias(name), F(*idx))


def mul(*args: Any) -> MapJoin:
    return MapJoin(Immediate(get_operator("multiply")), tuple(args))


def sum_over(arg: Any, *idx: str) -> Aggregate:
    return Aggregate(Immediate(get_operator("add")), Immediate(0.0), arg, F(*idx))


def make_plan(inputs: dict[str, Tensor], fmt: str | FormatSpec, ndim: int, body: Any) -> Plan:
    qs: list[Any] = [Query(Alias(k), Table(Immediate(t), F(*[f"x{a}" for a in range(t.ndim)])))
                     for k, t in inputs.items()]
    qs.append(Query(Alias("out"), Reformat(Immediate(format_spec(fmt, ndim)), body)))
    qs.append(Produces((Alias("out"),)))
    return Plan(tuple(qs))


def csr_tensor(a: sp.csr_array) -> Tensor:
    n, m = a.shape
    return Tensor((n, m), [Dense(n), Compressed(m, a.indptr, a.indices)], (0, 1), a.data, 0.0,
                  check=False)


CLOCK = time.perf_counter


def best_time(fn: Callable[[], Any], reps: int) -> float:
    """Fastest of ``reps`` runs (the machine is shared: the minimum is the least noisy)."""
    ts = []
    for _ in range(reps):
        t = CLOCK()
        fn()
        ts.append(CLOCK() - t)
    return float(np.min(ts))


# scipy's formulation that returns what lazysparse returns (sorted indices per row), where
# its plain one does not; timed as an extra row, next to the plain comparison
CANONICAL: dict[str, Callable[[], Any]] = {}


def cases() -> dict[str, tuple[Plan, Callable[[], Any], Callable[[Any], Any], int]]:
    """name -> (plan, scipy callable, check(result), reps)."""
    out: dict[str, Any] = {}
    rng = np.random.default_rng(0)
    A = rand_csr(1_000_000, 1_000_000, 5, 1)
    x = rng.random(1_000_000)
    tA, tx = csr_tensor(A), Tensor((x.size,), [Dense(x.size)], (0,), x, 0.0, check=False)
    ref = A @ x
    out["SpMV"] = (make_plan({"A": tA, "x": tx}, "dense", 1,
                             sum_over(Reorder(mul(acc("A", "i", "j"), acc("x", "j")),
                                              F("i", "j")), "j")),
                   lambda: A @ x, lambda r: np.allclose(r.values, ref), 20)
    refT = A.T @ x
    out["A^T x"] = (make_plan({"A": tA, "x": tx}, "dense", 1,
                              sum_over(Reorder(mul(acc("A", "i", "j"), acc("x", "i")),
                                               F("i", "j")), "i")),
                    lambda: A.T @ x, lambda r: np.allclose(r.values, refT), 10)
    G = rand_csr(20_000, 20_000, 10, 2)
    tG = csr_tensor(G)
    refG = G @ G
    # the optimizer's output for a Gustavson product: CSR with unordered rows (as scipy's)
    unordered = format_spec("csr", 2).unordered_last()
    out["SpGEMM"] = (make_plan({"A": tG, "B": tG}, unordered, 2,
                               sum_over(Reorder(mul(acc("A", "i", "j"), acc("B", "j", "k")),
                                                F("i", "j", "k")), "j")),
                     lambda: G @ G, lambda r: r.values.size == refG.nnz, 5)
    # scipy's rows come out unsorted, and so do the optimizer's (an unordered level)
    P, Q = rand_csr(100_000, 100_000, 10, 3), rand_csr(100_000, 100_000, 10, 4)
    add = MapJoin(Immediate(get_operator("add")), (acc("A", "i", "j"), acc("B", "i", "j")))
    refPQ = P + Q
    out["A+B"] = (make_plan({"A": csr_tensor(P), "B": csr_tensor(Q)}, "csr", 2,
                            Reorder(add, F("i", "j"))),
                  lambda: P + Q, lambda r: r.values.size == refPQ.nnz, 10)
    S = rand_csr(10_000, 10_000, 20, 5)
    U, V = rng.random((10_000, 64)), rng.random((10_000, 64))
    tU = Tensor(U.shape, [Dense(10_000), Dense(64)], (0, 1), U.reshape(-1), 0.0, check=False)
    tV = Tensor(V.shape, [Dense(10_000), Dense(64)], (0, 1), V.reshape(-1), 0.0, check=False)
    rows = np.repeat(np.arange(S.shape[0]), np.diff(S.indptr))

    def sddmm_scipy() -> Any:
        return S.data * np.einsum("ij,ij->i", U[rows], V[S.indices])

    refS = sddmm_scipy()
    out["SDDMM"] = (make_plan({"S": csr_tensor(S), "U": tU, "V": tV}, "csr", 2,
                              sum_over(Reorder(mul(mul(acc("S", "i", "j"), acc("U", "i", "k")),
                                                   acc("V", "j", "k")), F("i", "j", "k")), "k")),
                    sddmm_scipy, lambda r: np.allclose(r.values, refS), 5)
    n3, nnz, r = 2000, 1_000_000, 32
    flat = np.unique(rng.integers(0, n3**3, nnz))
    ii, jj, kk = np.unravel_index(flat, (n3, n3, n3))
    vals = rng.random(flat.size)
    Cm, Dm = rng.random((n3, r)), rng.random((n3, r))
    coo = Tensor((n3, n3, n3), [
        Compressed(n3, np.array([0, flat.size]), ii.astype(np.int32), unique=False),
        Singleton(n3, jj.astype(np.int32)), Singleton(n3, kk.astype(np.int32))],
        (0, 1, 2), vals, 0.0, check=False)
    tC = Tensor(Cm.shape, [Dense(n3), Dense(r)], (0, 1), Cm.reshape(-1), 0.0, check=False)
    tD = Tensor(Dm.shape, [Dense(n3), Dense(r)], (0, 1), Dm.reshape(-1), 0.0, check=False)
    seg = sp.csr_array((np.ones(flat.size), (ii, np.arange(flat.size))), shape=(n3, flat.size))

    def mttkrp_scipy() -> Any:
        return seg @ (vals[:, None] * Cm[jj] * Dm[kk])

    refM = mttkrp_scipy()
    out["MTTKRP"] = (make_plan({"T": coo, "C": tC, "D": tD}, "dense", 2,
                               sum_over(Reorder(mul(mul(acc("T", "i", "j", "k"),
                                                        acc("C", "j", "r")), acc("D", "k", "r")),
                                                F("i", "j", "k", "r")), "j", "k")),
                     mttkrp_scipy, lambda r: np.allclose(r.values.reshape(n3, 32), refM), 5)
    T = rand_csr(20_000, 20_000, 5, 6)
    T = ((T + T.T) > 0).astype(np.float64).tocsr()
    T.sort_indices()
    tT = csr_tensor(T)

    def tri_scipy() -> Any:
        return (T * (T @ T)).sum()

    refT3 = tri_scipy()
    out["triangles"] = (make_plan({"A": tT, "B": tT, "C": tT}, "dense", 0,
                                  sum_over(Reorder(mul(mul(acc("A", "i", "j"), acc("B", "i", "k")),
                                                       acc("C", "k", "j")), F("i", "k", "j")),
                                           "i", "k", "j")),
                        tri_scipy, lambda r: np.isclose(r.values[0], refT3), 5)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--first-call-only", action="store_true",
                    help="(internal) time each kernel's first call and print JSON")
    ap.add_argument("--only", default=None)
    ap.add_argument("--cpu-clock", action="store_true",
                    help="time with process CPU time (one thread only: steadier on a busy "
                         "machine, but it sums threads, so it cannot show parallel speedup)")
    ap.add_argument("--reps", type=float, default=1.0, help="scale every case's repeats")
    args = ap.parse_args()
    global CLOCK
    if args.cpu_clock:
        CLOCK = time.process_time
    from lazysparse.kernels.backends import STATS, execute_plan

    cs = cases()
    if args.only:
        cs = {k: v for k, v in cs.items() if k in args.only.split(",")}
    if args.first_call_only:
        # warm Numba up (process-wide LLVM/runtime init) with a kernel outside the suite
        a = sp.random_array((50, 50), density=0.1, format="csr", random_state=0,
                            dtype=np.float32)
        xs = np.ones(50, np.float32)
        warm = make_plan({"A": csr_tensor(a), "x": Tensor((50,), [Dense(50)], (0,), xs, 0.0)},
                         "dense", 1, sum_over(Reorder(mul(acc("A", "i", "j"), acc("x", "j")),
                                                      F("i", "j")), "j"))
        execute_plan(warm)
        compiled_before = STATS["compiled"]
        res = {}
        for name, (plan, _, _, _) in cs.items():
            t = time.perf_counter()
            execute_plan(plan)
            res[name] = time.perf_counter() - t
        res["_stats"] = dict(STATS, compiled=STATS["compiled"] - compiled_before)
        print(json.dumps(res))
        return
    nt = os.environ.get("NUMBA_NUM_THREADS", "default")
    print(f"# lazysparse kernels vs scipy.sparse, NUMBA_NUM_THREADS={nt}")
    print("| case | scipy (best) | lazysparse (best) | speedup vs scipy | first call (compile) "
          "| first call (disk cache) |")
    print("|---|---|---|---|---|---|")
    rows = {}
    for name, (plan, sfn, check, reps) in cs.items():
        t = time.perf_counter()
        (res,) = execute_plan(plan)
        first = time.perf_counter() - t
        if not check(res):
            print(f"| {name} | WRONG RESULT |")
            continue
        reps = max(1, round(reps * args.reps))
        ts = best_time(sfn, reps)
        tl = best_time(lambda p=plan: execute_plan(p), reps)
        rows[name] = (ts, tl, first)
        if name in CANONICAL:
            rows[f"{name} (vs scipy + sort_indices)"] = (best_time(CANONICAL[name], reps), tl,
                                                          first)
    child = subprocess.run([sys.executable, __file__, "--first-call-only"]
                           + (["--only", args.only] if args.only else []),
                           capture_output=True, text=True, env=dict(os.environ))
    try:
        disk = json.loads(child.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        disk = {}
        print(child.stderr[-2000:])
    for name, (ts, tl, first) in rows.items():
        d = disk.get(name.split(" (")[0])
        dtxt = f"{d * 1e3:.0f} ms" if d is not None else "?"
        print(f"| {name} | {ts * 1e3:.1f} ms | {tl * 1e3:.1f} ms | {ts / tl:.2f}x "
              f"| {first * 1e3:.0f} ms | {dtxt} |")
    print(f"\nsecond process (after a warm-up kernel), cache stats: {disk.get('_stats')}")


if __name__ == "__main__":
    if "LAZYSPARSE_CACHE_DIR" not in os.environ:
        os.environ["LAZYSPARSE_CACHE_DIR"] = tempfile.mkdtemp(prefix="lsk-bench-")
    main()
