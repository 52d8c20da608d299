"""Loop IR -> a CUDA program: ``__global__`` kernels plus the host steps that run them.

The loop IR of a kernel (``compile.lowering.kernel``) is a set of chunk functions (``chunk`` and
``combine``, or ``count`` and ``fill``), each the body run for one chunk ``t`` of ``nch``.
Every chunk function becomes one ``extern "C" __global__`` kernel whose workers (threads,
or warps when a strategy splits the accumulation loop across lanes) take chunks in a
grid-stride loop; ``combine`` runs one thread per output element. Allocations inside a
chunk (workspaces) become per-worker slices of a pool the host allocates once per launch.
The host side (:mod:`backends.cuda.schedule`) mirrors the CPU driver.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lazysparse.kernels.backends.cuda import schedule, strategies
from lazysparse.kernels.backends.cuda.prelude import preamble
from lazysparse.kernels.backends.cuda.render import (
    I64,
    AtomicCombine,
    CudaCodegenError,
    CudaPrinter,
    HashProbe,
    LaneFor,
    VarType,
    WarpReduce,
    infer_types,
    type_of,
)
from lazysparse.kernels.backends.cuda.schedule import (
    HostAlloc,
    HostAssign,
    HostReturn,
    HostScan,
    HostStep,
    HostStore,
    Launch,
    Pool,
)
from lazysparse.kernels.backends.cuda.strategies import LaunchMode
from lazysparse.kernels.backends.cuda.workspaces import WorkspaceKind
from lazysparse.kernels.compile.ir.loop_ir import (
    Alloc,
    Assign,
    Bin,
    BinOp,
    Call,
    Const,
    Expr,
    For,
    Load,
    Node,
    SortRange,
    Stmt,
    Store,
    Var,
    statements,
    walk,
)
from lazysparse.kernels.compile.lowering.kernel import Lowered


@dataclass(frozen=True)
class CudaProgram:
    """Generated CUDA kernels (``source``, without the preamble) and the host schedule."""

    prefix: str
    source: str
    steps: tuple[HostStep, ...]
    kernel_names: tuple[str, ...]
    strategy: LaunchMode
    atomics: tuple[str, ...] = ()
    workspace: WorkspaceKind = WorkspaceKind.DENSE
    extra_args: tuple[str, ...] = ()  # host-supplied scalars beyond the loop IR's params
    atomic_partials: bool = False  # one output updated atomically, a chunk per row

    def translation_unit(self, *, cupy_headers: bool = True) -> str:
        """The complete source ``cupy.RawModule`` (or ``nvcc``) compiles."""
        return preamble(cupy_headers=cupy_headers) + "\n" + self.source


# ---------------------------------------------------------------- analysis helpers


def _names_of(n: Node) -> tuple[str, ...]:
    """The names one node itself reads or binds (its children are walked separately)."""
    match n:
        case Var(name):
            return (name,)
        case Load(array) | Store(array) | SortRange(array) | AtomicCombine(_, array):
            return (array,)
        case HashProbe(keys):
            return (keys,)
        case Assign(var) | Alloc(var) | For(var) | LaneFor(var):
            return (var,)
        case WarpReduce(var, other):
            return (var, other)
    return ()


def names_in(roots: Node | tuple[Node, ...], out: dict[str, None]) -> None:
    """Add every name a block or expression reads or writes, in first-use order (the
    order of the names a kernel does not bind is the order of its parameters)."""
    for n in walk(roots):
        for name in _names_of(n):
            out.setdefault(name)


def written_arrays(stmts: tuple[Stmt, ...], out: set[str]) -> None:
    """Arrays a block stores into (or sorts)."""
    for s in statements(stmts):
        match s:
            case Store(array) | SortRange(array) | AtomicCombine(_, array):
                out.add(array)
            case Call(_, args):  # intrinsics may write every array they are given
                out.update(a.name for a in args if isinstance(a, Var))


def allocs_in(stmts: tuple[Stmt, ...]) -> list[Alloc]:
    """Allocations anywhere inside a block."""
    return [s for s in statements(stmts) if isinstance(s, Alloc)]


# ---------------------------------------------------------------- kernels


@dataclass
class _KernelBuild:
    name: str
    source: str
    launch: Launch


def _params(free: list[str], types: dict[str, VarType], body: tuple[Stmt, ...],
            pools: list[Alloc], local: dict[str, VarType]) -> list[str]:
    """The kernel's C parameters: the names it reads (arrays it never writes ``const``),
    then one pool pointer per in-kernel allocation."""
    written: set[str] = set()
    written_arrays(body, written)
    params: list[str] = []
    for n in free:
        vt = types[n]
        const = "" if vt.pointer and n in written else "const "
        params.append(f"{const}{vt.c} {n}")
    return params + [f"{local[a.var].c} {a.var}__pool" for a in pools]


def _worker_ids(mode: LaunchMode) -> list[str]:
    """The kernel's worker id and worker count (a warp per worker in warp mode)."""
    if mode is LaunchMode.WARP:
        return ["  const int ls_lane = threadIdx.x & 31;",
                "  const ls_i64 ls_wid = ls_gid >> 5;",
                "  const ls_i64 ls_nworkers = ((ls_i64)gridDim.x * blockDim.x) >> 5;"]
    return ["  const ls_i64 ls_wid = ls_gid;",
            "  const ls_i64 ls_nworkers = (ls_i64)gridDim.x * blockDim.x;"]


