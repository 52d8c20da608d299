"""Loop IR -> a CUDA program: ``__global__`` kernels plus the host steps that run them.

The loop IR of a kernel (``kernels.lower``) is a function whose top level allocates, runs
parallel loops over chunks ``t`` (count and fill phases), scans chunk counts and returns the
result arrays. Here every top-level loop becomes one ``extern "C" __global__`` kernel:
a parallel loop's iterations are spread over GPU workers (threads, or warps when a
strategy splits the accumulation loop across lanes) with a grid-stride loop; a sequential
loop runs on one thread, except prefix sums, which the host runs as a device ``cumsum``.
Allocations inside a loop (per-chunk workspaces) become per-worker slices of a pool the host
allocates once. Everything else at the top level (scalars, allocations, single stores) is a
host step that :mod:`kernels.cuda.runtime` executes with CuPy arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from lazysparse.kernels.cuda import strategies
from lazysparse.kernels.cuda.prelude import preamble
from lazysparse.kernels.cuda.render import (
    I64,
    AtomicCombine,
    CudaCodegenError,
    CudaStmtPrinter,
    LaneFor,
    LaneZero,
    VarType,
    infer_types,
    type_of,
)
from lazysparse.kernels.loop_ir import (
    Alloc,
    Assign,
    Bin,
    Call,
    Cast,
    Comment,
    Const,
    Expr,
    For,
    Function,
    If,
    Load,
    Not,
    Return,
    Select,
    SortRange,
    Stmt,
    Store,
    Var,
    While,
)

# ---------------------------------------------------------------- host steps


@dataclass(frozen=True)
class HostAssign:
    """``var = value`` evaluated on the host (may read one element of a device array)."""

    var: str
    value: Expr


@dataclass(frozen=True)
class HostAlloc:
    """A device array of ``size`` elements of ``dtype`` (filled with ``fill`` unless None)."""

    var: str
    size: Expr
    dtype: str
    fill: Expr | None


@dataclass(frozen=True)
class HostStore:
    """``array[index] = value`` for one element of a device array."""

    array: str
    index: Expr
    value: Expr


@dataclass(frozen=True)
class HostScan:
    """``dst[u + 1] = dst[u] + src[u]`` for ``u < n``: an inclusive device ``cumsum``."""

    dst: str
    src: str
    n: Expr


@dataclass(frozen=True)
class Pool:
    """Per-worker storage of an allocation inside a kernel (``size`` elements each)."""

    var: str
    size: Expr
    dtype: str
    fill: Expr | None


@dataclass(frozen=True)
class Launch:
    """Run kernel ``name`` over ``count`` work items (``mode``: thread | warp | serial |
    nzsplit); ``args`` name its arguments in order, pools as ``<var>__pool``."""

    name: str
    mode: str
    count: Expr
    args: tuple[str, ...]
    pools: tuple[Pool, ...]
    arg_dtypes: tuple[str, ...] = ()  # scalar args' dtypes ("" for arrays), as in ``args``


@dataclass(frozen=True)
class HostReturn:
    """The result arrays."""

    values: tuple[str, ...]


HostStep = HostAssign | HostAlloc | HostStore | HostScan | Launch | HostReturn


@dataclass(frozen=True)
class CudaProgram:
    """Generated CUDA kernels (``source``, without the preamble) and the host schedule."""

    prefix: str
    source: str
    steps: tuple[HostStep, ...]
    kernel_names: tuple[str, ...]
    strategy: str
    atomics: tuple[str, ...] = ()

    def translation_unit(self, *, cupy_headers: bool = True) -> str:
        """The complete source ``cupy.RawModule`` (or ``nvcc``) compiles."""
        return preamble(cupy_headers=cupy_headers) + "\n" + self.source


# ---------------------------------------------------------------- analysis helpers


def names_in_expr(e: Expr, out: dict[str, None]) -> None:
    """Add every name an expression reads (variables and arrays), in first-use order."""
    match e:
        case Var(name):
            out.setdefault(name)
        case Load(array, index):
            out.setdefault(array)
            names_in_expr(index, out)
        case Bin(_, a, b):
            names_in_expr(a, out)
            names_in_expr(b, out)
        case Not(a) | Cast(_, a):
            names_in_expr(a, out)
        case Select(c, a, b):
            for x in (c, a, b):
                names_in_expr(x, out)
        case _ if hasattr(e, "args") and isinstance(e.args, tuple):  # Apply
            for a in e.args:
                names_in_expr(a, out)


def names_in(stmts: tuple[Stmt, ...], out: dict[str, None]) -> None:
    """Add every name a block reads or writes, in first-use order."""
    for s in stmts:
        match s:
            case Assign(var, value):
                names_in_expr(value, out)
                out.setdefault(var)
            case Store(array, index, value) | AtomicCombine(_, array, index, value):
                out.setdefault(array)
                names_in_expr(index, out)
                names_in_expr(value, out)
            case Alloc(var, size, _, fill):
                names_in_expr(size, out)
                if fill is not None:
                    names_in_expr(fill, out)
                out.setdefault(var)
            case SortRange(array, lo, hi):
                out.setdefault(array)
                names_in_expr(lo, out)
                names_in_expr(hi, out)
            case Call(_, args):
                for a in args:
                    names_in_expr(a, out)
            case For(var, start, stop, body) | LaneFor(var, start, stop, body):
                names_in_expr(start, out)
                names_in_expr(stop, out)
                out.setdefault(var)
                names_in(body, out)
            case While(cond, body):
                names_in_expr(cond, out)
                names_in(body, out)
            case If(cond, then, orelse):
                names_in_expr(cond, out)
                names_in(then, out)
                names_in(orelse, out)
            case LaneZero(body):
                names_in(body, out)
            case _ if hasattr(s, "combine"):  # WarpReduce
                out.setdefault(s.var)  # type: ignore[attr-defined]
                out.setdefault(s.other)  # type: ignore[attr-defined]
                names_in_expr(s.combine, out)  # type: ignore[attr-defined]


def written_arrays(stmts: tuple[Stmt, ...], out: set[str]) -> None:
    """Arrays a block stores into (or sorts)."""
    for s in stmts:
        match s:
            case Store(array, _, _) | SortRange(array, _, _) | AtomicCombine(_, array, _, _):
                out.add(array)
            case Call(_, args):  # intrinsics may write every array they are given
                out.update(a.name for a in args if isinstance(a, Var))
            case For(_, _, _, body) | LaneFor(_, _, _, body) | While(_, body) | LaneZero(body):
                written_arrays(body, out)
            case If(_, then, orelse):
                written_arrays(then, out)
                written_arrays(orelse, out)


def allocs_in(stmts: tuple[Stmt, ...], out: list[Alloc]) -> None:
    """Allocations anywhere inside a block."""
    for s in stmts:
        match s:
            case Alloc():
                out.append(s)
            case For(_, _, _, body) | LaneFor(_, _, _, body) | While(_, body) | LaneZero(body):
                allocs_in(body, out)
            case If(_, then, orelse):
                allocs_in(then, out)
                allocs_in(orelse, out)


def is_scan(loop: For) -> tuple[str, str] | None:
    """``for u in 0:n: X[u + 1] = X[u] + Y[u]`` -> ``(X, Y)``."""
    if loop.parallel or loop.start != Const(0) or len(loop.body) != 1:
        return None
    u = Var(loop.var)
    match loop.body[0]:
        case Store(x, Bin("+", Var(a), Const(1)), Bin("+", Load(x2, Var(b)), Load(y, Var(c)))):
            if x == x2 and a == b == c == u.name and y != x:
                return x, y
    return None


# ---------------------------------------------------------------- kernels


@dataclass
class _KernelBuild:
    name: str
    source: str
    launch: Launch


def build_kernel(name: str, loop: For, types: dict[str, VarType], mode: str) -> _KernelBuild:
    """One ``__global__`` kernel running the iterations of a top-level loop."""
    body = loop.body
    pools_a: list[Alloc] = []
    allocs_in(body, pools_a)
    if mode == "warp" and pools_a:
        raise CudaCodegenError("warp-per-row kernels cannot hold per-worker workspaces")
    known = dict(types)
    known["ls_lane"] = VarType(np.dtype(np.int32))
    local = infer_types((For(loop.var, loop.start, loop.stop, body),), known)
    pool_vars = {a.var for a in pools_a}
    all_types = {**known, **local}
    used: dict[str, None] = {}
    names_in((For(loop.var, loop.start, loop.stop, body),), used)
    for a in pools_a:
        names_in_expr(a.size, used)
    free = [n for n in used if n not in local and n != "ls_lane"]
    for n in free:
        if n not in types:
            raise CudaCodegenError(f"internal: kernel {name} reads {n!r}, which has no type")
    written: set[str] = set()
    written_arrays(body, written)
    params: list[str] = []
    for n in free:
        vt = types[n]
        if vt.pointer:
            const = "" if n in written else "const "
            params.append(f"{const}{vt.c} {n}")
        else:
            params.append(f"const {vt.c} {n}")
    params += [f"{local[a.var].c} {a.var}__pool" for a in pools_a]
    pr = CudaStmtPrinter(all_types, {a.var: a.size for a in pools_a})
    sig = ",\n    ".join(params)
    lines = [f'extern "C" __global__ void {name}(\n    {sig}) {{',
             "  const ls_i64 ls_gid = (ls_i64)blockIdx.x * blockDim.x + threadIdx.x;"]
    if mode == "warp":
        lines += ["  const int ls_lane = threadIdx.x & 31;",
                  "  const ls_i64 ls_wid = ls_gid >> 5;",
                  "  const ls_i64 ls_nworkers = ((ls_i64)gridDim.x * blockDim.x) >> 5;"]
    else:
        lines += ["  const ls_i64 ls_wid = ls_gid;",
                  "  const ls_i64 ls_nworkers = (ls_i64)gridDim.x * blockDim.x;"]
    for n, vt in local.items():
        if n in pool_vars:
            continue
        lines.append(f"  {vt.c} {n};")
    for a in pools_a:
        size = pr.expr(a.size)
        lines.append(f"  {local[a.var].c} {a.var} = {a.var}__pool + ls_wid * ({size});")
    start, stop = pr.expr(loop.start), pr.expr(loop.stop)
    if mode == "serial":
        lines += ["  if (ls_gid != 0) return;", *pr.block((loop,), 1)]
    else:
        v = loop.var
        lines += [f"  const ls_i64 ls_stop = {stop};",
                  f"  for ({v} = {start} + ls_wid; {v} < ls_stop; {v} += ls_nworkers) {{",
                  *pr.block(body, 2), "  }"]
    lines.append("}")
    pools = tuple(Pool(a.var, a.size, a.dtype, a.fill) for a in pools_a)
    count: Expr = Const(1) if mode == "serial" else Bin("-", loop.stop, loop.start)
    dts = tuple("" if types[n].pointer else str(types[n].dtype) for n in free)
    launch = Launch(name, mode, count, tuple(free) + tuple(f"{a.var}__pool" for a in pools_a),
                    pools, dts + ("",) * len(pools_a))
    return _KernelBuild(name, "\n".join(lines) + "\n", launch)


def resolve_index_dtype(body: tuple[Stmt, ...], index_dtype: str) -> tuple[Stmt, ...]:
    """Allocations of the pseudo-dtype ``"index"`` (the output index dtype, which the CPU
    backend reads from its ``iproto`` argument) made concrete."""
    out: list[Stmt] = []
    for s in body:
        match s:
            case Alloc(var, size, "index", fill):
                out.append(Alloc(var, size, index_dtype, fill))
            case For(_, _, _, inner, _) | While(_, inner):
                out.append(replace(s, body=resolve_index_dtype(inner, index_dtype)))
            case If(_, then, orelse):
                out.append(replace(s, then=resolve_index_dtype(then, index_dtype),
                                   orelse=resolve_index_dtype(orelse, index_dtype)))
            case _:
                out.append(s)
    return tuple(out)


def top_types(fn: Function, arg_types: dict[str, VarType]) -> dict[str, VarType]:
    """Types of the function's parameters and of its top-level scalars and arrays."""
    missing = [p for p in fn.params if p not in arg_types]
    if missing:
        raise ValueError(f"CUDA codegen needs the types of kernel arguments {missing}")
    types = {p: arg_types[p] for p in fn.params}
    for s in fn.body:
        match s:
            case Assign(var, value):
                types.setdefault(var, VarType(type_of(value, types)))
            case Alloc(var, _, dtype, _):
                types[var] = VarType(np.dtype(dtype), True)
    return types


