"""Print a loop-IR :class:`Function` as a readable Python module compiled by Numba.

Array indices are cast to unsigned (``_u(i)``) so Numba emits no negative-index wraparound
checks (signed indexing costs 2-5x on a large SpMV). Parallel loops become ``prange``;
the thread count follows Numba's settings (``get_num_threads()``).
"""

from __future__ import annotations

import cmath
import math
from dataclasses import replace
from typing import Any

import numpy as np

from lazysparse.kernels.backends.numba import ops as lsops
from lazysparse.kernels.compile.ir.loop_ir import (
    Alloc,
    Apply,
    ArgSortRange,
    Bin,
    BinOp,
    Cast,
    Const,
    Expr,
    Function,
    Intrinsic,
    LoopPrinter,
    SortRange,
    Stmt,
    Var,
)

HEADER = '''"""lazysparse generated kernel (Numba). Structure key: {key}"""
import cmath
import math

import numpy as np
from numba import njit

from lazysparse.kernels.backends.numba import support as lsk
from lazysparse.kernels.backends.numba import ops as lsops

_u = np.uint64
'''

_NP = {"bool": "np.bool_"}

# the names operator Numba forms may use (``logic.operators``: ``np``, ``math``, ``cmath``, and
# ``lsops`` = this backend's operator helpers, :mod:`backends.numba.ops`)
NUMBA_GLOBALS: dict[str, Any] = {"np": np, "math": math, "cmath": cmath, "lsops": lsops}


def np_type(dtype: str) -> str:
    """NumPy constructor name for a dtype name (``np.float64``, ``np.bool_``); ``"index"``
    is the output index dtype, taken from the ``iproto`` argument."""
    if dtype == "index":
        return "iproto.dtype"
    name = np.dtype(dtype).name
    return _NP.get(name, f"np.{name}")


class NumbaPrinter(LoopPrinter):
    """The loop IR as Python source for Numba: NumPy scalar constructors, unsigned
    indices, ``lsk.`` intrinsics, fill loops instead of NumPy constructors."""

    def const(self, c: Const) -> str:
        if isinstance(c.value, float) and not math.isfinite(c.value):  # no inf/nan names
            text = "math.nan" if math.isnan(c.value) else \
                "math.inf" if c.value > 0 else "-math.inf"
            return f"{np_type(c.dtype)}({text})" if c.dtype else text
        return f"{np_type(c.dtype)}({c.value!r})" if c.dtype else repr(c.value)

    def index(self, e: Expr) -> str:
        """Unsigned index source (constants stay literal)."""
        return repr(e.value) if isinstance(e, Const) else f"_u({self.expr(e)})"

    def apply(self, e: Apply) -> str:
        return "(" + e.op.numba_expr(tuple(self.expr(a) for a in e.args),
                                     tuple(np.dtype(d) for d in e.dtypes)) + ")"

    def cast(self, e: Cast) -> str:
        inner = self.expr(e.a)
        if isinstance(e.a, Cast) and e.a.dtype == e.dtype:
            return inner
        if np.dtype(e.dtype).kind == "b":
            return f"({inner} != 0)" if not _is_boolish(e.a) else inner
        return f"{np_type(e.dtype)}({inner})"

    def num_threads(self) -> str:
        raise TypeError("not a loop-IR expression: NumThreads() (the Numba host passes "
                        "the thread count)")

    def intrinsic(self, name: Intrinsic) -> str:
        return f"lsk.{name}"

    def alloc(self, s: Alloc) -> list[str]:
        var = s.var
        out = [f"{var} = np.empty({self.expr(s.size)}, {np_type(s.dtype)})"]
        if s.fill is not None:  # a loop, not np.zeros/np.full: each NumPy constructor
            # overload Numba compiles costs a kernel's first call 50-250 ms
            out += [f"for {var}_z in range({var}.shape[0]):",
                    f"    {var}[_u({var}_z)] = {self.expr(Cast(s.dtype, s.fill))}"]
        return out

    def sort_range(self, s: SortRange) -> list[str]:
        return [f"{s.array}[{self.expr(s.lo)}:{self.expr(s.hi)}].sort()"]

    def argsort_range(self, s: ArgSortRange) -> list[str]:
        return [f"{s.var} = np.argsort({s.array}[{self.expr(s.lo)}:{self.expr(s.hi)}], "
                "kind='mergesort')"]

    def ret(self, values: tuple[str, ...]) -> list[str]:
        return [f"return ({', '.join(values)},)"]

    def function(self, fn: Function, ind: int) -> list[str]:
        """``fn`` as a plain ``def`` (:func:`module_src` adds the ``njit`` decorator)."""
        pad = self.indent * ind
        return [f"{pad}def {fn.name}({', '.join(fn.params)}):",
                *[f"{pad}    # {n}" for n in fn.notes], *self.block(fn.body, ind + 1)]


