"""Fused sparse expressions: lazysparse vs scipy.sparse vs pydata/sparse vs finch-tensor.

One run on the same data, single thread (``--threads`` to change), not a test. Each
lazysparse case is written as a user would (``xp`` expression, then ``xp.compute``); its
first call (plan + optimize + code generation + Numba compile, fresh kernel cache) is timed
apart from the steady-state median. Every peer's result is checked against scipy/NumPy and
printed as "wrong" when it disagrees (finch-tensor's known failure modes, see
/work/shared/PEERS.md, are caught the same way). Ratios are peer time / lazysparse time
(> 1: lazysparse faster).

Usage: ``python benchmarks/bench_fused.py [--quick] [--threads N] [--only a,b]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from bench_threads import pin_threads  # noqa: E402 - before NumPy/Numba

pin_threads()
os.environ.setdefault("LAZYSPARSE_CACHE_DIR", tempfile.mkdtemp(prefix="lsk-bench-fused-"))

import statistics  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from bench_data import rand_csr, symmetric_pattern  # noqa: E402

import lazysparse as xp  # noqa: E402

try:
    import sparse as pydata  # noqa: E402
except ImportError as e:  # pragma: no cover - reported in the table
    pydata = None
    PYDATA_WHY = f"import sparse failed: {e}"
else:
    PYDATA_WHY = ""

PEERS = ("scipy", "pydata", "finch")


# ---------------------------------------------------------------------------- finch set-up

def setup_finch() -> tuple[Any, str]:
    """finch-tensor with the Numba pipeline and the logic executor's kernel cache enabled."""
    try:
        import finch
        from finch.autoschedule.default_schedulers import (
            AssemblySimplify,
            DefaultLogicFormatter,
            DefaultLogicOptimizer,
            DefaultLoopOrderer,
            LogicCompiler,
            LogicExecutor,
            LogicNormalizer,
            LowerPackedStructSlots,
            NotationCompiler,
            NumbaCompiler,
        )

        backend = NotationCompiler(NumbaCompiler(), ctx_transforms=(LowerPackedStructSlots(),
                                                                    AssemblySimplify()))
        optimizer = DefaultLogicOptimizer(DefaultLoopOrderer(DefaultLogicFormatter(
            LogicCompiler(backend))))
        sched = LogicNormalizer(LogicExecutor(optimizer, cache=True))
        finch.set_default_scheduler(sched)
        return finch, ""
    except Exception as e:  # noqa: BLE001 - any set-up failure marks the column n/a
        return None, f"{type(e).__name__}: {e}"


FINCH, FINCH_WHY = setup_finch()


def finch_csr(a: sp.csr_array) -> Any:
    """finch's Numba backend rejects int32 indices: widen them (outside the timed region)."""
    b = sp.csr_array((a.data, a.indices.astype(np.int64), a.indptr.astype(np.int64)),
                     shape=a.shape)
    return FINCH.asarray(b)


def finch_dds3(shape: tuple[int, ...], coords: tuple[np.ndarray, ...], vals: np.ndarray) -> Any:
    """A 3-d finch tensor Dense(i) -> Dense(j) -> SparseList(k) from sorted unique coordinates,
    int64 indices: finch 0.7 cannot lower its SparseCOOLevel nor a SparseList under a
    SparseList (both raise), so this is the sparse 3-d layout it can run."""
    from finch.algebra import ftype
    from finch.codegen import NumpyBuffer
    from finch.tensor.fiber_tensor import FiberTensor
    from finch.tensor.level import (
        DenseLevel,
        ElementLevel,
        SparseListLevel,
        dense,
        element,
        sparse_list,
    )

    ii, jj, kk = (c.astype(np.int64) for c in coords)
    n0, n1, n2 = shape
    ptr = np.zeros(n0 * n1 + 1, np.int64)
    np.cumsum(np.bincount(ii * n1 + jj, minlength=n0 * n1), out=ptr[1:])
    it = ftype(np.dtype(np.int64))
    el = element(fill_value=np.zeros((), vals.dtype)[()], element_type=ftype(vals.dtype),
                 position_type=it)
    lk = sparse_list(el, dimension_type=it)
    lj = dense(lk, dimension_type=it)
    li = dense(lj, dimension_type=it)
    return FiberTensor(DenseLevel(DenseLevel(SparseListLevel(
        ElementLevel(_format=el, _val=NumpyBuffer(vals)), dimension=lk.dimension_type(n2),
        ptr=NumpyBuffer(ptr), idx=NumpyBuffer(kk)), dimension=lj.dimension_type(n1)),
        dimension=li.dimension_type(n0)))


