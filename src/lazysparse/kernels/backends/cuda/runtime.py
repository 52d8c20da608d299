"""Compile CUDA programs with ``cupy.RawModule`` and run normal-form plans on the GPU.

Modules are cached in memory by (structural key, argument dtypes, strategy); CuPy keeps the
compiled binaries on disk itself (``~/.cupy/kernel_cache``), so a second process does not
run NVRTC again. CuPy is imported inside functions only.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from lazysparse.formats.compiled.sync import Counters, KeyLocks
from lazysparse.formats.device import DeviceTensor, _cupy, device_of
from lazysparse.kernels.backends.cuda import strategies
from lazysparse.kernels.backends.cuda.codegen_cuda import CudaProgram, Launch
from lazysparse.kernels.backends.cuda.host import POOL_BYTES, Grid, run_steps
from lazysparse.kernels.backends.cuda.program import (
    CudaUnsupported,
    GpuKernelPlan,
    cache_key,
    gpu_args,
    hash_capacity_for,
    plan_query,
    program_for,
)
from lazysparse.kernels.backends.host import assemble, run_plan
from lazysparse.kernels.compile.planning.params import Role
from lazysparse.logic.nodes import Alias, Plan, Query

NVRTC_OPTIONS: tuple[str, ...] = ()  # the generated code is C++11; NVRTC's default suffices
PARTIAL_CHUNKS = 4096  # chunks of a full reduction (one partial result each)...
PARTIAL_BYTES = 256 * 2**20  # ...as long as their partial outputs fit in this
MIN_DENSE_WORKERS = 4096  # fewer resident dense-row workspaces than this: use a hash table
DENSE_WS_BYTES_PER_COL = 17  # mark + list + values (8-byte), fill phase
STATS = Counters("compiled", "memory_hits", "launches", "host_fallback")
_MODULES: dict[Any, tuple[CudaProgram, dict[str, Any]] | None] = {}  # None: runs on host
_HOST_REASONS: dict[Any, str] = {}  # why a cached host-run key cannot run on the GPU
_MISSING = object()
_LOCK = threading.Lock()
_BUILDING = KeyLocks()  # modules being compiled, by cache key


def compile_program(prog: CudaProgram) -> Any:
    """A ``cupy.RawModule`` of the program's translation unit, compiled now (NVRTC) so that
    compile errors and compile time belong to the first call, not to a launch."""
    cp = _cupy()
    module = cp.RawModule(code=prog.translation_unit(cupy_headers=True), options=NVRTC_OPTIONS)
    module.compile()
    return module


def choose_strategy(plan: GpuKernelPlan, args: list[Any], params: tuple[str, ...]) -> str:
    """Strategy from the driving level's row lengths (``thread`` when there is none)."""
    if plan.stats_arg is None or len(plan.eligible) == 1:
        return "thread"
    ptr = args[plan.stats_arg]
    mean, mx = strategies.row_stats(ptr, _cupy())
    return strategies.choose(set(plan.eligible), mean, mx)


def launch_args(plan: GpuKernelPlan) -> list[Any]:
    """The kernel's common arguments (storage arrays on the device)."""
    return gpu_args(plan)


