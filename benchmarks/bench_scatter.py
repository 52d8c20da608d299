"""Scatter-friendly outputs (issue 14): products whose output rows/fibers are built through
a scattered workspace, lazysparse beside its peers in one run on the same data (not a test).

Each case is written the way a user writes it (``xp.asarray`` of scipy/pydata inputs, an
``xp`` expression, then ``xp.compute``), checked against the peers' results, then timed:
one warm-up call each (lazysparse's first call compiles its kernels: reported as "first"),
then ``--reps`` interleaved rounds (lazysparse and every peer once per round, so a shared
machine's drift falls on all alike). The table gives best and median wall time and the ratio
peer / lazysparse on the best times (> 1: lazysparse faster). Below it, per case, the
optimizer's choice: the loop order, output format and workspace lines of ``xp.explain``.

Cases:

- ``spgemm-uniform``: ``A @ A``, n = 20 000, 10 uniformly placed entries per row, against
  scipy's ``G @ G`` as it returns it (column indices unsorted within rows) and scipy +
  ``sort_indices()`` (what a canonical CSR costs: lazysparse, like scipy, returns the
  product's rows unsorted), and GraphBLAS ``mxm`` (plus_times).
- ``spgemm-powerlaw``: ``A @ A`` on a graph with power-law (Pareto, capped) row degrees,
  n = 50 000, ~10 entries per row on average, uniformly random columns: a few rows of the
  product are nearly dense, most are short. Same peers.
- ``bfs-sparse`` / ``bfs-dense``: one BFS step as SpMSpV, ``y = A.T @ x`` on a 1M-vertex
  random graph (~8 entries per row) with a sparse 1-d frontier ``x`` (``xp.asarray`` of a
  scipy 1-d ``coo_array``) holding 0.1 % / 10 % of the vertices; peers: scipy ``A.T @ x``
  with x a 1-d ``coo_array`` and with x an n×1 ``csr_array``, GraphBLAS ``x.vxm(A)``
  (plus_times). The reached vertices and their values are compared before timing.
- ``contract3d``: ``einsum("ijk,kl->ijl", T, M)`` with T a 200×200×2000 sparse COO tensor
  (500k entries) and M a 2000×2000 sparse matrix (4 entries per row), against pydata/sparse
  ``sparse.einsum`` (and ``sparse.tensordot``) on COO. Results compared entry by entry.

Usage::

    NUMBA_NUM_THREADS=1 python benchmarks/bench_scatter.py [--only spgemm-uniform,bfs-dense]
        [--reps 5]

Threads: lazysparse uses NUMBA_NUM_THREADS; GraphBLAS is given the same number; scipy and
pydata/sparse are single-threaded. GraphBLAS (``pip install python-graphblas``, a peer, not a
dependency) is skipped ("n/a") when it is not importable.
"""

from __future__ import annotations

import os
import sys
import tempfile

os.environ.setdefault("LAZYSPARSE_CACHE_DIR", tempfile.mkdtemp(prefix="lsk-bench-scatter-"))
for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import re  # noqa: E402
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
from bench_data import rand_csr  # noqa: E402

import lazysparse as xp  # noqa: E402

try:
    import graphblas as gb  # a peer, not a dependency

    gb.ss.config["nthreads"] = numba.config.NUMBA_NUM_THREADS
except Exception as _e:  # noqa: BLE001 - missing or broken: its cells read "n/a"
    gb = None
    GB_WHY = f"{type(_e).__name__}: {_e}"

try:
    import sparse as pydata_sparse
except Exception:  # noqa: BLE001
    pydata_sparse = None

Thunk = Callable[[], Any]


@dataclass
class Peer:
    name: str
    run: Thunk
    status: str = ""  # "", "n/a ...", "error: ...", "MISMATCH: ..."
    times: list[float] = field(default_factory=list)


@dataclass
class Case:
    name: str
    data: str
    expr: Thunk  # builds the lazy expression (not computed)
    check: Callable[[Any], str]  # computed lazysparse result -> "" or a mismatch message
    peers: list[Peer]
    first: float = 0.0
    status: str = ""
    times: list[float] = field(default_factory=list)
    plan: list[str] = field(default_factory=list)


# ---------------------------------------------------------------- result comparison


def _err(e: BaseException) -> str:
    msg = str(e).splitlines()[0] if str(e) else ""
    return f"error: {type(e).__name__}: {msg[:80]}"


def coo_of(r: Any) -> tuple[np.ndarray, np.ndarray]:
    """A computed lazysparse array's stored entries as (coordinates (ndim, nnz), values),
    in row-major order, explicit zeros dropped."""
    s = r.tensor().to_pydata("coo")
    coords, vals = np.asarray(s.coords), np.asarray(s.data)
    return _canon(coords, vals, r.shape)


