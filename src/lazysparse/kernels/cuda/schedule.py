"""The host side of a GPU kernel: allocations, chunk count, launches, scans, result arrays.

It mirrors the CPU driver (``kernels.execute.run_chunks``) step for step, as data: a list
of host steps over named values that :func:`kernels.cuda.host.run_steps` executes with CuPy
(or NumPy in tests). ``Run(function)`` marks where a chunk function of the loop IR runs;
code generation replaces it with the launch of that function's ``__global__`` kernel.

- dense / shared outputs: ``out`` filled with the result fill (``red_id`` for per-chunk
  partials, then ``combine`` into ``res``), ``chunk`` over ``nch`` chunks;
- sparse outputs: ``count`` per chunk (``cc``) and per dense output position (``cntpd``),
  device prefix sums into chunk offsets and ``ptr``, allocation of ``idx``/``vals``,
  ``fill``.
``nch`` is the outermost loop's extent (one row per chunk) capped by the host-supplied
``ls_max_chunks``, and 1 when the loop IR says the outer loop must run in order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lazysparse.kernels.cuda.render import I64, VarType
from lazysparse.kernels.cuda.strategies import LaunchMode
from lazysparse.kernels.loop_ir import Bin, Cast, Const, Expr, Load, Var
from lazysparse.kernels.lower import Lowered

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
    """Run kernel ``name`` over ``count`` work items mapped onto threads by ``mode``;
    ``args`` name its arguments in order, pools as ``<var>__pool``."""

    name: str
    mode: LaunchMode
    count: Expr
    args: tuple[str, ...]
    pools: tuple[Pool, ...]
    arg_dtypes: tuple[str, ...] = ()  # scalar args' dtypes ("" for arrays), as in ``args``


@dataclass(frozen=True)
class HostReturn:
    """The result arrays."""

    values: tuple[str, ...]


@dataclass(frozen=True)
class Run:
    """Placeholder: run the chunk function ``function`` of the loop IR (becomes a Launch)."""

    function: str


HostStep = HostAssign | HostAlloc | HostStore | HostScan | Launch | HostReturn


@dataclass(frozen=True)
class Schedule:
    """Host steps (with ``Run`` placeholders) and the types of every name they bind."""

    steps: tuple[HostStep | Run, ...]
    types: dict[str, VarType]


def build(lw: Lowered, arg_types: dict[str, VarType], out_dtype: str,
          index_dtype: str) -> Schedule:
    """The host schedule of a lowered kernel (see the module docstring)."""
    od = str(np.dtype(out_dtype))
    types = dict(arg_types)
    for n in ("nch", "ls_max_chunks"):
        types[n] = VarType(I64)
    steps: list[HostStep | Run] = []
    if lw.parallel:
        nch: Expr = Bin("max", Const(1), Bin("min", lw.extent0.expr, Var("ls_max_chunks")))
    else:
        nch = Const(1)
    steps.append(HostAssign("nch", nch))
    osize, dsize = Var("osize"), Var("dsize")
    out = lw.output

    def arr(name: str, dtype: str) -> None:
        types[name] = VarType(np.dtype(dtype), True)

    if not out.mode.sparse:
        arr("out", od)
        if lw.partials:
            arr("res", od)
            steps += [HostAlloc("out", Bin("*", osize, Var("nch")), od,
                                Cast(od, Var("red_id"))),
                      Run("chunk"), HostAlloc("res", osize, od, None), Run("combine"),
                      HostReturn(("res",))]
        else:
            steps += [HostAlloc("out", osize, od, Cast(od, Var("ofill"))), Run("chunk"),
                      HostReturn(("out",))]
        return Schedule(tuple(steps), types)
    ng = len(out.groups)
    for g in range(ng):
        arr(f"cc{g}", "int64")
        steps.append(HostAlloc(f"cc{g}", Var("nch"), "int64", Const(0)))
    arr("cntpd", "int64")
    cnt_size = Bin("max", dsize, Const(1)) if out.dense_prefix else Const(1)
    steps += [HostAlloc("cntpd", cnt_size, "int64", Const(0)), Run("count")]
    for g in range(ng):
        arr(f"off{g}", "int64")
        types[f"tot{g}"] = VarType(I64)
        steps += [HostAlloc(f"off{g}", Bin("+", Var("nch"), Const(1)), "int64", Const(0)),
                  HostScan(f"off{g}", f"cc{g}", Var("nch")),
                  HostAssign(f"tot{g}", Load(f"off{g}", Var("nch")))]
    results: list[str] = []
    for g, grp in enumerate(out.groups):
        ptr = f"o_ptr{grp[0]}"
        arr(ptr, "int64")
        if g == 0 and out.dense_prefix:
            steps += [HostAlloc(ptr, Bin("+", dsize, Const(1)), "int64", Const(0)),
                      HostScan(ptr, "cntpd", dsize)]
        elif g == 0:
            steps += [HostAlloc(ptr, Const(2), "int64", Const(0)),
                      HostStore(ptr, Const(1), Var("tot0"))]
        else:
            steps.append(HostAlloc(ptr, Bin("+", Var(f"tot{g - 1}"), Const(1)), "int64",
                                   Const(0)))
        results.append(ptr)
        for m in grp:
            arr(f"o_idx{m}", index_dtype)
            steps.append(HostAlloc(f"o_idx{m}", Var(f"tot{g}"), index_dtype, None))
            results.append(f"o_idx{m}")
    arr("o_vals", od)
    steps += [HostAlloc("o_vals", Var(f"tot{ng - 1}"), od, None), Run("fill"),
              HostReturn((*results, "o_vals"))]
    return Schedule(tuple(steps), types)