def build_kernel(name: str, loop: For, types: dict[str, VarType],
                 mode: LaunchMode) -> _KernelBuild:
    """One ``__global__`` kernel running the iterations of a top-level loop."""
    body = loop.body
    pools_a = allocs_in(body)
    if mode is LaunchMode.WARP and pools_a:
        raise CudaCodegenError("warp-per-row kernels cannot hold per-worker workspaces")
    known = {**types, "ls_lane": VarType(np.dtype(np.int32))}
    whole = (For(loop.var, loop.start, loop.stop, body),)
    local = infer_types(whole, known)
    used: dict[str, None] = {}
    names_in(whole, used)
    for a in pools_a:
        names_in(a.size, used)
    free = [n for n in used if n not in local and n != "ls_lane"]
    for n in free:
        if n not in types:
            raise CudaCodegenError(f"internal: kernel {name} reads {n!r}, which has no type")
    pr = CudaPrinter({**known, **local}, {a.var: a.size for a in pools_a})
    sig = ",\n    ".join(_params(free, types, body, pools_a, local))
    lines = [f'extern "C" __global__ void {name}(\n    {sig}) {{',
             "  const ls_i64 ls_gid = (ls_i64)blockIdx.x * blockDim.x + threadIdx.x;",
             *_worker_ids(mode)]
    pool_vars = {a.var for a in pools_a}
    lines += [f"  {vt.c} {n};" for n, vt in local.items() if n not in pool_vars]
    lines += [f"  {local[a.var].c} {a.var} = {a.var}__pool + ls_wid * ({pr.expr(a.size)});"
              for a in pools_a]
    if mode is LaunchMode.SERIAL:
        lines += ["  if (ls_gid != 0) return;", *pr.block((loop,), 1)]
    else:
        v = loop.var
        lines += [f"  const ls_i64 ls_stop = {pr.expr(loop.stop)};",
                  f"  for ({v} = {pr.expr(loop.start)} + ls_wid; {v} < ls_stop; "
                  f"{v} += ls_nworkers) {{", *pr.block(body, 2), "  }"]
    lines.append("}")
    pools = tuple(Pool(a.var, a.size, a.dtype, a.fill) for a in pools_a)
    count: Expr = Const(1) if mode is LaunchMode.SERIAL else Bin(BinOp.SUB, loop.stop, loop.start)
    dts = tuple("" if types[n].pointer else str(types[n].dtype) for n in free)
    launch = Launch(name, mode, count, tuple(free) + tuple(f"{a.var}__pool" for a in pools_a),
                    pools, dts + ("",) * len(pools_a))
    return _KernelBuild(name, "\n".join(lines) + "\n", launch)


