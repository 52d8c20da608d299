"""lazysparse on a CUDA GPU next to cuSPARSE (cupyx.scipy.sparse) and CuPy's unfused code.

Run on a machine with a CUDA GPU and CuPy (``benchmarks/gpu_check.sh`` does, issue 25):

    PYTHONPATH=src python benchmarks/bench_gpu.py --json gpu.json       # all cases, full size
    PYTHONPATH=src python benchmarks/bench_gpu.py --only spmv,spgemm --size small
    PYTHONPATH=src python benchmarks/bench_gpu.py --emulate --size tiny  # no GPU: a rehearsal

Cases (issue 25, item 4), each written as a user would (``xp`` expressions over arrays on
``device="cuda"``, then ``xp.compute``): SpMV with regular and power-law rows, SpMV with
``A.T``, SpGEMM, ``A + B``, SDDMM, MTTKRP, ``sum(A * B * C)``. Peers: cuSPARSE through
``cupyx.scipy.sparse`` (SpMV, SpGEMM, add) and CuPy's unfused code (SDDMM as a gather and
row reduction, MTTKRP as a gather then a cuSPARSE SpMM or a scatter-add, ``sum(A*B*C)`` as
two sparse multiplies and a sum); a case with several peers is compared to the fastest.

For every case the JSON records: the first call (plan, code generation, NVRTC compile; and
the compile time of each module), where every query ran (``runtime.recording``: ``cuda``
with its strategy, or ``host`` with the reason: a host fallback is never silent), medians
of CUDA-event timings of the kernels alone (the prepared queries re-run) and of the whole
``xp.compute`` call, the peers' medians, ``speedup = peer / lazysparse`` (> 1: lazysparse
faster), the bytes the case must move at least and their share of the device-to-device
copy bandwidth measured in the same run, and the result check against the peer.

``--emulate`` runs the same steps with NumPy for CuPy, scipy.sparse for cupyx and the CPU
emulator of the generated kernels for NVRTC (``tests/kernels/backends/cuda/emulator.py``): timings
are meaningless there; it proves the script. Without a GPU and without ``--emulate`` the
script exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

import lazysparse as xp  # noqa: E402
import lazysparse.kernels.backends.cuda.runtime as rt  # noqa: E402
from lazysparse.formats.device import cuda_available  # noqa: E402
from lazysparse.formats.tensor import Tensor  # noqa: E402


@dataclass(frozen=True)
class Sizes:
    """Problem sizes: ``n`` rows, ``per_row`` entries a row, SpGEMM's ``gemm_n``, SDDMM's
    and MTTKRP's rank ``k``, the 3-d tensor's side ``cube`` and entries ``cube_nnz``, the
    copy-bandwidth buffer ``copy_bytes``."""

    n: int
    per_row: int
    gemm_n: int
    k: int
    cube: int
    cube_nnz: int
    copy_bytes: int


SIZES = {
    # >= 1e7 stored entries in every case's largest operand or result (issue 25)
    "full": Sizes(n=1_000_000, per_row=16, gemm_n=200_000, k=32, cube=2000,
                  cube_nnz=10_000_000, copy_bytes=2 * 2**30),
    "small": Sizes(n=2000, per_row=8, gemm_n=500, k=8, cube=40, cube_nnz=4000,
                   copy_bytes=2**24),
    "tiny": Sizes(n=120, per_row=4, gemm_n=60, k=3, cube=8, cube_nnz=60, copy_bytes=2**16),
}

TARGETS = {"spmv": 0.9, "spmv_powerlaw": 0.9, "spmv_T": 0.9, "spgemm": 1.0, "add": 1.0,
           "sddmm": 2.0, "mttkrp": 2.0, "sum_abc": 2.0}  # speedup vs the best peer


@dataclass(frozen=True)
class Backend:
    """Where the run happens: CuPy on a GPU, or the emulation (NumPy, scipy, CPU)."""

    name: str
    np: Any  # cupy or numpy
    sparse: Any  # cupyx.scipy.sparse or scipy.sparse

    def sync(self) -> None:
        """Wait for the device (nothing to wait for in the emulation)."""
        if self.name == "cuda":
            self.np.cuda.Device().synchronize()

    def times(self, fn: Callable[[], Any], repeat: int) -> list[float]:
        """Seconds of ``repeat`` runs of ``fn`` after two warm-up runs: CUDA events on the
        GPU (the device synchronized before the start event), ``perf_counter`` emulated."""
        for _ in range(2):
            fn()
        self.sync()
        out = []
        for _ in range(repeat):
            if self.name == "cuda":
                ev0, ev1 = self.np.cuda.Event(), self.np.cuda.Event()
                ev0.record()
                fn()
                ev1.record()
                ev1.synchronize()
                out.append(self.np.cuda.get_elapsed_time(ev0, ev1) / 1e3)
            else:
                t0 = time.perf_counter()
                fn()
                out.append(time.perf_counter() - t0)
        return out

    def host(self, a: Any) -> Any:
        """A peer's result on the host (NumPy array, scipy matrix or float)."""
        if self.name != "cuda":
            return a
        if hasattr(a, "get"):
            return a.get()
        return a


