"""The host side of a GPU kernel: allocations, chunk count, launches, scans, result arrays.

It mirrors the CPU driver (``backends.numba.cpu_host.run_chunks``) step for step, as data: a list
of host steps over named values that :func:`backends.cuda.host.run_steps` executes with CuPy
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

from lazysparse.kernels.backends.cuda.render import I64, VarType
from lazysparse.kernels.backends.cuda.strategies import LaunchMode
from lazysparse.kernels.compile.ir.loop_ir import Bin, BinOp, Cast, Const, Expr, Load, Var
from lazysparse.kernels.compile.lowering.kernel import Lowered
from lazysparse.kernels.compile.planning.params import Role

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
    """Placeholder: run the chunk function ``function`` of the loop IR (becomes a Launch);
    ``elementwise``: its single loop has one independent output element per iteration
    (``combine``), else it is a chunk loop mapped by the strategy."""

    function: str
    elementwise: bool = False


HostStep = HostAssign | HostAlloc | HostStore | HostScan | Launch | HostReturn


@dataclass(frozen=True)
class Schedule:
    """Host steps (with ``Run`` placeholders) and the types of every name they bind."""

    steps: tuple[HostStep | Run, ...]
    types: dict[str, VarType]


class _Builder:
    """Accumulates host steps and the types of the names they bind."""

    def __init__(self, lw: Lowered, arg_types: dict[str, VarType], out_dtype: str) -> None:
        self.lw = lw
        self.od = str(np.dtype(out_dtype))
        self.types = dict(arg_types)
        for n in ("nch", "ls_max_chunks"):
            self.types[n] = VarType(I64)
        self.steps: list[HostStep | Run] = []
        sig = lw.signature
        self.osize, self.dsize = Var(sig.named(Role.OUT_SIZE)), Var(sig.named(Role.DENSE_SIZE))

    def arr(self, name: str, dtype: str) -> None:
        """Type ``name`` as a device array of ``dtype``."""
        self.types[name] = VarType(np.dtype(dtype), True)

    def in_place(self) -> None:
        """Dense / shared outputs: ``out`` preset, ``chunk`` (into partials, ``combine``)."""
        lw, od, osize = self.lw, self.od, self.osize
        self.arr("out", od)
        if lw.partials:
            self.arr("res", od)
            red_id = Var(lw.signature.named(Role.RED_ID))
            partial_size = Bin(BinOp.MUL, osize, Var("nch"))
            self.steps += [HostAlloc("out", partial_size, od, Cast(od, red_id)),
                           Run("chunk"), HostAlloc("res", osize, od, None),
                           Run("combine", elementwise=True), HostReturn(("res",))]
        else:
            ofill = Var(lw.signature.named(Role.OUT_FILL))
            self.steps += [HostAlloc("out", osize, od, Cast(od, ofill)), Run("chunk"),
                           HostReturn(("out",))]

    def count(self) -> None:
        """Sparse outputs: ``count``, then each group's chunk offsets and total."""
        out = self.lw.output
        for g in range(len(out.groups)):
            self.arr(f"cc{g}", "int64")
            self.steps.append(HostAlloc(f"cc{g}", Var("nch"), "int64", Const(0)))
        self.arr("cntpd", "int64")
        cnt_size = Bin(BinOp.MAX, self.dsize, Const(1)) if out.dense_prefix else Const(1)
        self.steps += [HostAlloc("cntpd", cnt_size, "int64", Const(0)), Run("count")]
        for g in range(len(out.groups)):
            self.arr(f"off{g}", "int64")
            self.types[f"tot{g}"] = VarType(I64)
            self.steps += [HostAlloc(f"off{g}", Bin(BinOp.ADD, Var("nch"), Const(1)), "int64",
                                     Const(0)),
                           HostScan(f"off{g}", f"cc{g}", Var("nch")),
                           HostAssign(f"tot{g}", Load(f"off{g}", Var("nch")))]

    def fill(self, index_dtype: str) -> None:
        """Sparse outputs: allocate each group's ``ptr`` and index arrays, then ``fill``."""
        out = self.lw.output
        results: list[str] = []
        for g, grp in enumerate(out.groups):
            ptr = f"o_ptr{grp[0]}"
            self.arr(ptr, "int64")
            if g == 0 and out.dense_prefix:
                self.steps += [HostAlloc(ptr, Bin(BinOp.ADD, self.dsize, Const(1)), "int64",
                                         Const(0)),
                               HostScan(ptr, "cntpd", self.dsize)]
            elif g == 0:
                self.steps += [HostAlloc(ptr, Const(2), "int64", Const(0)),
                               HostStore(ptr, Const(1), Var("tot0"))]
            else:
                self.steps.append(HostAlloc(ptr, Bin(BinOp.ADD, Var(f"tot{g - 1}"), Const(1)),
                                            "int64", Const(0)))
            results.append(ptr)
            for m in grp:
                self.arr(f"o_idx{m}", index_dtype)
                self.steps.append(HostAlloc(f"o_idx{m}", Var(f"tot{g}"), index_dtype, None))
                results.append(f"o_idx{m}")
        self.arr("o_vals", self.od)
        self.steps += [HostAlloc("o_vals", Var(f"tot{len(out.groups) - 1}"), self.od, None),
                       Run("fill"), HostReturn((*results, "o_vals"))]


def build(lw: Lowered, arg_types: dict[str, VarType], out_dtype: str,
          index_dtype: str) -> Schedule:
    """The host schedule of a lowered kernel (see the module docstring)."""
    b = _Builder(lw, arg_types, out_dtype)
    if lw.parallel:
        nch: Expr = Bin(BinOp.MAX, Const(1), Bin(BinOp.MIN, lw.extent0.expr, Var("ls_max_chunks")))
    else:
        nch = Const(1)
    b.steps.append(HostAssign("nch", nch))
    if lw.output.mode.sparse:
        b.count()
        b.fill(index_dtype)
    else:
        b.in_place()
    return Schedule(tuple(b.steps), b.types)