class _Generator:
    """Turns each ``Run`` step of a host schedule into a kernel and its launch."""

    def __init__(self, lowered: Lowered, types: dict[str, VarType], prefix: str,
                 strategy: strategies.Strategy) -> None:
        self.fns = {f.name: f for f in lowered.functions}
        self.types, self.prefix, self.strategy = types, prefix, strategy
        self.steps: list[HostStep] = []
        self.sources: list[str] = []
        self.names: list[str] = []
        self.atomics: dict[str, str] = {}
        self.hashed = False
        self.atomic = False

    def run(self, st: schedule.Run) -> None:
        """Add the launch (and any host assigns before it) of ``st``'s function."""
        fn = self.fns[st.function]
        if st.elementwise:  # one independent output element per iteration
            loop = fn.body[0]
            if not (len(fn.body) == 1 and isinstance(loop, For)):
                raise CudaCodegenError(f"{fn.name} function is not a single loop")
            loop = For(loop.var, loop.start, loop.stop, loop.body, True)
            mode = LaunchMode.THREAD
        else:
            rw = strategies.rewrite(fn.body, self.strategy, self.atomics)
            self.hashed = self.hashed or rw.hashed
            if rw.atomic:
                self._one_partial()
            mode = rw.mode
            for h in rw.host:
                self.types.setdefault(h.var, VarType(type_of(h.value, self.types)))
                self.steps.append(HostAssign(h.var, h.value))
            count = rw.count if rw.count is not None else Var("nch")
            loop = For("t", Const(0), count, rw.body, True)
        kb = build_kernel(f"{self.prefix}_{fn.name}", loop, self.types, mode)
        self.steps.append(kb.launch)
        if not st.elementwise and self.atomic:
            self.steps.append(HostAssign("nch", Const(1)))  # combine reads one partial
        self.sources.append(kb.source)
        self.names.append(kb.name)

    def _one_partial(self) -> None:
        """The partials allocation (``osize * nch``) shrunk to one output (``osize``)."""
        k, alloc = next((k, s) for k, s in enumerate(self.steps)
                        if isinstance(s, HostAlloc) and s.var == "out")
        if not (isinstance(alloc.size, Bin) and alloc.size.op is BinOp.MUL
                and alloc.size.b == Var("nch")):
            raise CudaCodegenError("internal: partials allocation of unexpected shape")
        self.steps[k] = HostAlloc("out", alloc.size.a, alloc.dtype, alloc.fill)
        self.atomic = True


def generate(lowered: Lowered, arg_types: dict[str, VarType], *, prefix: str,
             out_dtype: str, strategy: strategies.Strategy | None = None,
             index_dtype: str = "int32") -> CudaProgram:
    """The CUDA program of a lowered kernel: one ``__global__`` kernel per chunk function
    (``chunk`` / ``combine`` or ``count`` / ``fill``) and the host schedule around them.

    ``arg_types`` gives the type of every common parameter (``Lowered.params``; arrays as
    pointers); ``prefix`` makes kernel names unique within a module; ``out_dtype`` is the
    result's dtype; ``strategy`` picks how the chunk loop maps onto the GPU (default: one
    thread per chunk); ``index_dtype`` is the result's index dtype.
    """
    strategy = strategy or strategies.Strategy(LaunchMode.THREAD)
    missing = [p for p in lowered.params if p not in arg_types]
    if missing:
        raise ValueError(f"CUDA codegen needs the types of kernel arguments {missing}")
    sched = schedule.build(lowered, arg_types, out_dtype, index_dtype)
    types = dict(sched.types)
    if strategy.workspace is WorkspaceKind.HASH:
        types["ls_hcap"] = VarType(I64)
    gen = _Generator(lowered, types, prefix, strategy)
    for st in sched.steps:
        if isinstance(st, schedule.Run):
            gen.run(st)
        else:
            gen.steps.append(st)
    head = [f"// lazysparse generated CUDA kernels ({prefix}); requested strategy: "
            f"{strategy.kind}, workspace: {strategy.workspace}"]
    notes = lowered.functions[0].notes if lowered.functions else ()
    head += [f"// {n}" for n in notes]
    src = "\n".join(head) + "\n" + "".join(gen.atomics.values()) + "\n".join(gen.sources)
    modes = {x.mode for x in gen.steps if isinstance(x, Launch)}
    applied = next((m for m in (LaunchMode.NZSPLIT, LaunchMode.WARP) if m in modes),
                   LaunchMode.THREAD)
    if strategy.workspace is WorkspaceKind.HASH and not gen.hashed:
        raise CudaCodegenError("internal: hash workspace requested for a kernel without a "
                               "row workspace")
    extra = ("ls_max_chunks", "ls_hcap") if gen.hashed else ("ls_max_chunks",)
    return CudaProgram(prefix, src, tuple(gen.steps), tuple(gen.names), applied,
                       tuple(gen.atomics), WorkspaceKind.HASH if gen.hashed
                       else WorkspaceKind.DENSE, extra, gen.atomic)


def arg_types_of(params: tuple[str, ...], args: list[Any]) -> dict[str, VarType]:
    """Parameter types from the actual arguments (arrays -> pointers to their dtype)."""
    out: dict[str, VarType] = {}
    for p, a in zip(params, args, strict=True):
        if hasattr(a, "shape") and getattr(a, "ndim", 0) == 1:
            out[p] = VarType(np.dtype(a.dtype), True)
        else:
            out[p] = VarType(np.dtype(getattr(a, "dtype", None) or np.asarray(a).dtype))
    return out


__all__ = ["CudaProgram", "HostAlloc", "HostAssign", "HostReturn", "HostScan", "HostStore",
           "I64", "Launch", "Pool", "arg_types_of", "generate"]