@contextmanager
def backend(emulate: bool) -> Iterator[Backend]:
    """The GPU backend, or the emulated one (patched for the block's duration)."""
    if not emulate:
        import cupy
        import cupyx.scipy.sparse as cps

        yield Backend("cuda", cupy, cps)
        return
    from tests.kernels.backends.cuda.emulator import emulated_cuda

    with emulated_cuda():
        yield Backend("emulated", np, sp)


@dataclass
class Case:
    """One workload: ``ours`` builds a fresh lazy expression over device arrays (computed by
    the benchmark), ``peers`` the competing codes, ``bytes`` the least traffic it needs,
    ``nnz`` its largest stored-entry count."""

    name: str
    what: str
    ours: Callable[[], Any]
    peers: dict[str, Callable[[], Any]]
    bytes: int
    nnz: int


@dataclass
class Row:
    """What one case measured (the JSON record)."""

    case: str
    what: str
    nnz: int
    ok: bool = False
    error: str = ""
    max_rel_error: float | None = None
    first_call_s: float | None = None
    compile_s: list[float] = field(default_factory=list)
    placements: list[str] = field(default_factory=list)
    host_fallbacks: int = 0
    kernel_ms: float | None = None
    e2e_ms: float | None = None
    peer_ms: dict[str, float] = field(default_factory=dict)
    best_peer: str = ""
    speedup: float | None = None
    speedup_e2e: float | None = None
    target: float | None = None
    meets_target: bool | None = None
    bytes: int = 0
    gbps: float | None = None
    bw_fraction: float | None = None


# ------------------------------------------------------------------ data


def csr(n: int, m: int, per_row: float, seed: int, *, powerlaw: bool = False) -> sp.csr_matrix:
    """A random host CSR matrix with about ``per_row`` entries a row (``powerlaw``: Pareto
    row lengths with the same mean, a few rows thousands of times longer)."""
    rng = np.random.default_rng(seed)
    if powerlaw:
        lengths = np.floor((rng.pareto(1.5, n) + 1.0) * per_row / 3.0).astype(np.int64)
    else:
        lengths = rng.poisson(per_row, n)
    lengths = np.minimum(lengths, m)
    rows = np.repeat(np.arange(n, dtype=np.int64), lengths)
    cols = rng.integers(0, m, rows.size)
    a = sp.csr_matrix((rng.random(rows.size) + 0.5, (rows, cols)), shape=(n, m))
    a.sum_duplicates()
    return a


def on_device(a: Any) -> Any:
    """A host scipy matrix or NumPy array as a lazysparse array on ``cuda``."""
    return xp.asarray(a, device="cuda")