def finch_np(r: Any) -> np.ndarray:
    return np.asarray(FINCH.to_numpy(r))


# ---------------------------------------------------------------------------- data

def close(got: Any, want: Any) -> bool:
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    return got.shape == want.shape and bool(np.allclose(got, want, rtol=1e-7, atol=1e-9))


def csr_close(got: sp.sparray, want: sp.sparray) -> bool:
    if got.shape != want.shape:
        return False
    d = abs(sp.csr_array(got) - sp.csr_array(want))
    scale = max(1.0, float(abs(want).max()) if want.nnz else 1.0)
    return d.nnz == 0 or float(d.max()) <= 1e-7 * scale


@dataclass
class Case:
    """One benchmark: a thunk per library (returns its result) and a checker per library."""

    name: str
    data: str
    run: dict[str, Callable[[], Any]] = field(default_factory=dict)
    check: dict[str, Callable[[Any], bool]] = field(default_factory=dict)
    skip: dict[str, str] = field(default_factory=dict)


def xp_compute(expr: Callable[[], Any]) -> Callable[[], Any]:
    def thunk() -> Any:
        r = xp.compute(expr())
        return r
    return thunk


def case_sddmm(n: int, per_row: int, k: int) -> Case:
    S = rand_csr(n, n, per_row, 5)
    rng = np.random.default_rng(0)
    U, V = rng.random((n, k)), rng.random((n, k))
    rows = np.repeat(np.arange(n), np.diff(S.indptr))
    cols = S.indices

    def scipy_run() -> Any:
        return S.data * np.einsum("ij,ij->i", U[rows], V[cols])

    ref_vals = scipy_run()
    ref = sp.csr_array((ref_vals, S.indices, S.indptr), shape=S.shape)
    c = Case("SDDMM", f"n={n}, {per_row}/row, k={k}")
    XS, XU, XV = xp.asarray(S), xp.asarray(U), xp.asarray(V)
    c.run["lazysparse"] = xp_compute(lambda: XS * (XU @ XV.T))
    c.check["lazysparse"] = lambda r: csr_close(xp.to_scipy(r), ref)
    c.run["scipy"], c.check["scipy"] = scipy_run, lambda r: close(r, ref_vals)
    if pydata is not None:
        PS = pydata.COO.from_scipy_sparse(S)
        c.run["pydata"] = lambda: pydata.einsum("ij,ik,jk->ij", PS, U, V)
        c.check["pydata"] = lambda r: csr_close(r.tocsr(), ref)
    if FINCH is not None:
        FS, FU, FV = finch_csr(S), FINCH.asarray(U), FINCH.asarray(V)

        def finch_run() -> Any:
            d = FINCH.defer
            e = (FINCH.expand_dims(d(FS), 2) * FINCH.expand_dims(d(FU), 1)
                 * FINCH.expand_dims(d(FV), 0))
            return FINCH.compute(FINCH.sum(e, axis=2))
        c.run["finch"] = finch_run
        c.check["finch"] = lambda r: close(finch_np(r)[rows, cols], ref_vals)
    return c