_PRINTER = NumbaPrinter()


def expr_src(e: Expr) -> str:
    """Python source of an expression."""
    return _PRINTER.expr(e)


def _is_boolish(e: Expr) -> bool:
    return (isinstance(e, Cast) and np.dtype(e.dtype).kind == "b") or (
        isinstance(e, Const) and isinstance(e.value, bool))


def stmt_src(s: Stmt, ind: int) -> list[str]:
    """Python source lines of a statement."""
    return _PRINTER.stmt(s, ind)


def block_src(body: tuple[Stmt, ...], ind: int) -> list[str]:
    """Lines of a block (``pass`` when empty)."""
    return _PRINTER.block(body, ind)


def _sized_by_extents(e: Expr, extents: frozenset[str]) -> bool:
    """Whether ``e`` is built from constants and loop extents (``extents``) only."""
    match e:
        case Const(value, _):
            return isinstance(value, int) and not isinstance(value, bool)
        case Var(name):
            return name in extents
        case Bin(op, a, b):
            return op in (BinOp.ADD, BinOp.MUL) and _sized_by_extents(a, extents) and \
                _sized_by_extents(b, extents)
    return False


def hoist_workspaces(fns: tuple[Function, ...], extents: frozenset[str]
                     ) -> tuple[tuple[Function, ...], dict[str, tuple[Alloc, ...]]]:
    """Move each function's chunk-level workspace allocations (sized by loop extents) to
    trailing parameters the host allocates once per worker thread (the kernels leave a
    workspace as they found it: a row workspace's drain clears its marks). Saves the
    allocations per chunk and Numba's compile of the NumPy constructors (0.2-0.3 s on the
    first such kernel of a process). ``extents``: the loop-extent parameters' names.
    Returns the functions and, per name, the hoisted allocations in parameter order."""
    out: list[Function] = []
    hoisted: dict[str, tuple[Alloc, ...]] = {}
    for fn in fns:
        keep: list[Stmt] = []
        moved: list[Alloc] = []
        for st in fn.body:
            if (isinstance(st, Alloc) and st.var.startswith("ws_")
                    and _sized_by_extents(st.size, extents)
                    and (st.fill is None or isinstance(st.fill, Const))):
                moved.append(st)
            else:
                keep.append(st)
        hoisted[fn.name] = tuple(moved)
        out.append(replace(fn, params=fn.params + tuple(a.var for a in moved),
                           body=tuple(keep)) if moved else fn)
    return tuple(out), hoisted


def eval_size(e: Expr, env: dict[str, Any]) -> int:
    """The value of a size accepted by ``hoist_workspaces`` (``env``: extent arguments)."""
    match e:
        case Const(value, _):
            return int(value)
        case Var(name):
            return int(env[name])
        case Bin(BinOp.ADD | BinOp.MUL as op, a, b):
            return int(op.evaluate(eval_size(a, env), eval_size(b, env)))
    raise ValueError(f"internal: not a workspace size {e!r}")


def module_src(fns: tuple[Function, ...], key: str, reassoc: bool = False) -> str:
    """A complete module defining the kernel's chunk functions (njit, cached on disk).

    ``reassoc``: compile with LLVM's ``reassoc`` fast-math flag only (lets a float sum
    reduction vectorize; NaN/inf/signed-zero handling stays IEEE)."""
    lines = [HEADER.format(key=key)]
    fm = ", fastmath={'reassoc'}" if reassoc else ""
    for fn in fns:
        lines += ["", "", f"@njit(cache=True, error_model='numpy', nogil=True{fm})",
                  *_PRINTER.function(fn, 0)]
    return "\n".join(lines) + "\n"