def cases(bk: Backend, sz: Sizes, only: set[str] | None) -> Iterator[Case]:
    """The workloads of issue 25 at sizes ``sz`` (``only``: a subset by name)."""
    cnp, cps = bk.np, bk.sparse
    rng = np.random.default_rng(0)
    n, per, k = sz.n, sz.per_row, sz.k

    def want(name: str) -> bool:
        return only is None or name in only

    x_host = rng.random(n)
    x, X = cnp.asarray(x_host), on_device(x_host)
    for name, pl in (("spmv", False), ("spmv_powerlaw", True)):
        if want(name):
            A = csr(n, n, per, 1, powerlaw=pl)
            GA, PA = on_device(A), cps.csr_matrix(A)
            yield Case(name, f"CSR {n}x{n}, {A.nnz} nnz, {'power-law' if pl else 'Poisson'} "
                       "rows, @ dense vector", lambda GA=GA: GA @ X,
                       {"cusparse": lambda PA=PA: PA @ x}, A.nnz * 12 + n * 20, A.nnz)
    if want("spmv_T"):
        A = csr(n, n, per, 2)
        GA, PA = on_device(A), cps.csr_matrix(A)
        yield Case("spmv_T", f"CSR {n}x{n}, {A.nnz} nnz, A.T @ dense vector",
                   lambda: GA.T @ X, {"cusparse": lambda: PA.T @ x}, A.nnz * 12 + n * 20,
                   A.nnz)
    if want("spgemm"):
        m = sz.gemm_n
        A, B = csr(m, m, per / 2, 3), csr(m, m, per / 2, 4)
        GA, GB, PA, PB = on_device(A), on_device(B), cps.csr_matrix(A), cps.csr_matrix(B)
        out = (A @ B).nnz
        yield Case("spgemm", f"CSR {m}x{m} @ CSR, {A.nnz}+{B.nnz} nnz -> {out}",
                   lambda: GA @ GB, {"cusparse": lambda: PA @ PB},
                   (A.nnz + B.nnz) * 12 + out * 12, out)
    if want("add"):
        A, B = csr(n, n, per / 2, 5), csr(n, n, per / 2, 6)
        GA, GB, PA, PB = on_device(A), on_device(B), cps.csr_matrix(A), cps.csr_matrix(B)
        out = (A + B).nnz
        yield Case("add", f"CSR {n}x{n} + CSR, {A.nnz}+{B.nnz} nnz -> {out}",
                   lambda: GA + GB, {"cusparse": lambda: PA + PB},
                   (A.nnz + B.nnz + out) * 12, out)
    if want("sddmm"):
        A = csr(n, n, per, 7)
        U, V = rng.random((n, k)), rng.random((k, n))
        GA, GU, GV = on_device(A), on_device(U), on_device(V)
        PA, PU, PVt = cps.csr_matrix(A), cnp.asarray(U), cnp.asarray(np.ascontiguousarray(V.T))
        rows = cnp.asarray(np.repeat(np.arange(n), np.diff(A.indptr)))

        def gather() -> Any:
            vals = (PU[rows] * PVt[PA.indices]).sum(axis=1) * PA.data
            return cps.csr_matrix((vals, PA.indices, PA.indptr), shape=PA.shape)

        yield Case("sddmm", f"CSR {n}x{n}, {A.nnz} nnz, .* (U @ V), rank {k}",
                   lambda: GA * (GU @ GV), {"gather_reduce": gather},
                   A.nnz * 24 + 2 * n * k * 8, A.nnz)
    if want("mttkrp"):
        c = sz.cube
        flat = np.unique(rng.integers(0, c**3, sz.cube_nnz))
        ii, jj, kk = np.unravel_index(flat, (c, c, c))
        vals = rng.random(flat.size)
        Bm, Cm = rng.random((c, k)), rng.random((c, k))
        T3 = Tensor.from_coords((ii, jj, kk), vals, (c, c, c), format="csf")
        GT, GB, GC = on_device(T3), on_device(Bm), on_device(Cm)
        pi, pj, pk, pv = (cnp.asarray(a) for a in (ii, jj, kk, vals))
        PB, PC = cnp.asarray(Bm), cnp.asarray(Cm)
        seg = cps.csr_matrix(sp.csr_matrix((np.ones(flat.size), (ii, np.arange(flat.size))),
                                           shape=(c, flat.size)))

        def spmm() -> Any:
            return seg @ (pv[:, None] * PB[pj] * PC[pk])

        def scatter() -> Any:
            out = cnp.zeros((c, k))
            prod = pv[:, None] * PB[pj] * PC[pk]
            if bk.name == "cuda":
                import cupyx

                cupyx.scatter_add(out, pi, prod)
            else:
                np.add.at(out, pi, prod)
            return out

        yield Case("mttkrp", f"CSF {c}^3, {flat.size} nnz, rank {k}",
                   lambda: xp.einsum("ijk,jr,kr->ir", GT, GB, GC),
                   {"gather_spmm": spmm, "gather_scatter_add": scatter},
                   flat.size * 20 + 3 * c * k * 8, flat.size)
    if want("sum_abc"):
        A, B, C = (csr(n, n, per / 2, s) for s in (8, 9, 10))
        B, C = (B + A * 0.5).tocsr(), (C + A * 0.25).tocsr()  # overlapping patterns
        GA, GB, GC = on_device(A), on_device(B), on_device(C)
        PA, PB, PC = (cps.csr_matrix(m) for m in (A, B, C))
        yield Case("sum_abc", f"sum(A*B*C), CSR {n}x{n}, {A.nnz}/{B.nnz}/{C.nnz} nnz",
                   lambda: xp.sum(GA * GB * GC),
                   {"multiply_multiply_sum": lambda: PA.multiply(PB).multiply(PC).sum()},
                   (A.nnz + B.nnz + C.nnz) * 12, B.nnz)