def max_chunks(plan: GpuKernelPlan, args: list[Any]) -> int:
    """Cap on the chunk count: unbounded (one row per chunk) except for per-chunk partial
    results, which get up to :data:`PARTIAL_CHUNKS` as long as they fit in
    :data:`PARTIAL_BYTES`."""
    if not plan.partials:
        return 1 << 62
    osize = args[plan.kernel.lowered.signature.position(Role.OUT_SIZE)]
    per_chunk = int(osize) * plan.info.out_dtype.itemsize
    return max(1, min(PARTIAL_CHUNKS, PARTIAL_BYTES // max(per_chunk, 1)))


def choose_atomic(plan: GpuKernelPlan, args: list[Any]) -> bool:
    """Atomic updates of one output instead of per-chunk partials (a thread per row rather
    than at most :data:`PARTIAL_CHUNKS` threads) for a reduction over the outer loop whose
    output is large (``strategies.ATOMIC_MIN_OUTPUTS``; a small one, a full sum, would
    serialize on a few addresses) and whose reduction a CAS loop applies. (A warp or
    nonzero-split rewrite that applies takes precedence: ``strategies.rewrite``.)"""
    if not plan.partials:
        return False
    if not strategies.atomic_capable(plan.base.reduce_op, plan.base.acc_dtype):
        return False
    osize = args[plan.kernel.lowered.signature.position(Role.OUT_SIZE)]
    return int(osize) >= strategies.ATOMIC_MIN_OUTPUTS


def choose_workspace(plan: GpuKernelPlan, args: list[Any], xp: Any) -> tuple[str, int]:
    """``("hash", capacity)`` for SpGEMM rows too wide for many dense-row workspaces (fewer
    than :data:`MIN_DENSE_WORKERS` would fit in the pool budget) when the table is smaller
    than a row; else ``("dense", 0)``."""
    if plan.hash_operands is None:
        return "dense", 0
    cap, width = hash_capacity_for(plan, args, xp)
    per_worker = width * DENSE_WS_BYTES_PER_COL
    if per_worker * MIN_DENSE_WORKERS > POOL_BYTES and cap < width:
        return "hash", cap
    return "dense", 0


def run_on_host(query: Query, env: dict[Alias, Any], *, to_host: Any = None,
                to_device: Any = None) -> Any:
    """Run one query with the CPU backend: operands copied to the host, the result back."""
    from lazysparse.formats.device import to_cuda
    from lazysparse.formats.device import to_host as _to_host
    from lazysparse.kernels.backends.execute import run_query

    down = to_host or _to_host
    up = to_device or to_cuda
    return up(run_query(query, {a: down(t) for a, t in env.items()}))


@dataclass(frozen=True)
class Prepared:
    """One query made ready to launch: its plan, arguments, the chosen strategy and
    workspace, and the compiled kernels, or ``kernels is None`` with the ``reason`` when the
    query runs on the host (CPU backend). :func:`run_prepared` runs it; running it again
    reuses everything (what a benchmark times)."""

    query: Query
    env: dict[Alias, Any]
    plan: GpuKernelPlan
    args: list[Any]
    strategy: str
    workspace: str
    capacity: int
    program: CudaProgram | None
    kernels: dict[str, Any] | None  # kernel name -> function of the compiled module
    compile_s: float  # compile time of a module built now (0.0 when cached or on the host)
    reason: str = ""

    @property
    def device(self) -> str:
        """Where the query runs: ``"cuda"`` or ``"host"`` (a CPU-backend fallback)."""
        return "host" if self.kernels is None else "cuda"

    def describe(self) -> str:
        """One line: where it runs, the applied strategy and workspace (or why on the host)."""
        if self.program is None:
            return f"host: {self.reason}"
        atomic = ", atomic partials" if self.program.atomic_partials else ""
        return (f"cuda: strategy {self.program.strategy.value}, workspace "
                f"{self.program.workspace.value}{atomic}, kernels "
                f"{', '.join(self.program.kernel_names)}")


_RECORDERS: list[list[Prepared]] = []


@contextmanager
def recording() -> Iterator[list[Prepared]]:
    """Collect every query :func:`run_query_cuda` runs inside the block (where each ran, its
    strategy, compile time): how a benchmark proves there was no silent host fallback."""
    log: list[Prepared] = []
    with _LOCK:
        _RECORDERS.append(log)
    try:
        yield log
    finally:
        with _LOCK:
            _RECORDERS.remove(log)


def _module_for(plan: GpuKernelPlan, args: list[Any], kind: str, ws: str, atomic: bool,
                host_fallback: bool) -> tuple[tuple[CudaProgram, Any] | None, float, str]:
    """The cached or newly compiled ``(program, kernels)`` (None: runs on the host), the
    compile time spent now and, for the host, the reason. Threads wanting the same new
    module wait for the one compiling it (NVRTC runs once per key)."""
    key = cache_key(plan, args, kind, ws, atomic)
    with _LOCK:
        hit = _MODULES.get(key, _MISSING)
    if hit is _MISSING:
        with _BUILDING.holding(key):
            with _LOCK:
                hit = _MODULES.get(key, _MISSING)
            if hit is _MISSING:
                return _compile_module(key, plan, args, kind, ws, atomic, host_fallback)
    STATS.bump("memory_hits")
    if hit is None:
        if not host_fallback:
            program_for(plan, kind, workspace=ws, args=args, atomic=atomic)  # raises
        return None, 0.0, _HOST_REASONS.get(key, "")
    return hit, 0.0, ""  # type: ignore[return-value]


def _compile_module(key: Any, plan: GpuKernelPlan, args: list[Any], kind: str, ws: str,
                    atomic: bool, host_fallback: bool
                    ) -> tuple[tuple[CudaProgram, Any] | None, float, str]:
    """Compile and cache the module of ``key`` (None, with the reason: it runs on the host)."""
    t0 = time.perf_counter()
    reason = ""
    try:
        prog = program_for(plan, kind, workspace=ws, args=args, atomic=atomic)
        module = compile_program(prog)
        # the functions are looked up once (CuPy's get_function builds a RawKernel a call)
        built: tuple[CudaProgram, Any] | None = (
            prog, {n: module.get_function(n) for n in prog.kernel_names})
        STATS.bump("compiled")
    except CudaUnsupported as e:
        if not host_fallback:
            raise
        built, reason = None, str(e)
    with _LOCK:
        if built is None:
            _HOST_REASONS[key] = reason  # before the entry: a reader of None finds it
        _MODULES[key] = built
    return built, (time.perf_counter() - t0) if built is not None else 0.0, reason


def prepare(query: Query, env: dict[Alias, Any], *, strategy: str | None = None,
            workspace: str | None = None, atomic: bool | None = None,
            host_fallback: bool = True) -> Prepared:
    """Plan, choose strategy, workspace and atomic partials (:func:`choose_atomic`; forced
    by ``atomic``), and compile (or find cached) one query; see :func:`run_query_cuda`."""
    for a, t in env.items():
        if device_of(t) != "cuda":
            raise ValueError(f"operand {a.name} is on the cpu; the CUDA backend needs every "
                             "operand on device 'cuda' (use x.to_device('cuda'))")
    plan = plan_query(query, env)
    args = launch_args(plan)
    kind = strategy or choose_strategy(plan, args, plan.kernel.lowered.params)
    cp = _cupy()
    if workspace is None:
        ws, cap = choose_workspace(plan, args, cp)
    elif workspace == "hash":
        ws, cap = "hash", hash_capacity_for(plan, args, cp)[0]
    else:
        ws, cap = workspace, 0
    if atomic is None:
        atomic = choose_atomic(plan, args)
    built, compile_s, reason = _module_for(plan, args, kind, ws, atomic, host_fallback)
    prog, kernels = built if built is not None else (None, None)
    return Prepared(query, env, plan, args, kind, ws, cap, prog, kernels, compile_s, reason)


def run_prepared(p: Prepared) -> DeviceTensor:
    """Run a prepared query (on the host, copies each way, when it has no kernels)."""
    with _LOCK:
        for log in _RECORDERS:
            log.append(p)
    if p.kernels is None:
        STATS.bump("host_fallback")
        return run_on_host(p.query, p.env)
    kernels = p.kernels

    def launch(ln: Launch, grid: Grid, kargs: list[Any]) -> None:
        STATS.bump("launches")
        kernels[ln.name]((grid.blocks,), (grid.threads,), tuple(kargs))

    assert p.program is not None
    return run_program(p.plan, p.program, p.args, _cupy(), launch, hash_capacity=p.capacity)


def run_query_cuda(query: Query, env: dict[Alias, Any], *, strategy: str | None = None,
                   workspace: str | None = None, atomic: bool | None = None,
                   host_fallback: bool = True) -> DeviceTensor:
    """Evaluate one compute query on the GPU (operands are :class:`DeviceTensor`);
    ``strategy`` / ``workspace`` force a choice (default: from the data's statistics).

    Kernels the CUDA backend cannot express (insert-sort-merge workspaces: transposes to
    another storage order, outer-product SpGEMM) run on the CPU backend with a copy each way
    when ``host_fallback`` (counted in ``STATS["host_fallback"]`` and visible in
    :func:`recording`), else raise :class:`CudaUnsupported`."""
    return run_prepared(prepare(query, env, strategy=strategy, workspace=workspace,
                                atomic=atomic, host_fallback=host_fallback))


def run_program(plan: GpuKernelPlan, prog: CudaProgram, args: list[Any], xp: Any,
                launcher: Any, *, hash_capacity: int = 0,
                chunks: int | None = None) -> DeviceTensor:
    """Run a program's host steps over array module ``xp`` (launches go to ``launcher``)
    and wrap the result; shared by the CuPy path and the CPU emulation used in tests.
    ``chunks`` caps the chunk count (default :func:`max_chunks`)."""
    params = plan.kernel.lowered.params
    env = dict(zip(params, args, strict=True))
    if chunks is not None:
        env["ls_max_chunks"] = max(1, int(chunks))
    else:  # atomic partials: a chunk per row
        env["ls_max_chunks"] = 1 << 62 if prog.atomic_partials else max_chunks(plan, args)
    if "ls_hcap" in prog.extra_args:
        if hash_capacity < 2 or hash_capacity & (hash_capacity - 1):
            raise ValueError(f"hash workspace capacity must be a power of two >= 2, got "
                             f"{hash_capacity}")
        env["ls_hcap"] = hash_capacity
    res = run_steps(prog, env, xp, launcher)
    return assemble_device(plan, res)


def _make_device_tensor(shape: tuple[int, ...], levels: list[Any], mode_order: Any,
                        values: Any, fill: Any, spec: Any) -> DeviceTensor:
    return DeviceTensor(shape, levels, mode_order, values, fill, spec)


def assemble_device(plan: GpuKernelPlan, res: tuple[Any, ...]) -> DeviceTensor:
    """Wrap the result arrays as a device tensor (``backends.host.assemble``, as the CPU)."""
    return assemble(plan.info, plan.data, plan.kernel.lowered.output, res,
                    _make_device_tensor)


def _check_device_input(alias: Alias, t: Any) -> None:
    if not isinstance(t, DeviceTensor):
        raise ValueError(f"input {alias.name} is not on device 'cuda' (got "
                         f"{type(t).__name__}); mixing devices is not allowed")


def execute_plan_cuda(plan: Plan, *, strategy: str | None = None,
                      host_fallback: bool = True) -> tuple[DeviceTensor, ...]:
    """Run a normal-form plan on the GPU; inputs must be device tensors."""
    def run(query: Query, env: dict[Alias, Any]) -> DeviceTensor:
        return run_query_cuda(query, env, strategy=strategy, host_fallback=host_fallback)

    return run_plan(plan, run, _check_device_input, "execute_plan_cuda")


def clear_cache() -> None:
    """Forget compiled modules (CuPy's own disk cache stays)."""
    with _LOCK:
        _MODULES.clear()
        _HOST_REASONS.clear()


__all__ = ["STATS", "Prepared", "assemble_device", "choose_atomic", "choose_strategy",
           "choose_workspace", "clear_cache", "compile_program", "execute_plan_cuda",
           "launch_args", "max_chunks", "prepare", "recording", "run_on_host", "run_prepared",
           "run_program", "run_query_cuda"]