def generate(fn: Function, arg_types: dict[str, VarType], *, prefix: str,
             strategy: strategies.Strategy | None = None) -> CudaProgram:
    """The CUDA program of a lowered kernel function.

    ``arg_types`` gives every parameter's type (arrays as pointers); ``prefix`` makes the
    kernel names unique within a module; ``strategy`` picks how parallel loops map onto the
    GPU (default: one thread per work item).
    """
    strategy = strategy or strategies.Strategy("thread")
    if "iproto" in arg_types:
        fn = replace(fn, body=resolve_index_dtype(fn.body, str(arg_types["iproto"].dtype)))
    types = top_types(fn, arg_types)
    steps: list[HostStep] = []
    sources: list[str] = []
    names: list[str] = []
    atomics: dict[str, str] = {}
    for s in fn.body:
        match s:
            case Assign(var, value):
                steps.append(HostAssign(var, value))
            case Alloc(var, size, dtype, fill):
                steps.append(HostAlloc(var, size, dtype, fill))
            case Store(array, index, value):
                steps.append(HostStore(array, index, value))
            case For() as loop:
                scan = is_scan(loop)
                if scan is not None:
                    steps.append(HostScan(scan[0], scan[1], loop.stop))
                    continue
                name = f"{prefix}_k{len(names)}"
                mode = "thread" if loop.parallel else "serial"
                body, start, stop = loop.body, loop.start, loop.stop
                if loop.parallel:
                    body, mode, host, count = strategies.rewrite(loop.body, strategy, atomics)
                    for h in host:
                        assert isinstance(h, Assign)
                        types.setdefault(h.var, VarType(type_of(h.value, types)))
                        steps.append(HostAssign(h.var, h.value))
                    if count is not None:
                        start, stop = Const(0), count
                kb = build_kernel(name, For(loop.var, start, stop, body, loop.parallel),
                                  types, mode)
                steps.append(kb.launch)
                sources.append(kb.source)
                names.append(name)
            case Return(values):
                steps.append(HostReturn(values))
            case Comment():
                pass
            case _:
                raise CudaCodegenError(f"top-level {type(s).__name__} is not supported by "
                                       "the CUDA backend")
    head = [f"// lazysparse generated CUDA kernels ({prefix}); requested strategy: "
            f"{strategy.kind}"]
    for n in fn.notes:
        head.append(f"// {n}")
    src = "\n".join(head) + "\n" + "".join(atomics.values()) + "\n".join(sources)
    modes = {st.mode for st in steps if isinstance(st, Launch)}
    applied = next((m for m in ("nzsplit", "warp") if m in modes), "thread")
    return CudaProgram(prefix, src, tuple(steps), tuple(names), applied, tuple(atomics))


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