def case_triangles(n: int, per_row: int) -> Case:
    T = symmetric_pattern(n, per_row, 6)
    ref = float((T * (T @ T)).sum())
    c = Case("triangles sum(A*(A@A))", f"n={n}, {T.nnz / n:.1f}/row")
    XA = xp.asarray(T)
    c.run["lazysparse"] = xp_compute(lambda: xp.sum(XA * (XA @ XA)))
    c.check["lazysparse"] = lambda r: close(float(r), ref)
    c.run["scipy"] = lambda: (T * (T @ T)).sum()
    c.check["scipy"] = lambda r: close(r, ref)
    if pydata is not None:
        PA = pydata.COO.from_scipy_sparse(T)
        c.run["pydata"] = lambda: (PA * (PA @ PA)).sum()
        c.check["pydata"] = lambda r: close(float(r), ref)
    if FINCH is not None:
        FA = finch_csr(T)

        def finch_run() -> Any:
            a = FINCH.defer(FA)
            return FINCH.compute(FINCH.sum(a * FINCH.matmul(a, a)))
        c.run["finch"] = finch_run
        c.check["finch"] = lambda r: close(float(finch_np(r)), ref)
    return c


def case_sum_abc(n: int, per_row: int) -> Case:
    A, B, C = (rand_csr(n, n, per_row, s) for s in (7, 8, 9))
    # overlap so that A*B*C is not empty: B and C share half of A's pattern
    B = (B + A.multiply(0.5)).tocsr()
    C = (C + A.multiply(0.25)).tocsr()
    for m in (B, C):
        m.sort_indices()

    def scipy_run() -> Any:
        return A.multiply(B).multiply(C).sum()

    ref = float(scipy_run())
    c = Case("sum(A*B*C)", f"n={n}, {per_row}-{B.nnz // n}/row")
    XA, XB, XC = (xp.asarray(m) for m in (A, B, C))
    c.run["lazysparse"] = xp_compute(lambda: xp.sum(XA * XB * XC))
    c.check["lazysparse"] = lambda r: close(float(r), ref)
    c.run["scipy"], c.check["scipy"] = scipy_run, lambda r: close(r, ref)
    if pydata is not None:
        PA, PB, PC = (pydata.COO.from_scipy_sparse(m) for m in (A, B, C))
        c.run["pydata"] = lambda: (PA * PB * PC).sum()
        c.check["pydata"] = lambda r: close(float(r), ref)
    if FINCH is not None:
        FA, FB, FC = (finch_csr(m) for m in (A, B, C))

        def finch_run() -> Any:
            d = FINCH.defer
            return FINCH.compute(FINCH.sum(d(FA) * d(FB) * d(FC)))
        c.run["finch"] = finch_run
        c.check["finch"] = lambda r: close(float(finch_np(r)), ref)
    return c


def case_rowsum(n: int, per_row: int) -> Case:
    A = rand_csr(n, n, per_row, 1)
    x = np.random.default_rng(2).random(n)
    ref = A @ x
    c = Case("(A*x[None,:]).sum(axis=1)", f"n={n}, {per_row}/row")
    XA, Xx = xp.asarray(A), xp.asarray(x)
    c.run["lazysparse"] = xp_compute(lambda: xp.sum(XA * Xx[None, :], axis=1))
    c.check["lazysparse"] = lambda r: close(xp.to_numpy(r), ref)
    c.run["scipy"], c.check["scipy"] = (lambda: A @ x), lambda r: close(r, ref)
    if pydata is not None:
        PA = pydata.COO.from_scipy_sparse(A)
        c.run["pydata"] = lambda: (PA * x[None, :]).sum(axis=1)
        c.check["pydata"] = lambda r: close(r.todense() if hasattr(r, "todense") else r, ref)
    if FINCH is not None:
        FA, Fx = finch_csr(A), FINCH.asarray(x)

        def finch_run() -> Any:
            d = FINCH.defer
            return FINCH.compute(FINCH.sum(d(FA) * FINCH.expand_dims(d(Fx), 0), axis=1))
        c.run["finch"] = finch_run
        c.check["finch"] = lambda r: close(finch_np(r), ref)
    return c