def _canon(coords: np.ndarray, vals: np.ndarray, shape: tuple[int, ...]
           ) -> tuple[np.ndarray, np.ndarray]:
    keep = vals != 0
    coords, vals = coords[:, keep], vals[keep]
    lin = np.ravel_multi_index(tuple(coords.astype(np.int64)), shape)
    o = np.argsort(lin, kind="stable")
    return coords[:, o].astype(np.int64), vals[o]


def compare(got: tuple[np.ndarray, np.ndarray], ref: tuple[np.ndarray, np.ndarray]) -> str:
    (gc, gv), (rc, rv) = got, ref
    if gc.shape != rc.shape:
        return f"nnz {gc.shape[1]} vs {rc.shape[1]}"
    if not np.array_equal(gc, rc):
        return f"{int((gc != rc).any(axis=0).sum())} coordinates differ"
    if not np.allclose(gv, rv, rtol=1e-9, atol=1e-12):
        return f"values differ (max abs {np.abs(gv - rv).max():.3g})"
    return ""


def coo_of_scipy(m: Any) -> tuple[np.ndarray, np.ndarray]:
    c = sp.coo_array(m)
    c.sum_duplicates()
    return _canon(np.vstack(c.coords), c.data, c.shape)


# ---------------------------------------------------------------- cases


def spgemm_case(name: str, G: sp.csr_array, data: str) -> Case:
    ref = G @ G
    ref_coo = coo_of_scipy(ref)
    a = xp.asarray(G)

    def scipy_sorted() -> Any:
        c = G @ G  # scipy leaves the column indices of each row unsorted
        c.sort_indices()
        return c

    peers = [Peer("scipy G @ G (unsorted rows)", lambda: G @ G),
             Peer("scipy G @ G + sort_indices()", scipy_sorted)]
    if gb is not None:
        try:
            GA = gb.io.from_scipy_sparse(G)
            peers.append(Peer("GraphBLAS mxm plus_times",
                              lambda: GA.mxm(GA, gb.semiring.plus_times).new()))
        except Exception as e:  # noqa: BLE001
            peers.append(Peer("GraphBLAS mxm plus_times", lambda: None, _err(e)))
    else:
        peers.append(Peer("GraphBLAS mxm plus_times", lambda: None, "n/a"))
    return Case(name, data, lambda: a @ a, lambda r: compare(coo_of(r), ref_coo), peers)


def spgemm_uniform() -> Case:
    n = 20_000
    G = rand_csr(n, n, 10, 2)
    return spgemm_case("spgemm-uniform", G, f"n={n}, nnz={G.nnz}")


def powerlaw_csr(n: int, mean_deg: float, cap: int, alpha: float, seed: int) -> sp.csr_array:
    """Row degrees from a capped Pareto(``alpha``) law scaled to mean ~``mean_deg``,
    uniformly random columns."""
    rng = np.random.default_rng(seed)
    raw = rng.pareto(alpha, n) + 1.0
    deg = np.minimum(np.maximum(np.rint(raw * mean_deg / raw.mean()), 1), cap).astype(np.int64)
    rows = np.repeat(np.arange(n), deg)
    cols = rng.integers(0, n, rows.size)
    a = sp.coo_array((rng.random(rows.size), (rows, cols)), shape=(n, n)).tocsr()
    a.sum_duplicates()
    a.sort_indices()
    return a