# ------------------------------------------------------------------ checks and timing


def host_result(y: Any) -> Any:
    """A computed lazysparse result on the host: scipy CSR for sparse 2-d, else NumPy."""
    h = y.to_device("cpu")
    if h.ndim == 2 and h.format != "dense":
        return sp.csr_matrix(xp.to_scipy(h))
    return np.asarray(h)


def rel_error(got: Any, want: Any) -> float:
    """max |got - want| / max(|want|, 1) over the stored entries of sparse or dense results."""
    if sp.issparse(want) or sp.issparse(got):
        want = sp.csr_matrix(want)
        diff = abs(sp.csr_matrix(got) - want)
        scale = abs(want).max() if want.nnz else 0.0
        err = diff.max() if diff.nnz else 0.0
    else:
        w = np.asarray(want, dtype=np.float64)
        err = float(np.max(np.abs(np.asarray(got, dtype=np.float64) - w), initial=0.0))
        scale = float(np.max(np.abs(w), initial=0.0))
    return float(err) / max(float(scale), 1.0)


def measure(bk: Backend, case: Case, repeat: int, copy_gbps: float) -> Row:
    """First call, placements, check, kernel / end-to-end / peer medians of one case."""
    row = Row(case.name, case.what, case.nnz, bytes=case.bytes, target=TARGETS.get(case.name))
    bk.sync()
    t0 = time.perf_counter()
    with rt.recording() as log:
        y = case.ours()
        xp.compute(y)
        bk.sync()
    row.first_call_s = time.perf_counter() - t0
    row.compile_s = [p.compile_s for p in log if p.compile_s > 0]
    row.placements = [p.describe() for p in log]
    row.host_fallbacks = sum(p.device == "host" for p in log)
    peer_out = {name: bk.host(fn()) for name, fn in case.peers.items()}
    got = host_result(y)
    row.max_rel_error = max(rel_error(got, want) for want in peer_out.values())
    row.ok = row.max_rel_error <= 1e-8 and row.host_fallbacks == 0
    if row.host_fallbacks:
        row.error = f"{row.host_fallbacks} host fallback(s): " + "; ".join(
            p.describe() for p in log if p.device == "host")
    elif not row.ok:
        row.error = f"result differs from the peer by {row.max_rel_error:.3g} (relative)"

    def kernels() -> None:
        for p in log:
            rt.run_prepared(p)

    row.kernel_ms = statistics.median(bk.times(kernels, repeat)) * 1e3
    row.e2e_ms = statistics.median(bk.times(lambda: xp.compute(case.ours()), repeat)) * 1e3
    row.peer_ms = {name: statistics.median(bk.times(fn, repeat)) * 1e3
                   for name, fn in case.peers.items()}
    row.best_peer = min(row.peer_ms, key=row.peer_ms.__getitem__)
    best = row.peer_ms[row.best_peer]
    row.speedup = best / row.kernel_ms if row.kernel_ms else None
    row.speedup_e2e = best / row.e2e_ms if row.e2e_ms else None
    if row.target is not None and row.speedup is not None:
        row.meets_target = row.speedup >= row.target
    row.gbps = case.bytes / (row.kernel_ms * 1e-3) / 1e9 if row.kernel_ms else None
    if row.gbps is not None and copy_gbps > 0:
        row.bw_fraction = row.gbps / copy_gbps
    return row