def case_mttkrp(n: int, nnz: int, rank: int) -> Case:
    rng = np.random.default_rng(3)
    flat = np.unique(rng.integers(0, n**3, nnz))
    ii, jj, kk = np.unravel_index(flat, (n, n, n))
    vals = rng.random(flat.size)
    Cm, Dm = rng.random((n, rank)), rng.random((n, rank))
    seg = sp.csr_array((np.ones(flat.size), (ii, np.arange(flat.size))), shape=(n, flat.size))

    def scipy_run() -> Any:
        return seg @ (vals[:, None] * Cm[jj] * Dm[kk])

    ref = scipy_run()
    c = Case("MTTKRP", f"{n}^3 COO, {flat.size} nnz, rank {rank}")
    coo = pydata.COO(np.stack([ii, jj, kk]), vals, shape=(n, n, n), has_duplicates=False,
                     sorted=True) if pydata is not None else None
    if coo is None:
        c.skip["lazysparse"] = "needs pydata sparse to build the 3-d COO input"
    else:
        XT, XC, XD = xp.asarray(coo), xp.asarray(Cm), xp.asarray(Dm)
        c.run["lazysparse"] = xp_compute(lambda: xp.einsum("ijk,jr,kr->ir", XT, XC, XD))
        c.check["lazysparse"] = lambda r: close(xp.to_numpy(r), ref)
        c.run["pydata"] = lambda: pydata.einsum("ijk,jr,kr->ir", coo, Cm, Dm)
        c.check["pydata"] = lambda r: close(r.todense() if hasattr(r, "todense") else r, ref)
    c.run["scipy"], c.check["scipy"] = scipy_run, lambda r: close(r, ref)
    if FINCH is not None:
        FT = finch_dds3((n, n, n), (ii, jj, kk), vals)
        FC, FD = FINCH.asarray(Cm), FINCH.asarray(Dm)

        def finch_run() -> Any:
            d, ed = FINCH.defer, FINCH.expand_dims
            e = ed(d(FT), 3) * ed(ed(d(FC), 0), 2) * ed(ed(d(FD), 0), 0)
            return FINCH.compute(FINCH.sum(e, axis=(1, 2)))
        c.run["finch"] = finch_run
        c.check["finch"] = lambda r: close(finch_np(r), ref)
    return c


def build_cases(quick: bool) -> list[Callable[[], Case]]:
    if quick:
        return [lambda: case_sddmm(2000, 20, 64), lambda: case_triangles(4000, 10),
                lambda: case_sum_abc(20_000, 10), lambda: case_rowsum(100_000, 5),
                lambda: case_mttkrp(400, 100_000, 32)]
    return [lambda: case_sddmm(10_000, 20, 64), lambda: case_triangles(20_000, 10),
            lambda: case_sum_abc(100_000, 10), lambda: case_rowsum(1_000_000, 5),
            lambda: case_mttkrp(2000, 1_000_000, 32)]


# ---------------------------------------------------------------------------- timing

@dataclass
class Cell:
    first: float | None = None
    median: float | None = None
    reps: int = 0
    status: str = ""   # "" ok, else "wrong" / "OOM" / "error: ..." / "n/a"


def measure(fn: Callable[[], Any], check: Callable[[Any], bool], budget: float,
            max_reps: int) -> Cell:
    """First call timed apart, checked; then a steady-state median within ``budget`` s."""
    cell = Cell()
    try:
        t = time.perf_counter()
        r = fn()
        cell.first = time.perf_counter() - t
        ok = check(r)
    except MemoryError:
        cell.status = "OOM"
        return cell
    except Exception as e:  # noqa: BLE001 - a peer failing is a table cell, not a crash
        msg = str(e).splitlines()[0][:60] if str(e) else ""
        cell.status = f"error: {type(e).__name__} {msg}".strip()
        traceback.print_exc(limit=2, file=sys.stderr)
        return cell
    del r
    if not ok:
        cell.status = "wrong"
        return cell
    ts: list[float] = []
    t0 = time.perf_counter()
    while len(ts) < max_reps and (len(ts) < 3 or time.perf_counter() - t0 < budget):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
        if ts[-1] > budget:   # one very slow steady run is enough
            break
    cell.median, cell.reps = statistics.median(ts), len(ts)
    return cell