def spgemm_powerlaw() -> Case:
    n = 50_000
    G = powerlaw_csr(n, 10.0, n // 10, 1.5, 7)
    deg = np.diff(G.indptr)
    return spgemm_case("spgemm-powerlaw", G,
                       f"n={n}, nnz={G.nnz}, row deg max {deg.max()} median "
                       f"{int(np.median(deg))}")


_BFS_GRAPH: dict[str, Any] = {}


def bfs_graph() -> sp.csr_array:
    if "A" not in _BFS_GRAPH:
        _BFS_GRAPH["A"] = rand_csr(1_000_000, 1_000_000, 8, 11)
    return _BFS_GRAPH["A"]


def bfs_case(name: str, frac: float) -> Case:
    A = bfs_graph()
    n = A.shape[0]
    rng = np.random.default_rng(12)
    idx = np.sort(rng.choice(n, max(1, int(n * frac)), replace=False))
    xv = rng.random(idx.size) + 0.5
    x1 = sp.coo_array((xv, (idx,)), shape=(n,))
    xc = sp.csr_array((xv, (idx, np.zeros(idx.size, np.int64))), shape=(n, 1))
    ref_m = A.T @ xc
    ref = coo_of_scipy(ref_m)
    ref = (ref[0][:1], ref[1])  # the column of an n×1 matrix -> a 1-d vector's coordinates
    a, x = xp.asarray(A), xp.asarray(x1)

    def check_1d(r: Any) -> str:
        c = sp.coo_array(r)
        return compare(_canon(np.vstack(c.coords), c.data, c.shape), ref)

    def check_col(r: Any) -> str:
        c = coo_of_scipy(r)
        return compare((c[0][:1], c[1]), ref)

    peers = [Peer("scipy A.T @ x (x coo_array (n,))", lambda: A.T @ x1),
             Peer("scipy A.T @ x (x csr_array (n,1))", lambda: A.T @ xc)]
    checks: dict[str, Callable[[Any], str]] = {peers[0].name: check_1d, peers[1].name: check_col}
    if gb is not None:
        try:
            GA = gb.io.from_scipy_sparse(A)
            gx = gb.Vector.from_coo(idx, xv, size=n)
            p = Peer("GraphBLAS x.vxm(A) plus_times",
                     lambda: gx.vxm(GA, gb.semiring.plus_times).new())
            peers.append(p)

            def check_gb(r: Any) -> str:
                i, v = r.to_coo()
                return compare(_canon(np.asarray(i)[None, :], np.asarray(v), (n,)), ref)

            checks[p.name] = check_gb
        except Exception as e:  # noqa: BLE001
            peers.append(Peer("GraphBLAS x.vxm(A) plus_times", lambda: None, _err(e)))
    else:
        peers.append(Peer("GraphBLAS x.vxm(A) plus_times", lambda: None, "n/a"))
    c = Case(name, f"n={n}, nnz={A.nnz}, frontier {idx.size} ({frac:.1%}), "
             f"reached {ref[1].size}", lambda: a.T @ x,
             lambda r: compare(coo_of(r), ref), peers)
    c.peer_checks = checks  # type: ignore[attr-defined]
    return c


def bfs_sparse() -> Case:
    return bfs_case("bfs-sparse", 0.001)


def bfs_dense() -> Case:
    return bfs_case("bfs-dense", 0.10)


def contract3d() -> Case:
    shape3, nnz, m = (200, 200, 2000), 500_000, 2000
    rng = np.random.default_rng(21)
    flat = np.unique(rng.integers(0, int(np.prod(shape3)), nnz))
    coords = np.vstack(np.unravel_index(flat, shape3))
    vals = rng.random(flat.size)
    M = rand_csr(shape3[2], m, 4, 22)
    data = f"T {shape3} nnz={flat.size}, M {M.shape} nnz={M.nnz}"
    if pydata_sparse is None:
        peers = [Peer("pydata sparse.einsum", lambda: None, "n/a")]
        T = sp.coo_array((vals, (coords[0] * shape3[1] + coords[1], coords[2])),
                         shape=(shape3[0] * shape3[1], shape3[2]))
        t = xp.reshape(xp.asarray(T), shape3)
    else:
        Tp = pydata_sparse.COO(coords, vals, shape=shape3, sorted=True, has_duplicates=False)
        Mp = pydata_sparse.COO.from_scipy_sparse(M)
        peers = [Peer("pydata sparse.einsum('ijk,kl->ijl')",
                      lambda: pydata_sparse.einsum("ijk,kl->ijl", Tp, Mp)),
                 Peer("pydata sparse.tensordot(T, M, ([2],[0]))",
                      lambda: pydata_sparse.tensordot(Tp, Mp, axes=([2], [0])))]
        t = xp.asarray(Tp)
    mm = xp.asarray(M)
    out_shape = (*shape3[:2], m)
    refs: dict[str, Any] = {}

    def check_peer(r: Any) -> str:
        got = _canon(np.asarray(r.coords), np.asarray(r.data), out_shape)
        if "ref" not in refs:  # the first peer's result is the reference
            refs["ref"] = got
            return ""
        return compare(got, refs["ref"])

    def check_ls(r: Any) -> str:
        if "ref" not in refs:
            return ""
        return compare(coo_of(r), refs["ref"])

    c = Case("contract3d", data, lambda: xp.einsum("ijk,kl->ijl", t, mm), check_ls, peers)
    c.peer_checks = {p.name: check_peer for p in peers}  # type: ignore[attr-defined]
    c.checks_peers_first = True  # type: ignore[attr-defined]
    return c


CASES: dict[str, Callable[[], Case]] = {
    "spgemm-uniform": spgemm_uniform,
    "spgemm-powerlaw": spgemm_powerlaw,
    "bfs-sparse": bfs_sparse,
    "bfs-dense": bfs_dense,
    "contract3d": contract3d,
}


# ---------------------------------------------------------------- explain summary

_PLAN_LINE = re.compile(r"output|loop order|workspace|\bvia\b|relayout", re.IGNORECASE)


def plan_summary(expr: Any) -> list[str]:
    """Per kernel of ``xp.explain(expr)``: the loop order, output format and workspace lines
    (including the generated source's ``# output ... via ...`` comment), deduplicated."""
    out = []
    for k in xp.explain(expr).kernels:
        seen: list[str] = []
        for line in str(k).splitlines():
            s = line.strip().lstrip("#").strip().replace(" (outermost first)", "")
            if s.startswith("loop order ("):  # the source's copy of the loop order
                continue
            if _PLAN_LINE.search(s) and s not in seen:
                seen.append(s)
        head = str(k).splitlines()[0]
        out.append(f"{head}: " + "; ".join(seen))
    return out


# ---------------------------------------------------------------- timing


def ms(t: float | None) -> str:
    return "—" if t is None else f"{t * 1e3:.2f}"


def run_case(c: Case, reps: int) -> None:
    checks = getattr(c, "peer_checks", {})
    # peers first where a peer's result is the reference
    if getattr(c, "checks_peers_first", False):
        order = ["peers", "ls"]
    else:
        order = ["ls", "peers"]
    for what in order:
        if what == "ls":
            try:
                c.plan = plan_summary(c.expr())
            except Exception as e:  # noqa: BLE001
                c.plan = [f"explain {_err(e)}"]
            try:
                t = time.perf_counter()
                r = xp.compute(c.expr())
                c.first = time.perf_counter() - t
                c.data += f"; result {r.format}, {r.nnz} stored"
                bad = c.check(r)
                if bad:
                    c.status = f"MISMATCH: {bad}"
                    print(f"!!! {c.name}: lazysparse result differs from the peers: {bad}",
                          flush=True)
            except Exception as e:  # noqa: BLE001
                c.status = _err(e)
        else:
            for p in c.peers:
                if p.status:
                    continue
                try:
                    r = p.run()  # warm-up, and the result to check
                    bad = checks[p.name](r) if p.name in checks else ""
                    if bad:
                        p.status = f"MISMATCH: {bad}"
                        print(f"!!! {c.name}: {p.name} differs from the reference: {bad}",
                              flush=True)
                except Exception as e:  # noqa: BLE001
                    p.status = _err(e)
    for _ in range(reps):
        if not c.status.startswith("error"):
            t = time.perf_counter()
            xp.compute(c.expr())
            c.times.append(time.perf_counter() - t)
        for p in c.peers:
            if p.status.startswith(("error", "n/a")):
                continue
            t = time.perf_counter()
            p.run()
            p.times.append(time.perf_counter() - t)


def report(cases: list[Case]) -> None:
    print("\n| case | data | lazysparse best (median) ms | first call ms | peer "
          "| peer best (median) ms | peer / lazysparse |")
    print("|---|---|---|---|---|---|---|")
    for c in cases:
        tl = min(c.times) if c.times else None
        ls_txt = (f"{ms(tl)} ({ms(statistics.median(c.times))})" if c.times else c.status)
        if c.times and c.status:
            ls_txt += f" **{c.status}**"
        for i, p in enumerate(c.peers):
            if p.times:
                tp = min(p.times)
                ptxt = f"{ms(tp)} ({ms(statistics.median(p.times))})"
                ratio = f"{tp / tl:.2f}" if tl else "—"
                if p.status:
                    ratio += f" **{p.status}**"
            else:
                ptxt, ratio = p.status or "—", "—"
            head = (f"| {c.name} | {c.data} | {ls_txt} | {c.first * 1e3:.0f}"
                    if i == 0 else "| | | |")
            print(f"{head} | {p.name} | {ptxt} | {ratio} |")
    print("\nOptimizer's choice (xp.explain):")
    for c in cases:
        print(f"- {c.name}:")
        for line in c.plan:
            print(f"    {line}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=None,
                    help=f"comma-separated case names: {', '.join(CASES)}")
    ap.add_argument("--reps", type=int, default=5, help="timed rounds after the warm-up")
    args = ap.parse_args()
    names = list(CASES)
    if args.only:
        names = [s.strip() for s in args.only.split(",")]
        unknown = [s for s in names if s not in CASES]
        if unknown:
            ap.error(f"unknown case(s) {unknown}; choose from {list(CASES)}")
    gbtxt = (f"GraphBLAS {gb.ss.config['nthreads']} thread(s)" if gb is not None
             else f"GraphBLAS n/a ({GB_WHY})")
    print(f"# bench_scatter: NUMBA_NUM_THREADS={numba.config.NUMBA_NUM_THREADS}, {gbtxt}; "
          f"scipy/pydata single-threaded; {args.reps} timed rounds after a warm-up")
    done = []
    for name in names:
        t0 = time.perf_counter()
        c = CASES[name]()
        t1 = time.perf_counter()
        run_case(c, args.reps)
        print(f"{name}: data {t1 - t0:.1f} s, checks + timing {time.perf_counter() - t1:.1f} s",
              flush=True)
        done.append(c)
    report(done)


if __name__ == "__main__":
    main()