def copy_bandwidth(bk: Backend, nbytes: int, repeat: int) -> float:
    """Device-to-device copy rate in GB/s, counting bytes read plus bytes written."""
    src = bk.np.ones(nbytes // 8, dtype=np.float64)
    dst = bk.np.empty_like(src)
    t = statistics.median(bk.times(lambda: bk.np.copyto(dst, src), repeat))
    return 2 * src.nbytes / t / 1e9


def device_info(bk: Backend) -> dict[str, Any]:
    """The card, driver and versions of this run."""
    info: dict[str, Any] = {"backend": bk.name, "python": platform.python_version(),
                            "numpy": np.__version__, "scipy": scipy.__version__}
    if bk.name == "cuda":
        cp = bk.np
        props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
        info.update(card=props["name"].decode(), sms=props["multiProcessorCount"],
                    memory_gib=round(props["totalGlobalMem"] / 2**30, 1),
                    cupy=cp.__version__, cuda_runtime=cp.cuda.runtime.runtimeGetVersion(),
                    driver=cp.cuda.runtime.driverGetVersion(),
                    nvrtc=".".join(map(str, cp.cuda.nvrtc.getVersion())))
    return info


def print_table(rows: list[Row], copy_gbps: float) -> None:
    """The summary the device call's output tail shows."""
    print(f"device-to-device copy: {copy_gbps:.0f} GB/s (read + write)")
    head = (f"{'case':<14}{'ok':>4}{'host':>5}{'first s':>9}{'kern ms':>10}{'e2e ms':>10}"
            f"{'peer ms':>10}{'speedup':>8}{'target':>7}{'%bw':>6}")
    print(head)
    for r in rows:
        def f(v: float | None, fmt: str) -> str:
            return format(v, fmt) if v is not None else "-"
        peer = r.peer_ms.get(r.best_peer)
        bw = r.bw_fraction * 100 if r.bw_fraction is not None else None
        print(f"{r.case:<14}{'yes' if r.ok else 'NO':>4}{r.host_fallbacks:>5}"
              f"{f(r.first_call_s, '.2f'):>9}{f(r.kernel_ms, '.3f'):>10}"
              f"{f(r.e2e_ms, '.3f'):>10}{f(peer, '.3f'):>10}{f(r.speedup, '.2f'):>8}"
              f"{f(r.target, '.1f'):>7}{f(bw, '.0f'):>6}")
        if r.error:
            print(f"    {r.case}: {r.error.splitlines()[-1][:200]}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", choices=sorted(SIZES), default=None,
                    help="problem sizes (default: full on a GPU, small emulated)")
    ap.add_argument("--repeat", type=int, default=None, help="timed runs (median)")
    ap.add_argument("--only", default=None, help="comma-separated case names")
    ap.add_argument("--json", default=None, help="write the results here")
    ap.add_argument("--emulate", action="store_true",
                    help="no GPU: NumPy + the CPU emulator of the generated kernels")
    args = ap.parse_args(argv)
    if not args.emulate and not cuda_available():
        print("bench_gpu: needs CuPy and a CUDA device (none found); nothing measured. "
              "Use --emulate for a rehearsal on the CPU.")
        return 2
    sz = SIZES[args.size or ("small" if args.emulate else "full")]
    repeat = args.repeat or (3 if args.emulate else 10)
    only = set(args.only.split(",")) if args.only else None
    unknown = (only or set()) - set(TARGETS)
    if unknown:
        ap.error(f"unknown cases {sorted(unknown)}; choose from {sorted(TARGETS)}")
    rows: list[Row] = []
    with backend(args.emulate) as bk:
        info = device_info(bk)
        copy_gbps = copy_bandwidth(bk, sz.copy_bytes, repeat)

        def save() -> None:  # after every case: a timeout still leaves the cases done
            if args.json:
                result = {"info": info, "size": asdict(sz), "repeat": repeat,
                          "copy_gbps": copy_gbps, "cases": [asdict(r) for r in rows]}
                Path(args.json).write_text(json.dumps(result, indent=1, default=str))

        gen = cases(bk, sz, only)
        while True:
            try:
                case = next(gen)
            except StopIteration:
                break
            except Exception:  # noqa: BLE001 - a broken input builder ends the run, recorded
                rows.append(Row("setup", "building the inputs", 0,
                                error=traceback.format_exc()))
                break
            try:
                rows.append(measure(bk, case, repeat, copy_gbps))
            except Exception:  # noqa: BLE001 - one failing case must not hide the others
                rows.append(Row(case.name, case.what, case.nnz, bytes=case.bytes,
                                error=traceback.format_exc()))
            print(f"[bench_gpu] {rows[-1].case}: {'ok' if rows[-1].ok else 'FAILED'}",
                  flush=True)
            save()
        save()
    print_table(rows, copy_gbps)
    return 0 if rows and all(r.ok for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