def fmt_t(t: float | None) -> str:
    if t is None:
        return "—"
    return f"{t * 1e3:.1f} ms" if t < 10 else f"{t:.1f} s"


def t_or_status(c: Cell) -> str:
    return c.status if c.status else fmt_t(c.median)


def ratio(c: Cell, ls: Cell) -> str:
    """peer time / lazysparse time, or the peer's status."""
    if c.status or ls.status or not c.median or not ls.median:
        return c.status or "—"
    return f"{c.median / ls.median:.2f}×"


def warm_up() -> None:
    """Numba's process-wide start-up (LLVM init), paid once, outside every case."""
    a = xp.asarray(sp.random_array((50, 50), density=0.1, format="csr", random_state=0))
    xp.compute(xp.sum(a, axis=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (about a minute)")
    ap.add_argument("--threads", type=int, default=1, help="threads for every library")
    ap.add_argument("--only", default=None, help="comma-separated case-name prefixes")
    ap.add_argument("--budget", type=float, default=2.0, help="steady-state seconds per cell")
    args = ap.parse_args()
    import importlib.metadata

    import numba
    import scipy

    fv = importlib.metadata.version("finch-tensor") if FINCH else "n/a"
    print(f"# fused sparse expressions: threads={os.environ['NUMBA_NUM_THREADS']} "
          f"(numba {numba.get_num_threads()}), {'quick' if args.quick else 'full'} sizes, "
          f"numpy {np.__version__}, scipy {scipy.__version__}, "
          f"sparse {getattr(pydata, '__version__', 'n/a')}, finch-tensor {fv}")
    if not FINCH:
        print(f"finch-tensor: n/a ({FINCH_WHY})")
    if pydata is None:
        print(f"pydata/sparse: n/a ({PYDATA_WHY})")
    t_start = time.perf_counter()
    warm_up()
    results: list[tuple[Case, dict[str, Cell]]] = []
    for make in build_cases(args.quick):
        case = make()
        if args.only and not any(case.name.startswith(p) for p in args.only.split(",")):
            continue
        cells: dict[str, Cell] = {}
        for lib in ("lazysparse", *PEERS):
            if lib not in case.run:
                why = case.skip.get(lib) or {"pydata": PYDATA_WHY, "finch": FINCH_WHY}.get(lib)
                cells[lib] = Cell(status="n/a")
                if why:
                    print(f"  {case.name} / {lib}: n/a ({why})", file=sys.stderr)
                continue
            cells[lib] = measure(case.run[lib], case.check[lib], args.budget,
                                 20 if lib in ("lazysparse", "scipy") else 5)
            cl = cells[lib]
            print(f"  {case.name:28s} {lib:10s} first {fmt_t(cl.first):>10s} "
                  f"median {fmt_t(cl.median):>10s} x{cl.reps} {cl.status}", file=sys.stderr,
                  flush=True)
        results.append((case, cells))
    print()
    print("| case | data | lazysparse (median) | lazysparse first call | scipy | pydata "
          "| finch | scipy/ls | pydata/ls | finch/ls |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for case, cells in results:
        ls = cells["lazysparse"]

        row = [case.name, case.data, t_or_status(ls), fmt_t(ls.first) if ls.first else "—"]
        row += [t_or_status(cells[p]) for p in PEERS]
        row += [ratio(cells[p], ls) for p in PEERS]
        print("| " + " | ".join(row) + " |")
    print()
    print("First-call times of the peers (finch: code generation + JIT; others: one run):")
    for case, cells in results:
        print(f"- {case.name}: " + ", ".join(
            f"{lib} {fmt_t(c.first)}" for lib, c in cells.items() if c.first is not None))
    print(f"\ntotal wall time {time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    main()
